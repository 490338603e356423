// The one Octokit the Action uses: retry on 5xx, throttling (primary and secondary rate limits,
// waited out only up to a bound), GITHUB_API_URL for GitHub Enterprise Server, and the proxy
// variables a runner sets (Node 20's fetch ignores HTTPS_PROXY/NO_PROXY on its own).
import { Octokit } from '@octokit/rest';
import { retry } from '@octokit/plugin-retry';
import { throttling } from '@octokit/plugin-throttling';
import { ProxyAgent, fetch as undiciFetch } from 'undici';

export const GateOctokit = Octokit.plugin(retry, throttling);
export type GateOctokit = InstanceType<typeof GateOctokit>;
/** The agent's few runner-label calls (agent drain): retry on 5xx, no write throttling. */
export const RetryOctokit = Octokit.plugin(retry);

interface OctokitLog {
  debug(msg: string): void;
  info(msg: string): void;
  warning(msg: string): void;
}

interface OctokitOptions {
  token: string;
  /** GITHUB_API_URL; https://api.github.com when unset. */
  baseUrl?: string;
  log: OctokitLog;
  /** Longest rate-limit wait we accept, in seconds; longer waits fail the call instead. */
  maxRateLimitWaitSec?: number;
  /** How many times a rate-limited call is retried. */
  maxRateLimitRetries?: number;
  /** Unit of the retry back-off (retry plugin: 1, 4, 9 x base) and of retry-after; 1000 in production. */
  retryBaseMs?: number;
  /** Retries after a 5xx. */
  retries?: number;
  env?: NodeJS.ProcessEnv;
  userAgent?: string;
}

const DEFAULT_API_URL = 'https://api.github.com';

function envVar(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const v = env[name.toLowerCase()] ?? env[name.toUpperCase()];
  return v && v.trim() ? v.trim() : undefined;
}

/** The proxy for a URL per HTTP(S)_PROXY, or null when none is set or NO_PROXY matches the host. */
function proxyFor(env: NodeJS.ProcessEnv, url: string): string | null {
  const u = new URL(url);
  const proxy = envVar(env, u.protocol === 'https:' ? 'https_proxy' : 'http_proxy');
  if (!proxy) return null;
  const host = u.hostname.toLowerCase().replace(/^\[|\]$/g, '');
  const port = u.port || (u.protocol === 'https:' ? '443' : '80');
  for (const raw of (envVar(env, 'no_proxy') ?? '').split(/[,\s]+/).filter(Boolean)) {
    if (raw === '*') return null;
    const [h, p] = raw.toLowerCase().split(/:(?=\d+$)/);
    if (p && p !== port) continue;
    const bare = h.replace(/^\*?\./, '');
    if (host === bare || host.endsWith(`.${bare}`)) return null;
  }
  return proxy;
}

/** True when the environment routes requests for this URL through a proxy. */
export function proxyConfigured(env: NodeJS.ProcessEnv, url: string): boolean {
  return proxyFor(env, url) !== null;
}

/**
 * A fetch that honours HTTP_PROXY / HTTPS_PROXY / NO_PROXY (upper and lower case) for the API
 * host, or the global fetch when no proxy applies.
 */
export function proxyFetch(env: NodeJS.ProcessEnv, baseUrl: string): typeof fetch {
  const proxy = proxyFor(env, baseUrl);
  if (!proxy) return fetch;
  const dispatcher = new ProxyAgent(proxy);
  return ((input: any, init?: any) => undiciFetch(input, { ...init, dispatcher })) as unknown as typeof fetch;
}

/** GitHub's guidance for content-creating requests: one at a time, a second apart. */
const WRITE_SPACING_MS = 1000;

interface PacerClock { now: () => number; sleep: (ms: number) => Promise<void> }
const realClock: PacerClock = { now: () => Date.now(), sleep: (ms) => new Promise((r) => setTimeout(r, ms)) };

