// <model>/TODO.md, as the deploy-new-llm skill lays it out (its Step 5 template: "## Phase status"
// with one checkbox per phase, "## Active blockers", "## Resolved config"). We change exactly three
// things: the Phase 2 checkbox under "## Phase status" (ticked on a pass while no generation fails,
// unticked on a fail), one marked blocker line per failing NPU generation under "## Active blockers"
// (on fail, removed by a later pass on that generation, with the heading if we added it), and
// marked Phase 4/5 prerequisite lines under the Phase 4 line for the workarounds in use. Every
// other byte is kept, line endings included; what could not be done is said in `notes`.
import type { Report } from '../record/report.ts';
import type { ModelConfig } from '../rundir/schema.ts';
import { InputError } from '../errors.ts';
import { MARK, fencedLines, markersOn } from './markers.ts';
import { fmtCos } from '../text/format.ts';
import { EMULATED, UNKNOWN, generationName, recordNpu } from '../npu/generation.ts';
import { insertLines, joinLines, removeLines, splitLines, type Line } from './text.ts';

const PHASE2 = /^(\s*[-*]\s+\[)([^\]]*)(\]\s*(?:Phase\s+)?2\s*[:.)-]\s*Single[- ]Block Validation\b.*)$/i;
const PHASE_N = (n: number) => new RegExp(`^\\s*[-*]\\s+\\[[^\\]]*\\]\\s*(?:Phase\\s+)?${n}\\s*[:.)-]`, 'i');
const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$/;
const PHASE_STATUS = /^phase status\b/i;
const ACTIVE_BLOCKERS = /^active blockers\b/i;

const PHASE_STATUS_HEADING = '## Phase status';
const PHASE2_LINE = '- [ ] 2: Single-Block Validation';

/** The deploy-new-llm skill's Step 5 template, filled with the resolved config. */
export function todoTemplate(model: string, _hfId: string | null, cfg: ModelConfig | null, nl = '\n'): string {
  const c = cfg;
  return [
    `# Deployment: ${model}`,
    '',
    PHASE_STATUS_HEADING,
    '- [ ] 0: Build CPU Reference',
    '- [ ] 1: Kernel Validation',
    PHASE2_LINE,
    '- [ ] 3: Full-Model Validation',
    '- [ ] 4: Prefill Optimization',
    '- [ ] 5: Decode Optimization',
    '- [ ] 6: Finalize & Learn',
    '- [ ] 7: Independent Evaluation',
    '',
    '## Active blockers',
    '(none yet)',
    '',
    '## Resolved config (pulled from HF)',
    c
      ? `n_layers: ${c.n_layers}, emb_dim: ${c.emb_dim}, n_heads: ${c.n_heads}, n_kv_heads: ${c.n_kv_heads},${nl}head_dim: ${c.head_dim}, hidden_dim: ${c.hidden_dim}, vocab_size: ${c.vocab_size ?? '?'}, rope_theta: ${c.rope_base ?? '?'}`
      : 'n_layers: ?, emb_dim: ?, n_heads: ?, n_kv_heads: ?,' + nl + 'head_dim: ?, hidden_dim: ?, vocab_size: ?, rope_theta: ?',
    '',
  ].join(nl);
}

/** The marker of one NPU generation's blocker line (one blocker per failing generation). */
const blockerMark = (npu: string) => MARK.blocker.replace(/ -->$/, `:${npu} -->`);
/** What every blocker marker of ours starts with (per generation, and the one-line form of older versions). */
const BLOCKER_PREFIX = MARK.blocker.replace(/ -->$/, '');

function blockerLine(r: Report): string {
  const failed = r.gates.filter((g) => g.status === 'fail' && g.id !== 'G4');
  const what = failed.map((g) => `${g.id} ${g.name}: ${typeof g.value === 'number' ? fmtCos(g.value) : g.value} (bar ${g.bar})`).join('; ');
  const npu = recordNpu(r);
  const on = npu === UNKNOWN || npu === EMULATED ? '' : ` on ${generationName(npu)}`;
  return `- Phase 2 single-block validation FAILS at ${r.commit.slice(0, 12)}${on} (${r.created_at.slice(0, 10)}): ${what}. See docs/development_progress/phase2_block.md. ${blockerMark(npu)}`;
}

function prereqLine(id: string, prerequisite: string, detail: string): string {
  return `  - ${prerequisite} (${detail}) ${MARK.prereq(id)}`;
}

interface Section { heading: number; level: number; title: string; end: number }

