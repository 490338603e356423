// `npu-block-gate agent <sub>`: the runner side (DESIGN.md "Agent"). src/cli.ts dispatches here.
import { parseArgs } from 'node:util';
import { EXIT, GateError, InputError, oneLine, type ExitCode } from '../errors.ts';
import { defaultCacheRoot, DEFAULT_MAX_BYTES } from '../cache/kernel.ts';
import { Machine, type MachineOptions } from './machine.ts';
import { doctor, renderChecks, summarize } from './doctor.ts';
import { status, renderStatus } from './status.ts';
import { cacheStats, cacheGc, renderStats, renderGc } from './cache.ts';
import { parseSize } from './parse.ts';
import { DEFAULT_WAIT_SECONDS, lockState, npuLockPath, renderLockStatus, waitLock } from './lock.ts';
import { defaultHooksDir, installHooks, jobCompleted, jobStarted, selfCommand, type ForkPolicy, type SelfCommand } from './hooks.ts';

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
  npu-block-gate agent lock status [--path P] [--root DIR] [--json]
      the NPU lock: free, or held by pid N (its command line), and how many wait
  npu-block-gate agent lock wait [--path P] [--timeout S] [--root DIR] [--json]
      wait until the lock is free (flock -w, else polling /proc/locks), a line every 15 s naming
      the holder; exit 0 when free, 3 after S seconds (default 1800). Does not take the lock.
  npu-block-gate agent hooks install [--dir DIR] [--runner-dir D] [--fork-policy allow|deny] [--cache-max-bytes N]
      write the runner's job hooks into DIR (default ~/.npu-block-gate/hooks): job-started runs
      doctor (a failed check fails the job before it runs) and the fork policy (deny, the default:
      fail pull requests from another repository); job-completed appends the amdxdna kernel log of
      the last hour and xrt-smi examine to DIR/logs/<date>.log (14 days kept) and runs cache gc.
      With --runner-dir, sets ACTIONS_RUNNER_HOOK_JOB_STARTED/_COMPLETED in its .env; else prints them.
  npu-block-gate agent hook job-started|job-completed [...]
      what the hook scripts run (exit 1 from job-started fails the job)

Options:
  --root DIR        read /dev, /sys, /proc, /tmp and /opt under DIR (default /; for tests and containers)
  --cache-dir DIR   kernel cache root (default $NPU_BLOCK_GATE_CACHE_DIR or ~/.cache/npu-block-gate)
  --python P        Python to check (default: $NPU_BLOCK_GATE_PYTHON, python3, /usr/bin/python3)
  --path P          the lock file (default $NPU_BLOCK_GATE_NPU_LOCK or /tmp/mlir-air-npu.lock)
  --json            machine-readable output

