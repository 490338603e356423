// A path below a directory, reached without a symlink: what the Action's own process writes into a
// model dir the probe could write (a pull request's code may leave a link there that points at
// ~/.bashrc or ~/.ssh). Checked just before acting, when no process of the probe is left.
import { lstatSync } from 'node:fs';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { InputError, fsError } from '../errors.ts';

/**
 * Throws an InputError naming `path` when it is not below `dir`, or when any component from `dir`
 * down to `path` itself is a symlink (or, above the last, not a directory). A component that does
 * not exist yet ends the walk: nothing below it can be a link.
 */
export function confineBelow(dir: string, path: string, what: string): void {
  const root = resolve(dir);
  const target = resolve(path);
  const rel = relative(root, target);
  if (!rel || rel.startsWith('..') || isAbsolute(rel)) throw new InputError(`${what} is not inside ${root}; refusing to write it`, path);
  let at = root;
  const parts = rel.split(sep);
  for (let i = 0; i < parts.length; i++) {
    at = join(at, parts[i]);
    let st;
    try {
      st = lstatSync(at);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw fsError(e, at, 'cannot read');
    }
    if (st.isSymbolicLink()) throw new InputError(`${relative(root, at)} is a symlink; ${what} is never written through one (a pull request's code may have left it)`, at);
    if (i < parts.length - 1 && !st.isDirectory()) throw new InputError(`${relative(root, at)} is not a directory`, at);
  }
}
