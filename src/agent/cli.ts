// `npu-block-gate agent <sub>`: the runner side (DESIGN.md "Agent"). src/cli.ts dispatches here.
import { parseArgs } from 'node:util';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { EXIT, GateError, InputError, oneLine, type ExitCode } from '../errors.ts';
import { defaultCacheRoot, DEFAULT_MAX_BYTES } from '../cache/kernel.ts';
import { Machine, type MachineOptions } from './machine.ts';
import { doctorReport, renderChecks, type FunctionalWhen } from './doctor.ts';
import { summarize } from './checks.ts';
import { FUNCTIONAL_MAX_AGE_S, FUNCTIONAL_TIMEOUT_S } from './functional.ts';
import { fleetRows, renderFleet } from './fleet.ts';
import { runnerAccount, serviceName } from './runner.ts';
import { status, renderStatus } from './status.ts';
import { cacheStats, cacheGc, renderStats, renderGc } from './cache.ts';
import { parseSize } from './parse.ts';
import { DEFAULT_WAIT_SECONDS, lockState, npuLockPath, renderLockStatus, waitLock } from './lock.ts';
import {
  DEFAULT_FORK_POLICY, DEFAULT_WHEN_UNKNOWN, FORK_POLICIES, defaultHooksDir, installHooks, jobCompleted, jobStarted, selfCommand,
  type ForkPolicy, type SelfCommand, type WhenUnknown,
} from './hooks.ts';
import { drain, undrain } from './drain.ts';
import { defaultStateDir } from './state.ts';
import { DEFAULT_PROBE_USER, DRAIN_SUDOERS_FILE, PROBE_GROUP, renderStep, renderSummary, setup, setupHeader, SUDOERS_FILE, type SetupFs, type Step } from './setup.ts';
import { SETUP_FILE } from '../probe/isolate.ts';

