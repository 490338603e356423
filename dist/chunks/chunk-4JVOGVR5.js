import { createRequire as __nbgCreateRequire } from 'node:module'; const require = __nbgCreateRequire(import.meta.url);
import {
  CONTRACT,
  InputError
} from "./chunk-7HMQRJMS.js";

// src/plan.ts
var INJECTIONS = CONTRACT.emulate.inject;
var TWIN_PRECISIONS = [...CONTRACT.emulate.twin_precision, ...Object.keys(CONTRACT.emulate.twin_precision_aliases)];
var TWIN_EPS = CONTRACT.emulate.twin_eps;
var PROMPT_STYLES = ["base", "instruct"];
function parsePromptStyle(v, from) {
  if (PROMPT_STYLES.includes(v)) return v;
  throw new InputError(`${from} must be one of ${PROMPT_STYLES.join(", ")}, got ${JSON.stringify(v)}`);
}
var MAX_TIMEOUT_SECONDS = 2147483;
var PLAN_TIMEOUT_SECONDS = 120;
var PLAN_SANITY_TIMEOUT_SECONDS = 1800;
function parseDecimal(v, from, range) {
  if (!/^[+-]?(\d+(\.\d*)?|\.\d+)$/.test(v)) throw new InputError(`${from} must be a decimal number ${range}, got ${JSON.stringify(v)}`);
  return Number(v);
}
function parseThreshold(v, from) {
  const n = parseDecimal(v, from, "in (0, 1]");
  if (!(n > 0 && n <= 1)) throw new InputError(`${from} must be a decimal number in (0, 1], got ${JSON.stringify(v)}`);
  return n;
}
function parseTimeout(v, from) {
  const range = `of seconds in (0, ${MAX_TIMEOUT_SECONDS}] (about 24.8 days, the longest timer Node can set)`;
  const n = parseDecimal(v, from, range);
  if (!(n > 0 && n <= MAX_TIMEOUT_SECONDS)) throw new InputError(`${from} must be a decimal number ${range}, got ${JSON.stringify(v)}`);
  return n;
}
var MAX_POSITIONS = 1 << 20;
function parsePositions(v, from) {
  const range = `of tokens in [1, ${MAX_POSITIONS}] (at most the compiled seq_len, 2048 in production)`;
  if (!/^\+?\d+$/.test(v)) throw new InputError(`${from} must be a whole decimal number ${range}, got ${JSON.stringify(v.length > 40 ? `${v.slice(0, 37)}...` : v)}`);
  const n = Number(v);
  if (!(n >= 1 && n <= MAX_POSITIONS)) throw new InputError(`${from} must be a whole decimal number ${range}, got ${JSON.stringify(v)}`);
  return n;
}
function parseInject(v, from) {
  if (INJECTIONS.includes(v)) return v;
  throw new InputError(`${from} must be one of ${INJECTIONS.join(", ")}, got ${JSON.stringify(v.length > 60 ? `${v.slice(0, 57)}...` : v)}`);
}
function parseChoice(v, from, choices) {
  if (choices.includes(v)) return v;
  throw new InputError(`${from} must be one of ${choices.join(", ")}, got ${JSON.stringify(v.length > 60 ? `${v.slice(0, 57)}...` : v)}`);
}
function parseCommit(v, from) {
  if (v === "uncommitted") return v;
  if (!/^[0-9a-fA-F]{7,64}$/.test(v)) throw new InputError(`${from} must be a hex commit id (7 to 64 hex digits) or "uncommitted", got ${JSON.stringify(v.length > 80 ? `${v.slice(0, 77)}...` : v)}`);
  return v.toLowerCase();
}
function defaultRunDirName(model, now = /* @__PURE__ */ new Date(), pid = process.pid) {
  const ts = now.toISOString().replace(/[-:]/g, "").replace("T", "-").replace(".", "-").slice(0, 19);
  return `runs/${model}-${ts}-${pid}`;
}

export {
  INJECTIONS,
  TWIN_PRECISIONS,
  TWIN_EPS,
  parsePromptStyle,
  MAX_TIMEOUT_SECONDS,
  PLAN_TIMEOUT_SECONDS,
  PLAN_SANITY_TIMEOUT_SECONDS,
  parseThreshold,
  parseTimeout,
  MAX_POSITIONS,
  parsePositions,
  parseInject,
  parseChoice,
  parseCommit,
  defaultRunDirName
};
