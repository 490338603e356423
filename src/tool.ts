// Who we are, for every record and rendering.
import pkg from '../package.json' with { type: 'json' };

export const TOOL = { name: 'npu-block-gate', version: pkg.version } as const;

/** The command a user types, as the README and every message that names a command give it: it runs
 * from a clone after `npm ci` and wherever the package is installed (`npm link` or a global install
 * also put the bare \`npu-block-gate\` on PATH). */
export const COMMAND = 'npx npu-block-gate';
