// Artifact upload and download behind one interface: the Actions artifact service on a runner,
// or a local directory store (NPU_BLOCK_GATE_ARTIFACT_DIR, used only when the runner's runtime
// token is absent) so tests and offline runs exercise the same split-mode path.
import { cp, mkdir, readdir, readFile, writeFile, rm, mkdtemp } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join, relative, resolve, sep, dirname } from 'node:path';
import { tmpdir } from 'node:os';
import { InfraError, InputError } from '../errors.ts';

export interface UploadResult {
  name: string;
  id: number | null;
  url: string | null;
}

export interface FoundArtifact {
  id: number;
  name: string;
  size: number;
}

export interface RunRef {
  owner: string;
  repo: string;
  runId: number;
  token: string;
}

export interface ArtifactStore {
  readonly kind: 'actions' | 'local';
  upload(name: string, rootDir: string, retentionDays: number | null): Promise<UploadResult>;
  /** Artifacts of another workflow run (the one that triggered a workflow_run job). */
  list(run: RunRef): Promise<FoundArtifact[]>;
  download(run: RunRef, artifact: FoundArtifact, dest: string): Promise<string>;
}

export const ARTIFACT_DIR_ENV = 'NPU_BLOCK_GATE_ARTIFACT_DIR';
/** Bigger than any honest run dir; refuse to download more from an untrusted run. */
export const MAX_ARTIFACT_BYTES = 2 * 1024 ** 3;

/** Every regular file under dir, relative paths sorted; symlinks and other specials are refused. */
export async function listFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  async function walk(d: string): Promise<void> {
    for (const e of await readdir(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else if (e.isFile()) out.push(relative(dir, p));
      else throw new InputError(`${relative(dir, p)} is not a regular file (symlinks are not allowed in a run dir)`, dir);
    }
  }
  await walk(dir);
  return out.sort();
}

