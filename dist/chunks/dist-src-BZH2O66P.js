import { createRequire as __nbgCreateRequire } from 'node:module'; const require = __nbgCreateRequire(import.meta.url);
import {
  Octokit
} from "./chunk-2SMGZ2CZ.js";
import "./chunk-46BD3A7W.js";
import "./chunk-4K3H3A2K.js";
import "./chunk-A6YGPO6E.js";
export {
  Octokit
};
