// Engine selection: the seam where the native addon plugs in. It registers a Kernel with the
// same scanBlock contract over the same Accumulator; everything else is shared.
import { InfraError, InputError } from '../errors.ts';
import type { Kernel } from './accumulator.ts';
import { jsKernel } from './kernel-js.ts';

export const ENGINE_ENV = 'NPU_BLOCK_GATE_ENGINE';

let nativeLoader: (() => Kernel | null) | null = null;

/** The native module calls this at load time; the loader returns null when the addon is absent. */
export function registerNativeKernel(loader: (() => Kernel | null) | null): void {
  nativeLoader = loader;
}

function loadNative(): Kernel | null {
  try {
    return nativeLoader ? nativeLoader() : null;
  } catch {
    return null;
  }
}

/**
 * NPU_BLOCK_GATE_ENGINE: 'js' forces TypeScript, 'native' requires the addon, unset or 'auto'
 * takes the addon when it loads and TypeScript otherwise (the addon is a speed-up, never a requirement).
 */
export function selectEngine(env: NodeJS.ProcessEnv = process.env): Kernel {
  const want = (env[ENGINE_ENV] ?? 'auto').trim().toLowerCase() || 'auto';
  if (want === 'js') return jsKernel;
  if (want === 'native') {
    const k = loadNative();
    if (!k) throw new InfraError(`${ENGINE_ENV}=native but the native comparison addon is not available`);
    return k;
  }
  if (want === 'auto') return loadNative() ?? jsKernel;
  throw new InputError(`${ENGINE_ENV} must be js, native or auto, not '${want}'`);
}
