// Progress lines with elapsed time. The pipeline only talks to this interface; the CLI prints to
// stderr, the Action routes to @actions/core, tests collect lines.

export interface Log {
  step(msg: string): void;
  warn(msg: string): void;
}

export function stderrLog(now: () => number = () => performance.now(), write: (s: string) => void = (s) => process.stderr.write(s)): Log {
  const t0 = now();
  const stamp = () => `[${((now() - t0) / 1000).toFixed(1).padStart(6)}s]`;
  return {
    step: (msg) => write(`${stamp()} ${msg}\n`),
    warn: (msg) => write(`${stamp()} warning: ${msg}\n`),
  };
}

export const silentLog: Log = { step: () => {}, warn: () => {} };

