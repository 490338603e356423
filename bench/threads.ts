// npx tsx bench/threads.ts [--samples 200]
//
// Thread start-up on this machine (deliverable of issue 20: why the native engine keeps its
// scanning threads): compiles bench/thread_start.cc with the system C++ compiler (c++, else g++;
// the one node-gyp uses) and runs it after 5 ms and 50 ms of idling between samples (a VM's idle
// vCPU may be descheduled by the host: the first wake then pays for it). No assertions.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isMain, load, machineLine, option } from './lib.ts';

export function threadStart(samples: number): string[] {
  const src = fileURLToPath(new URL('./thread_start.cc', import.meta.url));
  const dir = mkdtempSync(join(tmpdir(), 'nbg-threads-'));
  try {
    const exe = join(dir, 'thread_start');
    const cxx = ['c++', 'g++'].find((c) => spawnSync(c, ['--version']).status === 0);
    if (!cxx) return ['threads: NOT MEASURED (no C++ compiler: c++ or g++)'];
    const b = spawnSync(cxx, ['-O2', '-std=c++17', '-pthread', src, '-o', exe], { encoding: 'utf8' });
    if (b.status !== 0) return [`threads: NOT MEASURED (${cxx} failed: ${b.stderr.trim().split('\n').pop()})`];
    const lines = [`threads: ${machineLine()}`];
    for (const idle of [5, 50]) {
      const r = spawnSync(exe, [String(idle === 50 ? Math.min(samples, 60) : samples), String(idle)], { encoding: 'utf8' });
      lines.push(...r.stdout.trim().split('\n').map((l) => `  ${l}`));
    }
    return lines;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (isMain(import.meta.url)) {
  for (const l of threadStart(Number(option(process.argv.slice(2), 'samples', '200')))) console.log(l);
  console.log(`threads: load average at the end ${load()}`);
}
