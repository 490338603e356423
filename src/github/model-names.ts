// A model's repository-relative path as a name: one slug (artifact names, run dirs) and one docs
// branch per model, and never the same one for two models. A plain path keeps the name it always
// had (llama32_1b's branch and artifacts are found again); a path the plain form would have to
// change (a space, an odd character, a `__` that reads as a separator) gets the changed form plus
// `+` and a hash of the exact path: `+` is never in a plain name, so a hashed name never equals a
// plain one, and two paths share a hashed name only if their hashes collide (48 bits).
import { createHash } from 'node:crypto';

/** The path's components: separators collapsed, `.` dropped (the same directory, the same name). */
function parts(modelKey: string): string[] {
  return modelKey.split(/[\\/]+/).filter((p) => p && p !== '.');
}

function suffix(ps: string[]): string {
  return '+' + createHash('sha256').update(ps.join('/')).digest('hex').slice(0, 12);
}

// A slug component that joins unambiguously with `__`: single underscores between other characters.
const PLAIN_SLUG_PART = /^[A-Za-z0-9.-]+(?:_[A-Za-z0-9.-]+)*$/;

// An artifact name is <prefix>-<slug>[-leg-<8 hex>]-attempt<n>: a slug that ends like a leg would
// make model `m-leg-0123abcd` in one leg and model `m` in leg-0123abcd share a name.
const LEG_TAIL = /-leg-[0-9a-f]{8}$/;

/** A model's path as one name part: `/` becomes `__`; anything else a name cannot hold, `_` plus the hash. */
export function modelSlug(modelKey: string): string {
  const ps = parts(modelKey);
  if (ps.length === 0) return 'model';
  const plain = ps.join('__');
  if (ps.every((p) => PLAIN_SLUG_PART.test(p) && p !== '..') && !LEG_TAIL.test(plain)) return plain;
  return ps.map((p) => p.replace(/[^A-Za-z0-9._-]+/g, '_')).join('__') + suffix(ps);
}

/** A path component as a valid ref component (git check-ref-format). */
function refPart(p: string): string {
  return p.replace(/[^A-Za-z0-9._-]+/g, '_').replace(/^[.-]+/, '_').replace(/\.lock$/i, '_lock').replace(/\.+$/, '_').replace(/\.{2,}/g, '_');
}

/** The part of the docs branch after its prefix: the path itself when every component is a valid ref component. */
export function branchPath(modelKey: string): string {
  const ps = parts(modelKey);
  if (ps.length === 0) return 'model';
  const refs = ps.map(refPart);
  return refs.join('/') + (refs.every((r, i) => r === ps[i]) ? '' : suffix(ps));
}
