import { createRequire as __nbgCreateRequire } from 'node:module'; const require = __nbgCreateRequire(import.meta.url);
import {
  DEFAULT_API_URL,
  GateOctokit,
  httpStatus,
  makeOctokit,
  proxyConfigured,
  proxyFetch,
  proxyFor
} from "./chunk-5ONJPGPS.js";
import "./chunk-2SMGZ2CZ.js";
import "./chunk-AWWJ6TYQ.js";
import "./chunk-46BD3A7W.js";
import "./chunk-BLAKQYQF.js";
import "./chunk-4K3H3A2K.js";
import "./chunk-A6YGPO6E.js";
export {
  DEFAULT_API_URL,
  GateOctokit,
  httpStatus,
  makeOctokit,
  proxyConfigured,
  proxyFetch,
  proxyFor
};
