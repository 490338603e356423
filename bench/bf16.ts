// npx tsx bench/bf16.ts [--runs 7 --dir DIR]
//
// bf16 against the read, and a proposal for later (issue 20): compiles bench/bf16_float32.cc
// (the system C++ compiler, AVX-512F + FMA) and runs it on the compare bench's bf16 files: one
// thread, slices read with pread as the engine reads them; the read alone, the engine's float64
// arithmetic, and float32 lanes flushed into double every 128 columns; then how far each figure
// of the report moves under the proposal. The engine itself is not changed by this: its numbers
// stay float64 (bit-identical to the TypeScript twin). No assertions.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generate } from './files.ts';
import { isMain, load, machineLine, option } from './lib.ts';

export function bf16Proposal(dir: string, runs: number): string[] {
  const src = fileURLToPath(new URL('./bf16_float32.cc', import.meta.url));
  const tmp = mkdtempSync(join(tmpdir(), 'nbg-bf16-'));
  try {
    const exe = join(tmp, 'bf16_float32');
    const cxx = ['c++', 'g++'].find((c) => spawnSync(c, ['--version']).status === 0);
    if (!cxx) return ['bf16: NOT MEASURED (no C++ compiler: c++ or g++)'];
    const b = spawnSync(cxx, ['-O3', '-std=c++17', '-mavx512f', '-mfma', src, '-o', exe], { encoding: 'utf8' });
    if (b.status !== 0) return [`bf16: NOT MEASURED (${cxx} failed: ${b.stderr.trim().split('\n').pop()})`];
    const pairs = generate(dir, 'bf16', 16, 2048, 2048);
    const r = spawnSync(exe, [String(runs), ...pairs.flatMap((p) => [p.npu, p.ref])], { encoding: 'utf8' });
    return r.stdout.trim().split('\n');
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

if (isMain(import.meta.url)) {
  const args = process.argv.slice(2);
  console.log(`bench/bf16: ${machineLine()}`);
  for (const l of bf16Proposal(option(args, 'dir', join(tmpdir(), 'npu-block-gate-bench-16x2048x2048')), Number(option(args, 'runs', '7')))) console.log(l);
  console.log(`bench/bf16: load average at the end ${load()}`);
}
