// The Python a check finds in the pull request's own tree (ironenv, sandbox, airenv in or beside
// it) is the pull request's program. Before the sandbox starts, the runner asks the chosen
// interpreter which dirs it needs bound (interpreterDirs); that question is asked outside the
// sandbox, so it must never run a program from the tree: only a venv's link out of the tree to a
// real Python, by its real path. A planted script proves it, unsandboxed and through a whole check.
import { test, type Missing } from './helpers/skip.ts';
import * as assert from 'uvu/assert';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { copyAirMini } from './helpers/airmini.ts';
import { missingBwrap } from './helpers/bwrap.ts';
import { findNumpyPython } from './helpers/python.ts';
import { tempDir } from './helpers/tmp.ts';
import { main } from '../src/cli.ts';
import { askable, interpreterDirs } from '../src/probe/run.ts';

const python = findNumpyPython();
const realPython = python ? spawnSync(python, ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).stdout.trim() : '';
const noPython: Missing | null = realPython ? null : { need: 'numpy', why: 'no Python with numpy' };
const noBwrap = missingBwrap;

/** A script posing as a Python: it notes that it ran (where only an unsandboxed process can write), then runs the real one. */
function plant(at: string, marker: string): void {
  mkdirSync(join(at, 'bin'), { recursive: true });
  const p = join(at, 'bin', 'python3');
  writeFileSync(p, `#!/bin/sh\necho "ran as $(id -u) with $*" >> ${marker}\nexec ${realPython} "$@"\n`);
  chmodSync(p, 0o755);
}

test('askable: a program inside a dir the pull request controls is never run; a link out of it runs its real Python; anything else runs as named', () => {
  const t = tempDir('nbg-askable-');
  try {
    const tree = t.path('tree');
    mkdirSync(join(tree, 'env', 'bin'), { recursive: true });
    const script = join(tree, 'env', 'bin', 'python3');
    writeFileSync(script, '#!/bin/sh\n');
    chmodSync(script, 0o755);
    assert.is(askable(script, [tree]), null, 'a script in the tree');
    // A venv's python: a link out of the tree to a Python by name, run by its real path.
    const outsideBin = t.path('base/bin');
    mkdirSync(outsideBin, { recursive: true });
    const base = join(outsideBin, 'python3.11');
    writeFileSync(base, '#!/bin/sh\n');
    chmodSync(base, 0o755);
    const venvPy = join(tree, 'venv', 'bin', 'python');
    mkdirSync(join(tree, 'venv', 'bin'), { recursive: true });
    symlinkSync(base, venvPy);
    assert.is(askable(venvPy, [tree]), base);
    // A link out of the tree to something that is not a Python by name (a shell) is not run.
    const shell = join(tree, 'venv', 'bin', 'python3');
    symlinkSync('/bin/sh', shell);
    assert.is(askable(shell, [tree]), null, 'a link to /bin/sh');
    // A link from outside into the tree is the tree's program.
    const inward = t.path('elsewhere-python3');
    symlinkSync(script, inward);
    assert.is(askable(inward, [tree]), null, 'a link from outside into the tree');
    // A tree reached through a link is the same tree.
    const treeLink = t.path('tree-link');
    symlinkSync(tree, treeLink);
    assert.is(askable(script, [treeLink]), null, 'the tree named through a link');
    // Outside every untrusted dir: run as named (a venv outside keeps its own sys.path).
    assert.is(askable(base, [tree]), base);
    assert.is(askable(inward, []), inward);
  } finally {
    t.cleanup();
  }
});

test.unless(noPython)('interpreterDirs: a planted Python in the tree is not run outside the sandbox (the same script outside it is: the marker proves the test sees a run)', async () => {
  const t = tempDir('nbg-interp-');
  try {
    const marker = t.path('ran.txt');
    const tree = t.path('tree');
    plant(join(tree, 'ironenv'), marker);
    const inTree = await interpreterDirs(join(tree, 'ironenv', 'bin', 'python3'), { PATH: process.env.PATH }, [tree]);
    assert.not.ok(existsSync(marker), 'the tree\'s script ran outside the sandbox');
    assert.ok(inTree.every((d) => d.startsWith(tree)), `only the tree's own dirs without asking: ${inTree.join(', ')}`);
    // The same script outside the untrusted dirs is asked (and says the real Python's dirs).
    plant(t.path('trusted'), marker);
    const outside = await interpreterDirs(t.path('trusted/bin/python3'), { PATH: process.env.PATH }, [tree]);
    assert.ok(existsSync(marker), 'the trusted script was not asked');
    assert.ok(outside.length > 2, `the real Python's dirs: ${outside.join(', ')}`);
  } finally {
    t.cleanup();
  }
});

test.unless(noPython ?? noBwrap)('check: an ironenv the pull request planted in the tree runs only inside the sandbox', async () => {
  const air = copyAirMini();
  const t = tempDir('nbg-interp-check-');
  // Its own dir, holding no run dir (the sandbox binds those back): only a run outside leaves it.
  const m = tempDir('nbg-interp-marker-');
  const saved = { python: process.env.NPU_BLOCK_GATE_PYTHON, venv: process.env.VIRTUAL_ENV };
  try {
    const marker = m.path('ran.txt');
    plant(join(air.root, 'ironenv'), marker);
    // No Python named: the tree's ironenv is the first candidate, as on a runner with none set.
    delete process.env.NPU_BLOCK_GATE_PYTHON;
    delete process.env.VIRTUAL_ENV;
    let said = '';
    const sink = new Writable({ write(c, _e, cb) { said += c; cb(); } }) as unknown as NodeJS.WritableStream;
    await main(['check', '--model-dir', air.model('tiny_llama'), '--out', t.path('run'), '--no-docs', '--no-cache'], sink, sink);
    assert.match(said, /isolation: bubblewrap/, said);
    assert.not.ok(existsSync(marker), `the planted Python ran outside the sandbox:\n${existsSync(marker) ? readFileSync(marker, 'utf8') : ''}\n${said}`);
  } finally {
    if (saved.python !== undefined) process.env.NPU_BLOCK_GATE_PYTHON = saved.python;
    if (saved.venv !== undefined) process.env.VIRTUAL_ENV = saved.venv;
    t.cleanup();
    m.cleanup();
    rmSync(air.root, { recursive: true, force: true });
  }
});

test.run();
