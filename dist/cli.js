#!/usr/bin/env node
import { createRequire as __nbgCreateRequire } from 'node:module'; const require = __nbgCreateRequire(import.meta.url);
import {
  check,
  errorReport,
  planModel
} from "./chunks/chunk-AF6PDVLF.js";
import "./chunks/chunk-HNFTTV67.js";
import {
  INJECTIONS,
  MAX_TIMEOUT_SECONDS,
  PLAN_SANITY_TIMEOUT_SECONDS,
  PLAN_TIMEOUT_SECONDS,
  TWIN_EPS,
  TWIN_PRECISIONS,
  defaultRunDirName,
  parseChoice,
  parseCommit,
  parseInject,
  parsePositions,
  parsePromptStyle,
  parseThreshold,
  parseTimeout
} from "./chunks/chunk-4JVOGVR5.js";
import {
  stderrLog
} from "./chunks/chunk-N7GSAKQW.js";
import {
  COMMAND,
  FOREIGN_STALE_MS,
  ProbeInterrupted,
  SQNR_GOOD_DB,
  TOOL,
  fmtBudget,
  fmtCos,
  fmtDb,
  fmtRatio,
  fmtRun,
  fmtSci,
  fmtSqnr,
  formatThreshold,
  isolationText,
  toJson
} from "./chunks/chunk-AEVRNM6T.js";
import {
  EXIT,
  GateError,
  InputError,
  errnoWords,
  logLine,
  oneLine,
  parseEnvNames,
  plain
} from "./chunks/chunk-7HMQRJMS.js";
import "./chunks/chunk-A6YGPO6E.js";

// src/cli.ts
import { parseArgs } from "node:util";
import { resolve, basename } from "node:path";
import { existsSync, writeSync } from "node:fs";

