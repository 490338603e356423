import { createRequire as __nbgCreateRequire } from 'node:module'; const require = __nbgCreateRequire(import.meta.url);

// src/log.ts
function stderrLog(now = () => performance.now(), write = (s) => process.stderr.write(s)) {
  const t0 = now();
  const stamp = () => `[${((now() - t0) / 1e3).toFixed(1).padStart(6)}s]`;
  return {
    step: (msg) => write(`${stamp()} ${msg}
`),
    warn: (msg) => write(`${stamp()} warning: ${msg}
`)
  };
}

export {
  stderrLog
};
