// The bundles load only their own files. A bare `require("x")` or `import "x"` left in dist/ is
// resolved by Node at run time from the node_modules directories above the action's copy, so a
// module planted there (by a pull request's checkout, a runner's workspace) would run in the
// Action's process, with its token. esbuild leaves such a require in place when it cannot resolve
// it and the call sits in a try block (debug's optional `require('supports-color')`), without a
// word. Used by scripts/build.mjs and by test/helpers/dist.ts:
//   ownFilesOnly()   an esbuild plugin: every bare import is a Node builtin, bundled, or one of the
//                    optional packages in STUBS (an empty module); anything else fails the build
//   strayImports()   after a build: the metafile's external imports that are not builtins
import { isBuiltin } from 'node:module';

/** Optional packages our dependencies try to load and do without: bundled as an empty module. */
export const STUBS = new Set([
  // debug (through @actions/artifact's agents): colours for its logs, which we never turn on.
  'supports-color',
]);

const SELF = Symbol('own-files-only');
const STUB_NS = 'nbg-empty-stub';

export function ownFilesOnly() {
  return {
    name: 'own-files-only',
    setup(b) {
      // A bare specifier: not relative, not absolute.
      b.onResolve({ filter: /^[^./\\]/ }, async (a) => {
        if (a.pluginData === SELF || isBuiltin(a.path)) return undefined;
        if (STUBS.has(a.path)) return { path: a.path, namespace: STUB_NS };
        const r = await b.resolve(a.path, { kind: a.kind, importer: a.importer, resolveDir: a.resolveDir, pluginData: SELF });
        if (r.errors.length || r.external || !r.path) {
          return {
            errors: [{
              text: `"${a.path}" cannot be bundled, so Node would load it at run time from any node_modules above the bundle: ` +
                'install it, or add it to STUBS in scripts/own-files.mjs if the code does without it',
            }],
          };
        }
        // Resolved: esbuild resolves it again itself, so the output is what it would be without
        // this plugin (a plugin's answer loses what the package.json says about module types).
        return undefined;
      });
      b.onLoad({ filter: /.*/, namespace: STUB_NS }, () => ({ contents: 'module.exports = {};\n', loader: 'js' }));
    },
  };
}

/** "output: specifier" for each import a build left external that is not a Node builtin. */
export function strayImports(metafile) {
  const stray = [];
  for (const [out, o] of Object.entries(metafile.outputs)) {
    for (const i of o.imports) if (i.external && !isBuiltin(i.path) && !/^\.\.?\//.test(i.path)) stray.push(`${out}: ${i.path}`);
  }
  return stray;
}
