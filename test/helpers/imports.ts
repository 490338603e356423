// The import graph of src/, read from the source text: every static `import ... from './x'`,
// `export ... from './x'` and dynamic `import('./x')` with a relative specifier.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

export type Graph = Map<string, Set<string>>;

function tsFiles(dir: string, out: string[] = []): string[] {
  for (const n of readdirSync(dir)) {
    const p = join(dir, n);
    if (statSync(p).isDirectory()) tsFiles(p, out);
    else if (p.endsWith('.ts')) out.push(p);
  }
  return out;
}

/** Specifiers a module imports (comments removed first, so an example in a comment is no edge). */
export function importSpecifiers(source: string): string[] {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
  const out: string[] = [];
  const re = /(?:^|[;\s])(?:import|export)\s[^'"`;]*?\sfrom\s*['"]([^'"]+)['"]|(?:^|[;\s])import\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/gm;
  for (let m; (m = re.exec(code));) out.push(m[1] ?? m[2] ?? m[3]);
  return out;
}

/** File -> files it imports, paths relative to `root`'s parent (e.g. "src/check/index.ts"). */
export function importGraph(root: string): Graph {
  const base = dirname(root);
  const g: Graph = new Map();
  for (const f of tsFiles(root)) {
    const from = relative(base, f);
    const to = new Set<string>();
    for (const spec of importSpecifiers(readFileSync(f, 'utf8'))) {
      if (!spec.startsWith('.')) continue;
      const target = relative(base, resolve(dirname(f), spec));
      if (target.startsWith(relative(base, root) + '/')) to.add(target);
    }
    g.set(from, to);
  }
  return g;
}

/** The room of a file: its first folder under root, or null for a file directly in root. */
export function roomOf(file: string): string | null {
  const parts = file.split('/');
  return parts.length > 2 ? parts[1] : null;
}

/** Pairs of rooms that import each other, each with one edge either way as evidence. */
export function mutualRooms(g: Graph): string[] {
  const edges = new Map<string, string>();
  for (const [f, ts] of g) for (const t of ts) {
    const a = roomOf(f);
    const b = roomOf(t);
    if (a && b && a !== b && !edges.has(`${a}>${b}`)) edges.set(`${a}>${b}`, `${f} -> ${t}`);
  }
  const out: string[] = [];
  for (const [k, e] of edges) {
    const [a, b] = k.split('>');
    if (a < b && edges.has(`${b}>${a}`)) out.push(`${a} <-> ${b}: ${e}; ${edges.get(`${b}>${a}`)}`);
  }
  return out;
}

/** Strongly connected components of more than one file (or a file importing itself): the cycles. */
export function fileCycles(g: Graph): string[][] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of g.get(v) ?? []) {
      if (!g.has(w)) continue;
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const c: string[] = [];
      let w: string;
      do { w = stack.pop()!; on.delete(w); c.push(w); } while (w !== v);
      if (c.length > 1 || g.get(v)?.has(v)) out.push(c.sort());
    }
  };
  for (const v of g.keys()) if (!idx.has(v)) visit(v);
  return out;
}
