import { createRequire as __nbgCreateRequire } from 'node:module'; const require = __nbgCreateRequire(import.meta.url);
import {
  LLMS,
  affected,
  affectedJson,
  affectedMarkdown,
  affectedTerminal,
  airRootAt,
  changedBetween,
  checkoutOf,
  legCount,
  matrixLimitNote,
  modelNames,
  parseFileList,
  parseLabels,
  planFacts,
  planWithBase,
  prefixOf,
  readFileList,
  statusJson,
  statusMarkdown,
  treeStatus,
  writeFleetPage
} from "./chunk-4CCGKBTR.js";
import {
  parseTimeout
} from "./chunk-4JVOGVR5.js";
import {
  stderrLog
} from "./chunk-N7GSAKQW.js";
import {
  COMMAND
} from "./chunk-AEVRNM6T.js";
import {
  EXIT,
  GateError,
  InputError,
  oneLine
} from "./chunk-7HMQRJMS.js";
import "./chunk-A6YGPO6E.js";

// src/fleet/cli.ts
import { parseArgs } from "node:util";
import { readFileSync } from "node:fs";
var AFFECTED_HELP = `Usage: ${COMMAND} affected [--tree DIR] (--base REV [--head REV] | --changed FILE... | --changed-from LIST) [options]

Which model dirs a change affects: each model's inputs are what its Phase 2 check reads, from the
probe's static plan (no model code is imported): the import closure of block 0 and the reference,
everything the kernel compile reads (the kernel-cache key's inputs: Python, C++ sources, registry),
the Makefile and verify_runner.py defaults, the verify prompt sets and the model's own dir. A model
that runs another model's block or builders reads that model's files, and is named so.
Documentation affects nothing; a file under programming_examples/ that no model reads affects
nothing; a file outside it (the compiler, a top-level file) cannot be placed and affects every
model, and says so. A model Phase 2 cannot run on (q4nx, int4, smolvla) is never in the matrix.

Options:
  --tree DIR          the mlir-air checkout (default: the current directory)
  --base REV          the change is base...head (what head adds since it left base), by git diff
  --head REV          default HEAD
  --changed FILE      a changed file, relative to the repository's top level (repeatable)
  --changed-from L    a file listing the changed files, one a line ('-': standard input)
  --runners LABELS    runner labels (comma-separated, repeatable): the matrix is models x labels
  --json              the answer as JSON: models (the list for strategy.matrix), matrix, rows, changes
  --markdown          the answer as the markdown table the Action writes to the job summary
  --python P          Python for the plans (default: $NPU_BLOCK_GATE_PYTHON, python3, /usr/bin/python3)
  --timeout SECONDS   bound on each model's plan

Exit codes: 0 answered (whatever the count), 2 usage or bad input, 3 infrastructure.
`;
var STATUS_HELP = `Usage: ${COMMAND} status --tree DIR [--json] [--html OUT]

The tree's Phase 2 status from every model dir's phase2_block.md history and TODO.md: per model
and NPU generation the last verdict, when, at which commit, the per-position min against its
threshold and its trend over the last runs on that prompt, the Phase 2 checkbox and the open
blockers. Reads documents only. Markdown by default; --json for scripts. --html OUT also writes
the fleet page to OUT: models x NPU generations, each cell the latest verdict, its whole cosine
and its date, a sparkline of its last runs, and the blockers (one self-contained HTML file).

Exit codes: 0 answered, 2 usage or bad input (not an mlir-air tree; OUT a directory or in a
directory that does not exist), 3 infrastructure (disk full).
`;
var OPTIONS = {
  tree: { type: "string" },
  base: { type: "string" },
  head: { type: "string" },
  changed: { type: "string", multiple: true },
  "changed-from": { type: "string" },
  runners: { type: "string", multiple: true },
  json: { type: "boolean" },
  markdown: { type: "boolean" },
  html: { type: "string" },
  python: { type: "string" },
  timeout: { type: "string" },
  help: { type: "boolean", short: "h" }
};
var ALLOWED = {
  affected: ["tree", "base", "head", "changed", "changed-from", "runners", "json", "markdown", "python", "timeout", "help"],
  status: ["tree", "json", "html", "help"]
};
async function fleetMain(command, argv, out, err) {
  try {
    let parsed;
    try {
      parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: false, strict: true });
    } catch (e) {
      throw new InputError(`${oneLine(e).replace(/^TypeError \[[A-Z_]+\]: /, "")} (see ${COMMAND} ${command} --help)`);
    }
    const v = parsed.values;
    for (const k of Object.keys(v)) if (!ALLOWED[command].includes(k)) throw new InputError(`option --${k} does not apply to ${command} (see ${COMMAND} ${command} --help)`);
    if (v.help) {
      out.write(command === "affected" ? AFFECTED_HELP : STATUS_HELP);
      return EXIT.pass;
    }
    if (command === "status") {
      if (!v.tree) throw new InputError(`status needs --tree DIR (see ${COMMAND} status --help)`);
      const root = airRootAt(v.tree);
      const models = treeStatus(root, modelNames(root), prefixOf(root, checkoutOf(root)?.workTree ?? null));
      if (v.html !== void 0) writeFleetPage(v.html, models, `${LLMS} of ${root}`);
      out.write(v.json ? statusJson(models) : statusMarkdown(models));
      return EXIT.pass;
    }
    return await affectedCommand(v, out, err);
  } catch (e) {
    const code = e instanceof GateError ? e.exitCode : EXIT.infra;
    err.write(`npu-block-gate: ${code === EXIT.input ? "error" : "error (infrastructure)"}: ${oneLine(e)}
`);
    return code;
  }
}
async function affectedCommand(v, out, err) {
  const sources = [v.base !== void 0, !!v.changed?.length, v["changed-from"] !== void 0].filter(Boolean).length;
  if (sources !== 1) throw new InputError(`affected needs exactly one of --base REV, --changed FILE or --changed-from LIST (see ${COMMAND} affected --help)`);
  if (v.head !== void 0 && v.base === void 0) throw new InputError("--head goes with --base");
  if (v.json && v.markdown) throw new InputError("--json and --markdown exclude each other");
  const root = airRootAt(v.tree ?? ".");
  const top = checkoutOf(root);
  let changed;
  if (v.base !== void 0) {
    if (!top) throw new InputError("--base needs a git checkout (use --changed or --changed-from otherwise)", root);
    const d = changedBetween(top, v.base, v.head ?? "HEAD");
    if (d.note) err.write(`npu-block-gate: note: ${d.note}
`);
    changed = d.files;
  } else if (v.changed?.length) changed = v.changed;
  else {
    const from = v["changed-from"];
    changed = from === "-" ? parseFileList(readFileSync(0, "utf8")) : readFileList(from);
  }
  const runners = parseLabels(v.runners ?? []);
  const log = stderrLog(void 0, (s) => err.write(s));
  const names = modelNames(root);
  log.step(`affected: planning ${names.length} model dirs of ${root} for ${changed.length} changed file${changed.length === 1 ? "" : "s"}`);
  const facts = await planFacts(root, names, {
    python: v.python ?? null,
    timeoutSec: v.timeout !== void 0 ? parseTimeout(v.timeout, "--timeout") : null,
    log
  });
  const prefix = prefixOf(root, top?.workTree ?? null);
  const all = v.base !== void 0 && top ? await planWithBase({ top, airRoot: root, prefix, base: v.base, head: v.head ?? "HEAD", changed, facts }, { python: v.python ?? null, timeoutSec: v.timeout !== void 0 ? parseTimeout(v.timeout, "--timeout") : null, log }) : facts;
  const a = affected(all, changed, prefix);
  const limit = matrixLimitNote(legCount(a, runners));
  if (limit) err.write(`npu-block-gate: warning: ${limit}
`);
  out.write(v.json ? affectedJson(a, runners) : v.markdown ? affectedMarkdown(a, runners) : affectedTerminal(a));
  return EXIT.pass;
}
export {
  fleetMain
};