// src/report/terminal.ts
function f(v, max = 120) {
  return plain(v, max).replace(/\s*\n\s*/g, " ");
}
function arr(v) {
  return Array.isArray(v) ? v : [];
}
function pad(rows) {
  const w = rows[0].map((_, c) => Math.max(...rows.map((r) => (r[c] ?? "").length)));
  return rows.map((r) => r.map((s, c) => c === r.length - 1 ? s : s.padEnd(w[c])).join("  ").trimEnd());
}
function renderTerminal(r, o = {}) {
  const text = logLine(terminalLines(r).join("\n"));
  return o.color ? colored(text) : text;
}
var SGR = { green: "\x1B[32m", red: "\x1B[31m", yellow: "\x1B[33m", bold: "\x1B[1m", reset: "\x1B[0m" };
var paint = (s, ...codes) => `${codes.join("")}${s}${SGR.reset}`;
function colored(text) {
  const word = { PASS: SGR.green, FAIL: SGR.red, ERROR: SGR.red, SKIP: SGR.yellow };
  return text.split("\n").map((l, i) => {
    if (i === 0) return l.replace(/^(PASS|FAIL|ERROR)\b/, (w) => paint(w, SGR.bold, word[w]));
    if (/^ {2}G\d /.test(l)) return l.replace(/(PASS|FAIL|SKIP)$/, (w) => paint(w, word[w]));
    if (/^ {2}warning: /.test(l)) return l.replace(/^( {2})(warning:)/, (_m, a, w) => `${a}${paint(w, SGR.yellow)}`);
    if (/^ {4}\d{2} .* (UNDER|ERROR)$/.test(l)) return l.replace(/(UNDER|ERROR)$/, (w) => paint(w, SGR.red));
    return l;
  }).join("\n");
}
function wantsColor(stream, env = process.env) {
  return !!stream.isTTY && !env.NO_COLOR && env.TERM !== "dumb";
}
var sqnr = (r, db) => r.outcome === "pass" ? fmtDb(db) : fmtSqnr(db, SQNR_GOOD_DB);
var hint = (h) => h ? `: likely ${f(h.cause)}; ${f(h.where)}` : "";
var low = (x) => Math.min(x.wholeCosine, x.perPositionMin);
function namedText(n) {
  const where = [n.step ? f(n.step, 40) : "", n.producedBy ? `written by ${f(n.producedBy, 64)}` : ""].filter(Boolean).join(", ");
  return `${f(n.name, 64)}${where ? ` (${where})` : ""}, cosine ${fmtCos(n.wholeCosine)}, per-position min ${fmtCos(n.perPositionMin)}`;
}
function byPosition(row) {
  const { bucket, points } = row.profile;
  const ranges = Math.min(8, points.length);
  const per = Math.ceil(points.length / ranges);
  const parts = [];
  for (let i = 0; i < points.length; i += per) {
    const chunk = points.slice(i, i + per);
    const lo = chunk.some(Number.isNaN) ? NaN : Math.min(...chunk);
    const start = i * bucket;
    const end = Math.min(row.rows, (i + chunk.length) * bucket) - 1;
    parts.push(`${fmtRun(start, end)} ${fmtCos(lo)}`);
  }
  return parts.join(", ");
}
function step2SanityLines(r) {
  const s = r.step2_sanity;
  if (!s) return [];
  if (s.skipped) return ["", `  step 2 sanity (padded vs original on the CPU): not run: ${f(s.skipped, 300)}`];
  const o = s.original ?? {};
  const p = s.padded ?? {};
  const out = ["", `  step 2 sanity (padded vs original on the CPU, ${f(s.dtype, 16)}, gate >= ${s.gate}; emb ${o.emb_dim}->${p.emb_dim}, hidden ${o.hidden_dim}->${p.hidden_dim}, heads ${o.n_heads}->${p.n_heads}, group ${o.group_size}->${p.group_size}):`];
  const rows = [["padding", "ffn_out cosine", "logits cosine", ""]];
  for (const x of arr(s.rows)) {
    if (x.skipped) rows.push([f(x.label, 90), "-", "-", "not run"]);
    else rows.push([f(x.label, 90), fmtCos7(x.ffn_out_cosine), fmtCos7(x.logits_cosine), x.pass ? "PASS" : "FAIL"]);
  }
  out.push(...pad(rows).map((l) => `    ${l}`));
  for (const x of arr(s.rows).filter((y) => y.skipped)) out.push(`  not run: ${f(x.label, 90)}: ${f(x.skipped, 300)}`);
  if (s.why) out.push(`  why the reindexing matters: ${f(s.why, 400)}`);
  return out;
}
function fmtCos7(v) {
  return typeof v === "number" && Number.isFinite(v) ? v.toFixed(7) : "-";
}
function lensLines(r) {
  const lens = r.lens;
  if (!lens) return [];
  if (!lens.rows.length && r.outcome === "pass") return [];
  const out = [""];
  if (!lens.rows.length) {
    out.push(`  lens: no boundary pairs to judge${lens.unpaired.length ? ` (${lens.unpaired.length} with one side only: ${f(lens.unpaired[0].reason)})` : ""}`);
    return out;
  }
  const ex = lens.budget?.expected ?? null;
  const budgetHead = !lens.budget ? "" : ex ? `; vs FP32: error(NPU vs FP32) / error(HF bf16 vs FP32), ${lens.budget.measure}; expected: error(hardware twins, precision ${f(ex.precision, 20)}, vs FP32) / error(HF bf16 vs FP32); NPU/exp: error(NPU) / error(hardware twins), bar ${ex.bar}x` : `; vs FP32: error(NPU vs FP32) / error(HF bf16 vs FP32), ${lens.budget.measure}, bar ${lens.budget.bar}x`;
  out.push(`  lens (every boundary inside block 0, ${lens.emulated ? "emulated NPU" : "NPU"} vs reference, ${lens.rows[0].rows} real rows; informational, threshold ${formatThreshold(lens.threshold)}${budgetHead}):`);
  const n = lens.firstBelow;
  const o = lens.onset;
  const onset = o && (!n || o.order < n.order) ? o.order : null;
  const budget = !!lens.budget;
  const cols = budget ? ex ? ["vs FP32", "expected", "NPU/exp"] : ["vs FP32"] : [];
  const cells = (b) => !budget ? [] : !b ? cols.map(() => "") : ex ? [fmtBudget(b.ratio), b.expectedRatio !== void 0 ? fmtBudget(b.expectedRatio) : "", b.vsExpected !== void 0 ? fmtBudget(b.vsExpected) : ""] : [fmtBudget(b.ratio)];
  const rows = [["#", "boundary", "step", "cosine", "per-pos min", "norm ratio", ...cols, "max_abs", ""]];
  for (const x of lens.rows.slice(0, 64)) {
    if (x.error) {
      rows.push([String(x.order).padStart(2, "0"), f(x.name, 64), f(x.step ?? "", 20), "-", "-", "-", ...cols.map(() => "-"), "-", "ERROR"]);
      continue;
    }
    const flags = [x.below ? "UNDER" : x.order === onset ? "onset" : "", lens.scale?.order === x.order ? "SCALE" : "", x.budget?.over ? "ERR" : ""].filter(Boolean).join(" ");
    rows.push([
      String(x.order).padStart(2, "0"),
      f(x.name, 64),
      f(x.step ?? "", 20),
      fmtCos(x.wholeCosine),
      fmtCos(x.perPositionMin),
      fmtRatio(x.normRatio),
      ...cells(x.budget),
      fmtSci(x.maxAbs),
      flags
    ]);
  }
  out.push(...pad(rows).map((l) => `    ${l}`));
  for (const x of lens.rows.filter((y) => y.error).slice(0, 16)) out.push(`  not judged: ${f(x.name, 64)}: ${f(x.error, 300)}`);
  if (n) {
    out.push(`  first boundary under ${formatThreshold(lens.threshold)}: ${namedText(n)}${hint(n.hint)}`);
    if (o && o.order < n.order) out.push(`  the divergence begins earlier, at ${namedText(o)} (under the clean bar ${formatThreshold(lens.cleanBar)})${hint(o.hint)}`);
  } else if (o) {
    out.push(`  every boundary is at or above ${formatThreshold(lens.threshold)}, but a drift begins at ${namedText(o)} (under the clean bar ${formatThreshold(lens.cleanBar)})${hint(o.hint)}`);
  } else out.push(`  every boundary is at or above ${formatThreshold(lens.threshold)}`);
  const sc = lens.scale;
  if (sc) out.push(`  scale: ${f(sc.name, 64)}${sc.step ? ` (${f(sc.step, 40)})` : ""} has norm ratio ${sc.accounted ? `|npu|/|twins| ${fmtRatio(sc.normRatio)} (the tree's RMSNorm eps accounted for; |npu|/|ref| ${fmtRatio(sc.accounted.normRatio)})` : fmtRatio(sc.normRatio)}, off 1 by more than ${sc.bar * 100}% (the first boundary to lose its scale): likely ${f(sc.cause, 300)}`);
  for (const u of lens.unpaired.slice(0, 16)) out.push(`  not judged: ${f(u.name, 64)} (${u.side === "both" ? "different shapes" : `${u.side} side only`}): ${f(u.reason)}`);
  if (r.prompt?.positions) {
    const judged = lens.rows.filter((x) => !x.error);
    const pr = lens.rows.find((x) => x.order === n?.order) ?? [...judged].sort((a, b) => low(a) - low(b))[0];
    if (pr) out.push(`  ${f(pr.name, 64)} by position (lowest per-position cosine in each range): ${byPosition(pr)}`);
  }
  return out;
}
function rerunLines(b) {
  const r = b.rerun;
  if (b.void) return [`  BISECT VOID: ${f(b.void, 600)}`];
  if (!r) return [];
  return [`  re-run: block 0 unswapped under ${f(r.python, 200)} gave back the judged ffn_out ${r.exact ? "bit for bit" : `within tolerance (relative L2 ${fmtSci(r.relL2)} <= ${r.tolerance})`}`];
}
function launchFinding(b) {
  const o = b.launchOffender;
  if (!o) return b.launches?.length && !b.void ? ["  every launch matches its twin"] : [];
  const at = (x) => `${f(x.launch, 64)} (launch ${x.index}), buffer ${f(x.buffer, 64)}${x.stage ? ` (${f(x.stage, 40)})` : ""}, cosine ${fmtCos(x.wholeCosine)}`;
  const c = b.launchCrossing;
  if (c) return [`  the drift starts at ${at(o)}${hint(o.hint)}`, `  it first crosses the threshold at ${at(c)}`];
  return [`  ${o.strength === "diverges" ? "first launch off its twin" : "no launch under the threshold; the first that drifts"}: ${at(o)}${hint(o.hint)}`];
}
function twinsLines(b) {
  const out = ["", `  bisect, launch level (each launch's buffers, ${b.emulated ? "emulated " : ""}NPU vs its CPU twin from the launch's own inputs):`];
  out.push(...rerunLines(b));
  const o = b.launchOffender;
  const rows = [["launch", "ELF", "buffer", "stage", "cosine", "per-pos min", ""]];
  for (const la of (b.launches ?? []).slice(0, 64)) {
    for (const bu of la.buffers.slice(0, 64)) {
      const drifts = !bu.diverges && o?.index === la.index && o.buffer === bu.buffer;
      rows.push([String(la.index), f(la.launch, 64), f(bu.buffer, 64), f(bu.stage, 40), fmtCos(bu.wholeCosine), fmtCos(bu.perPositionMin), bu.diverges ? "OFF" : drifts ? "drifts" : ""]);
    }
  }
  if (rows.length > 1) out.push(...pad(rows).map((l) => `    ${l}`));
  out.push(...launchFinding(b));
  out.push("", "  bisect, swap forward (ffn_out after ELFs 1..i are answered by their twins):");
  const steps = [["step", "ELF", "whole", "per-pos min", "passes"]];
  for (const [i, s] of b.steps.slice(0, 64).entries()) steps.push([String(i + 1), f(s.step, 64), fmtCos(s.wholeCosine), fmtCos(s.perPositionMin), s.fixes ? "yes" : "no"]);
  out.push(...pad(steps).map((l) => `    ${l}`));
  out.push(b.offender ? `  offending ELF (swap forward): ${f(b.offender.step, 64)}` : b.void ? "  (the swap table of a void bisect names nothing)" : `  ${f(b.reason, 400)}`);
  if (b.situation) out.push(`  failure shape: ${f(b.situation.cause)}; ${f(b.situation.where)}`);
  return out;
}
function terminalLines(r) {
  const out = [];
  if (r.outcome === "error") {
    out.push(`ERROR  ${f(r.model.name)}: could not judge (not a FAIL verdict)`, `  ${f(r.error ?? "", 1e3)}`);
    return out;
  }
  out.push(`${r.outcome === "pass" ? "PASS" : "FAIL"}  ${f(r.model.name)}  (head_dim ${r.thresholds.headDim}, per-position threshold ${formatThreshold(r.thresholds.perPosition)}${r.thresholds.overridden ? ", overridden" : ""})${r.emulate ? "  EMULATED" : ""}`);
  if (r.emulate) out.push(`  EMULATED: no NPU ran; the tree's block ran on an emulated NPU (${f(r.emulate.runtime, 120)})${r.emulate.inject ? `, injected bug: ${f(r.emulate.inject, 64)}` : ""}`);
  const pos = r.prompt?.positions;
  if (pos) out.push(`  positions: ${pos.real_len} real tokens (--positions ${pos.requested}: ${f(pos.method, 20)}${pos.set ? ` with ${f(pos.set)}` : ""}, from ${pos.prompt_tokens} prompt tokens)`);
  out.push("");
  const rows = [["gate", "check", "measured", "bar", "result"]];
  for (const g of r.gates) {
    const v = typeof g.value === "number" ? g.id === "G3" ? String(g.value) : fmtCos(g.value) : g.value ?? "";
    rows.push([g.id, g.name, v, g.bar, g.status.toUpperCase()]);
  }
  out.push(...pad(rows).map((l) => `  ${l}`));
  for (const g of r.gates) if (g.status === "fail") out.push(`  ${g.id}: ${g.detail}`);
  const m = r.metrics;
  if (m) {
    const e = m.errors;
    const pp = m.perPosition;
    out.push("");
    out.push(`  per-position cosine  min ${fmtCos(pp.min)}  p5 ${fmtCos(pp.p5)}  median ${fmtCos(pp.median)}  mean ${fmtCos(pp.mean)}  (${m.realLen} real rows of ${m.npuRows})`);
    const rel = `${fmtSci(e.maxRel)}${e.maxRel > 1 ? " (where the reference is near 0)" : ""}`;
    out.push(`  errors (informational)  max_abs ${fmtSci(e.maxAbs)}  mean_abs ${fmtSci(e.meanAbs)}  max_rel ${rel}  mean_rel ${fmtSci(e.meanRel)}  mean_rel_L1 ${fmtSci(e.meanRelL1)}  SQNR ${sqnr(r, e.sqnrDb)}  norm ratio ${fmtRatio(e.normRatio)}`);
    const fb = r.lens?.rows.find((x) => x.name === "ffn_out")?.budget;
    if (fb && r.lens?.budget) {
      const ex = r.lens.budget.expected;
      out.push(fb.vsExpected !== void 0 && ex ? `  error budget vs FP32 (${r.lens.budget.measure})  NPU ${fmtSci(fb.npu)}  HF bf16 ${fmtSci(fb.bf16)}  ratio ${fmtBudget(fb.ratio)}  expected ${fmtBudget(fb.expectedRatio)} (hardware twins ${fmtSci(fb.expected)})  NPU/expected ${fmtBudget(fb.vsExpected)} (bar ${ex.bar}x${fb.over ? ", OVER" : ""})` : `  error budget vs FP32 (${r.lens.budget.measure})  NPU ${fmtSci(fb.npu)}  HF bf16 ${fmtSci(fb.bf16)}  ratio ${fmtBudget(fb.ratio)} (bar ${r.lens.budget.bar}x${fb.over ? ", OVER" : ""})`);
    }
    if (pp.badRuns.length) out.push(`  rows under threshold: ${pp.badRuns.map((b2) => fmtRun(b2.start, b2.end)).join(", ")}${pp.badRuns.some((b2) => b2.end === m.realLen - 1) ? " (tail of the prompt)" : ""}`);
    if (pp.worst.length) out.push(`  worst rows: ${pp.worst.map((w) => `${w.row}=${fmtCos(w.cosine)}`).join(" ")}`);
  }
  for (const w of r.warnings) out.push(`  warning: ${f(w.message, 600)}`);
  out.push(...lensLines(r));
  const b = r.bisect;
  if (b && b.available && b.method === "twins") out.push(...twinsLines(b));
  else if (b) {
    if (!b.available) out.push(`  bisect: unavailable (${f(b.reason)})`);
    else {
      out.push("", "  bisect (one kernel at a time on the CPU):", ...rerunLines(b));
      const rows2 = [["step", "kernel", "whole", "per-pos min", "passes"]];
      for (const s of b.steps.slice(0, 64)) rows2.push([f(s.step, 64), f(s.kernel, 64), fmtCos(s.wholeCosine), fmtCos(s.perPositionMin), s.fixes ? "yes" : "no"]);
      out.push(...pad(rows2).map((l) => `    ${l}`));
      out.push(b.offender ? `  offending boundary: ${f(b.offender.step, 64)} (${f(b.offender.kernel, 64)})${b.offender.hint ? `: likely ${f(b.offender.hint.cause)}; ${f(b.offender.hint.where)}` : ""}` : b.void ? "  (a void bisect names nothing)" : `  ${f(b.reason)}`);
    }
    if (b.situation) out.push(`  failure shape: ${f(b.situation.cause)}; ${f(b.situation.where)}`);
  }
  out.push(...step2SanityLines(r));
  if (r.layers?.length) {
    out.push("", "  every layer (informational):");
    const rows2 = [["layer", "whole", "per-pos min", "max_abs", "SQNR"]];
    for (const l of r.layers) rows2.push([String(l.layer), fmtCos(l.wholeCosine), fmtCos(l.perPositionMin), fmtSci(l.maxAbs), sqnr(r, l.sqnrDb)]);
    out.push(...pad(rows2).map((l) => `    ${l}`));
  }
  if (r.integration) {
    const workarounds = arr(r.integration.workarounds);
    const home = r.integration.defined_in;
    out.push("", `  integration: ${f(r.integration.path, 32)} via ${f(r.integration.entry)}${home?.file ? ` (defined in ${f(home.file)})` : ""}${workarounds.length ? `; workarounds: ${workarounds.slice(0, 20).map((w) => f(w?.id, 64)).join(", ")}` : ""}`);
    const s1 = r.integration.step1;
    if (s1?.path_why) out.push(`  step 1: ${f(s1.path, 32)}: ${f(s1.path_why, 400)}`);
    const breaks = arr(s1?.breaks);
    if (breaks.length) out.push(`  step 1: kernel-first forced by ${breaks.slice(0, 20).map((b2) => `(${f(b2?.rule, 8)}) ${f(b2?.detail)}`).join("; ")}`);
    const unwired = arr(r.integration.coverage?.unwired);
    if (unwired.length) out.push(`  phase 1 coverage: ${unwired.length} verified kernel row(s) naming this model are not launched by the block`);
  }
  for (const d of arr(r.defaults?.differs).slice(0, 20)) out.push(`  differs from make diagnosis: ${f(d)}`);
  out.push(`  probe isolation: ${isolationText(r)}`);
  if (r.docs) out.push(`  documented: ${r.docs.phase2}${r.docs.changed ? "" : " (unchanged)"}`);
  return out;
}

// src/cli.ts
var FOREIGN_STALE_MIN = FOREIGN_STALE_MS / 6e4;
var HEAD = `npu-block-gate ${TOOL.version}: Phase 2 single-block validation for LLMs on AMD NPUs (Xilinx/mlir-air)`;
var EXITS = "Exit codes: 0 pass, 1 fail (a gate), 2 usage or bad input, 3 infrastructure (could not judge).";
var PLAN_EXITS = "Exit codes: 0 the plan was printed (its last line says whether the model is ready), 2 usage or bad input\n(or a model Phase 2 cannot run on), 3 infrastructure (no Python with numpy, a timeout; --sanity: no torch or no checkpoint).";
var RUN_AS = `From a clone after \`npm ci\`, run it as \`${COMMAND}\`; \`npm link\` (or a global install) also puts
\`npu-block-gate\` itself on your PATH.`;
var HELP = `${HEAD}

Usage:
  ${COMMAND} plan   --model-dir DIR [options]   Steps 1-2 without an NPU: what the run needs, integration path, workarounds
  ${COMMAND} check  --model-dir DIR [options]   run block 0 on the NPU and the HF bf16 reference, judge, document
  ${COMMAND} report --run-dir DIR [options]     judge an existing run dir (no Python needed)
  ${COMMAND} affected [--tree DIR] --base REV | --changed FILE   which model dirs a change affects (a matrix)
  ${COMMAND} status --tree DIR                  the tree's Phase 2 status per model and NPU generation
  ${COMMAND} agent setup|doctor|status|fleet|lock|hooks|drain|undrain|cache ...  runner side (agent --help)
  ${COMMAND} fixture hf-tiny|tree-copy ...      a tiny random checkpoint / a tree copy for check --emulate without an NPU
  ${COMMAND} help [command] | <command> --help | --version

${RUN_AS}
Each command's options: ${COMMAND} <command> --help.
${EXITS}
Gates: G1 whole cosine >= 0.99; G2 per-position min >= T(head_dim) on real tokens (0.99 at 64, 0.98 at 128,
0.97 at 256); G3 no NaN/Inf in the NPU output; G4 result documented in phase2_block.md.
`;
var MODEL_OPTIONS = `  --prompt TEXT          use TEXT as the prompt (default: the one \`make diagnosis\` uses, the Makefile's PROMPT)
  --prompt-style S       base | instruct: use the first prompt of verify/prompts/<S>.txt instead
  --model CHOICE         MODEL_CHOICES key (base, instruct) or HF id (default: make diagnosis's MODEL)
  --cpu-attn, --npu-attn attention on the CPU or the NPU (default: NPU, as make diagnosis)
  --online               allow HuggingFace hub calls (default: offline, the local HF cache only)
  --python P             Python that imports numpy (default: $NPU_BLOCK_GATE_PYTHON, python3, /usr/bin/python3)
  --probe-env NAMES      also pass these environment variables to the probe (comma-separated); it gets an
                         allow-list otherwise: PATH, HOME, locale, PYTHONPATH, LD_LIBRARY_PATH, the HF cache and
                         offline switches, the XRT/mlir-air toolchain's (XILINX*, XRT_*, AIE*, AIR_*, MLIR_*,
                         PEANO_*), and the tree's own knobs that \`plan\` lists under the kernel cache`;
var NUMBERS = "Numbers are decimal (0.98; not 0x1 or 1e-2), as --opt X or --opt=X.";
var PLAN_HELP = `${HEAD}

Usage: ${COMMAND} plan --model-dir DIR [options]
       ${COMMAND} plan --hf-config PATH|ID [--json]

Reads the model dir without importing it (Python + numpy, no NPU, no network, seconds) and prints
the preflight, seed Steps 1-2, Phase 1 coverage, the make-diagnosis defaults and the kernel cache.
It runs outside the probe's sandbox, so never a Python from the tree or the model dir: one found there
(a venv in the tree, PATH or $VIRTUAL_ENV leading into it) is passed over, and --python naming one is
refused; PATH, PYTHONPATH and LD_LIBRARY_PATH lose their entries inside them.
With --hf-config instead, Steps 1 and 2 before the model's code exists, from a config.json alone.

Options:
  --model-dir DIR        the model dir, programming_examples/llms/<model> in an mlir-air tree
  --hf-config PATH|ID    no model dir: an HF config.json (or a model id in the local HF cache): the kernel
                         sequence, Step 1 with its breaks against llama's, Step 2's triggers and the GQA-aware
                         padding plan
  --json                 print the plan as JSON
  --sanity               also run Step 2's padded-vs-original check on the CPU (needs torch and transformers in
                         the probe's Python, and the checkpoint in the HF cache): the GQA-aware reindexed padding,
                         the tree's own padding helper and naive end-padding, each as the cosine of layer-0 ffn_out
                         and of the logits against the original, each PASS or FAIL against the seed's 0.999998
                         (informational: a FAIL is printed, and ok is false in --json; the exit code stays 0)
${MODEL_OPTIONS}
  --timeout SECONDS      stop after this long (at most ${MAX_TIMEOUT_SECONDS}; default ${PLAN_TIMEOUT_SECONDS}, with --sanity ${PLAN_SANITY_TIMEOUT_SECONDS})

A model Phase 2 cannot run on is one line and exit 2.
${PLAN_EXITS}
`;
var CHECK_HELP = `${HEAD}

Usage: ${COMMAND} check --model-dir DIR [options]

Runs block 0 on the NPU and the HF bf16 reference (one Python process), judges layer-0 ffn_out
against G1-G3, and records the result in <model>/docs/development_progress/phase2_block.md and
<model>/TODO.md (G4). Documents are written only after the verdict, all or none. The lens judges
every boundary inside block 0 (informational: a boundary well under the threshold while ffn_out
passes is a warning); on a failed gate, or when the lens names a boundary, the bisect runs (the
model's hook, or the CPU twins of the real tree's ELFs: the first launch off its twin).

Options:
  --model-dir DIR        the model dir, programming_examples/llms/<model> in an mlir-air tree (required)
${MODEL_OPTIONS}
  --out RUN_DIR          where the run dir goes (default runs/<model>-<UTC time, ms>-<pid>); must be new or empty
  --force                replace the run files in an existing --out (nothing else in it is touched)
  --threshold X          per-position cosine threshold in (0, 1] instead of T(head_dim)
  --timeout SECONDS      stop the probe after this long, at most ${MAX_TIMEOUT_SECONDS} (outcome error, exit 3)
  --no-docs              do not write phase2_block.md / TODO.md (gate G4 is then skipped)
  --break-lock           break at once a documents lock (<model>/.npu-block-gate.lock) left by a run on another
                         host (otherwise stale ${FOREIGN_STALE_MIN} min after it was taken); a live run on this host is waited for,
                         a dead one's lock is broken at once without it
  --no-bisect            on a failed gate, do not bisect kernel by kernel
  --layers               also compare every layer (informational table, as make diagnosis; runs the full prefill)
  --positions N          run block 0 on N real tokens (the prompt continued with the prompt set, repeated as
                         needed; at most the compiled seq_len, 2048 in production): position-dependent bugs show
  --no-boundaries        skip the lens (every boundary inside block 0, NPU against HF; informational)
  --emulate              no NPU: the tree's own block on the probe's emulated runtime (CPU twins of the ELFs,
                         models of scripts/probe/elf_boundaries.json; dimensions from the HF checkpoint); for
                         tests: every report marks the run EMULATED, and TODO.md is left as it is
  --inject BUG           with --emulate: one named bug in the emulated NPU: ${INJECTIONS.join(", ")}
  --twin-precision P     how the CPU twins round (the emulated NPU's and the bisect's): hw (default: bf16 plus the
                         BFP16 operand cast on the matmuls the tree compiles with bfp16=True), bf16 (where the
                         registry's kernels round; 'hardware' is its older name) or fp32 (float32 inside a launch)
  --twin-eps E           with --emulate: the twins' RMSNorm eps, tree (the ELFs' own, default) or config (the
                         checkpoint's rms_norm_eps): does an eps explain a scale warning?
  --no-cache             compile every kernel; do not restore or store the kernel cache
  --cache-dir DIR        kernel cache root (default $NPU_BLOCK_GATE_CACHE_DIR or ~/.cache/npu-block-gate)
  --commit SHA           key the history row by SHA: hex, 7-64 digits, or "uncommitted" (default: the tree's git HEAD)
  --json                 print report.json to stdout instead of the table

${NUMBERS}
${EXITS}
`;
var REPORT_HELP = `${HEAD}

Usage: ${COMMAND} report --run-dir DIR [options]

Judges an existing run dir (from check, or the Action's probe mode) without Python: probe.json is
validated whole, the tensors must be regular files inside the run dir, then the gates, report.json,
report.md, report.html (the run at a glance: one self-contained page) and, with a model dir, the
documents (all or none).

Options:
  --run-dir DIR          the run dir to judge (required)
  --model-dir DIR        write the documents into this model dir (default: the one recorded, when present)
  --threshold X          per-position cosine threshold in (0, 1] instead of T(head_dim)
  --no-docs              do not write phase2_block.md / TODO.md (gate G4 is then skipped)
  --break-lock           break at once a documents lock (<model>/.npu-block-gate.lock) left by a run on another
                         host (otherwise stale ${FOREIGN_STALE_MIN} min after it was taken); a live run on this host is waited for,
                         a dead one's lock is broken at once without it
  --commit SHA           key the history row by SHA: hex, 7-64 digits, or "uncommitted"
  --json                 print report.json to stdout instead of the table

${NUMBERS}
${EXITS}
`;
var COMMAND_HELP = { check: CHECK_HELP, report: REPORT_HELP, plan: PLAN_HELP };
var OPTIONS = {
  "model-dir": { type: "string" },
  "hf-config": { type: "string" },
  "run-dir": { type: "string" },
  "prompt-style": { type: "string" },
  prompt: { type: "string" },
  python: { type: "string" },
  out: { type: "string" },
  threshold: { type: "string" },
  timeout: { type: "string" },
  commit: { type: "string" },
  force: { type: "boolean" },
  "no-docs": { type: "boolean" },
  "break-lock": { type: "boolean" },
  "no-bisect": { type: "boolean" },
  layers: { type: "boolean" },
  positions: { type: "string" },
  "no-boundaries": { type: "boolean" },
  emulate: { type: "boolean" },
  inject: { type: "string" },
  "twin-precision": { type: "string" },
  "twin-eps": { type: "string" },
  "no-cache": { type: "boolean" },
  "cache-dir": { type: "string" },
  "probe-env": { type: "string" },
  model: { type: "string" },
  "cpu-attn": { type: "boolean" },
  "npu-attn": { type: "boolean" },
  online: { type: "boolean" },
  json: { type: "boolean" },
  sanity: { type: "boolean" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean" }
};
var ALLOWED = {
  check: ["model-dir", "prompt-style", "prompt", "python", "probe-env", "out", "force", "threshold", "timeout", "commit", "no-docs", "break-lock", "no-bisect", "no-cache", "cache-dir", "layers", "positions", "no-boundaries", "emulate", "inject", "twin-precision", "twin-eps", "model", "cpu-attn", "npu-attn", "online", "json", "help"],
  plan: ["model-dir", "hf-config", "prompt-style", "prompt", "python", "probe-env", "model", "cpu-attn", "npu-attn", "online", "timeout", "json", "sanity", "help"],
  report: ["run-dir", "model-dir", "threshold", "commit", "no-docs", "break-lock", "json", "help"]
};
function joinNegativeValues(argv) {
  const out = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const name = a.startsWith("--") && !a.includes("=") ? a.slice(2) : null;
    const next = argv[i + 1];
    if (name && OPTIONS[name]?.type === "string" && next !== void 0 && /^-(\d|\.\d)/.test(next)) {
      out.push(`${a}=${next}`);
      i++;
    } else out.push(a);
  }
  return out;
}
function parseCli(argv) {
  let parsed;
  try {
    parsed = parseArgs({ args: joinNegativeValues(argv), options: OPTIONS, allowPositionals: true, strict: true });
  } catch (e) {
    throw new InputError(`${oneLine(e).replace(/^TypeError \[[A-Z_]+\]: /, "")} (see ${COMMAND} --help)`);
  }
  const values = parsed.values;
  const [command = values.version ? "version" : "help", ...rest] = parsed.positionals;
  if (command === "help" || command === "version") return { command, values, topic: rest[0] };
  if (!(command in ALLOWED)) throw new InputError(`unknown command ${JSON.stringify(command)} (commands: plan, check, report, agent, help)`);
  if (rest.length) throw new InputError(`unexpected argument ${JSON.stringify(rest[0])} (see ${COMMAND} ${command} --help)`);
  for (const k of Object.keys(values)) {
    if (!ALLOWED[command].includes(k) && k !== "version") throw new InputError(`option --${k} does not apply to ${command} (see ${COMMAND} ${command} --help)`);
  }
  return { command, values };
}
var PATH_OPTIONS = ["model-dir", "out", "run-dir", "cache-dir", "python"];
function checkUtf8Paths(v) {
  for (const k of PATH_OPTIONS) {
    const p = v[k];
    if (p?.includes("\uFFFD") && !existsSync(p)) {
      throw new InputError(`--${k}: the path is not valid UTF-8 (each byte that is not reads as U+FFFD here, so it would name another file); rename it, or pass a symlink to it whose name is UTF-8`, p);
    }
  }
}
function planFrom(command, v, now = /* @__PURE__ */ new Date()) {
  checkUtf8Paths(v);
  if (command === "plan" && v["hf-config"] !== void 0 && v["model-dir"] !== void 0) throw new InputError("plan takes --model-dir DIR or --hf-config PATH|ID, not both");
  if ((command === "check" || command === "plan" && v["hf-config"] === void 0) && !v["model-dir"]) throw new InputError(`${command} needs --model-dir DIR${command === "plan" ? " or --hf-config PATH|ID" : ""} (see ${COMMAND} ${command} --help)`);
  if (v["cpu-attn"] && v["npu-attn"]) throw new InputError("--cpu-attn and --npu-attn exclude each other");
  if (command === "report" && !v["run-dir"]) throw new InputError(`report needs --run-dir DIR (see ${COMMAND} report --help)`);
  if (v.inject !== void 0 && !v.emulate) throw new InputError("--inject needs --emulate (bugs are injected into the emulated NPU only)");
  if (v["twin-eps"] !== void 0 && !v.emulate) throw new InputError("--twin-eps needs --emulate (it sets the emulated NPU's RMSNorm eps)");
  const modelDir = v["model-dir"] ?? null;
  const runDir = command === "report" ? v["run-dir"] : v.out ?? defaultRunDirName(basename(resolve(modelDir ?? "hf-config")), now);
  return {
    mode: command === "report" ? "report" : "full",
    modelDir,
    promptStyle: v["prompt-style"] !== void 0 ? parsePromptStyle(v["prompt-style"], "--prompt-style") : null,
    prompt: v.prompt ?? null,
    model: v.model ?? null,
    cpuAttn: v["cpu-attn"] ? true : v["npu-attn"] ? false : null,
    online: !!v.online,
    ...command === "plan" && v.sanity ? { sanity: true } : {},
    ...command === "plan" && v["hf-config"] !== void 0 ? { hfConfig: v["hf-config"] } : {},
    python: v.python ?? null,
    ...v["probe-env"] !== void 0 ? { probeEnvNames: parseProbeEnv(v["probe-env"]) } : {},
    runDir,
    threshold: v.threshold !== void 0 ? parseThreshold(v.threshold, "--threshold") : null,
    writeDocs: !v["no-docs"],
    ...v["break-lock"] ? { breakLock: true } : {},
    bisect: !v["no-bisect"],
    layers: !!v.layers,
    boundaries: !v["no-boundaries"],
    positions: v.positions !== void 0 ? parsePositions(v.positions, "--positions") : null,
    emulate: !!v.emulate,
    inject: v.inject !== void 0 ? parseInject(v.inject, "--inject") : null,
    twinPrecision: v["twin-precision"] !== void 0 ? parseChoice(v["twin-precision"], "--twin-precision", TWIN_PRECISIONS) : null,
    twinEps: v["twin-eps"] !== void 0 ? parseChoice(v["twin-eps"], "--twin-eps", TWIN_EPS) : null,
    cache: command === "check" && !v["no-cache"],
    cacheDir: v["cache-dir"] ?? null,
    cacheWrite: true,
    timeoutSec: v.timeout !== void 0 ? parseTimeout(v.timeout, "--timeout") : command === "plan" ? v.sanity ? PLAN_SANITY_TIMEOUT_SECONDS : PLAN_TIMEOUT_SECONDS : null,
    commit: v.commit !== void 0 ? parseCommit(v.commit, "--commit") : null,
    force: command === "check" ? !!v.force : void 0
  };
}
function parseProbeEnv(v) {
  const { names, bad } = parseEnvNames(v);
  if (bad.length) throw new InputError(`--probe-env takes environment variable names separated by commas, got ${JSON.stringify(bad[0].slice(0, 60))}`);
  return names;
}
async function printPlan(plan, json, out, err) {
  try {
    out.write(await planModel(plan, json, stderrLog(void 0, (s) => err.write(s))));
    return EXIT.pass;
  } catch (e) {
    const stdout = e.stdout;
    if (e instanceof InputError && stdout) {
      err.write(`npu-block-gate: error: ${oneLine(e)}
`);
      out.write(stdout);
      return EXIT.input;
    }
    throw e;
  }
}
async function main(argv, out = process.stdout, err = process.stderr) {
  let json = false;
  let plan = null;
  if (argv[0] === "agent" || argv[0] === "help" && argv[1] === "agent") {
    const { agentMain } = await import("./chunks/cli-QLAPQMK4.js");
    return agentMain(argv[0] === "agent" ? argv.slice(1) : ["--help"], out, err);
  }
  if (argv[0] === "fixture" || argv[0] === "help" && argv[1] === "fixture") {
    const { fixtureMain } = await import("./chunks/cli-LYBFC5YB.js");
    return fixtureMain(argv[0] === "fixture" ? argv.slice(1) : ["--help"], out, err);
  }
  const fleet = argv[0] === "help" ? argv[1] : argv[0];
  if (fleet === "affected" || fleet === "status") {
    const { fleetMain } = await import("./chunks/cli-KLZGUA6B.js");
    return fleetMain(fleet, argv[0] === "help" ? ["--help"] : argv.slice(1), out, err);
  }
  try {
    const { command, values, topic: helpTopic } = parseCli(argv);
    if (command === "version") {
      out.write(`${TOOL.version}
`);
      return EXIT.pass;
    }
    if (command === "help" || values.help) {
      const topic = command === "help" ? helpTopic : command;
      out.write(COMMAND_HELP[topic ?? ""] ?? HELP);
      return EXIT.pass;
    }
    json = !!values.json;
    plan = planFrom(command, values);
    if (command === "plan") return await printPlan(plan, json, out, err);
    const log = stderrLog(void 0, (s) => err.write(s));
    const result = await check(plan, { log });
    if (result.docsError) err.write(`npu-block-gate: error: ${oneLine(result.docsError)} (the verdict stands; the documents were not written)
`);
    out.write(json ? result.json : `
${renderTerminal(result.report, { color: wantsColor(out) })}
  run dir: ${result.runDir}
`);
    return result.exitCode;
  } catch (e) {
    const code = e instanceof GateError ? e.exitCode : EXIT.infra;
    const kind = code === EXIT.input ? "error" : "error (infrastructure, not a verdict)";
    err.write(`npu-block-gate: ${kind}: ${oneLine(e)}
`);
    if (json && plan) out.write(toJson(errorReport(plan, oneLine(e), code)));
    if (!(e instanceof GateError) && process.env.NPU_BLOCK_GATE_DEBUG) err.write(`${e.stack}
`);
    if (e instanceof ProbeInterrupted) return e.status;
    return code;
  }
}
var invoked = process.argv[1] ? resolve(process.argv[1]) : "";
if (invoked.endsWith("cli.js") || invoked.endsWith("cli.ts") || basename(invoked) === "npu-block-gate") {
  let lost = null;
  process.stdout.on("error", (e) => {
    if (e.code !== "EPIPE") lost ??= e;
  });
  process.stderr.on("error", () => void 0);
  process.on("exit", () => {
    if (!lost) return;
    try {
      writeSync(2, `npu-block-gate: error (infrastructure, not a verdict): the output could not be written to stdout: ${errnoWords(lost.code)} (${lost.code ?? lost.message}); what it printed there was lost
`);
    } catch {
    }
    if (!process.exitCode) process.exitCode = EXIT.infra;
  });
  main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
export {
  main,
  parseCli,
  planFrom
};