/**
 * Content-creating requests (the throttling plugin waits on this before each POST, PATCH, PUT and
 * DELETE; those that notify people, comments and pull requests, wait on a second one at three times
 * the spacing) one at a time and at least `spacingMs` apart: the plugin's own pacing (a second, and
 * three), made tunable for a GitHub Enterprise Server without secondary rate limits
 * ($NPU_BLOCK_GATE_GITHUB_WRITE_SPACING_MS) and for the tests' fake GitHub.
 */
export function writePacer(spacingMs: number, clock: PacerClock = realClock): { key: () => { schedule: <T>(options: unknown, fn: () => T | Promise<T>) => Promise<T> } } {
  let last = -Infinity;
  let queue: Promise<unknown> = Promise.resolve();
  const limiter = {
    schedule<T>(_options: unknown, fn: () => T | Promise<T>): Promise<T> {
      const run = queue.then(async () => {
        const wait = last + spacingMs - clock.now();
        if (wait > 0) await clock.sleep(wait);
        last = clock.now();
        return fn();
      });
      queue = run.catch(() => undefined);
      return run;
    },
  };
  return { key: () => limiter };
}

/** $NPU_BLOCK_GATE_GITHUB_WRITE_SPACING_MS: whole milliseconds 0-60000, else GitHub's second (said). */
export function writeSpacing(env: NodeJS.ProcessEnv, log: OctokitLog): number {
  const raw = env.NPU_BLOCK_GATE_GITHUB_WRITE_SPACING_MS?.trim();
  if (raw === undefined || raw === '') return WRITE_SPACING_MS;
  if (/^\d{1,5}$/.test(raw) && Number(raw) <= 60_000) return Number(raw);
  log.warning(`NPU_BLOCK_GATE_GITHUB_WRITE_SPACING_MS=${JSON.stringify(raw.slice(0, 40))} is not whole milliseconds from 0 to 60000; writes stay ${WRITE_SPACING_MS} ms apart`);
  return WRITE_SPACING_MS;
}

export function makeOctokit(o: OctokitOptions): GateOctokit {
  const env = o.env ?? process.env;
  const baseUrl = (o.baseUrl || env.GITHUB_API_URL || DEFAULT_API_URL).replace(/\/+$/, '');
  const maxWait = o.maxRateLimitWaitSec ?? 120;
  const maxRetries = o.maxRateLimitRetries ?? 2;
  const base = o.retryBaseMs ?? 1000;
  const spacing = writeSpacing(env, o.log);
  const onLimit = (kind: string) => (retryAfter: number, options: any, _octokit: unknown, retryCount: number) => {
    const what = `${options.method} ${options.url}`;
    if (retryCount < maxRetries && retryAfter <= maxWait) {
      o.log.info(`GitHub ${kind} rate limit on ${what}: waiting ${retryAfter}s (retry ${retryCount + 1} of ${maxRetries})`);
      return true;
    }
    o.log.warning(
      `GitHub ${kind} rate limit on ${what}: retry-after ${retryAfter}s is over the ${maxWait}s bound or retries are used up; giving up`,
    );
    return false;
  };
  return new GateOctokit({
    auth: o.token || undefined,
    baseUrl,
    userAgent: o.userAgent ?? 'npu-block-gate',
    request: { fetch: proxyFetch(env, baseUrl) },
    log: {
      debug: (m: string) => o.log.debug(m),
      info: (m: string) => o.log.debug(m),
      warn: (m: string) => o.log.warning(m),
      // Failed requests are reported by the caller, which knows whether they matter.
      error: (m: string) => o.log.debug(m),
    },
    retry: { retries: o.retries ?? 3, retryAfterBaseValue: base },
    throttle: {
      // The plugin's own pacing (writes a second apart, those that notify people three), tunable.
      write: writePacer(spacing),
      notifications: writePacer(3 * spacing),
      retryAfterBaseValue: base,
      fallbackSecondaryRateRetryAfter: 60,
      onRateLimit: onLimit('primary'),
      onSecondaryRateLimit: onLimit('secondary'),
    },
  } as any);
}

/** HTTP status of an Octokit error, if it has one. */
export function httpStatus(err: unknown): number | null {
  const s = (err as { status?: unknown })?.status;
  return typeof s === 'number' ? s : null;
}
