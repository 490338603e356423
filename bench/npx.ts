// npx tsx bench/npx.ts [--runs 10]
//
// `npx npu-block-gate --help` in a clone where `npm ci` ran (test/helpers/clone.ts: the checkout's
// files, node_modules linked, the addon built), against `node dist/cli.js --help` in the same clone,
// the floor. The first npx call is timed once, with a fresh npm cache (npx installs the checkout into
// its cache and runs the package's install script: at 8e7874c a node-gyp rebuild); then --runs
// interleaved later calls of each. Process start to exit; exit 0 and the help text checked on every
// run; whether the first call compiled (native/build holds node-gyp's Makefile) is printed. No
// assertions on time: figures.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { clone } from '../test/helpers/clone.ts';
import { interleave, isMain, load, machineLine, median, medMin, option, spawnTimed } from './lib.ts';

if (isMain(import.meta.url)) {
  const args = process.argv.slice(2);
  const runs = Number(option(args, 'runs', '10'));
  console.log(`bench/npx: ${machineLine()}`);
  const c = clone();
  try {
    const env = { ...process.env, npm_config_cache: join(c.dir, '..', 'npm-cache'), npm_config_update_notifier: 'false', npm_config_audit: 'false', npm_config_fund: 'false' };
    const help = (out: string) => {
      if (!/^npu-block-gate \d/.test(out)) throw new Error(`bench/npx: not the help text:\n${out.slice(0, 500)}`);
    };
    const npx = () => { const r = spawnTimed('npx', ['npu-block-gate', '--help'], { env, cwd: c.dir }); help(r.stdout); return r.seconds; };
    const first = npx();
    const compiled = readdirSync(join(c.dir, 'native/build')).some((n) => n !== 'Release');
    const { times } = await interleave([
      { name: 'npx', runs, run: npx },
      { name: 'node', runs, run: () => { const r = spawnTimed(process.execPath, ['dist/cli.js', '--help'], { env, cwd: c.dir }); help(r.stdout); return r.seconds; } },
    ]);
    console.log(`npx: --help in a clone where npm ci ran, process start to exit, median (min) of ${runs} interleaved runs`);
    console.log(`  first npx call        ${first.toFixed(3)} s   (fresh npm cache; ${compiled ? 'COMPILED the native addon' : 'compiled nothing'})`);
    console.log(`  later npx calls       ${medMin(times.npx)}`);
    console.log(`  node dist/cli.js      ${medMin(times.node)}   (the floor)`);
    console.log(`  npx above node: first ${(first - median(times.node)).toFixed(3)} s, later ${(median(times.npx) - median(times.node)).toFixed(3)} s (medians)`);
    console.log(`bench/npx: load average at the end ${load()}`);
  } finally {
    c.cleanup();
  }
}
