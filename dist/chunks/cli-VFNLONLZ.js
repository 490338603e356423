import { createRequire as __nbgCreateRequire } from 'node:module'; const require = __nbgCreateRequire(import.meta.url);
import {
  AGENT_HELP,
  ALLOWED,
  SETUP_HELP,
  agentMain,
  parseAgent
} from "./chunk-N2OSWYYZ.js";
import "./chunk-6WGDZT5R.js";
import "./chunk-NGOUW3F5.js";
import "./chunk-A6YGPO6E.js";
export {
  AGENT_HELP,
  ALLOWED,
  SETUP_HELP,
  agentMain,
  parseAgent
};
