import { createRequire as __nbgCreateRequire } from 'node:module'; const require = __nbgCreateRequire(import.meta.url);
import {
  AGENT_HELP,
  ALLOWED,
  SETUP_HELP,
  agentMain,
  parseAgent
} from "./chunk-AEKLGFZV.js";
import "./chunk-4JX4D7CM.js";
import "./chunk-WJRO4PX2.js";
import "./chunk-A6YGPO6E.js";
export {
  AGENT_HELP,
  ALLOWED,
  SETUP_HELP,
  agentMain,
  parseAgent
};
