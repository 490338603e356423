// Artifact upload and download behind one interface: the Actions artifact service on a runner,
// or a local directory store (NPU_BLOCK_GATE_ARTIFACT_DIR, used only when the runner's runtime
// token is absent) so tests and offline runs exercise the same split-mode path.
//
// Names are exact: `<prefix>-<model>[-<matrix leg>]-attempt<n>`, and mode report looks for exactly
// that shape (a model `tiny` never picks up `tiny-llama`'s artifact). A download is a zip from a job
// we do not trust: its digest is checked and it is extracted with bounds (unzip.ts).
import { mkdir, readdir, readFile, writeFile, rm, mkdtemp } from 'node:fs/promises';
import { createReadStream, existsSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join, relative, resolve, sep } from 'node:path';
import { tmpdir } from 'node:os';
import { InfraError, InputError } from '../errors.ts';
import { extractZip, DEFAULT_ZIP_LIMITS, type ZipLimits } from './unzip.ts';
import { writeZip } from './zip.ts';
import { modelSlug } from './model-names.ts';

interface UploadResult {
  name: string;
  id: number | null;
  url: string | null;
}

export interface FoundArtifact {
  id: number;
  name: string;
  size: number;
  /** "sha256:<hex>" of the zip, recorded by the service at upload; null when it has none. */
  digest?: string | null;
}

interface RunRef {
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
  /** A remark from the last download (e.g. no digest recorded), for the log. */
  note: string | null;
}

const ARTIFACT_DIR_ENV = 'NPU_BLOCK_GATE_ARTIFACT_DIR';
/** Bigger than any honest run dir's zip; refuse to download more from an untrusted run. */
const MAX_ARTIFACT_BYTES = 2 * 1024 ** 3;

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

export { modelSlug } from './model-names.ts';