/** The artifact name for one model in this job and attempt: unique, and findable by its prefix. */
export function artifactName(prefix: string, modelSlug: string, job: string, attempt: number): string {
  const clean = (s: string) => s.replace(/[":<>|*?\\/\r\n\s]+/g, '_');
  return `${artifactPrefix(prefix, modelSlug)}${clean(job || 'job')}-attempt${attempt}`;
}

export function artifactPrefix(prefix: string, modelSlug: string): string {
  const clean = (s: string) => s.replace(/[":<>|*?\\/\r\n\s]+/g, '_');
  return `${clean(prefix)}-${clean(modelSlug)}-`;
}

/** The newest artifact of a run whose name starts with the prefix (a re-run attempt wins). */
export function pickArtifact(found: FoundArtifact[], prefix: string): FoundArtifact | null {
  const matches = found.filter((a) => a.name.startsWith(prefix));
  return matches.sort((a, b) => b.id - a.id)[0] ?? null;
}

export function selectStore(env: NodeJS.ProcessEnv, serverUrl: string, owner: string, repo: string, runId: number): ArtifactStore | null {
  if (env.ACTIONS_RUNTIME_TOKEN) return new ActionsStore(serverUrl, owner, repo, runId);
  const dir = env[ARTIFACT_DIR_ENV];
  if (dir) return new LocalStore(resolve(dir), owner, repo, runId);
  return null;
}

/** The GitHub Actions artifact service (@actions/artifact). */
export class ActionsStore implements ArtifactStore {
  readonly kind = 'actions' as const;
  constructor(
    private readonly serverUrl: string,
    private readonly owner: string,
    private readonly repo: string,
    private readonly runId: number,
  ) {}

  private async client() {
    const { DefaultArtifactClient } = await import('@actions/artifact');
    return new DefaultArtifactClient();
  }

  async upload(name: string, rootDir: string, retentionDays: number | null): Promise<UploadResult> {
    const files = (await listFiles(rootDir)).map((f) => join(rootDir, f));
    const client = await this.client();
    const opts = retentionDays ? { retentionDays } : {};
    let finalName = name;
    let res;
    try {
      res = await client.uploadArtifact(finalName, files, rootDir, opts);
    } catch (e) {
      // Names must be unique in a run (matrix legs share a job id): retry once with a suffix.
      if (!/already exists|409|conflict/i.test(String((e as Error).message))) throw e;
      finalName = `${name}-${Math.random().toString(16).slice(2, 8)}`;
      res = await client.uploadArtifact(finalName, files, rootDir, opts);
    }
    const id = res.id ?? null;
    const url = id ? `${this.serverUrl}/${this.owner}/${this.repo}/actions/runs/${this.runId}/artifacts/${id}` : null;
    return { name: finalName, id, url };
  }

  async list(run: RunRef): Promise<FoundArtifact[]> {
    const client = await this.client();
    const res = await client.listArtifacts({
      latest: true,
      findBy: { token: run.token, workflowRunId: run.runId, repositoryOwner: run.owner, repositoryName: run.repo },
    });
    return res.artifacts.map((a) => ({ id: a.id, name: a.name, size: a.size }));
  }

  async download(run: RunRef, artifact: FoundArtifact, dest: string): Promise<string> {
    if (artifact.size > MAX_ARTIFACT_BYTES) throw new InputError(`artifact ${artifact.name} is ${artifact.size} bytes; refusing more than ${MAX_ARTIFACT_BYTES}`);
    const client = await this.client();
    await mkdir(dest, { recursive: true });
    const res = await client.downloadArtifact(artifact.id, {
      path: dest,
      findBy: { token: run.token, workflowRunId: run.runId, repositoryOwner: run.owner, repositoryName: run.repo },
    });
    if (res.digestMismatch) throw new InfraError(`artifact ${artifact.name} failed its digest check`);
    await listFiles(dest); // refuses symlinks
    return dest;
  }
}

/** A directory that stands in for the artifact service: <root>/<owner>/<repo>/<run id>/<name>/. */
export class LocalStore implements ArtifactStore {
  readonly kind = 'local' as const;
  constructor(
    private readonly root: string,
    private readonly owner: string,
    private readonly repo: string,
    private readonly runId: number,
  ) {}

  private runDir(owner: string, repo: string, runId: number): string {
    return join(this.root, owner, repo, String(runId));
  }

  async upload(name: string, rootDir: string, _retentionDays: number | null): Promise<UploadResult> {
    const base = this.runDir(this.owner, this.repo, this.runId);
    const dest = join(base, name);
    if (existsSync(dest)) throw new InfraError(`an artifact named ${name} already exists in run ${this.runId} (409)`);
    const files = await listFiles(rootDir);
    await mkdir(dest, { recursive: true });
    for (const f of files) {
      await mkdir(dirname(join(dest, f)), { recursive: true });
      await cp(join(rootDir, f), join(dest, f));
    }
    const id = await this.nextId();
    await writeFile(join(base, `${name}.artifact.json`), JSON.stringify({ id, name }) + '\n');
    return { name, id, url: `file://${dest}` };
  }

  private async nextId(): Promise<number> {
    const counter = join(this.root, 'next-id');
    await mkdir(this.root, { recursive: true });
    const n = existsSync(counter) ? Number(await readFile(counter, 'utf8')) || 1 : 1;
    await writeFile(counter, String(n + 1));
    return n;
  }

  async list(run: RunRef): Promise<FoundArtifact[]> {
    const base = this.runDir(run.owner, run.repo, run.runId);
    if (!existsSync(base)) return [];
    const out: FoundArtifact[] = [];
    for (const e of await readdir(base)) {
      if (!e.endsWith('.artifact.json')) continue;
      const meta = JSON.parse(await readFile(join(base, e), 'utf8'));
      out.push({ id: meta.id, name: meta.name, size: 0 });
    }
    return out;
  }

  async download(run: RunRef, artifact: FoundArtifact, dest: string): Promise<string> {
    const src = join(this.runDir(run.owner, run.repo, run.runId), artifact.name);
    for (const f of await listFiles(src)) {
      const to = resolve(dest, f);
      if (!to.startsWith(resolve(dest) + sep)) throw new InputError(`artifact path escapes the download dir: ${f}`);
      await mkdir(dirname(to), { recursive: true });
      await cp(join(src, f), to);
    }
    return dest;
  }
}

/** A fresh directory for an untrusted download. */
export async function freshDir(prefix: string, parent?: string): Promise<string> {
  const base = parent ?? process.env.RUNNER_TEMP ?? tmpdir();
  await mkdir(base, { recursive: true });
  return mkdtemp(join(base, prefix));
}

export async function removeDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}

