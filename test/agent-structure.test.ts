// src/agent's module structure: no file-level import cycle (a cycle is how the doctor and the state
// ended up needing each other), read from the files' own import lines.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const DIR = fileURLToPath(new URL('../src/agent/', import.meta.url));

/** file -> the files of src/agent it imports (type-only imports included: they are a cycle to a reader too). */
function graph(): Map<string, string[]> {
  const g = new Map<string, string[]>();
  for (const f of readdirSync(DIR).filter((n) => n.endsWith('.ts'))) {
    const text = readFileSync(join(DIR, f), 'utf8');
    const deps = [...text.matchAll(/^(?:import|export)\b[^;]*?from '\.\/([\w-]+\.ts)'/gms)].map((m) => m[1]);
    g.set(f, [...new Set(deps)]);
  }
  return g;
}

/** Every cycle, each as its path of files (Tarjan's strongly connected components of size > 1, or a self-import). */
function cycles(g: Map<string, string[]>): string[][] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string) => {
    idx.set(v, index); low.set(v, index); index++;
    stack.push(v); on.add(v);
    for (const w of g.get(v) ?? []) {
      if (!idx.has(w)) { visit(w); low.set(v, Math.min(low.get(v)!, low.get(w)!)); }
      else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const comp: string[] = [];
      let w: string;
      do { w = stack.pop()!; on.delete(w); comp.push(w); } while (w !== v);
      if (comp.length > 1 || (g.get(v) ?? []).includes(v)) out.push(comp.sort());
    }
  };
  for (const v of g.keys()) if (!idx.has(v)) visit(v);
  return out;
}

test('no file-level import cycle in src/agent', () => {
  const g = graph();
  assert.ok(g.size > 10, 'read the agent files');
  assert.ok(g.get('doctor.ts')!.includes('state.ts'), 'the graph sees imports');
  assert.equal(cycles(g), []);
  // The check itself finds one when there is one.
  assert.equal(cycles(new Map([['a.ts', ['b.ts']], ['b.ts', ['c.ts']], ['c.ts', ['a.ts']], ['d.ts', []]])), [['a.ts', 'b.ts', 'c.ts']]);
});

test.run();
