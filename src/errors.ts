// Outcome classes and exit codes (DESIGN.md "Gates"); the numbers come from the contract file
// the Python probe reads too.
import { EXIT_CODES } from './contract.ts';

export const EXIT = { pass: EXIT_CODES.ok as 0, fail: EXIT_CODES.fail as 1, input: EXIT_CODES.input as 2, infra: EXIT_CODES.infra as 3 } as const;
/** A run dir another run is using, refused (`check`): sysexits' EX_TEMPFAIL, "try again later"; never a verdict. */
const EXIT_BUSY = 75 as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT] | typeof EXIT_BUSY;

/** One line: line breaks (and the blanks around them) become one space, tabs a space, and any
 * other control character (an escape sequence from a file's bytes) is written as \xNN. */
function escapeControls(s: string): string {
  return s
    .replace(/[ \t]*(\r\n|[\r\n\u2028\u2029])[ \t]*/g, ' ')
    .replace(/\t/g, ' ')
    .replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/** An error the user can act on. `message` is one line; `file` names what was wrong. */
export class GateError extends Error {
  readonly exitCode: ExitCode;
  readonly file?: string;
  constructor(message: string, exitCode: ExitCode, file?: string) {
    // One line, whatever a file name or a file's bytes put into it: control characters are escaped.
    super(escapeControls(file ? `${file}: ${message}` : message));
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

/** The run dir is in use by another run (its lock names the holder): exit EXIT_BUSY. */
export class BusyError extends GateError {
  constructor(message: string, file?: string) {
    super(message, EXIT_BUSY, file);
    this.name = 'BusyError';
  }
}

/** One line for the terminal, whatever was thrown. */
export function oneLine(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  return msg.replace(/\s*\n\s*/g, ' ').trim();
}

/** errno codes that mean the machine, not the user's input, failed: exit 3. */
const INFRA_ERRNO = new Set(['ENOSPC', 'EDQUOT', 'EIO', 'EMFILE', 'ENFILE', 'ENOMEM', 'EBUSY', 'ETXTBSY']);

/** What an errno code means, in words. */
export function errnoWords(code: string | undefined): string {
  switch (code) {
    case 'ENOSPC': return 'disk full';
    case 'EDQUOT': return 'disk quota exceeded';
    case 'EACCES':
    case 'EPERM': return 'permission denied';
    case 'EROFS': return 'read-only file system';
    case 'EISDIR': return 'is a directory, not a file';
    case 'ENOTDIR': return 'a part of the path is a file, not a directory';
    case 'EEXIST': return 'already exists';
    case 'ENOENT': return 'no such file or directory';
    case 'ELOOP': return 'too many levels of symbolic links';
    case 'ENAMETOOLONG': return 'file name too long';
    case 'EIO': return 'input/output error';
    case 'EMFILE':
    case 'ENFILE': return 'too many open files';
    case 'ENOMEM': return 'out of memory';
    case 'EBUSY':
    case 'ETXTBSY': return 'file busy';
    case 'EXDEV': return 'crosses file systems';
    default: return code ? `system error ${code}` : 'unknown error';
  }
}

/**
 * A filesystem failure as one line naming the path and the problem in words ("disk full",
 * "permission denied"); exit 3 when the machine failed (disk full, I/O), 2 when the path is wrong
 * (a directory where a file belongs, no permission, read-only). `doing` is e.g. "cannot write".
 * A GateError passes through unchanged.
 */
export function fsError(err: unknown, path: string, doing: string, tail = ''): GateError {
  if (err instanceof GateError) return err;
  const code = (err as NodeJS.ErrnoException)?.code;
  const msg = `${doing}: ${errnoWords(code)}${tail}`;
  return code && !INFRA_ERRNO.has(code) ? new InputError(msg, path) : new InfraError(msg, path);
}
