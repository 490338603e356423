// Layers point one way (DESIGN.md "Shape"): no two folders of src/ import each other, and no file
// of src/ is part of an import cycle. The checks themselves are tested on small made-up graphs, so
// a checker that finds nothing cannot pass for a clean tree.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import { REPO } from './helpers/airmini.ts';
import { fileCycles, importGraph, importSpecifiers, mutualRooms, type Graph } from './helpers/imports.ts';

const graph = (edges: Record<string, string[]>): Graph => new Map(Object.entries(edges).map(([k, v]) => [k, new Set(v)]));

test('the checker reads every kind of import and finds mutual rooms and cycles in a made-up graph', () => {
  assert.equal(importSpecifiers([
    "import { a } from './a.ts';",
    "import type { B } from '../b/b.ts';",
    "export { c } from './c.ts';",
    "export * from './d.ts';",
    "import './e.ts';",
    "const f = await import('./f.ts');",
    "// import { x } from './comment.ts';",
    "/* import { y } from './block.ts'; */",
    "import {\n  g,\n  h,\n} from './gh.ts';",
  ].join('\n')), ['./a.ts', '../b/b.ts', './c.ts', './d.ts', './e.ts', './f.ts', './gh.ts']);
  const g = graph({
    'src/a/x.ts': ['src/b/y.ts'],
    'src/b/y.ts': ['src/b/z.ts'],
    'src/b/z.ts': ['src/a/w.ts'],
    'src/a/w.ts': [],
    'src/c/p.ts': ['src/c/q.ts'],
    'src/c/q.ts': ['src/c/p.ts'],
    'src/top.ts': ['src/a/x.ts'],
  });
  assert.equal(mutualRooms(g).map((s) => s.split(':')[0]), ['a <-> b']);
  assert.equal(fileCycles(g), [['src/c/p.ts', 'src/c/q.ts']]);
});

test('no two folders of src/ import each other', () => {
  const pairs = mutualRooms(importGraph(join(REPO, 'src')));
  assert.equal(pairs, [], `folders importing each other:\n${pairs.join('\n')}`);
});

test('no file of src/ is part of an import cycle', () => {
  const cycles = fileCycles(importGraph(join(REPO, 'src')));
  assert.equal(cycles, [], `import cycles:\n${cycles.map((c) => c.join(' -> ')).join('\n')}`);
});

test.run();
