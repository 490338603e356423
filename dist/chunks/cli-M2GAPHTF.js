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
  readFileList
} from "./chunk-MGX45QUS.js";
import {
  parseTimeout
} from "./chunk-3T7MJDUQ.js";
import {
  stderrLog
} from "./chunk-N7GSAKQW.js";
import {
  COMMAND,
  fmtCos,
  markdownTable,
  readDocs,
  readHistory,
  readTodo
} from "./chunk-W6AT2A2N.js";
import {
  EXIT,
  GateError,
  InputError,
  cell,
  code,
  generationName,
  oneLine
} from "./chunk-FN2RAJJI.js";
import "./chunk-A6YGPO6E.js";

// src/fleet/cli.ts
import { parseArgs } from "node:util";
import { readFileSync } from "node:fs";

// src/fleet/status.ts
import { join } from "node:path";
var STATUS_SCHEMA = "npu-block-gate/status";
var TREND_RUNS = 5;
var num = (x) => Number.isFinite(x) ? x : null;
function generationStatus(npu, rows) {
  const order = rows.map((r, i) => ({ r, i })).sort((a, b) => a.r.date < b.r.date ? -1 : a.r.date > b.r.date ? 1 : a.i - b.i).map((x) => x.r);
  const last = order[order.length - 1];
  const same = order.filter((r) => r.prompt === last.prompt).slice(-TREND_RUNS);
  const trend = same.map((r) => num(r.minCosine));
  const first = trend.find((x) => x !== null) ?? null;
  const end = trend[trend.length - 1];
  return {
    npu,
    outcome: last.outcome,
    date: last.date,
    commit: last.commit,
    prompt: last.prompt,
    cosine: num(last.cosine),
    min_cosine: num(last.minCosine),
    threshold: num(last.threshold),
    trend,
    change: same.length > 1 && first !== null && end !== null ? end - first : null,
    runs: rows.length
  };
}
function modelStatus(airRoot, name, prefix = "") {
  const model = [prefix, LLMS, name].filter(Boolean).join("/");
  const base = { name, model, phase2_done: null, phase2_checkbox: null, generations: [], blockers: [], problem: null };
  try {
    const docs = readDocs(join(airRoot, LLMS, name));
    const todo = readTodo(docs.todo);
    const history = readHistory(docs.phase2, docs.phase2Path);
    const byNpu = /* @__PURE__ */ new Map();
    for (const h of history) byNpu.set(h.npu, [...byNpu.get(h.npu) ?? [], h]);
    const generations = [...byNpu].map(([npu, rows]) => generationStatus(npu, rows)).sort((a, b) => a.npu < b.npu ? -1 : a.npu > b.npu ? 1 : 0);
    const done = generations.length ? generations.every((g) => g.outcome === "PASS") : todo.phase2Done;
    return { ...base, phase2_done: done, phase2_checkbox: todo.phase2Done, blockers: todo.blockers, generations };
  } catch (e) {
    return { ...base, problem: oneLine(e) };
  }
}
function treeStatus(airRoot, names, prefix = "") {
  return names.map((n) => modelStatus(airRoot, n, prefix));
}
function statusJson(models) {
  return JSON.stringify({ schema: STATUS_SCHEMA, schema_version: 1, models }, null, 2) + "\n";
}
var ARROW = (d) => d === null ? "" : d > 1e-4 ? " \u2191" : d < -1e-4 ? " \u2193" : " \u2192";
function trendText(g) {
  const vals = g.trend.map((x) => x === null ? "n/a" : x.toFixed(4));
  return `${vals.join(" \u2192 ")}${ARROW(g.change)}${g.change !== null ? ` (${g.change >= 0 ? "+" : ""}${g.change.toFixed(4)})` : ""}`;
}
var VERDICT = { PASS: "\u2705 PASS", FAIL: "\u274C FAIL", ERROR: "\u26A0\uFE0F ERROR" };
function statusMarkdown(models) {
  const rows = [["model", "NPU", "last verdict", "when", "commit", "per-pos min (threshold)", `trend (last ${TREND_RUNS} runs)`, "Phase 2", "open blockers"]];
  const done = (m) => m.phase2_done === null ? "?" : m.phase2_done ? "[x]" : "[ ]";
  const blockers = (m) => m.blockers.length ? m.blockers.map((b) => cell(b, 200)).join("<br>") : "none";
  let recorded = 0;
  for (const m of models) {
    const name = code(m.name, { inTable: true, max: 64 });
    if (m.problem) {
      rows.push([name, "", "\u26A0\uFE0F unreadable", "", "", "", "", done(m), cell(m.problem, 300)]);
      continue;
    }
    if (!m.generations.length) {
      rows.push([name, "", "never recorded", "", "", "", "", done(m), blockers(m)]);
      continue;
    }
    recorded++;
    m.generations.forEach((g, i) => rows.push([
      i === 0 ? name : "",
      cell(generationName(g.npu), 40),
      VERDICT[g.outcome] ?? cell(g.outcome, 20),
      /^\d{4}-\d{2}-\d{2}$/.test(g.date) ? g.date : cell(g.date, 20),
      code(g.commit, { inTable: true, max: 16 }),
      `${g.min_cosine === null ? "n/a" : fmtCos(g.min_cosine)} (${g.threshold ?? "n/a"})`,
      trendText(g),
      i === 0 ? done(m) : "",
      i === 0 ? blockers(m) : ""
    ]));
  }
  const failing = models.filter((m) => m.generations.some((g) => g.outcome === "FAIL")).length;
  return [
    "## Phase 2 status",
    "",
    `${models.length} model dirs; ${recorded} with a recorded result; ${failing} failing on at least one NPU generation.`,
    "",
    markdownTable(rows),
    ""
  ].join("\n");
}

// src/fleet/cli.ts
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
var STATUS_HELP = `Usage: ${COMMAND} status --tree DIR [--json]

The tree's Phase 2 status from every model dir's phase2_block.md history and TODO.md: per model
and NPU generation the last verdict, when, at which commit, the per-position min against its
threshold and its trend over the last runs on that prompt, the Phase 2 checkbox and the open
blockers. Reads documents only. Markdown by default; --json for scripts.

Exit codes: 0 answered, 2 usage or bad input (not an mlir-air tree).
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
  python: { type: "string" },
  timeout: { type: "string" },
  help: { type: "boolean", short: "h" }
};
var ALLOWED = {
  affected: ["tree", "base", "head", "changed", "changed-from", "runners", "json", "markdown", "python", "timeout", "help"],
  status: ["tree", "json", "help"]
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
      out.write(v.json ? statusJson(models) : statusMarkdown(models));
      return EXIT.pass;
    }
    return await affectedCommand(v, out, err);
  } catch (e) {
    const code2 = e instanceof GateError ? e.exitCode : EXIT.infra;
    err.write(`npu-block-gate: ${code2 === EXIT.input ? "error" : "error (infrastructure)"}: ${oneLine(e)}
`);
    return code2;
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
  AFFECTED_HELP,
  STATUS_HELP,
  fleetMain
};
