// Markers that fence generated text in documents people also edit. Everything outside a
// begin/end pair, and every line inside the history block that we did not generate, is kept.

export const MARK = {
  latestBegin: '<!-- npu-block-gate:latest:begin -->',
  latestEnd: '<!-- npu-block-gate:latest:end -->',
  historyBegin: '<!-- npu-block-gate:history:begin -->',
  historyEnd: '<!-- npu-block-gate:history:end -->',
  /** Suffix of the one TODO.md line we own under "## Active blockers". */
  blocker: '<!-- npu-block-gate:phase2-blocker -->',
  /** Suffix of a TODO.md Phase 4/5 prerequisite line, followed by the workaround id. */
  prereq: (id: string) => `<!-- npu-block-gate:prereq:${id} -->`,
  prereqPrefix: '<!-- npu-block-gate:prereq:',
  /** Suffix of an "## Active blockers" heading npu-block-gate added (removed again once the section is empty). */
  blockersHeading: '<!-- npu-block-gate:blockers -->',
  /** What every marker starts with. */
  prefix: '<!-- npu-block-gate:',
} as const;

/** The four markers of phase2_block.md, which must each stand on a line of their own. */
export const BLOCK_MARKERS = [MARK.latestBegin, MARK.latestEnd, MARK.historyBegin, MARK.historyEnd] as const;

/** The line with every inline code span (`...`, ``...``) blanked: what a span quotes is text. */
function withoutCodeSpans(line: string): string {
  if (!line.includes('`')) return line;
  return line.replace(/(`+)([\s\S]*?[^`])\1(?!`)/g, (m) => ' '.repeat(m.length));
}

/** Every occurrence of a marker prefix on a line, outside inline code: the full marker text there (up to its "-->"). */
export function markersOn(rawLine: string): string[] {
  // Blanking a code span only turns characters into runs of 3 or more spaces, which the prefix (one
  // space) cannot hold: a line without the prefix has no marker, and most lines are such.
  if (!rawLine.includes(MARK.prefix)) return [];
  const line = withoutCodeSpans(rawLine);
  const out: string[] = [];
  let at = line.indexOf(MARK.prefix);
  while (at !== -1) {
    const end = line.indexOf('-->', at);
    out.push(end === -1 ? line.slice(at) : line.slice(at, end + 3));
    at = line.indexOf(MARK.prefix, at + MARK.prefix.length);
  }
  return out;
}

const FENCE_OPEN = /^ {0,3}(`{3,}|~{3,})(.*)$/;

/**
 * For each line, whether it lies in a fenced code block (the fence lines included), where a marker
 * is text someone quoted, never one of ours. CommonMark's rule: an opening fence of 3 or more
 * backticks or tildes indented at most 3 spaces (a backtick fence's info string has no backtick),
 * closed by a fence of the same character at least as long with nothing after it. A fence never
 * closed hides nothing here: markers after it stay live, so a stray fence cannot hide our blocks
 * (and have them added again on every run).
 */
export function fencedLines(lines: readonly { text: string }[]): Uint8Array {
  const out = new Uint8Array(lines.length);
  for (let i = 0; i < lines.length; i++) {
    // A fence opens with a backtick or a tilde after at most 3 spaces: other lines go by unparsed.
    const t = lines[i].text;
    let s = 0;
    while (s < 3 && t.charCodeAt(s) === 32) s++;
    if (t.charCodeAt(s) !== 96 && t.charCodeAt(s) !== 126) continue;
    const open = FENCE_OPEN.exec(t);
    if (!open || (open[1][0] === '`' && open[2].includes('`'))) continue;
    const ch = open[1][0];
    const close = new RegExp(`^ {0,3}${ch === '`' ? '`' : '~'}{${open[1].length},}[ \\t]*$`);
    let j = i + 1;
    while (j < lines.length && !close.test(lines[j].text)) j++;
    if (j === lines.length) continue;
    out.fill(1, i, j + 1);
    i = j;
  }
  return out;
}

/** Where the model's docs live, relative to the model dir (seed "Update protocol"). */
export const DOC_PATHS = {
  phase2: 'docs/development_progress/phase2_block.md',
  todo: 'TODO.md',
} as const;
