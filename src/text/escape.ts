// Every string we did not write ourselves (from a run dir, the probe's output or the model tree)
// passes through one of these on its way to a sink (DESIGN.md "Trust"):
//  - markdown/HTML (job summary, PR comment, phase2_block.md): text(), cell(), code(), id();
//  - the runner's log, which GitHub scans for workflow commands: logLine();
//  - a terminal: plain().
// A pull request's model code writes those strings, so none of them may change the structure of
// what we render: no HTML, no links or images, no @mentions, no `<!--` that hides the rest, no
// table cell that splits, no log line that starts a `::command::`.

/** Identifiers (workaround ids, kernel and bisect step names) must look like this. */
export const ID_RE = /^[A-Za-z0-9_.-]{1,64}$/;

/** Longest foreign string we render in one place; longer ones are cut with an ellipsis. */
const MAX_TEXT = 300;

// C0/C1 controls (tab kept), DEL, and the bidirectional overrides that reorder what a reader sees.
const CONTROLS = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** Any value as one string: strings as they are, numbers and booleans as text, null as ''. */
export function str(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  try {
    return JSON.stringify(v) ?? '';
  } catch {
    return String(v);
  }
}

function cut(s: string, max: number): string {
  const chars = [...s];
  return chars.length > max ? `${chars.slice(0, Math.max(1, max - 1)).join('')}…` : s;
}

/** Controls (terminal escapes, bidi overrides) replaced, line breaks kept, length bounded. */
export function plain(v: unknown, max = MAX_TEXT): string {
  return cut(str(v).replace(/\r\n?/g, '\n').replace(CONTROLS, '\uFFFD'), max);
}

const HTML: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' };

/**
 * HTML text or a quoted attribute value that shows exactly these characters (report.html, the fleet
 * page): controls and bidi overrides replaced as plain() does, & < > " ' as entities, length bounded.
 */
export function html(v: unknown, max = MAX_TEXT): string {
  return plain(v, max).replace(/[&<>"']/g, (c) => (c === "'" ? '&#39;' : HTML[c]));
}

const ZWSP = '\u200b';

/**
 * Inline markdown text that renders as exactly these characters: HTML escaped, markdown
 * punctuation backslash-escaped (no emphasis, links, images, headings, tables, code), @mentions
 * and #references broken with a zero-width space so nobody is notified or cross-linked, bare
 * URLs not auto-linked, one line.
 */
export function text(v: unknown, max = MAX_TEXT): string {
  return inline(plain(v, max).replace(/\s*\n\s*/g, ' '));
}

function inline(s: string): string {
  // One pass, so an entity we produce is never escaped again.
  return s
    .replace(/[&<>"\\`*_{}[\]()#+\-!|~@]/g, (c, at: number) => {
      if (c in HTML) return HTML[c];
      const next = s[at + 1] ?? '';
      if (c === '@') return /[A-Za-z0-9_-]/.test(next) ? `@${ZWSP}` : '@';
      if (c === '#' && /\d/.test(next)) return `\\#${ZWSP}`;
      return `\\${c}`;
    })
    .replace(/\b(GH)\\-(?=\d)/gi, `$1${ZWSP}\\-`)
    .replace(/:\/\//g, `:${ZWSP}//`)
    .replace(/\bwww\./gi, (m) => `${m.slice(0, 3)}${ZWSP}.`);
}

/** One table cell: text() with line breaks kept as <br>. */
export function cell(v: unknown, max = MAX_TEXT): string {
  return plain(v, max)
    .split('\n')
    .map((l) => inline(l.trim()))
    .join('<br>');
}

/**
 * Inline code that nothing in the text can break out of: the fence is longer than any run of
 * backticks inside, one line, bounded. In a table cell, `|` must be escaped even inside code.
 */
export function code(v: unknown, opts: { max?: number; inTable?: boolean } = {}): string {
  let clean = plain(v, opts.max ?? MAX_TEXT).replace(/\s*\n\s*/g, ' ');
  if (clean === '') return '`""`';
  if (opts.inTable) clean = clean.replace(/\|/g, '\\|');
  const longest = Math.max(0, ...(clean.match(/`+/g) ?? []).map((m) => m.length));
  const fence = '`'.repeat(longest + 1);
  const pad = clean.startsWith('`') || clean.endsWith('`') ? ' ' : '';
  return `${fence}${pad}${clean}${pad}${fence}`;
}

/**
 * A name from the run dir that should look like one (a dotted Python name, a path, a commit) as
 * code; anything else as escaped text, so no foreign `<`, `<!--` or backtick reaches the page at
 * all, not even inside a code span.
 */
export function literal(v: unknown, opts: { max?: number; inTable?: boolean } = {}): string {
  const s = str(v);
  if (/^[A-Za-z0-9_.\/+=:,@-]+$/.test(s) && s.length <= (opts.max ?? MAX_TEXT)) return code(s, opts);
  return text(s, opts.max);
}

export function isId(v: unknown): v is string {
  return typeof v === 'string' && ID_RE.test(v);
}

/** An identifier as code; anything that is not one is shown escaped and marked. */
export function id(v: unknown, opts: { inTable?: boolean } = {}): string {
  if (isId(v)) return code(v, opts);
  return `${text(v, 64)} (not a valid id)`;
}

// What .NET's TrimStart removes before the runner looks for `::` or `##[` (char.IsWhiteSpace),
// plus the invisible characters a reader would not notice.
const LEADING = /^[\s\u0085\u180e\u200b-\u200d\u2060\ufeff]*/;

/**
 * Text for the runner's log: every line (split where the runner splits, at \r and \n) made
 * unable to start a workflow command (`::name::` or the old `##[name]`), controls replaced.
 * A zero-width space after the first character keeps the line readable.
 */
export function logLine(v: unknown): string {
  return str(v)
    .split(/\r\n|\r|\n/)
    .map((line) => {
      const l = line.replace(CONTROLS, '\uFFFD');
      const lead = LEADING.exec(l)![0];
      const rest = l.slice(lead.length);
      if (rest.startsWith('::') || rest.startsWith('##[')) return `${lead}${rest[0]}${ZWSP}${rest.slice(1)}`;
      return l;
    })
    .join('\n');
}
