// Runs uvu test files in this process, as `uvu -r tsx` does, for scripts/test.mjs.
// usage: node --import tsx scripts/test/uvu.mjs FILE...   (paths relative to the repo's test/, or absolute)
// A file that throws while loading is reported and counted as one failure; the others still
// run. The last line is uvu's totals plus "Load errors: N", which the runner reads.
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const test = resolve(import.meta.dirname, '..', '..', 'test');
globalThis.UVU_DEFER = 1;
const uvu = await import('uvu');
let broken = 0;
for (const [i, name] of process.argv.slice(2).entries()) {
  globalThis.UVU_INDEX = i;
  globalThis.UVU_QUEUE.push([name]);
  try {
    await import(pathToFileURL(resolve(test, name)).href);
  } catch (e) {
    broken++;
    console.error(`uvu: ${name} failed to load: ${e?.stack ?? e}`);
  }
}
// Each file's own seconds (its suites' run time; loading is not in it), longest first, so that
// the runner's hints can be kept true for files that run in a batch.
const seconds = new Map();
for (const group of globalThis.UVU_QUEUE) {
  const name = group[0];
  for (let k = 1; k < group.length; k++) {
    const run = group[k];
    group[k] = async () => {
      const t0 = performance.now();
      try {
        return await run();
      } finally {
        seconds.set(name, (seconds.get(name) ?? 0) + (performance.now() - t0) / 1000);
      }
    };
  }
}
await uvu.exec();
if (seconds.size > 1) {
  const times = [...seconds].sort((a, b) => b[1] - a[1]).map(([n, s]) => `${n} ${s.toFixed(1)} s`);
  console.log(`  Seconds:   ${times.join(', ')}`);
}
console.log(`  Load errors: ${broken}`);
if (broken) process.exitCode = 1;
