// `npm run demo [-- check options]`: the whole check on a scratch copy of the embedded default
// (examples/air-mini), with everything it writes in one temp dir: the copy (whose
// phase2_block.md and TODO.md the check updates), the run dir and the kernel and reference caches.
// Nothing is written in the clone or in ~/.cache; at the end it says where that dir is and how to
// remove it. Extra arguments go to `check` (`npm run demo -- --emulate --inject stale_tail`).
import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Runs the demo; `cli` is the command that runs npu-block-gate (the bundle by default). Resolves to its exit code. */
export async function demo(args, { cli = [process.execPath, join(root, 'dist/cli.js')], log = (s) => process.stderr.write(s), env = process.env, stdio = 'inherit' } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'nbg-demo-'));
  cpSync(join(root, 'examples/air-mini'), join(dir, 'air-mini'), {
    recursive: true, filter: (src) => !/(__pycache__|build_peano|docs[\\/]development_progress)/.test(src),
  });
  const model = join(dir, 'air-mini/programming_examples/llms/tiny_llama');
  const argv = [...cli.slice(1), 'check', '--model-dir', model, '--out', join(dir, 'run'), '--cache-dir', join(dir, 'cache'), ...args];
  const code = await new Promise((resolve) => {
    const child = spawn(cli[0], argv, { stdio, env });
    child.on('error', (e) => { log(`demo: cannot run ${cli[0]}: ${e.message}\n`); resolve(3); });
    child.on('close', (c, signal) => resolve(c ?? (signal === 'SIGINT' ? 130 : 143)));
  });
  log(`\ndemo: everything it wrote is in ${dir}: the copy of air-mini (its tiny_llama phase2_block.md and TODO.md),\n`
    + `demo: the run dir (run/, report.md) and the caches (cache/); nothing else was written. Remove it with: rm -rf ${dir}\n`);
  return code;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  demo(process.argv.slice(2)).then((code) => { process.exitCode = code; });
}