const AGENT_HELP = `npu-block-gate agent: the self-hosted NPU runner side

Usage:
  npu-block-gate agent setup [--user NAME] [--runner-user NAME] [--runner-dir D | --work-dir W] [--cache-dir DIR]
        [--hf-home DIR] [--python P] [--fix] [--dry-run] [--json] [--root DIR]
      as root, once: the probe user that runs pull requests' model code (uid isolation), its sudoers
      rule, the NPU group, the caches read-only for it, the work dir's shared group (agent setup --help)
  npu-block-gate agent doctor [--json] [--root DIR] [--python P] [--cache-dir DIR] [--runner-dir D] [--functional] [--functional-test T]
      health checks. Device: the NPU on the PCI bus (AMD 1022:1502/17f0/...), amdxdna loaded and
      bound to it, its /dev/accel node, the firmware (sysfs), this boot's kernel log (amdxdna's own
      signatures since the last driver load, in-kernel reset or passing probe; read newest first up
      to a stated bound; an unreadable log is UNKNOWN, never ok) and, with --functional, xrt-smi
      validate run as the runner's jobs run NPU work (their user, their memlock; 30 s timeout): a
      memlock, permission or XRT-install failure is a host warning, only the NPU's own failure fails.
      Host: memlock (soft and hard), xrt-smi examine, free disk, HF cache, Python, the NPU lock.
      Exit 0 when nothing fails, 3 when a check fails.
  npu-block-gate agent status [--json] [--root DIR] [--cache-dir DIR] [--runner-dir D]
      one screen: runner, NPU generation, health, device, versions (and what changed since the last
      job), power mode, both NPU locks (read only), processes holding /dev/accel, functional probe,
      drain (verified), cache, last runs
  npu-block-gate agent fleet FILE... [--json]
      the agent status --json of several runners (files, - for stdin) merged into one table:
      runner, NPU generation, driver and firmware, health, drained, last job
  npu-block-gate agent drain --runner-dir D [--token-file F [--label L]... [--api-url U]] [--reason TEXT]
      take the runner out of rotation: with a token, remove its NPU label(s) through the GitHub
      API (runner id from D/.runner; default: every custom label); without, stop its service
      (D/.service) now, or after the running job; drained only once verified (the labels read back
      gone, systemctl is-active); a refused drain says why and leaves the runner in rotation
  npu-block-gate agent undrain --runner-dir D [--token-file F] [--label L]... [--force]
      run the functional probe; when it passes, put the labels back (or start the service)
  npu-block-gate agent cache stats [--cache-dir DIR] [--json]
      kernel cache entries (key, model, size, created, last used) and the total
  npu-block-gate agent cache gc [--max-bytes N] [--cache-dir DIR] [--json]
      trim the kernel cache to N bytes (e.g. 20G, 500M; default 20G), least recently used first
  npu-block-gate agent lock status [--path P] [--root DIR] [--json]
      the NPU lock: free, or held by pid N (its command line), and how many wait
  npu-block-gate agent lock wait [--path P] [--timeout S] [--root DIR] [--json]
      wait until the lock is free (flock -w, else polling /proc/locks), a line every 15 s naming
      the holder; exit 0 when free, 3 after S seconds (default 1800). Does not take the lock.
  npu-block-gate agent hooks install [--dir DIR] [--runner-dir D] [--chain] [--python P] [--hf-home DIR] [--offline]
        [--fork-policy probe-only|allow|deny] [--functional-when auto|always|never] [--functional-max-age S]
        [--when-unknown refuse|run] [--cache-max-bytes N]
        [--drain-on-failure [--token-file F] [--label L]...] [--textfile PATH] [--state-dir DIR]
      write the runner's job hooks into DIR (default ~/.npu-block-gate/hooks) with a copy of this
      CLI. job-started: the doctor; only a device failure fails the job, the rest are warning
      annotations; then the fork policy. job-completed: diagnostics (DIR/logs, 14 days), device
      checks again (drain on failure when enabled), one JSON line per job and a node_exporter
      textfile, cache gc. With --runner-dir, sets ACTIONS_RUNNER_HOOK_JOB_STARTED/_COMPLETED in
      its .env; an existing different hook there is kept running first only with --chain.
  npu-block-gate agent hook job-started|job-completed [...]
      what the hook scripts run (exit 1 from job-started fails the job)

Options:
  --root DIR           read /dev, /sys, /proc, /tmp and /opt under DIR (default /; for tests and containers)
  --cache-dir DIR      kernel cache root (default $NPU_BLOCK_GATE_CACHE_DIR or ~/.cache/npu-block-gate)
  --state-dir DIR      the agent's state (default $NPU_BLOCK_GATE_STATE_DIR or ~/.npu-block-gate/state)
  --python P           Python to check (default: $NPU_BLOCK_GATE_PYTHON, python3, /usr/bin/python3)
  --path P             the lock file (default $NPU_BLOCK_GATE_NPU_LOCK or /tmp/mlir-air-npu.lock)
  --functional-test T  the xrt-smi validate test (default latency; verify before XRT 2.18)
  --functional-max-age S  the interval: a good probe older than S seconds is run again; a failed
                       result younger than S stands until a driver reload (default ${FUNCTIONAL_MAX_AGE_S})
  --functional-timeout S  give xrt-smi validate S seconds; a timeout is a device failure (default ${FUNCTIONAL_TIMEOUT_S})
  --fix                setup: also repair what it otherwise reports (HF cache, tokens, search permission)
  --dry-run            setup: say what would change, change nothing
  --fork-policy P      pull requests from forks: probe-only (default: pull_request only, where
                       GitHub withholds secrets and write tokens), allow, deny
  --when-unknown W     job-started, when the kernel log shows a warning (or an error line no signature
                       explains) and the functional probe could not run (memlock, permissions, the XRT
                       install): refuse (default: nothing can vouch for the NPU) or run (with warnings)
  --token-file F       a file (mode 600) with a token that may administer the runner's labels
  --json               machine-readable output

Exit codes: 0 ok, 1 a job-started hook refused the job, 2 usage or bad input, 3 infrastructure
(a doctor check failed, lock wait timed out, the GitHub API or the service stop failed, the
functional probe did not pass at undrain).
`;

