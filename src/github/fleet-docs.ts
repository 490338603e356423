// The summary's docs PR: one fixed branch for the fleet, rebuilt on the base branch each time with
// one commit per model (phase2_block.md and TODO.md of that model), committed with git plumbing in
// a private index and pushed with a lease; the PR opened or updated through the GitHub helper.
// Models an earlier fleet run recorded on the branch, and this run did not judge, are carried over
// (unless the base branch changed their files since), so an unmerged result is never dropped.
import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative, isAbsolute } from 'node:path';
import type { Git } from './git.ts';
import { classifyWriteError, isAlreadyExists, type GitHubApi, type PullRequest } from './api.ts';
import { BOT, DocsPrRefused, forcedNote } from './docs-pr.ts';

export const FLEET_DOCS_BRANCH = 'npu-block-gate/phase2-fleet';
const REF_BASE = 'refs/npu-block-gate/fleet-base';
const REF_DOCS = 'refs/npu-block-gate/fleet-docs';

interface ModelDocs {
  /** Repository-relative model dir. */
  model: string;
  /** Absolute paths of its documents in the working tree. */
  files: string[];
  commitMessage: string;
}

function relTo(root: string, p: string): string {
  const r = relative(root, isAbsolute(p) ? p : join(root, p)).split('\\').join('/');
  if (r.startsWith('..')) throw new Error(`${p} is outside the repository ${root}`);
  return r;
}

async function fetchRefs(git: Git, remote: string, base: string, branch: string): Promise<{ base: string; docs: string | null; docsBase: string | null }> {
  if (!(await git.fetchBranch(remote, base, REF_BASE))) throw new Error(`the base branch ${base} does not exist on ${remote}`);
  const hasDocs = await git.fetchBranch(remote, branch, REF_DOCS);
  if (!hasDocs) await git.deleteRef(REF_DOCS);
  const baseCommit = await git.commitOf(REF_BASE);
  if (!baseCommit) throw new Error(`cannot resolve the fetched base branch ${base}`);
  const docs = hasDocs ? await git.commitOf(REF_DOCS) : null;
  // The base commit the docs branch was built on: where it left the base branch.
  const docsBase = docs ? (await git.run(['merge-base', docs, baseCommit], { allowFail: true })).stdout.trim() || null : null;
  return { base: baseCommit, docs, docsBase };
}

/** A file the fleet branch records, unless the base branch changed it since the branch was built (theirs wins). */
async function recordedVersion(git: Git, refs: { base: string; docs: string | null; docsBase: string | null }, rel: string): Promise<string | null> {
  if (!refs.docs || !refs.docsBase) return null;
  const recorded = await git.blobAt(refs.docs, rel);
  if (!recorded || recorded === (await git.blobAt(refs.docsBase, rel))) return null;
  if ((await git.blobAt(refs.docsBase, rel)) !== (await git.blobAt(refs.base, rel))) return null;
  return recorded;
}

/**
 * Before the judge writes the documents: the versions the fleet branch last recorded, into the
 * working tree, so each model's history keeps growing across runs until the PR is merged.
 */
export async function restoreFleetDocs(git: Git, remote: string, base: string, files: string[], log: (m: string) => void): Promise<string[]> {
  const root = git.root;
  const refs = await fetchRefs(git, remote, base, FLEET_DOCS_BRANCH);
  const restored: string[] = [];
  for (const f of files) {
    const rel = relTo(root, f);
    const blob = await recordedVersion(git, refs, rel);
    if (!blob) continue;
    await mkdir(dirname(join(root, rel)), { recursive: true });
    await writeFile(join(root, rel), await git.readBlob(blob));
    restored.push(rel);
  }
  if (restored.length) log(`docs: continuing from ${FLEET_DOCS_BRANCH}: ${restored.join(', ')}`);
  return restored;
}

interface FleetDocsResult {
  action: 'created' | 'updated' | 'unchanged' | 'closed' | 'nothing';
  /** The models with a commit on the branch, in order (this run's, then carried ones). */
  commits: { model: string; commit: string }[];
  pushed: boolean;
  number: number | null;
  url: string | null;
  forced: string[];
}

interface FleetDocsRequest {
  git: Git;
  api: GitHubApi | null;
  remote: string;
  base: string;
  models: ModelDocs[];
  title: string;
  body: string;
  log: (m: string) => void;
}

