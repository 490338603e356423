import { createRequire as __nbgCreateRequire } from 'node:module'; const require = __nbgCreateRequire(import.meta.url);
import {
  agentMain
} from "./chunks/chunk-N2OSWYYZ.js";
import "./chunks/chunk-6WGDZT5R.js";
import "./chunks/chunk-NGOUW3F5.js";
import "./chunks/chunk-A6YGPO6E.js";

// src/hook.ts
var [command, ...rest] = process.argv.slice(2);
if (command !== "agent") {
  process.stderr.write("npu-block-gate: error: dist/hook.js runs `agent ...` only (the runner hooks); for anything else run dist/cli.js\n");
  process.exitCode = 2;
} else {
  agentMain(rest).then((code) => {
    process.exitCode = code;
  });
}