const SETUP_HELP = `npu-block-gate agent setup: prepare this runner for uid isolation of the probe

Usage:
  sudo npu-block-gate agent setup --runner-user R --runner-dir D [--python P] [options]

The probe runs a pull request's model code. With uid isolation it runs as a separate user that
cannot read the runner's processes, tokens or files and cannot write the caches. Run as root
(only --dry-run works without); each step prints one line: done, already (so), would (--dry-run),
skipped, WARN (yours to do; --fix does some) or FAIL. A second run changes nothing.

  probe-user       create the system user (default ${DEFAULT_PROBE_USER}; no login shell, no home), or use --user's
  group            create the group ${PROBE_GROUP}; add the runner user and the probe user to it
  setup-file       write ${SETUP_FILE} (0644) naming the probe user: the Action reads it
  sudoers          a runner that is not root: ${SUDOERS_FILE} (0440, checked with visudo -cf):
                     <runner> ALL=(<probe user>) NOPASSWD:NOSETENV: ALL
                   (no variable passes through sudo: the Action hands the probe a fixed environment with env -i)
  drain-sudoers    a runner service that is not root: ${DRAIN_SUDOERS_FILE} (0440, visudo -cf) with the
                   one rule agent drain/undrain need (no SETENV):
                     <runner> ALL=(root) NOPASSWD: /usr/bin/systemctl stop <its unit>, /usr/bin/systemctl start <its unit>
                   or a line saying why none was installed (no .service: drain by label)
  npu-access       add the probe user to the group of /dev/accel/accel0
  memlock          the runner service's LimitMEMLOCK (the probe inherits it) and sudo's pam_limits
  kernel-cache, reference-cache
                   owned by the runner user, directories 0755, files 0644: the probe reads, never writes
  hf-cache, hf-token
                   the HF hub cache readable and not group/world-writable; a stored HF token 0600
  work-dir         the runner's work dir: group ${PROBE_GROUP}, setgid, not group-writable
  runner-secrets   the runner's .credentials, .credentials_rsaparams and .env unreadable by the probe user
  checkouts        every checkout's .git under the work dir closed to group and others (a persisted token)
  reach            the probe user can search every directory on the way to the caches, work dir, Python
                   (--fix: an ACL entry for the probe user alone on a home, never o+x; o+x elsewhere)
  switch, python   the runner user can start processes as the probe user; P -c "import numpy" works as it
  sandbox          the probe user can start bubblewrap in a user namespace (root: bubblewrap at all);
                   where AppArmor restricts user namespaces (Ubuntu 23.10+) it names the profile to add

Options:
  --user NAME          the probe user (default ${DEFAULT_PROBE_USER})
  --runner-user NAME   the user the runner service runs as (default $SUDO_USER, else this user)
  --runner-dir D       the runner's install dir (with .runner, .service); default ~R/actions-runner
  --work-dir W         the runner's work dir (default D/_work, or .runner's workFolder)
  --cache-dir DIR      the kernel cache root (default $NPU_BLOCK_GATE_CACHE_DIR, else ~R/.cache/npu-block-gate);
                       the reference cache is DIR/reference ($NPU_BLOCK_GATE_REF_CACHE)
  --hf-home DIR        HF_HOME of the runner (default $HF_HOME, else ~R/.cache/huggingface); its hub/ is checked
  --python P           the Python the Action runs the probe with: checked as the probe user
  --fix                repair the HF cache, token files, the runner's credentials and search permission too
  --dry-run            change nothing; say what would change
  --json               the steps as JSON
  --root DIR           system files (/etc, /dev) under DIR (tests, containers; useradd etc. get --prefix DIR)

Exit codes: 0 set up (warnings are printed), 2 bad input or not root (one line), 3 a command or
file operation failed (one line naming it) or a check (switch, python) failed.
`;

