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
await uvu.exec();
console.log(`  Load errors: ${broken}`);
if (broken) process.exitCode = 1;
