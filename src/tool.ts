// Who we are, for every record and rendering.
import pkg from '../package.json' with { type: 'json' };

export const TOOL = { name: 'npu-block-gate', version: pkg.version } as const;
