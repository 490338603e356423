// <model>/TODO.md, as the deploy-new-llm skill lays it out. We change exactly three things:
// the Phase 2 checkbox (on pass), one marked blocker line (on fail, removed by a later pass),
// and marked Phase 4/5 prerequisite lines for the workarounds in use. Every other byte is kept.
import type { Report } from '../report/types.ts';
import type { ModelConfig } from '../rundir/schema.ts';
import { MARK } from './markers.ts';
import { fmtCos } from '../report/format.ts';

const PHASE2 = /^(\s*[-*]\s+\[)([^\]]*)(\]\s*(?:Phase\s+)?2\s*[:.)-]\s*Single[- ]Block Validation\b.*)$/i;
const PHASE_N = (n: number) => new RegExp(`^\\s*[-*]\\s+\\[[^\\]]*\\]\\s*(?:Phase\\s+)?${n}\\s*[:.)-]`, 'i');
const BLOCKERS = /^##\s+Active blockers\s*$/i;
const HEADING = /^#{1,2}\s/;

export function todoTemplate(model: string, hfId: string | null, cfg: ModelConfig | null, nl = '\n'): string {
  const c = cfg;
  return [
    `# Deployment: ${model}${hfId && hfId !== model ? `  (${hfId})` : ''}`,
    '',
    '## Phase status',
    '- [ ] 0: Build CPU Oracle',
    '- [ ] 1: Kernel Validation',
    '- [ ] 2: Single-Block Validation',
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

export function blockerLine(r: Report): string {
  const failed = r.gates.filter((g) => g.status === 'fail' && g.id !== 'G4');
  const what = failed.map((g) => `${g.id} ${g.name}: ${typeof g.value === 'number' ? fmtCos(g.value) : g.value} (bar ${g.bar})`).join('; ');
  return `- Phase 2 single-block validation FAILS at ${r.commit.slice(0, 12)} (${r.created_at.slice(0, 10)}): ${what}. See docs/development_progress/phase2_block.md. ${MARK.blocker}`;
}

export function prereqLine(id: string, prerequisite: string, detail: string): string {
  return `  - ${prerequisite} (${detail}) ${MARK.prereq(id)}`;
}

/** The new text of TODO.md (created from the template when absent). */
export function updateTodo(existing: string | null, r: Report): string {
  const text = existing ?? todoTemplate(r.model.name, r.model.hf_id, r.model.config);
  const nl = text.includes('\r\n') ? '\r\n' : '\n';
  const lines = text.split(/\r?\n/);

  // Phase 2 checkbox: only the character(s) between the brackets change.
  if (r.outcome === 'pass') {
    const i = lines.findIndex((l) => PHASE2.test(l));
    if (i !== -1) lines[i] = lines[i].replace(PHASE2, (_m, a: string, _b: string, c: string) => `${a}x${c}`);
  }

  // Our blocker line: removed on pass, written (or rewritten in place) on fail.
  const bi = lines.findIndex((l) => l.includes(MARK.blocker));
  if (r.outcome === 'pass' && bi !== -1) lines.splice(bi, 1);
  if (r.outcome === 'fail') {
    const line = blockerLine(r);
    if (bi !== -1) lines[bi] = line;
    else {
      let h = lines.findIndex((l) => BLOCKERS.test(l));
      if (h === -1) {
        while (lines.length && lines[lines.length - 1] === '') lines.pop();
        lines.push('', '## Active blockers');
        h = lines.length - 1;
        lines.push(line, '');
      } else {
        // End of the section: before the next heading, after its last non-blank line.
        let end = h + 1;
        while (end < lines.length && !HEADING.test(lines[end])) end++;
        let at = end;
        while (at > h + 1 && lines[at - 1].trim() === '') at--;
        lines.splice(at, 0, line);
      }
    }
  }

  // Phase 4/5 prerequisites for the workarounds in use, under the Phase 4 line (else the Phase 2 line).
  for (const w of r.integration?.workarounds ?? []) {
    const line = prereqLine(w.id, w.prerequisite, w.detail);
    const existingAt = lines.findIndex((l) => l.includes(MARK.prereq(w.id)));
    if (existingAt !== -1) { lines[existingAt] = line; continue; }
    let anchor = lines.findIndex((l) => PHASE_N(4).test(l));
    if (anchor === -1) anchor = lines.findIndex((l) => PHASE2.test(l));
    if (anchor === -1) { lines.push(line); continue; }
    let at = anchor + 1;
    while (at < lines.length && lines[at].includes(MARK.prereqPrefix)) at++;
    lines.splice(at, 0, line);
  }
  return lines.join(nl);
}
