import { createRequire as __nbgCreateRequire } from 'node:module'; const require = __nbgCreateRequire(import.meta.url);
import {
  AGENT_HELP,
  ALLOWED,
  SETUP_HELP,
  agentMain,
  parseAgent
} from "./chunk-RAWACIF7.js";
import "./chunk-TXFVDCPJ.js";
import "./chunk-DMXN6JIR.js";
import "./chunk-A6YGPO6E.js";
export {
  AGENT_HELP,
  ALLOWED,
  SETUP_HELP,
  agentMain,
  parseAgent
};