export async function upsertFleetDocsPr(r: FleetDocsRequest): Promise<FleetDocsResult> {
  const git = r.git;
  const root = git.root;
  const branch = FLEET_DOCS_BRANCH;
  const refs = await fetchRefs(git, r.remote, r.base, branch);
  const ours = r.models.map((m) => ({ model: m.model, message: m.commitMessage, rels: m.files.map((f) => relTo(root, f)) }));
  const mine = new Set(ours.flatMap((m) => m.rels));

  const tmp = await mkdtemp(join(tmpdir(), 'nbg-fleet-'));
  try {
    // Carried over: files the branch recorded that this run did not write, grouped by model dir.
    const carried = new Map<string, { rel: string; abs: string }[]>();
    if (refs.docs && refs.docsBase) {
      const names = (await git.out(['diff', '--no-ext-diff', '--no-textconv', '--name-only', '--no-renames', refs.docsBase, refs.docs])).split('\n').filter(Boolean);
      for (const rel of names) {
        if (mine.has(rel)) continue;
        const blob = await recordedVersion(git, refs, rel);
        if (!blob) continue;
        const abs = join(tmp, 'carried', rel);
        await mkdir(dirname(abs), { recursive: true });
        await writeFile(abs, await git.readBlob(blob));
        const model = rel.replace(/\/(docs\/development_progress\/phase2_block\.md|TODO\.md)$/, '');
        carried.set(model, [...(carried.get(model) ?? []), { rel, abs }]);
      }
    }
    const groups = [
      ...ours.map((m) => ({ model: m.model, message: m.message, files: m.rels.map((rel) => ({ rel, abs: join(root, rel) })) })),
      ...[...carried].sort(([a], [b]) => (a < b ? -1 : 1)).map(([model, files]) => ({ model, message: `docs(${model.split('/').pop()}): keep the Phase 2 result recorded by an earlier run\n\nCarried over from ${branch}, which this run rebuilt on ${r.base}.`, files })),
    ];

    const forced: string[] = [];
    for (const g of groups) for (const f of g.files) if (!(await git.blobAt(refs.base, f.rel)) && (await git.isIgnored(f.rel))) forced.push(f.rel);

    let parent = refs.base;
    let tree = await git.treeOf(refs.base);
    const commits: { model: string; commit: string }[] = [];
    for (const g of groups) {
      const next = await git.treeWith(parent, g.files, join(tmp, 'index'));
      if (next === tree) continue;
      parent = await git.commitTree(next, parent, g.message, BOT);
      tree = next;
      commits.push({ model: g.model, commit: parent });
    }
    const body = r.body + forcedNote(forced);
    const open = r.api ? await r.api.findPull(branch, 'open') : null;
    if (!commits.length) {
      if (open && r.api) {
        await r.api.updatePull(open.number, { state: 'closed' });
        r.log(`docs: ${r.base} already records every result; closed #${open.number}`);
        return { action: 'closed', commits, pushed: false, number: open.number, url: open.url, forced };
      }
      r.log(`docs: ${r.base} already records every result; nothing to commit`);
      return { action: 'nothing', commits, pushed: false, number: null, url: null, forced };
    }
    // Same documents on the same base: the branch already says this.
    const same = refs.docs !== null && refs.docsBase === refs.base && (await git.treeOf(refs.docs)) === tree;
    if (!same) {
      await git.pushWithLease(r.remote, parent, branch, refs.docs);
      r.log(`docs: pushed ${commits.length} commit${commits.length === 1 ? '' : 's'} (${commits.map((c) => c.model.split('/').pop()).join(', ')}) to ${branch}`);
    } else r.log(`docs: ${branch} already holds these documents; no push`);

    if (!r.api) return { action: same ? 'unchanged' : 'updated', commits, pushed: !same, number: null, url: null, forced };
    const done = (action: FleetDocsResult['action'], p: PullRequest): FleetDocsResult => ({ action, commits, pushed: !same, number: p.number, url: p.url, forced });
    if (open) {
      if (open.title === r.title && open.body === body && open.base === r.base) return done('unchanged', open);
      return done('updated', await r.api.updatePull(open.number, { title: r.title, body, base: r.base }));
    }
    try {
      return done('created', await r.api.createPull({ head: branch, base: r.base, title: r.title, body }));
    } catch (e) {
      if (classifyWriteError(e) === 'prs-disabled') throw new DocsPrRefused(branch, parent, String((e as Error)?.message ?? e));
      if (!isAlreadyExists(e)) throw e;
      const again = await r.api.findPull(branch, 'open');
      if (!again) throw e;
      return done('updated', await r.api.updatePull(again.number, { title: r.title, body }));
    }
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}
