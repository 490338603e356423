// Markdown/HTML escaping for text we did not write (model names, prompts, paths, error lines).
// markdown-table does not escape `|` inside cells, so every cell goes through cell().

const HTML: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' };

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"]/g, (c) => HTML[c]);
}

/** One table cell: HTML escaped, pipes escaped, newlines folded into <br>. */
export function cell(value: unknown): string {
  const s = value === null || value === undefined ? '' : String(value);
  return escapeHtml(s).replace(/\|/g, '\\|').replace(/\r?\n/g, '<br>');
}

/** Inline code that cannot be broken by backticks in the text. */
export function code(s: string): string {
  const clean = s.replace(/\r?\n/g, ' ');
  const longest = Math.max(0, ...(clean.match(/`+/g) ?? []).map((m) => m.length));
  const fence = '`'.repeat(longest + 1);
  const pad = clean.startsWith('`') || clean.endsWith('`') ? ' ' : '';
  return `${fence}${pad}${clean}${pad}${fence}`;
}
