import { createRequire as __nbgCreateRequire } from 'node:module'; const require = __nbgCreateRequire(import.meta.url);
import {
  AGENT_HELP,
  ALLOWED,
  SETUP_HELP,
  agentMain,
  parseAgent
} from "./chunk-FRX7R6KD.js";
import "./chunk-3B3IEGHM.js";
import "./chunk-ARZNBCCK.js";
import "./chunk-A6YGPO6E.js";
export {
  AGENT_HELP,
  ALLOWED,
  SETUP_HELP,
  agentMain,
  parseAgent
};
