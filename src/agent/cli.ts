// `npu-block-gate agent <sub>`: the runner side (DESIGN.md "Agent"). src/cli.ts dispatches here.
import { parseArgs } from 'node:util';
import { EXIT, GateError, InputError, oneLine, type ExitCode } from '../errors.ts';
import { defaultCacheRoot, DEFAULT_MAX_BYTES } from '../cache/kernel.ts';
import { Machine, type MachineOptions } from './machine.ts';
import { doctor, renderChecks, summarize } from './doctor.ts';
import { status, renderStatus } from './status.ts';
import { cacheStats, cacheGc, renderStats, renderGc } from './cache.ts';
import { parseSize } from './parse.ts';

export const AGENT_HELP = `npu-block-gate agent: the self-hosted NPU runner side

Usage:
  npu-block-gate agent doctor [--json] [--root DIR] [--python P] [--cache-dir DIR]
      health checks: /dev/accel device, amdxdna module, xrt-smi examine, kernel-log wedge
      signatures (journalctl -k, last 2h; else dmesg), memlock limit, free disk (kernel cache,
      workspace), HF offline cache, Python with numpy, the NPU lock holder.
      Exit 0 when nothing fails, 3 when a check fails (the runner cannot run NPU jobs).
  npu-block-gate agent status [--json] [--root DIR] [--cache-dir DIR]
      one screen: device, driver, NPU lock holder, kernel cache size, last run dirs (runs/)
  npu-block-gate agent cache stats [--cache-dir DIR] [--json]
      kernel cache entries (key, model, size, created, last used) and the total
  npu-block-gate agent cache gc [--max-bytes N] [--cache-dir DIR] [--json]
      trim the kernel cache to N bytes (e.g. 20G, 500M; default 20G), least recently used first

Options:
  --root DIR        read /dev, /sys, /proc, /tmp and /opt under DIR (default /; for tests and containers)
  --cache-dir DIR   kernel cache root (default $NPU_BLOCK_GATE_CACHE_DIR or ~/.cache/npu-block-gate)
  --python P        Python to check (default: $NPU_BLOCK_GATE_PYTHON, python3, /usr/bin/python3)
  --json            machine-readable output

The NPU lock is $NPU_BLOCK_GATE_NPU_LOCK or /tmp/mlir-air-npu.lock (the mlir-air skills' flock).
Exit codes: 0 ok, 2 usage, 3 infrastructure (a doctor check failed).
`;

const OPTIONS = {
  json: { type: 'boolean' },
  root: { type: 'string' },
  'cache-dir': { type: 'string' },
  'max-bytes': { type: 'string' },
  python: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

const ALLOWED: Record<string, string[]> = {
  doctor: ['json', 'root', 'python', 'cache-dir', 'help'],
  status: ['json', 'root', 'cache-dir', 'help'],
  'cache stats': ['json', 'cache-dir', 'help'],
  'cache gc': ['json', 'cache-dir', 'max-bytes', 'help'],
};

type Values = { json?: boolean; root?: string; 'cache-dir'?: string; 'max-bytes'?: string; python?: string; help?: boolean };

export function parseAgent(argv: string[]): { sub: string; values: Values } {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (e) {
    throw new InputError(`${oneLine(e).replace(/^TypeError \[[A-Z_]+\]: /, '')} (see npu-block-gate agent --help)`);
  }
  const values = parsed.values as Values;
  const pos = parsed.positionals;
  if (!pos.length) return { sub: 'help', values };
  if (pos[0] === 'help') return { sub: 'help', values };
  let sub = pos[0];
  let rest = pos.slice(1);
  if (sub === 'cache') {
    if (!rest.length) {
      if (values.help) return { sub: 'help', values };
      throw new InputError('agent cache needs stats or gc (see npu-block-gate agent --help)');
    }
    sub = `cache ${rest[0]}`;
    rest = rest.slice(1);
    if (!(sub in ALLOWED)) throw new InputError(`unknown cache command ${JSON.stringify(pos[1])} (agent cache: stats, gc)`);
  }
  if (!(sub in ALLOWED)) throw new InputError(`unknown agent command ${JSON.stringify(sub)} (agent commands: doctor, status, cache stats, cache gc)`);
  if (rest.length) throw new InputError(`unexpected argument ${JSON.stringify(rest[0])} (see npu-block-gate agent --help)`);
  for (const k of Object.keys(values)) {
    if (!ALLOWED[sub].includes(k)) throw new InputError(`option --${k} does not apply to agent ${sub} (see npu-block-gate agent --help)`);
  }
  return { sub, values };
}

/** Test seams: the machine (root, env, command table, Python tester, statfs, cwd). */
export type AgentDeps = MachineOptions;

const json = (x: unknown) => JSON.stringify(x, null, 2) + '\n';

export async function agentMain(argv: string[], out: NodeJS.WritableStream = process.stdout, err: NodeJS.WritableStream = process.stderr, deps: AgentDeps = {}): Promise<ExitCode> {
  try {
    const { sub, values } = parseAgent(argv);
    if (sub === 'help' || values.help) { out.write(AGENT_HELP); return EXIT.pass; }
    const m = new Machine({ ...deps, root: values.root ?? deps.root });
    const env = m.env;
    const cacheDir = values['cache-dir'] ?? null;
    switch (sub) {
      case 'doctor': {
        const checks = doctor(m, { cacheDir, python: values.python ?? null });
        const s = summarize(checks);
        const code = s.fail ? EXIT.infra : EXIT.pass;
        out.write(values.json ? json({ root: m.root, checks, summary: s, exit_code: code }) : renderChecks(checks, m.root));
        return code;
      }
      case 'status': {
        const s = status(m, { cacheDir });
        out.write(values.json ? json(s) : renderStatus(s));
        return EXIT.pass;
      }
      case 'cache stats': {
        const s = cacheStats(cacheDir ?? defaultCacheRoot(env));
        out.write(values.json ? json(s) : renderStats(s));
        return EXIT.pass;
      }
      case 'cache gc': {
        let max = DEFAULT_MAX_BYTES;
        if (values['max-bytes'] !== undefined) {
          const n = parseSize(values['max-bytes']);
          if (n === null) throw new InputError(`--max-bytes ${JSON.stringify(values['max-bytes'])}: not a size (bytes, or a number with K, M, G or T)`);
          max = n;
        }
        const g = cacheGc(cacheDir ?? defaultCacheRoot(env), max);
        out.write(values.json ? json(g) : renderGc(g));
        return EXIT.pass;
      }
    }
    throw new InputError(`unknown agent command ${JSON.stringify(sub)}`);
  } catch (e) {
    const code = e instanceof GateError ? e.exitCode : EXIT.infra;
    err.write(`npu-block-gate: ${code === EXIT.input ? 'error' : 'error (infrastructure)'}: ${oneLine(e)}\n`);
    return code;
  }
}
