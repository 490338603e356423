// The `npu-block-gate` command. Flags build the same Plan the Action builds from its inputs.
import { parseArgs } from 'node:util';
import { resolve, basename } from 'node:path';
import { existsSync, writeSync } from 'node:fs';
import { EXIT, GateError, errnoWords, oneLine, InputError, type ExitCode } from './errors.ts';
import { ProbeInterrupted } from './probe/run.ts';
import { parseEnvNames } from './probe/env.ts';
import { parsePromptStyle, parseThreshold, parseTimeout, parseCommit, parsePositions, parseInject, parseChoice, defaultRunDirName, INJECTIONS, TWIN_PRECISIONS, TWIN_EPS, MAX_TIMEOUT_SECONDS, PLAN_TIMEOUT_SECONDS, PLAN_SANITY_TIMEOUT_SECONDS, type Plan } from './plan.ts';
import { check, errorReport, planModel, type CheckResult } from './check/index.ts';
import { COMMAND, TOOL } from './tool.ts';
import { stderrLog } from './log.ts';
import { renderTerminal, wantsColor } from './report/terminal.ts';
import { toJson } from './report/json.ts';
import { FOREIGN_STALE_MS } from './fs/lock.ts';

const FOREIGN_STALE_MIN = FOREIGN_STALE_MS / 60_000;

const HEAD = `npu-block-gate ${TOOL.version}: Phase 2 single-block validation for LLMs on AMD NPUs (Xilinx/mlir-air)`;
const EXITS = 'Exit codes: 0 pass, 1 fail (a gate), 2 usage or bad input, 3 infrastructure (could not judge).';
/** plan judges nothing: no gate can fail it. */
const PLAN_EXITS = 'Exit codes: 0 the plan was printed (its last line says whether the model is ready), 2 usage or bad input\n(or a model Phase 2 cannot run on), 3 infrastructure (no Python with numpy, a timeout; --sanity: no torch or no checkpoint).';
const RUN_AS = `From a clone after \`npm ci\`, run it as \`${COMMAND}\`; \`npm link\` (or a global install) also puts
\`npu-block-gate\` itself on your PATH.`;