const OPTIONS = {
  json: { type: 'boolean' },
  root: { type: 'string' },
  'cache-dir': { type: 'string' },
  'state-dir': { type: 'string' },
  'max-bytes': { type: 'string' },
  python: { type: 'string' },
  path: { type: 'string' },
  timeout: { type: 'string' },
  dir: { type: 'string' },
  'runner-dir': { type: 'string' },
  'fork-policy': { type: 'string' },
  'cache-max-bytes': { type: 'string' },
  'hf-home': { type: 'string' },
  offline: { type: 'boolean' },
  chain: { type: 'boolean' },
  functional: { type: 'boolean' },
  'functional-when': { type: 'string' },
  'when-unknown': { type: 'string' },
  'functional-test': { type: 'string' },
  'functional-max-age': { type: 'string' },
  'functional-timeout': { type: 'string' },
  'drain-on-failure': { type: 'boolean' },
  'token-file': { type: 'string' },
  label: { type: 'string', multiple: true },
  'api-url': { type: 'string' },
  textfile: { type: 'string' },
  reason: { type: 'string' },
  force: { type: 'boolean' },
  user: { type: 'string' },
  'runner-user': { type: 'string' },
  'work-dir': { type: 'string' },
  fix: { type: 'boolean' },
  'dry-run': { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

const FUNCTIONAL_OPTS = ['functional-test', 'functional-max-age', 'functional-timeout'];

export const ALLOWED: Record<string, string[]> = {
  setup: ['json', 'root', 'user', 'runner-user', 'runner-dir', 'work-dir', 'cache-dir', 'hf-home', 'python', 'fix', 'dry-run', 'help'],
  doctor: ['json', 'root', 'python', 'cache-dir', 'state-dir', 'functional', ...FUNCTIONAL_OPTS, 'runner-dir', 'help'],
  status: ['json', 'root', 'cache-dir', 'state-dir', 'runner-dir', 'help'],
  fleet: ['json', 'help'],
  drain: ['root', 'runner-dir', 'token-file', 'label', 'api-url', 'reason', 'state-dir', 'json', 'help'],
  undrain: ['root', 'runner-dir', 'token-file', 'label', 'api-url', 'state-dir', 'force', 'functional-test', 'functional-timeout', 'json', 'help'],
  'cache stats': ['json', 'cache-dir', 'help'],
  'cache gc': ['json', 'cache-dir', 'max-bytes', 'help'],
  'lock status': ['json', 'root', 'path', 'help'],
  'lock wait': ['json', 'root', 'path', 'timeout', 'help'],
  'hooks install': [
    'dir', 'runner-dir', 'fork-policy', 'cache-max-bytes', 'python', 'hf-home', 'offline', 'chain', 'state-dir', 'functional-when',
    'functional-max-age', 'when-unknown', 'drain-on-failure', 'token-file', 'label', 'api-url', 'textfile', 'help',
  ],
  'hook job-started': ['root', 'python', 'cache-dir', 'state-dir', 'fork-policy', 'functional-when', 'when-unknown', ...FUNCTIONAL_OPTS, 'runner-dir', 'help'],
  'hook job-completed': [
    'root', 'dir', 'cache-dir', 'cache-max-bytes', 'state-dir', 'runner-dir', 'drain-on-failure', 'token-file', 'label', 'api-url', 'textfile',
    'functional-when', ...FUNCTIONAL_OPTS, 'help',
  ],
};

const GROUPS: Record<string, string[]> = {
  cache: ['stats', 'gc'],
  lock: ['status', 'wait'],
  hooks: ['install'],
  hook: ['job-started', 'job-completed'],
};

type Values = {
  json?: boolean; root?: string; 'cache-dir'?: string; 'state-dir'?: string; 'max-bytes'?: string; python?: string; help?: boolean;
  path?: string; timeout?: string; dir?: string; 'runner-dir'?: string; 'fork-policy'?: string; 'cache-max-bytes'?: string;
  'hf-home'?: string; offline?: boolean; chain?: boolean; functional?: boolean; 'functional-when'?: string; 'functional-test'?: string;
  'functional-max-age'?: string; 'functional-timeout'?: string; 'when-unknown'?: string; 'drain-on-failure'?: boolean; 'token-file'?: string; label?: string[];
  'api-url'?: string; textfile?: string; reason?: string; force?: boolean;
  user?: string; 'runner-user'?: string; 'work-dir'?: string; fix?: boolean; 'dry-run'?: boolean;
};

function parseAgent(argv: string[]): { sub: string; values: Values; files: string[] } {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (e) {
    throw new InputError(`${oneLine(e).replace(/^TypeError \[[A-Z_]+\]: /, '')} (see npu-block-gate agent --help)`);
  }
  const values = parsed.values as Values;
  const pos = parsed.positionals;
  if (!pos.length) return { sub: 'help', values, files: [] };
  if (pos[0] === 'help') return { sub: 'help', values, files: [] };
  let sub = pos[0];
  let rest = pos.slice(1);
  const group = GROUPS[sub];
  if (group) {
    if (!rest.length) {
      if (values.help) return { sub: 'help', values, files: [] };
      throw new InputError(`agent ${sub} needs ${group.join(' or ')} (see npu-block-gate agent --help)`);
    }
    if (!group.includes(rest[0])) throw new InputError(`unknown ${sub} command ${JSON.stringify(rest[0])} (agent ${sub}: ${group.join(', ')})`);
    sub = `${sub} ${rest[0]}`;
    rest = rest.slice(1);
  }
  if (!(sub in ALLOWED)) throw new InputError(`unknown agent command ${JSON.stringify(sub)} (agent commands: setup, doctor, status, fleet, drain, undrain, cache stats|gc, lock status|wait, hooks install)`);
  if (rest.length && sub !== 'fleet') throw new InputError(`unexpected argument ${JSON.stringify(rest[0])} (see npu-block-gate agent --help)`);
  for (const k of Object.keys(values)) {
    if (!ALLOWED[sub].includes(k)) throw new InputError(`option --${k} does not apply to agent ${sub} (see npu-block-gate agent --help)`);
  }
  return { sub, values, files: sub === 'fleet' ? rest : [] };
}

/** Test seams: the machine (root, env, command table, Python tester, statfs, cwd, sleep, clock), how hooks call this CLI, and for setup this process's uid and file owners. */
export type AgentDeps = MachineOptions & { self?: SelfCommand; setupFs?: Partial<SetupFs>; stdin?: () => string };

function sizeOption(name: string, v: string | undefined): number {
  if (v === undefined) return DEFAULT_MAX_BYTES;
  const n = parseSize(v);
  if (n === null) throw new InputError(`--${name} ${JSON.stringify(v)}: not a size (bytes, or a number with K, M, G or T)`);
  return n;
}

function secondsOption(name: string, v: string | undefined, dflt: number): number {
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!v.trim() || !Number.isFinite(n) || n < 0) throw new InputError(`--${name} ${JSON.stringify(v)}: seconds (a number >= 0)`);
  return n;
}

function forkPolicy(v: string | undefined): ForkPolicy {
  if (v === undefined) return DEFAULT_FORK_POLICY;
  if (!(FORK_POLICIES as string[]).includes(v)) throw new InputError(`--fork-policy ${JSON.stringify(v)}: ${FORK_POLICIES.join(', ')}`);
  return v as ForkPolicy;
}

function whenUnknown(v: string | undefined): WhenUnknown {
  if (v === undefined) return DEFAULT_WHEN_UNKNOWN;
  if (v !== 'refuse' && v !== 'run') throw new InputError(`--when-unknown ${JSON.stringify(v)}: refuse or run`);
  return v;
}

function functionalWhen(v: string | undefined): FunctionalWhen | null {
  if (v === undefined) return null;
  if (v !== 'never' && v !== 'auto' && v !== 'always') throw new InputError(`--functional-when ${JSON.stringify(v)}: auto, always or never`);
  return v;
}

function testName(v: string | undefined): string | null {
  if (v === undefined) return null;
  if (!/^[a-z][a-z0-9-]*$/.test(v)) throw new InputError(`--functional-test ${JSON.stringify(v)}: an xrt-smi validate test name (latency, verify, throughput, ...)`);
  return v;
}

function needRunnerDir(v: Values, sub: string): string {
  if (!v['runner-dir']) throw new InputError(`agent ${sub} needs --runner-dir (the runner's install dir, with its .runner file)`, '--runner-dir');
  return resolve(v['runner-dir']);
}

const json = (x: unknown) => JSON.stringify(x, null, 2) + '\n';

export async function agentMain(argv: string[], out: NodeJS.WritableStream = process.stdout, err: NodeJS.WritableStream = process.stderr, deps: AgentDeps = {}): Promise<ExitCode> {
  try {
    const { sub, values, files } = parseAgent(argv);
    if (sub === 'setup' && values.help) { out.write(SETUP_HELP); return EXIT.pass; }
    if (sub === 'help' || values.help) { out.write(AGENT_HELP); return EXIT.pass; }
    const m = new Machine({ ...deps, root: values.root ?? deps.root });
    const env = m.env;
    const cacheDir = values['cache-dir'] ?? null;
    const stateDir = values['state-dir'] ? resolve(values['state-dir']) : defaultStateDir(m);
    const functional = {
      functionalTest: testName(values['functional-test']),
      functionalMaxAgeS: secondsOption('functional-max-age', values['functional-max-age'], FUNCTIONAL_MAX_AGE_S),
      functionalTimeoutS: secondsOption('functional-timeout', values['functional-timeout'], FUNCTIONAL_TIMEOUT_S),
    };
    const runnerDir = values['runner-dir'] ? resolve(values['runner-dir']) : null;
    const service = serviceName(runnerDir);
    // The functional probe runs as the runner's jobs do: as their user when this is root.
    const runner = m.uid === 0 ? runnerAccount(m, runnerDir) : null;
    switch (sub) {
      case 'setup': {
        const dryRun = !!values['dry-run'];
        // The header with the first step: a refusal before any step is one line on stderr only.
        let started = false;
        const head = () => { if (!started && !values.json) out.write(setupHeader(m.root, dryRun)); started = true; };
        const r = setup(m, {
          user: values.user ?? null, runnerUser: values['runner-user'] ?? null, runnerDir: values['runner-dir'] ?? null, workDir: values['work-dir'] ?? null,
          cacheDir, hfHome: values['hf-home'] ?? null, python: values.python ?? null, fix: !!values.fix, dryRun,
          uid: m.uid, fs: deps.setupFs, onStep: values.json ? undefined : (st: Step) => { head(); out.write(renderStep(st)); },
        });
        head();
        out.write(values.json ? json(r) : renderSummary(r));
        return r.exit_code;
      }
      case 'doctor': {
        const { checks } = await doctorReport(m, { cacheDir, python: values.python ?? null, stateDir, functional: values.functional ? 'always' : 'never', service, runnerAccount: runner, ...functional });
        const s = summarize(checks);
        const code = s.fail ? EXIT.infra : EXIT.pass;
        out.write(values.json ? json({ root: m.root, checks, summary: s, exit_code: code }) : renderChecks(checks, m.root));
        return code;
      }
      case 'status': {
        const s = status(m, { cacheDir, stateDir, runnerDir });
        out.write(values.json ? json(s) : renderStatus(s));
        return EXIT.pass;
      }
      case 'fleet': {
        if (!files.length) throw new InputError('agent fleet needs the agent status --json of each runner: files, or - for stdin (see npu-block-gate agent --help)');
        const inputs = files.map((f) => {
          if (f === '-') return { source: 'stdin', text: deps.stdin ? deps.stdin() : readFileSync(0, 'utf8') };
          try { return { source: f, text: readFileSync(f, 'utf8') }; } catch (e) { throw new InputError(`cannot read it (${oneLine(e)})`, f); }
        });
        const rows = fleetRows(inputs);
        out.write(values.json ? json(rows) : renderFleet(rows));
        return EXIT.pass;
      }
      case 'drain': {
        const r = await drain(m, {
          runnerDir: needRunnerDir(values, sub), tokenFile: values['token-file'] ?? null, labels: values.label ?? [], apiUrl: values['api-url'] ?? null,
          stateDir, reason: values.reason ?? 'drained by hand (npu-block-gate agent drain)', fromHook: false,
        });
        out.write(values.json ? json(r.record) : r.lines.join('\n') + '\n' + `${r.record.state === 'drained' ? 'drained' : 'not drained yet'}: ${r.record.reason}; undo with npu-block-gate agent undrain\n`);
        return EXIT.pass;
      }
      case 'undrain': {
        const r = await undrain(m, {
          runnerDir: needRunnerDir(values, sub), tokenFile: values['token-file'] ?? null, labels: values.label ?? [], apiUrl: values['api-url'] ?? null,
          stateDir, force: !!values.force, functionalTest: functional.functionalTest, functionalTimeoutS: functional.functionalTimeoutS,
        });
        const lines = [r.functional ? `functional probe: ${r.functional.detail}` : 'functional probe skipped (--force)', ...r.lines];
        out.write(values.json ? json(r) : lines.join('\n') + '\n');
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
          python: values.python ?? null,
          hfHome: values['hf-home'] ?? null,
          offline: !!values.offline,
          chain: !!values.chain,
          stateDir: values['state-dir'] ?? null,
          functionalWhen: functionalWhen(values['functional-when']),
          functionalMaxAge: values['functional-max-age'] === undefined ? null : String(secondsOption('functional-max-age', values['functional-max-age'], FUNCTIONAL_MAX_AGE_S)),
          whenUnknown: values['when-unknown'] === undefined ? null : whenUnknown(values['when-unknown']),
          drainOnFailure: !!values['drain-on-failure'],
          tokenFile: values['token-file'] ?? null,
          labels: values.label ?? [],
          apiUrl: values['api-url'] ?? null,
          textfile: values.textfile ?? null,
          env,
        });
        out.write(report);
        return EXIT.pass;
      }
      case 'hook job-started': {
        const r = await jobStarted(m, {
          cacheDir, python: values.python ?? null, forkPolicy: forkPolicy(values['fork-policy']), stateDir, service, runnerAccount: runner,
          functional: functionalWhen(values['functional-when']) ?? 'auto', whenUnknown: whenUnknown(values['when-unknown']), ...functional,
        });
        out.write(r.out);
        return r.code as ExitCode;
      }
      case 'hook job-completed': {
        const r = await jobCompleted(m, {
          dir: values.dir ?? defaultHooksDir(m), cacheDir, maxBytes: sizeOption('cache-max-bytes', values['cache-max-bytes']), stateDir,
          runnerDir: values['runner-dir'] ?? null, drainOnFailure: !!values['drain-on-failure'], tokenFile: values['token-file'] ?? null,
          labels: values.label ?? [], apiUrl: values['api-url'] ?? null, textfile: values.textfile ?? null,
          functional: functionalWhen(values['functional-when']) ?? 'auto', ...functional,
        });
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
