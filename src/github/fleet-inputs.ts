// The inputs only the fleet's modes read (action.yml lists them): affected's change and tree and
// the runner labels of its matrix; summary's expected legs. Read once, every problem at once.
import { isAbsolute, resolve } from 'node:path';
import { InputError, oneLine } from '../errors.ts';
import { expandMatrix, parseLabels, type Leg } from '../fleet/legs.ts';
import { parseFileList } from '../fleet/changes.ts';
import type { InputGetter } from './inputs.ts';
import type { GhContext } from './context.ts';

export interface FleetInputs {
  /** mode affected: the mlir-air checkout (absolute; default the workspace). */
  tree: string;
  /** mode affected: the change is base...head (null: from the event). */
  base: string | null;
  head: string | null;
  /** mode affected: the changed files as given (null: from git). */
  changedFiles: string[] | null;
  /** mode affected: the matrix is models x these labels. */
  runners: string[];
  /** mode summary: every leg the matrix ran (null: only the artifacts found say which legs ran). */
  legs: Leg[] | null;
}

const REV = /^[A-Za-z0-9._/@^~-]{1,200}$/;

export function parseFleetInputs(get: InputGetter, workspace: string): FleetInputs {
  const problems: string[] = [];
  const rev = (name: string): string | null => {
    const v = get(name);
    if (!v) return null;
    if (!REV.test(v) || v.startsWith('-')) { problems.push(`input '${name}': not a commit or branch name; got ${JSON.stringify(v.slice(0, 80))}`); return null; }
    return v;
  };
  const base = rev('base');
  const head = rev('head');
  const rawFiles = get('changed-files');
  const changedFiles = rawFiles ? parseFileList(rawFiles) : null;
  if (changedFiles && base) problems.push("input 'changed-files' and input 'base' exclude each other: give the change one way");
  let runners: string[] = [];
  try { runners = parseLabels([get('runners')]); } catch (e) { problems.push(`input 'runners': ${oneLine(e)}`); }
  let legs: Leg[] | null = null;
  const rawLegs = get('legs');
  if (rawLegs) {
    try {
      legs = expandMatrix(JSON.parse(rawLegs), 'legs');
    } catch (e) {
      problems.push(`input 'legs': ${e instanceof SyntaxError ? 'not JSON (pass the affected step\'s matrix output)' : oneLine(e)}`);
    }
  }
  const treeRaw = get('tree');
  const tree = !treeRaw ? workspace : isAbsolute(treeRaw) ? treeRaw : resolve(workspace, treeRaw);
  if (problems.length) throw new InputError(problems.join('; '));
  return { tree, base, head, changedFiles, runners, legs };
}

const ZERO = /^0+$/;

/** The change the event describes: base and head commits, or why there is none. */
export function eventChange(ctx: GhContext): { base: string; head: string } | { none: string } {
  const p = ctx.payload ?? {};
  const sha = (v: unknown) => (typeof v === 'string' && /^[0-9a-f]{40}([0-9a-f]{24})?$/.test(v) && !ZERO.test(v) ? v : null);
  if (p.pull_request) {
    const base = sha(p.pull_request.base?.sha);
    const head = sha(p.pull_request.head?.sha);
    if (base && head) return { base, head };
  }
  if (p.merge_group) {
    const base = sha(p.merge_group.base_sha);
    const head = sha(p.merge_group.head_sha);
    if (base && head) return { base, head };
  }
  if (ctx.eventName === 'push') {
    const head = sha(p.after) ?? sha(ctx.sha);
    const base = sha(p.before);
    if (base && head) return { base, head };
    return { none: 'this push created the branch: there is no earlier commit to compare with, so every model is checked' };
  }
  return { none: `a ${ctx.eventName || 'manual'} run has no change to compare: every model is checked` };
}
