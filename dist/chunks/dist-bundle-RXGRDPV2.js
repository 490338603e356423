import { createRequire as __nbgCreateRequire } from 'node:module'; const require = __nbgCreateRequire(import.meta.url);
import {
  VERSION,
  retry
} from "./chunk-BLAKQYQF.js";
import "./chunk-4K3H3A2K.js";
import "./chunk-A6YGPO6E.js";
export {
  VERSION,
  retry
};
