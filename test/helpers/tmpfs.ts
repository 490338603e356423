// A small tmpfs for disk-full and read-only tests, where the machine allows mounting one (root,
// or a container with CAP_SYS_ADMIN). Elsewhere `mountTmpfs` returns why not, and the test skips
// saying so.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statfsSync, writeFileSync, openSync, writeSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';

export interface Tmpfs {
  dir: string;
  /** Remounts read-only (or read-write again). */
  remount(ro: boolean): void;
  /** Free bytes as the file system reports them. */
  free(): number;
  /** Fills the file system until `leave` bytes are free (to the page). */
  fill(leave: number): void;
  unmount(): void;
}

export function mountTmpfs(sizeKiB = 64): Tmpfs | string {
  if (process.platform !== 'linux') return 'tmpfs tests need Linux';
  if (process.getuid?.() !== 0) return 'mounting a tmpfs needs root (this process is not)';
  const dir = mkdtempSync(join(tmpdir(), 'nbg-tmpfs-'));
  const r = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeKiB}k`, 'tmpfs', dir], { encoding: 'utf8' });
  if (r.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    return `cannot mount a tmpfs here (${(r.stderr || r.error?.message || `exit ${r.status}`).trim()})`;
  }
  const t: Tmpfs = {
    dir,
    remount(ro) {
      const m = spawnSync('mount', ['-o', `remount,${ro ? 'ro' : 'rw'}`, dir], { encoding: 'utf8' });
      if (m.status !== 0) throw new Error(`remount failed: ${m.stderr}`);
    },
    free() {
      const s = statfsSync(dir);
      return s.bavail * s.bsize;
    },
    fill(leave) {
      const fd = openSync(join(dir, `.filler-${Date.now()}`), 'w');
      try {
        const chunk = Buffer.alloc(4096, 0x61);
        while (t.free() > leave) writeSync(fd, chunk);
      } catch {
        // ENOSPC: full
      } finally {
        closeSync(fd);
      }
    },
    unmount() {
      spawnSync('umount', [dir]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  writeFileSync(join(dir, '.probe'), 'x');
  rmSync(join(dir, '.probe'));
  return t;
}
