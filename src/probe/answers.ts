// What an interpreter said, kept on disk so a later process need not start it again (issue 30):
// the job-started hook's numpy check, and a check's question about the interpreter's dirs. An
// answer is kept per interpreter as named (a venv's python and its base interpreter answer
// differently), and stands only while the program it resolves to is the same file: its real path,
// size and mtime, and whatever else the caller names (numpy's own file, say) unchanged. Only a
// real program is kept (an ELF file: a wrapper script such as a pyenv shim answers by what it reads
// at run time, so it is asked every time), and never one the caller calls untrusted. The file is
// written atomically (beside it, then renamed), so a reader sees the old answers or the new, never
// half; concurrent writers may lose each other's entry, which is then asked again.
import { closeSync, openSync, readFileSync, readSync, realpathSync, statSync } from 'node:fs';
import { writeAtomic } from '../fs/atomic.ts';

/** The file a named interpreter is: compared on every use. */
interface ProgramId {
  real: string;
  size: number;
  mtimeMs: number;
}

/** The program `path` resolves to, when it is a regular ELF file; null otherwise (never kept). */
export function programId(path: string): ProgramId | null {
  try {
    const real = realpathSync(path);
    const st = statSync(real);
    if (!st.isFile()) return null;
    const fd = openSync(real, 'r');
    const head = Buffer.alloc(4);
    try { readSync(fd, head, 0, 4, 0); } finally { closeSync(fd); }
    if (head.toString('latin1') !== '\x7fELF') return null;
    return { real, size: st.size, mtimeMs: st.mtimeMs };
  } catch {
    return null;
  }
}

/** A file's mtime (ms), or null when it cannot be stat'ed: for the `also` stamps. */
export function mtimeOf(path: string): number | null {
  try { return statSync(path).mtimeMs; } catch { return null; }
}

interface Entry<T> { id: ProgramId; also: Record<string, number | string | null>; answer: T }
type AnswerFile<T> = { version: 1; entries: Record<string, Entry<T>> };

const MAX_ENTRIES = 32;

function load<T>(file: string): AnswerFile<T> {
  try {
    const f = JSON.parse(readFileSync(file, 'utf8')) as AnswerFile<T>;
    if (f?.version === 1 && f.entries && typeof f.entries === 'object') return f;
  } catch { /* missing or unreadable: nothing kept */ }
  return { version: 1, entries: {} };
}

const same = (a: Record<string, unknown>, b: Record<string, unknown>) => {
  const ka = Object.keys(a), kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k) => a[k] === b[k]);
};

/**
 * The answer kept for `named` (an absolute path), if the program is still the same file and every
 * `also` stamp (computed now by the caller) equals the one kept with it; else null.
 */
export function keptAnswer<T>(file: string, named: string, also: (answer: T) => Record<string, number | string | null>): T | null {
  const e = load<T>(file).entries[named];
  if (!e) return null;
  const id = programId(named);
  if (!id || id.real !== e.id.real || id.size !== e.id.size || id.mtimeMs !== e.id.mtimeMs) return null;
  return same(also(e.answer), e.also) ? e.answer : null;
}

/** Keeps `answer` for `named` (best effort: an unwritable dir keeps nothing). False when not kept. */
export function keepAnswer<T>(file: string, named: string, answer: T, also: Record<string, number | string | null>): boolean {
  const id = programId(named);
  if (!id) return false;
  const f = load<T>(file);
  delete f.entries[named];
  f.entries[named] = { id, also, answer };
  const names = Object.keys(f.entries);
  for (const n of names.slice(0, Math.max(0, names.length - MAX_ENTRIES))) delete f.entries[n];
  try {
    writeAtomic(file, JSON.stringify(f), { durable: false });
    return true;
  } catch {
    return false;
  }
}
