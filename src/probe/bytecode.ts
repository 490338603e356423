// The probe's own package, compiled to bytecode for the interpreter that runs it (issue 30: about
// 80 modules were compiled from source on every run, 0.04-0.08 s of each probe). A trusted step:
// the interpreter is one outside every dir the pull request controls (the tree, the model dir, the
// run dir: interpreterSaid runs nothing from there), a real program (an ELF file, not a wrapper
// such as a pyenv shim), and it compiles only this tool's scripts/probe, never the tree, outside
// the sandbox, with -I (no working dir, no PYTHONPATH). The .pyc files go to the package's own
// __pycache__ dirs, which the sandbox sees read-only; they are hash-checked (Python compares each
// with its source's hash on import, so a changed source is never run from a stale .pyc). A stamp of
// the sources' sizes and mtimes beside them says when they must be compiled again. Best effort:
// a read-only install or a failed compile leaves the probe to compile from source, as before.
import { spawn } from 'node:child_process';
import { accessSync, constants, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { writeAtomic } from '../fs/atomic.ts';
import { programId } from './answers.ts';
import { interpreterSaid, probeDir } from './run.ts';

/** The sources of the probe's package: (path, size, mtime) of every .py file, sorted. */
function sourceStamp(root: string): string {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.name === '__pycache__') continue;
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.py')) {
        const st = statSync(p);
        out.push(`${p} ${st.size} ${st.mtimeMs}`);
      }
    }
  };
  walk(root);
  return out.sort().join('\n');
}

const TAG = /^[a-z][a-z0-9_]*-\d+$/;

/** The stamp file for a cache tag ("cpython-311"), in the package's own __pycache__. */
const stampPath = (pkg: string, tag: string) => join(pkg, '__pycache__', `.nbg-sources.${tag}`);

/**
 * Compiles scripts/probe/npu_probe for `command` when its bytecode is missing or older than the
 * sources, and the interpreter may be run here (see the header). Resolves when done (or skipped);
 * never rejects. `why` says what it did, for the log. `pkg`: the package (tests compile a copy).
 */
export async function compileProbe(command: string, env: NodeJS.ProcessEnv, untrusted: string[], answers: string | null, pkg = join(probeDir(), 'npu_probe')): Promise<{ compiled: boolean; why: string }> {
  try {
    const { path, run, said } = await interpreterSaid(command, env, untrusted, answers);
    if (!path || !run || run !== path) return { compiled: false, why: 'the interpreter is not one this process runs (inside the tree, or reached through it)' };
    if (!programId(run)) return { compiled: false, why: 'the interpreter is a wrapper, not a program (a shim)' };
    const tag = (said.find((x) => typeof x === 'object' && x !== null && 'tag' in x) as { tag?: unknown } | undefined)?.tag;
    if (typeof tag !== 'string' || !TAG.test(tag)) return { compiled: false, why: 'the interpreter named no bytecode cache tag' };
    // A read-only install: nothing to write, and no compile to pay for on every run.
    try { accessSync(pkg, constants.W_OK); } catch { return { compiled: false, why: `${pkg} is not writable here` }; }
    const stamp = sourceStamp(pkg);
    const file = stampPath(pkg, tag);
    let kept: string | null = null;
    try { kept = readFileSync(file, 'utf8'); } catch { /* none yet */ }
    if (kept === stamp) return { compiled: false, why: 'up to date' };
    const ok = await new Promise<boolean>((done) => {
      let child: ReturnType<typeof spawn>;
      try {
        child = spawn(run, ['-I', '-m', 'compileall', '-q', '-f', '--invalidation-mode', 'checked-hash', pkg], { cwd: '/', env, stdio: 'ignore', timeout: 120_000 });
      } catch { return done(false); }
      child.on('error', () => done(false));
      child.on('close', (code) => done(code === 0));
    });
    if (!ok) return { compiled: false, why: 'compileall failed (a read-only install?)' };
    // The sources as they were before the compile: one edited meanwhile is compiled again next time.
    writeAtomic(file, stamp, { durable: false, follow: false });
    return { compiled: true, why: `compiled for ${tag}` };
  } catch (e) {
    return { compiled: false, why: (e as Error).message };
  }
}
