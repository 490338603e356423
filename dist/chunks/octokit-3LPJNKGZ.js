import { createRequire as __nbgCreateRequire } from 'node:module'; const require = __nbgCreateRequire(import.meta.url);
import {
  DEFAULT_API_URL,
  GateOctokit,
  RetryOctokit,
  httpStatus,
  makeOctokit,
  proxyConfigured,
  proxyFetch,
  proxyFor
} from "./chunk-RN5ELEDQ.js";
import "./chunk-IIP5X3HE.js";
import "./chunk-A6YGPO6E.js";
export {
  DEFAULT_API_URL,
  GateOctokit,
  RetryOctokit,
  httpStatus,
  makeOctokit,
  proxyConfigured,
  proxyFetch,
  proxyFor
};
