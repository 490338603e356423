import { createRequire as __nbgCreateRequire } from 'node:module'; const require = __nbgCreateRequire(import.meta.url);
import {
  AGENT_HELP,
  ALLOWED,
  SETUP_HELP,
  agentMain,
  parseAgent
} from "./chunk-XTNVVX2H.js";
import "./chunk-7BBIB2GW.js";
import "./chunk-2R64E2LF.js";
import "./chunk-A6YGPO6E.js";
export {
  AGENT_HELP,
  ALLOWED,
  SETUP_HELP,
  agentMain,
  parseAgent
};
