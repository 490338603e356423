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

/** Every occurrence of a marker prefix on a line: the full marker text there (up to its "-->"). */
export function markersOn(line: string): string[] {
  const out: string[] = [];
  let at = line.indexOf(MARK.prefix);
  while (at !== -1) {
    const end = line.indexOf('-->', at);
    out.push(end === -1 ? line.slice(at) : line.slice(at, end + 3));
    at = line.indexOf(MARK.prefix, at + MARK.prefix.length);
  }
  return out;
}

/** Where the model's docs live, relative to the model dir (seed "Update protocol"). */
export const DOC_PATHS = {
  phase2: 'docs/development_progress/phase2_block.md',
  todo: 'TODO.md',
} as const;