The NPU lock is $NPU_BLOCK_GATE_NPU_LOCK or /tmp/mlir-air-npu.lock (the mlir-air skills' flock).
Exit codes: 0 ok, 1 a job-started hook refused the job, 2 usage, 3 infrastructure (a doctor
check failed, lock wait timed out).
`;

const OPTIONS = {
  json: { type: 'boolean' },
  root: { type: 'string' },
  'cache-dir': { type: 'string' },
  'max-bytes': { type: 'string' },
  python: { type: 'string' },
  path: { type: 'string' },
  timeout: { type: 'string' },
  dir: { type: 'string' },
  'runner-dir': { type: 'string' },
  'fork-policy': { type: 'string' },
  'cache-max-bytes': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

const ALLOWED: Record<string, string[]> = {
  doctor: ['json', 'root', 'python', 'cache-dir', 'help'],
  status: ['json', 'root', 'cache-dir', 'help'],
  'cache stats': ['json', 'cache-dir', 'help'],
  'cache gc': ['json', 'cache-dir', 'max-bytes', 'help'],
  'lock status': ['json', 'root', 'path', 'help'],
  'lock wait': ['json', 'root', 'path', 'timeout', 'help'],
  'hooks install': ['dir', 'runner-dir', 'fork-policy', 'cache-max-bytes', 'help'],
  'hook job-started': ['root', 'python', 'cache-dir', 'fork-policy', 'help'],
  'hook job-completed': ['root', 'dir', 'cache-dir', 'cache-max-bytes', 'help'],
};

const GROUPS: Record<string, string[]> = {
  cache: ['stats', 'gc'],
  lock: ['status', 'wait'],
  hooks: ['install'],
  hook: ['job-started', 'job-completed'],
};

type Values = {
  json?: boolean; root?: string; 'cache-dir'?: string; 'max-bytes'?: string; python?: string; help?: boolean;
  path?: string; timeout?: string; dir?: string; 'runner-dir'?: string; 'fork-policy'?: string; 'cache-max-bytes'?: string;
};

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
  const group = GROUPS[sub];
  if (group) {
    if (!rest.length) {
      if (values.help) return { sub: 'help', values };
      throw new InputError(`agent ${sub} needs ${group.join(' or ')} (see npu-block-gate agent --help)`);
    }
    if (!group.includes(rest[0])) throw new InputError(`unknown ${sub} command ${JSON.stringify(rest[0])} (agent ${sub}: ${group.join(', ')})`);
    sub = `${sub} ${rest[0]}`;
    rest = rest.slice(1);
  }
  if (!(sub in ALLOWED)) throw new InputError(`unknown agent command ${JSON.stringify(sub)} (agent commands: doctor, status, cache stats|gc, lock status|wait, hooks install)`);
  if (rest.length) throw new InputError(`unexpected argument ${JSON.stringify(rest[0])} (see npu-block-gate agent --help)`);
  for (const k of Object.keys(values)) {
    if (!ALLOWED[sub].includes(k)) throw new InputError(`option --${k} does not apply to agent ${sub} (see npu-block-gate agent --help)`);
  }
  return { sub, values };
}

/** Test seams: the machine (root, env, command table, Python tester, statfs, cwd, sleep, clock), and how hooks call this CLI. */
export type AgentDeps = MachineOptions & { self?: SelfCommand };

function sizeOption(name: string, v: string | undefined): number {
  if (v === undefined) return DEFAULT_MAX_BYTES;
  const n = parseSize(v);
  if (n === null) throw new InputError(`--${name} ${JSON.stringify(v)}: not a size (bytes, or a number with K, M, G or T)`);
  return n;
}

function forkPolicy(v: string | undefined): ForkPolicy {
  if (v === undefined) return 'deny';
  if (v !== 'allow' && v !== 'deny') throw new InputError(`--fork-policy ${JSON.stringify(v)}: allow or deny`);
  return v;
}

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
        const g = cacheGc(cacheDir ?? defaultCacheRoot(env), sizeOption('max-bytes', values['max-bytes']));
        out.write(values.json ? json(g) : renderGc(g));
        return EXIT.pass;
      }
      case 'lock status': {
        const s = lockState(m, npuLockPath(env, values.path));
        out.write(values.json ? json({ ...s, free: !s.holder }) : renderLockStatus(s));
        return EXIT.pass;
      }
      case 'lock wait': {
        const path = npuLockPath(env, values.path);
        const t = values.timeout === undefined ? DEFAULT_WAIT_SECONDS : Number(values.timeout);
        if (!Number.isFinite(t) || t < 0 || values.timeout?.trim() === '') throw new InputError(`--timeout ${JSON.stringify(values.timeout)}: seconds (a number >= 0)`);
        if (!path) { out.write(values.json ? json({ path, free: true, waited_s: 0, method: 'none', holder: null }) : 'NPU lock off (NPU_BLOCK_GATE_NPU_LOCK=none)\n'); return EXIT.pass; }
        const progress = values.json ? err : out;
        const r = await waitLock(m, path, Math.round(t * 1000), (line) => progress.write(line + '\n'));
        out.write(values.json ? json(r) : r.free ? `${path}: free${r.waited_s ? ` after ${r.waited_s}s` : ''}\n` : `${path}: still ${r.holder} after ${r.waited_s}s (timeout)\n`);
        return r.free ? EXIT.pass : EXIT.infra;
      }
      case 'hooks install': {
        const report = installHooks({
          dir: values.dir ?? defaultHooksDir(m),
          runnerDir: values['runner-dir'] ?? null,
          forkPolicy: forkPolicy(values['fork-policy']),
          cacheMaxBytes: values['cache-max-bytes'] === undefined ? null : (sizeOption('cache-max-bytes', values['cache-max-bytes']), values['cache-max-bytes']),
          self: deps.self ?? selfCommand(),
        });
        out.write(report);
        return EXIT.pass;
      }
      case 'hook job-started': {
        const r = jobStarted(m, { cacheDir, python: values.python ?? null, forkPolicy: forkPolicy(values['fork-policy']) });
        out.write(r.out);
        return r.code as ExitCode;
      }
      case 'hook job-completed': {
        const r = jobCompleted(m, { dir: values.dir ?? defaultHooksDir(m), cacheDir, maxBytes: sizeOption('cache-max-bytes', values['cache-max-bytes']) });
        out.write(r.out);
        return r.code as ExitCode;
      }
    }
    throw new InputError(`unknown agent command ${JSON.stringify(sub)}`);
  } catch (e) {
    const code = e instanceof GateError ? e.exitCode : EXIT.infra;
    err.write(`npu-block-gate: ${code === EXIT.input ? 'error' : 'error (infrastructure)'}: ${oneLine(e)}\n`);
    return code;
  }
}
