// The long fuzz run of the tensor readers and both comparison engines (not part of CI; CI runs a
// short seeded run in test/fuzz.test.ts):
//   npm run fuzz [-- --cases 10000 --seed 1 --engine both|js|native --hang-seconds 20]
// Each engine's cases run in worker processes (test/helpers/fuzz.ts); the run prints, per engine,
// how many files were judged and refused, every crash and hang with the case to reproduce it
// (seed, index, format, mutations), and the peak RSS of the worker processes. Exit 1 on any crash
// or hang. A single case: --worker --seed S --from I --to I+1 --engine E prints its outcome.
import { fuzz, worker, type FuzzSummary } from '../test/helpers/fuzz.ts';
import { selectEngine } from '../src/metrics/index.ts';

const args = process.argv.slice(2);
const opt = (name: string, def: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : def;
};
const seed = Number(opt('seed', '1'));

if (args.includes('--worker')) {
  await worker(seed, Number(opt('from', '0')), Number(opt('to', '1')), opt('engine', 'js') as 'js' | 'native');
} else {
  const cases = Number(opt('cases', '10000'));
  const which = opt('engine', 'both');
  const engines = (which === 'both' ? ['js', 'native'] : [which]) as ('js' | 'native')[];
  const MiB = 1 << 20;
  let bad = 0;
  console.log(`fuzz: ${cases} cases per engine (seed ${seed}; .npy, .npz and .safetensors in turn), hang = ${opt('hang-seconds', '20')} s without progress`);
  for (const engine of engines) {
    if (engine === 'native') {
      try {
        selectEngine({ NPU_BLOCK_GATE_ENGINE: 'native' });
      } catch (e) {
        console.log(`  native: skipped (${(e as Error).message})`);
        continue;
      }
    }
    let shown = 0;
    const s: FuzzSummary = await fuzz({
      seed, cases, engine, hangSeconds: Number(opt('hang-seconds', '20')),
      onProgress: (done) => {
        if (done - shown >= 1000 && process.stderr.isTTY) { shown = done; process.stderr.write(`\r  ${engine}: ${done}/${cases}`); }
      },
    });
    if (process.stderr.isTTY) process.stderr.write('\r');
    console.log(`  ${engine.padEnd(6)} ${s.cases} cases in ${s.seconds.toFixed(1)} s: ${s.ok} judged, ${s.input} refused as bad input, ${s.crashes.length} crashes, ${s.hangs.length} hangs; peak RSS ${(s.peakRss / MiB).toFixed(1)} MiB`);
    for (const c of s.crashes) console.log(`    crash: case ${c.index} (${c.format}; ${c.mutations.join(', ')}): ${c.message}`);
    for (const h of s.hangs) console.log(`    hang: case ${h.index} (${h.format}; ${h.mutations.join(', ')})`);
    bad += s.crashes.length + s.hangs.length;
  }
  console.log(`  reproduce one case: npx tsx bench/fuzz.ts --worker --seed ${seed} --from N --to N+1 --engine js|native`);
  process.exitCode = bad ? 1 : 0;
}
