// Outcome classes and exit codes (DESIGN.md "Gates"); the numbers come from the contract file
// the Python probe reads too.
import { EXIT_CODES } from './contract.ts';

export const EXIT = { pass: EXIT_CODES.ok as 0, fail: EXIT_CODES.fail as 1, input: EXIT_CODES.input as 2, infra: EXIT_CODES.infra as 3 } as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** An error the user can act on. `message` is one line; `file` names what was wrong. */
export class GateError extends Error {
  readonly exitCode: ExitCode;
  readonly file?: string;
  constructor(message: string, exitCode: ExitCode, file?: string) {
    super(file ? `${file}: ${message}` : message);
    this.exitCode = exitCode;
    this.file = file;
  }
}

/** Usage or bad input (malformed tensor, wrong shape, missing model dir, unknown option): exit 2. */
export class InputError extends GateError {
  constructor(message: string, file?: string) {
    super(message, EXIT.input, file);
    this.name = 'InputError';
  }
}

/** Could not judge: device, probe crash, timeout, missing Python: exit 3, never a FAIL verdict. */
export class InfraError extends GateError {
  constructor(message: string, file?: string) {
    super(message, EXIT.infra, file);
    this.name = 'InfraError';
  }
}

/** One line for the terminal, whatever was thrown. */
export function oneLine(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  return msg.replace(/\s*\n\s*/g, ' ').trim();
}