const HELP = `${HEAD}

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

const MODEL_OPTIONS = `  --prompt TEXT          use TEXT as the prompt (default: the one \`make diagnosis\` uses, the Makefile's PROMPT)
  --prompt-style S       base | instruct: use the first prompt of verify/prompts/<S>.txt instead
  --model CHOICE         MODEL_CHOICES key (base, instruct) or HF id (default: make diagnosis's MODEL)
  --cpu-attn, --npu-attn attention on the CPU or the NPU (default: NPU, as make diagnosis)
  --online               allow HuggingFace hub calls (default: offline, the local HF cache only)
  --python P             Python that imports numpy (default: $NPU_BLOCK_GATE_PYTHON, python3, /usr/bin/python3)
  --probe-env NAMES      also pass these environment variables to the probe (comma-separated); it gets an
                         allow-list otherwise: PATH, HOME, locale, PYTHONPATH, LD_LIBRARY_PATH, the HF cache and
                         offline switches, the XRT/mlir-air toolchain's (XILINX*, XRT_*, AIE*, AIR_*, MLIR_*,
                         PEANO_*), and the tree's own knobs that \`plan\` lists under the kernel cache`;

const NUMBERS = 'Numbers are decimal (0.98; not 0x1 or 1e-2), as --opt X or --opt=X.';

const PLAN_HELP = `${HEAD}

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

const CHECK_HELP = `${HEAD}

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
  --inject BUG           with --emulate: one named bug in the emulated NPU: ${INJECTIONS.join(', ')}
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

const REPORT_HELP = `${HEAD}

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

const COMMAND_HELP: Record<string, string> = { check: CHECK_HELP, report: REPORT_HELP, plan: PLAN_HELP };

const OPTIONS = {
  'model-dir': { type: 'string' },
  'hf-config': { type: 'string' },
  'run-dir': { type: 'string' },
  'prompt-style': { type: 'string' },
  prompt: { type: 'string' },
  python: { type: 'string' },
  out: { type: 'string' },
  threshold: { type: 'string' },
  timeout: { type: 'string' },
  commit: { type: 'string' },
  force: { type: 'boolean' },
  'no-docs': { type: 'boolean' },
  'break-lock': { type: 'boolean' },
  'no-bisect': { type: 'boolean' },
  layers: { type: 'boolean' },
  positions: { type: 'string' },
  'no-boundaries': { type: 'boolean' },
  emulate: { type: 'boolean' },
  inject: { type: 'string' },
  'twin-precision': { type: 'string' },
  'twin-eps': { type: 'string' },
  'no-cache': { type: 'boolean' },
  'cache-dir': { type: 'string' },
  'probe-env': { type: 'string' },
  model: { type: 'string' },
  'cpu-attn': { type: 'boolean' },
  'npu-attn': { type: 'boolean' },
  online: { type: 'boolean' },
  json: { type: 'boolean' },
  sanity: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
} as const;

const ALLOWED: Record<string, string[]> = {
  check: ['model-dir', 'prompt-style', 'prompt', 'python', 'probe-env', 'out', 'force', 'threshold', 'timeout', 'commit', 'no-docs', 'break-lock', 'no-bisect', 'no-cache', 'cache-dir', 'layers', 'positions', 'no-boundaries', 'emulate', 'inject', 'twin-precision', 'twin-eps', 'model', 'cpu-attn', 'npu-attn', 'online', 'json', 'help'],
  plan: ['model-dir', 'hf-config', 'prompt-style', 'prompt', 'python', 'probe-env', 'model', 'cpu-attn', 'npu-attn', 'online', 'timeout', 'json', 'sanity', 'help'],
  report: ['run-dir', 'model-dir', 'threshold', 'commit', 'no-docs', 'break-lock', 'json', 'help'],
};

type Values = { [K in keyof typeof OPTIONS]?: (typeof OPTIONS)[K]['type'] extends 'string' ? string : boolean };

/**
 * `--threshold -0.5` reads as --threshold=-0.5 (node's parser would call the value ambiguous): a
 * string option followed by a negative number takes it as its value; the range check then speaks.
 */
function joinNegativeValues(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const name = a.startsWith('--') && !a.includes('=') ? a.slice(2) : null;
    const next = argv[i + 1];
    if (name && (OPTIONS as Record<string, { type: string }>)[name]?.type === 'string' && next !== undefined && /^-(\d|\.\d)/.test(next)) {
      out.push(`${a}=${next}`);
      i++;
    } else out.push(a);
  }
  return out;
}

export function parseCli(argv: string[]): { command: string; values: Values; topic?: string } {
  let parsed;
  try {
    parsed = parseArgs({ args: joinNegativeValues(argv), options: OPTIONS, allowPositionals: true, strict: true });
  } catch (e) {
    throw new InputError(`${oneLine(e).replace(/^TypeError \[[A-Z_]+\]: /, '')} (see ${COMMAND} --help)`);
  }
  const values = parsed.values as Values;
  const [command = values.version ? 'version' : 'help', ...rest] = parsed.positionals;
  if (command === 'help' || command === 'version') return { command, values, topic: rest[0] };
  if (!(command in ALLOWED)) throw new InputError(`unknown command ${JSON.stringify(command)} (commands: plan, check, report, agent, help)`);
  if (rest.length) throw new InputError(`unexpected argument ${JSON.stringify(rest[0])} (see ${COMMAND} ${command} --help)`);
  for (const k of Object.keys(values)) {
    if (!ALLOWED[command].includes(k) && k !== 'version') throw new InputError(`option --${k} does not apply to ${command} (see ${COMMAND} ${command} --help)`);
  }
  return { command, values };
}

/** Options that name a file or directory. */
const PATH_OPTIONS = ['model-dir', 'out', 'run-dir', 'cache-dir', 'python'] as const;

/**
 * A path whose bytes are not UTF-8 cannot be named through Node's arguments: each such byte is read
 * as U+FFFD, so the path found would be another one ("does not exist", or --out creating a dir of
 * another name). Refused, naming what is wrong, unless a path of that very name exists.
 */
function checkUtf8Paths(v: Values): void {
  for (const k of PATH_OPTIONS) {
    const p = v[k];
    if (p?.includes('\uFFFD') && !existsSync(p)) {
      throw new InputError(`--${k}: the path is not valid UTF-8 (each byte that is not reads as U+FFFD here, so it would name another file); rename it, or pass a symlink to it whose name is UTF-8`, p);
    }
  }
}

export function planFrom(command: string, v: Values, now = new Date()): Plan {
  checkUtf8Paths(v);
  if (command === 'plan' && v['hf-config'] !== undefined && v['model-dir'] !== undefined) throw new InputError('plan takes --model-dir DIR or --hf-config PATH|ID, not both');
  if ((command === 'check' || (command === 'plan' && v['hf-config'] === undefined)) && !v['model-dir']) throw new InputError(`${command} needs --model-dir DIR${command === 'plan' ? ' or --hf-config PATH|ID' : ''} (see ${COMMAND} ${command} --help)`);
  if (v['cpu-attn'] && v['npu-attn']) throw new InputError('--cpu-attn and --npu-attn exclude each other');
  if (command === 'report' && !v['run-dir']) throw new InputError(`report needs --run-dir DIR (see ${COMMAND} report --help)`);
  if (v.inject !== undefined && !v.emulate) throw new InputError('--inject needs --emulate (bugs are injected into the emulated NPU only)');
  if (v['twin-eps'] !== undefined && !v.emulate) throw new InputError('--twin-eps needs --emulate (it sets the emulated NPU\'s RMSNorm eps)');
  const modelDir = v['model-dir'] ?? null;
  const runDir = command === 'report' ? v['run-dir']! : v.out ?? defaultRunDirName(basename(resolve(modelDir ?? 'hf-config')), now);
  return {
    mode: command === 'report' ? 'report' : 'full',
    modelDir,
    promptStyle: v['prompt-style'] !== undefined ? parsePromptStyle(v['prompt-style'], '--prompt-style') : null,
    prompt: v.prompt ?? null,
    model: v.model ?? null,
    cpuAttn: v['cpu-attn'] ? true : v['npu-attn'] ? false : null,
    online: !!v.online,
    ...(command === 'plan' && v.sanity ? { sanity: true } : {}),
    ...(command === 'plan' && v['hf-config'] !== undefined ? { hfConfig: v['hf-config'] } : {}),
    python: v.python ?? null,
    ...(v['probe-env'] !== undefined ? { probeEnvNames: parseProbeEnv(v['probe-env']) } : {}),
    runDir,
    threshold: v.threshold !== undefined ? parseThreshold(v.threshold, '--threshold') : null,
    writeDocs: !v['no-docs'],
    ...(v['break-lock'] ? { breakLock: true } : {}),
    bisect: !v['no-bisect'],
    layers: !!v.layers,
    boundaries: !v['no-boundaries'],
    positions: v.positions !== undefined ? parsePositions(v.positions, '--positions') : null,
    emulate: !!v.emulate,
    inject: v.inject !== undefined ? parseInject(v.inject, '--inject') : null,
    twinPrecision: v['twin-precision'] !== undefined ? parseChoice(v['twin-precision'], '--twin-precision', TWIN_PRECISIONS) : null,
    twinEps: v['twin-eps'] !== undefined ? parseChoice(v['twin-eps'], '--twin-eps', TWIN_EPS) : null,
    cache: command === 'check' && !v['no-cache'],
    cacheDir: v['cache-dir'] ?? null,
    cacheWrite: true,
    timeoutSec: v.timeout !== undefined ? parseTimeout(v.timeout, '--timeout') : command === 'plan' ? (v.sanity ? PLAN_SANITY_TIMEOUT_SECONDS : PLAN_TIMEOUT_SECONDS) : null,
    commit: v.commit !== undefined ? parseCommit(v.commit, '--commit') : null,
    force: command === 'check' ? !!v.force : undefined,
  };
}

/** `--probe-env A,B`: environment variable names. */
function parseProbeEnv(v: string): string[] {
  const { names, bad } = parseEnvNames(v);
  if (bad.length) throw new InputError(`--probe-env takes environment variable names separated by commas, got ${JSON.stringify(bad[0].slice(0, 60))}`);
  return names;
}

/** `plan`: the probe's answer as it printed it; a model Phase 2 cannot run on is one line and exit 2. */
async function printPlan(plan: Plan, json: boolean, out: NodeJS.WritableStream, err: NodeJS.WritableStream): Promise<ExitCode> {
  try {
    out.write(await planModel(plan, json, stderrLog(undefined, (s) => err.write(s))));
    return EXIT.pass;
  } catch (e) {
    const stdout = (e as { stdout?: string }).stdout;
    if (e instanceof InputError && stdout) {
      err.write(`npu-block-gate: error: ${oneLine(e)}\n`);
      out.write(stdout);
      return EXIT.input;
    }
    throw e;
  }
}

export async function main(argv: string[], out: NodeJS.WritableStream = process.stdout, err: NodeJS.WritableStream = process.stderr): Promise<ExitCode> {
  let json = false;
  let plan: Plan | null = null;
  if (argv[0] === 'agent' || (argv[0] === 'help' && argv[1] === 'agent')) {
    // Loaded only here: report, check and plan never load the agent (or octokit and undici).
    const { agentMain } = await import('./agent/cli.ts');
    return agentMain(argv[0] === 'agent' ? argv.slice(1) : ['--help'], out, err);
  }
  if (argv[0] === 'fixture' || (argv[0] === 'help' && argv[1] === 'fixture')) {
    const { fixtureMain } = await import('./fixture/cli.ts');
    return fixtureMain(argv[0] === 'fixture' ? argv.slice(1) : ['--help'], out, err);
  }
  const fleet = argv[0] === 'help' ? argv[1] : argv[0];
  if (fleet === 'affected' || fleet === 'status') {
    const { fleetMain } = await import('./fleet/cli.ts');
    return fleetMain(fleet, argv[0] === 'help' ? ['--help'] : argv.slice(1), out, err);
  }
  try {
    const { command, values, topic: helpTopic } = parseCli(argv);
    if (command === 'version') { out.write(`${TOOL.version}\n`); return EXIT.pass; }
    if (command === 'help' || values.help) {
      const topic = command === 'help' ? helpTopic : command;
      out.write(COMMAND_HELP[topic ?? ''] ?? HELP);
      return EXIT.pass;
    }
    json = !!values.json;
    plan = planFrom(command, values);
    if (command === 'plan') return await printPlan(plan, json, out, err);
    const log = stderrLog(undefined, (s) => err.write(s));
    const result: CheckResult = await check(plan, { log });
    // The documents could not be written: said as an error, with the verdict that stands below it.
    if (result.docsError) err.write(`npu-block-gate: error: ${oneLine(result.docsError)} (the verdict stands; the documents were not written)\n`);
    out.write(json ? result.json : `\n${renderTerminal(result.report, { color: wantsColor(out as { isTTY?: boolean }) })}\n  run dir: ${result.runDir}\n`);
    return result.exitCode;
  } catch (e) {
    const code = e instanceof GateError ? e.exitCode : EXIT.infra;
    const kind = code === EXIT.input ? 'error' : 'error (infrastructure, not a verdict)';
    err.write(`npu-block-gate: ${kind}: ${oneLine(e)}\n`);
    // A script reading --json still gets a report: outcome error, never a FAIL verdict.
    if (json && plan) out.write(toJson(errorReport(plan, oneLine(e), code)));
    if (!(e instanceof GateError) && process.env.NPU_BLOCK_GATE_DEBUG) err.write(`${(e as Error).stack}\n`);
    // Ctrl-C or a CI cancel: outcome error as above, and the status a shell expects (128 + signal).
    if (e instanceof ProbeInterrupted) return e.status as ExitCode;
    return code;
  }
}

// Run when executed directly (the bundle, or tsx src/cli.ts), not when imported by tests.
const invoked = process.argv[1] ? resolve(process.argv[1]) : '';
if (invoked.endsWith('cli.js') || invoked.endsWith('cli.ts') || basename(invoked) === 'npu-block-gate') {
  // A reader that went away (EPIPE: `| head`) on stdout, or any failure on stderr, loses output,
  // never the verdict: no stack trace, and the exit code stays the run's. Output that could not be
  // written to stdout for another reason (a full device: `> /dev/full`, an I/O error) went nowhere:
  // one line on stderr says so, and a run that would exit 0 exits 3.
  let lost: NodeJS.ErrnoException | null = null;
  process.stdout.on('error', (e: NodeJS.ErrnoException) => { if (e.code !== 'EPIPE') lost ??= e; });
  process.stderr.on('error', () => undefined);
  process.on('exit', () => {
    if (!lost) return;
    try {
      writeSync(2, `npu-block-gate: error (infrastructure, not a verdict): the output could not be written to stdout: ${errnoWords(lost.code)} (${lost.code ?? lost.message}); what it printed there was lost\n`);
    } catch { /* stderr is gone too */ }
    if (!process.exitCode) process.exitCode = EXIT.infra;
  });
  main(process.argv.slice(2)).then((code) => { process.exitCode = code; });
}
