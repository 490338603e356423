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
} as const;

/** Where the model's docs live, relative to the model dir (seed "Update protocol"). */
export const DOC_PATHS = {
  phase2: 'docs/development_progress/phase2_block.md',
  todo: 'TODO.md',
} as const;