/** The headings outside fenced code, each with the line its section ends before. */
function sections(lines: readonly Line[]): Section[] {
  const heads: { heading: number; level: number; title: string }[] = [];
  const fenced = fencedLines(lines);
  lines.forEach((l, i) => {
    if (fenced[i] || !l.text.includes('#')) return;
    const h = HEADING.exec(l.text);
    if (h) heads.push({ heading: i, level: h[1].length, title: (h[2] ?? '').replace(/\s*<!--.*?-->\s*/g, ' ').replace(/[ \t]#+$/, '').trim() });
  });
  return heads.map((h, k) => {
    const next = heads.slice(k + 1).find((o) => o.level <= h.level);
    return { ...h, end: next ? next.heading : lines.length };
  });
}

/** Refuses a TODO.md where one of our markers appears on more than one line. */
function checkMarkers(lines: readonly Line[], file: string): void {
  const seen = new Map<string, number>();
  const fenced = fencedLines(lines);
  lines.forEach((l, i) => {
    if (fenced[i]) return;
    for (const m of new Set(markersOn(l.text))) {
      const first = seen.get(m);
      if (first !== undefined) throw new InputError(`line ${i + 1}: marker ${m} appears again (first on line ${first + 1}): duplicated marker; fix it by hand, nothing was changed`, file);
      seen.set(m, i);
    }
  });
}

/** The first line carrying one of our markers starting with `marker` (outside fenced and inline code), or -1. */
function markedLine(lines: readonly Line[], marker: string, from = 0): number {
  let fenced: Uint8Array | null = null;
  for (let i = from; i < lines.length; i++) {
    // A marker found on a line is a piece of it that starts with `marker`: a line without that text
    // has none (and the fences are worked out only once a line has it).
    if (!lines[i].text.includes(marker)) continue;
    fenced ??= fencedLines(lines);
    if (!fenced[i] && markersOn(lines[i].text).some((m) => m.startsWith(marker))) return i;
  }
  return -1;
}

/** The last line of a section's content that is not blank (the heading itself when there is none). */
function lastContent(lines: readonly Line[], s: Section): number {
  let at = s.end - 1;
  while (at > s.heading && lines[at].text.trim() === '') at--;
  return at;
}

interface TodoUpdate {
  text: string;
  /** What the update could not do where the template says, in words (printed and put in the report). */
  notes: string[];
}

/** The new text of TODO.md (created from the template when absent). */
export function updateTodo(existing: string | null, r: Report, file = 'TODO.md'): TodoUpdate {
  const lines = splitLines(existing ?? todoTemplate(r.model.name, r.model.hf_id, r.model.config));
  const notes: string[] = [];
  checkMarkers(lines, file);
  const status = () => sections(lines).find((s) => PHASE_STATUS.test(s.title)) ?? null;
  const inStatus = (re: RegExp): number => {
    const s = status();
    if (!s) return -1;
    for (let i = s.heading + 1; i < s.end; i++) if (re.test(lines[i].text)) return i;
    return -1;
  };

  // One blocker line per failing NPU generation: this run's generation's line is removed on pass (with
  // the heading, if we added it and nothing else is left under it), written or rewritten on fail. A
  // blocker line of an older version (no generation in its marker) counts as this generation's.
  const mine = blockerMark(recordNpu(r));
  let bi = markedLine(lines, mine);
  if (bi === -1) bi = markedLine(lines, MARK.blocker);
  if (r.outcome === 'pass' && bi !== -1) {
    removeLines(lines, bi, 1);
    removeEmptyBlockersHeading(lines);
  }
  if (r.outcome === 'fail') {
    const line = blockerLine(r);
    if (bi !== -1) lines[bi].text = line;
    else addBlocker(lines, line, status());
  }

  // Phase 2 checkbox, under "## Phase status" only: only the character(s) between the brackets change.
  // Done means the last verdict passed on every generation: a pass ticks it while no other generation's
  // blocker is open; a fail unticks it (the passes stay in phase2_block.md's history).
  const tick = (mark: string) => {
    const i = inStatus(PHASE2);
    if (i !== -1) lines[i].text = lines[i].text.replace(PHASE2, (_m, a: string, _b: string, c: string) => `${a}${mark}${c}`);
    return i;
  };
  const verb = r.outcome === 'pass' ? 'ticked' : 'unticked';
  if (r.outcome === 'pass' || r.outcome === 'fail') {
    const open = r.outcome === 'pass' ? markedLine(lines, BLOCKER_PREFIX) : -1;
    const i = open !== -1 ? -2 : tick(r.outcome === 'pass' ? 'x' : ' ');
    if (i === -2) notes.push(`Phase 2 was not ticked: another NPU generation's blocker is still open (${lines[open].text.replace(/\s*<!--.*?-->\s*/g, ' ').trim().slice(0, 160)})`);
    else if (i === -1 && !status()) notes.push(`${file} has no "${PHASE_STATUS_HEADING}" section (the deploy-new-llm template's), so Phase 2 was not ${verb}`);
    else if (i === -1) notes.push(`${file} has no "${PHASE2_LINE}" line under "${PHASE_STATUS_HEADING}", so Phase 2 was not ${verb}`);
  }

  // Phase 4/5 prerequisites for the workarounds in use: under the Phase 4 line of "## Phase status"
  // (the optimisation the prerequisite binds; else Phase 5, else the end of the phase list), after
  // any prerequisites already there.
  for (const w of r.integration?.workarounds ?? []) {
    const line = prereqLine(w.id, w.prerequisite, w.detail);
    const existingAt = markedLine(lines, MARK.prereq(w.id));
    if (existingAt !== -1) { lines[existingAt].text = line; continue; }
    let anchor = inStatus(PHASE_N(4));
    if (anchor === -1) anchor = inStatus(PHASE_N(5));
    if (anchor === -1) {
      const s = status();
      if (!s) {
        notes.push(`${file} has no "${PHASE_STATUS_HEADING}" section, so the Phase 4/5 prerequisite for ${w.id} was not written: ${w.prerequisite}`);
        continue;
      }
      anchor = lastContent(lines, s);
    }
    let at = anchor;
    while (at + 1 < lines.length && markedLine(lines, MARK.prereqPrefix, at + 1) === at + 1) at++;
    insertLines(lines, at, [line]);
  }
  return { text: joinLines(lines), notes };
}

/** Adds our blocker line at the end of "## Active blockers", creating the section (marked as ours) after "## Phase status" when there is none. */
function addBlocker(lines: Line[], line: string, status: Section | null): void {
  const blockers = sections(lines).find((s) => ACTIVE_BLOCKERS.test(s.title));
  if (blockers) {
    insertLines(lines, lastContent(lines, blockers), [line]);
    return;
  }
  const heading = `## Active blockers ${MARK.blockersHeading}`;
  if (status && status.end < lines.length) {
    // Where the template has it: right after the phase list, before the next section.
    insertLines(lines, status.end - 1, lines[status.end - 1].text.trim() === '' ? [heading, line, ''] : ['', heading, line]);
    return;
  }
  // At the end of the file, always after one blank line we add (so removing it restores the file exactly).
  insertLines(lines, lines.length - 1, lines.length ? ['', heading, line] : [heading, line]);
}

/** Drops an "## Active blockers" heading we added once nothing but blank lines is left under it, with the blank line we added beside it. */
function removeEmptyBlockersHeading(lines: Line[]): void {
  const s = sections(lines).find((x) => markersOn(lines[x.heading].text).includes(MARK.blockersHeading));
  if (!s) return;
  for (let i = s.heading + 1; i < s.end; i++) if (lines[i].text.trim() !== '') return;
  let from = s.heading;
  // Added before a following section as [heading, blocker, ''] or ['', heading, blocker]; at the end of the file as ['', heading, blocker].
  if ((s.end - s.heading === 1 || s.end === lines.length) && from > 0 && lines[from - 1].text.trim() === '') from--;
  removeLines(lines, from, s.end - from);
}

/** What TODO.md says about Phase 2: its checkbox under "## Phase status" (null: no such line) and
 * the open items under "## Active blockers" (list lines, as written). */
export function readTodo(text: string | null): { phase2Done: boolean | null; blockers: string[] } {
  if (text === null) return { phase2Done: null, blockers: [] };
  const lines = splitLines(text);
  const all = sections(lines);
  let phase2Done: boolean | null = null;
  const status = all.find((s) => PHASE_STATUS.test(s.title));
  for (let i = status ? status.heading + 1 : lines.length; status && i < status.end; i++) {
    const m = PHASE2.exec(lines[i].text);
    if (m) { phase2Done = m[2].trim().toLowerCase() === 'x'; break; }
  }
  const blockers: string[] = [];
  for (const s of all.filter((x) => ACTIVE_BLOCKERS.test(x.title))) {
    for (let i = s.heading + 1; i < s.end; i++) {
      const t = lines[i].text;
      if (/^\s*[-*]\s+(?!\[[xX]\])/.test(t)) blockers.push(t.replace(/^\s*[-*]\s+(\[ \]\s*)?/, '').replace(/\s*<!--.*?-->\s*/g, ' ').trim());
    }
  }
  return { phase2Done, blockers };
}
