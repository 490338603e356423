import { createRequire as __nbgCreateRequire } from 'node:module'; const require = __nbgCreateRequire(import.meta.url);
import {
  GateOctokit,
  RetryOctokit,
  httpStatus,
  makeOctokit,
  proxyConfigured,
  proxyFetch,
  writePacer,
  writeSpacing
} from "./chunk-LUJHKITU.js";
import "./chunk-IIP5X3HE.js";
import "./chunk-A6YGPO6E.js";
export {
  GateOctokit,
  RetryOctokit,
  httpStatus,
  makeOctokit,
  proxyConfigured,
  proxyFetch,
  writePacer,
  writeSpacing
};