function cleanPrefix(prefix: string): string {
  return prefix.replace(/[":<>|*?\\/\r\n\s]+/g, '_');
}

/**
 * The artifact of one model in one job leg and attempt. Matrix legs differ by `leg` (a hash of the
 * job's matrix; GITHUB_JOB is the same for every leg), re-runs by the attempt.
 */
export function artifactName(prefix: string, modelKey: string, leg: string | null, attempt: number): string {
  return `${cleanPrefix(prefix)}-${modelSlug(modelKey)}${leg ? `-${leg}` : ''}-attempt${attempt}`;
}

/** The summary job's fleet page: a name no leg's artifact can have (it does not end in -attempt<n>). */
export function fleetArtifactName(prefix: string, attempt: number): string {
  return `${cleanPrefix(prefix)}-fleet-page-try${attempt}`;
}

const re = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** What artifactName() gives for this prefix and model, in any leg and attempt. */
export function artifactPattern(prefix: string, modelKey: string): RegExp {
  return new RegExp(`^${re(cleanPrefix(prefix))}-${re(modelSlug(modelKey))}(?:-(leg-[0-9a-f]{8}))?-attempt([1-9][0-9]{0,3})$`);
}

/**
 * The one artifact of this model in a run: exactly artifactName()'s shape, the attempt of the
 * judged run when it has one (else the latest). Several matrix legs for the same model cannot be
 * told apart by the report job: refused, naming them.
 */
export function pickArtifact(found: FoundArtifact[], prefix: string, modelKey: string, attempt: number | null): FoundArtifact | null {
  const pattern = artifactPattern(prefix, modelKey);
  const ours = found
    .map((a) => ({ a, m: pattern.exec(a.name) }))
    .filter((x): x is { a: FoundArtifact; m: RegExpExecArray } => x.m !== null)
    .map((x) => ({ a: x.a, leg: x.m[1] ?? '', attempt: Number(x.m[2]) }));
  if (ours.length === 0) return null;
  const legs = [...new Set(ours.map((x) => x.leg))];
  if (legs.length > 1) {
    throw new InputError(`several matrix legs uploaded ${modelKey} (${ours.map((x) => x.a.name).join(', ')}); give each leg its own artifact-name, or one model per leg`);
  }
  const exact = attempt !== null ? ours.find((x) => x.attempt === attempt) : undefined;
  return (exact ?? ours.sort((x, y) => y.attempt - x.attempt || y.a.id - x.a.id)[0]).a;
}

/** sha256 of a file, as the artifact service writes digests. */
export async function fileDigest(path: string): Promise<string> {
  const h = createHash('sha256');
  for await (const chunk of createReadStream(path)) h.update(chunk as Buffer);
  return `sha256:${h.digest('hex')}`;
}

/** "sha256:<hex>" whether or not the service wrote the algorithm. */
function normaliseDigest(d: string): string {
  const t = d.trim().toLowerCase();
  return t.includes(':') ? t : `sha256:${t}`;
}

/**
 * Checks a downloaded zip against the digest recorded at upload, then extracts it with bounds.
 * Returns a note when there was no digest to check.
 */
export async function verifyAndExtract(zip: string, artifact: FoundArtifact, dest: string, limits: ZipLimits = DEFAULT_ZIP_LIMITS): Promise<string | null> {
  let note: string | null = null;
  if (artifact.digest) {
    const got = await fileDigest(zip);
    if (got !== normaliseDigest(artifact.digest)) throw new InfraError(`artifact ${artifact.name} failed its digest check (recorded ${normaliseDigest(artifact.digest).slice(0, 19)}..., downloaded ${got.slice(0, 19)}...)`);
  } else note = `artifact ${artifact.name} has no recorded digest; its content was not checked against the upload`;
  await extractZip(zip, dest, limits);
  return note;
}

export function selectStore(env: NodeJS.ProcessEnv, serverUrl: string, owner: string, repo: string, runId: number): ArtifactStore | null {
  if (env.ACTIONS_RUNTIME_TOKEN) return new ActionsStore(serverUrl, owner, repo, runId);
  const dir = env[ARTIFACT_DIR_ENV];
  if (dir) return new LocalStore(resolve(dir), owner, repo, runId);
  return null;
}

/** The GitHub Actions artifact service (@actions/artifact). */
class ActionsStore implements ArtifactStore {
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
    let res;
    try {
      res = await client.uploadArtifact(name, files, rootDir, opts);
    } catch (e) {
      if (/already exists|409|conflict/i.test(String((e as Error).message))) throw duplicateName(name, this.runId);
      throw e;
    }
    const id = res.id ?? null;
    const url = id ? `${this.serverUrl}/${this.owner}/${this.repo}/actions/runs/${this.runId}/artifacts/${id}` : null;
    return { name, id, url };
  }

  async list(run: RunRef): Promise<FoundArtifact[]> {
    const client = await this.client();
    const res = await client.listArtifacts({
      latest: true,
      findBy: { token: run.token, workflowRunId: run.runId, repositoryOwner: run.owner, repositoryName: run.repo },
    });
    return res.artifacts.map((a) => ({ id: a.id, name: a.name, size: a.size, digest: a.digest ?? null }));
  }

  /** Downloads the zip as it is (no extraction by the library), checks its digest, extracts it with bounds. */
  async download(run: RunRef, artifact: FoundArtifact, dest: string): Promise<string> {
    if (artifact.size > MAX_ARTIFACT_BYTES) throw new InputError(`artifact ${artifact.name} is ${artifact.size} bytes; refusing more than ${MAX_ARTIFACT_BYTES}`);
    const client = await this.client();
    const zipDir = await freshDir('nbg-zip-');
    try {
      await client.downloadArtifact(artifact.id, {
        path: zipDir,
        skipDecompress: true,
        findBy: { token: run.token, workflowRunId: run.runId, repositoryOwner: run.owner, repositoryName: run.repo },
      });
      const got = await readdir(zipDir);
      if (got.length !== 1) throw new InfraError(`artifact ${artifact.name}: expected one zip from the download, got ${got.length} files`);
      this.note = await verifyAndExtract(join(zipDir, got[0]), artifact, dest, zipLimitsFromEnv(process.env));
    } finally {
      await removeDir(zipDir);
    }
    await listFiles(dest); // refuses anything but regular files
    return dest;
  }

  /** A remark from the last download (no digest recorded), for the log. */
  note: string | null = null;
}

/**
 * A directory that stands in for the artifact service: <root>/<owner>/<repo>/<run id>/<name>.zip
 * with <name>.artifact.json (id, name, size, digest) beside it. Downloads go through the same
 * digest check and bounded extraction as the service's.
 */
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
    const zipPath = join(base, `${name}.zip`);
    if (existsSync(zipPath)) throw duplicateName(name, this.runId);
    const files = await listFiles(rootDir);
    const zip = writeZip(await Promise.all(files.map(async (f) => ({ name: f.split(sep).join('/'), data: await readFile(join(rootDir, f)) }))));
    await mkdir(base, { recursive: true });
    await writeFile(zipPath, zip, { flag: 'wx' });
    const id = await this.nextId();
    const digest = `sha256:${createHash('sha256').update(zip).digest('hex')}`;
    await writeFile(join(base, `${name}.artifact.json`), JSON.stringify({ id, name, size: zip.length, digest }) + '\n');
    return { name, id, url: `file://${zipPath}` };
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
      out.push({ id: meta.id, name: meta.name, size: meta.size ?? 0, digest: meta.digest ?? null });
    }
    return out;
  }

  async download(run: RunRef, artifact: FoundArtifact, dest: string): Promise<string> {
    const zip = join(this.runDir(run.owner, run.repo, run.runId), `${artifact.name}.zip`);
    if (!existsSync(zip)) throw new InfraError(`artifact ${artifact.name} has no content`);
    this.note = await verifyAndExtract(zip, artifact, dest, this.limits);
    await listFiles(dest);
    return dest;
  }

  note: string | null = null;
  /** Extraction bounds (tests lower them). */
  limits: ZipLimits = zipLimitsFromEnv(process.env);
}

/** NPU_BLOCK_GATE_ZIP_MAX_BYTES lowers the inflated-size cap (tests; an admin who wants less). */
function zipLimitsFromEnv(env: NodeJS.ProcessEnv): ZipLimits {
  const max = Number(env.NPU_BLOCK_GATE_ZIP_MAX_BYTES);
  if (!Number.isFinite(max) || max <= 0 || max >= DEFAULT_ZIP_LIMITS.maxBytes) return DEFAULT_ZIP_LIMITS;
  return { ...DEFAULT_ZIP_LIMITS, maxBytes: max, floorBytes: Math.min(DEFAULT_ZIP_LIMITS.floorBytes, max) };
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


function duplicateName(name: string, runId: number): InfraError {
  return new InfraError(
    `an artifact named ${name} already exists in run ${runId}: two jobs uploaded the same model with the same artifact-name (a matrix without the 'matrix' input?); give each its own artifact-name`,
  );
}
