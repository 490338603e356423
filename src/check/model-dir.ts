// What a model dir is, in one place: a directory, programming_examples/llms/<model> in an mlir-air
// tree (air-mini keeps the same layout). The CLI, the Action and the documents step all ask here.
import { realpathSync, statSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { InputError, fsError } from '../errors.ts';

export interface ModelDir {
  /** Absolute path with every symlink resolved: what the probe is given and the sandbox binds (a
   * link path outside the sandbox's binds would not exist inside it). */
  dir: string;
  /** The model's name: the real dir's basename (a link's own name is not the model's). */
  name: string;
  /** The mlir-air tree root above it (the dir holding programming_examples/), or null outside a tree. */
  airRoot: string | null;
}

/** The mlir-air tree root above a path (programming_examples/llms/<model>), or null. */
export function airRootOf(path: string): string | null {
  let d = resolve(path);
  while (d !== dirname(d)) {
    if (basename(d) === 'llms' && basename(dirname(d)) === 'programming_examples') return dirname(dirname(d));
    d = dirname(d);
  }
  return null;
}

/** The model dir at `path`, or an input error naming it (missing, not a directory, unreadable). */
export function modelDirAt(path: string): ModelDir {
  const dir = resolve(path);
  let st;
  try {
    st = statSync(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') throw new InputError('model dir does not exist', path);
    throw fsError(e, path, 'cannot read the model dir');
  }
  if (!st.isDirectory()) throw new InputError('model dir is not a directory', path);
  let real: string;
  try {
    real = realpathSync(dir);
  } catch (e) {
    throw fsError(e, path, 'cannot resolve the model dir');
  }
  return { dir: real, name: basename(real), airRoot: airRootOf(real) };
}

