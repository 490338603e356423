import { createRequire as __nbgCreateRequire } from 'node:module'; const require = __nbgCreateRequire(import.meta.url);
import {
  Octokit,
  legacyRestEndpointMethods,
  paginateRest,
  requestLog,
  require_light,
  require_undici,
  retry
} from "./chunk-IIP5X3HE.js";
import {
  __toESM
} from "./chunk-A6YGPO6E.js";

// node_modules/@octokit/rest/dist-src/version.js
var VERSION = "22.0.1";

// node_modules/@octokit/rest/dist-src/index.js
var Octokit2 = Octokit.plugin(requestLog, legacyRestEndpointMethods, paginateRest).defaults(
  {
    userAgent: `octokit-rest.js/${VERSION}`
  }
);

// node_modules/@octokit/plugin-throttling/dist-bundle/index.js
var import_light = __toESM(require_light(), 1);
var VERSION2 = "0.0.0-development";
var noop = () => Promise.resolve();
function wrapRequest(state, request, options) {
  return state.retryLimiter.schedule(doRequest, state, request, options);
}
async function doRequest(state, request, options) {
  const { pathname } = new URL(options.url, "http://github.test");
  const isAuth = isAuthRequest(options.method, pathname);
  const isWrite = !isAuth && options.method !== "GET" && options.method !== "HEAD";
  const isSearch = options.method === "GET" && pathname.startsWith("/search/");
  const isGraphQL = pathname.startsWith("/graphql");
  const retryCount = ~~request.retryCount;
  const jobOptions = retryCount > 0 ? { priority: 0, weight: 0 } : {};
  if (state.clustering) {
    jobOptions.expiration = 1e3 * 60;
  }
  if (isWrite || isGraphQL) {
    await state.write.key(state.id).schedule(jobOptions, noop);
  }
  if (isWrite && state.triggersNotification(pathname)) {
    await state.notifications.key(state.id).schedule(jobOptions, noop);
  }
  if (isSearch) {
    await state.search.key(state.id).schedule(jobOptions, noop);
  }
  const req = (isAuth ? state.auth : state.global).key(state.id).schedule(jobOptions, request, options);
  if (isGraphQL) {
    const res = await req;
    if (res.data.errors != null && res.data.errors.some((error) => error.type === "RATE_LIMITED")) {
      const error = Object.assign(new Error("GraphQL Rate Limit Exceeded"), {
        response: res,
        data: res.data
      });
      throw error;
    }
  }
  return req;
}
function isAuthRequest(method, pathname) {
  return method === "PATCH" && // https://docs.github.com/en/rest/apps/apps?apiVersion=2022-11-28#create-a-scoped-access-token
  /^\/applications\/[^/]+\/token\/scoped$/.test(pathname) || method === "POST" && // https://docs.github.com/en/rest/apps/oauth-applications?apiVersion=2022-11-28#reset-a-token
  (/^\/applications\/[^/]+\/token$/.test(pathname) || // https://docs.github.com/en/rest/apps/apps?apiVersion=2022-11-28#create-an-installation-access-token-for-an-app
  /^\/app\/installations\/[^/]+\/access_tokens$/.test(pathname) || // https://docs.github.com/en/apps/oauth-apps/building-oauth-apps/authorizing-oauth-apps
  pathname === "/login/oauth/access_token");
}
var triggers_notification_paths_default = [
  "/orgs/{org}/invitations",
  "/orgs/{org}/invitations/{invitation_id}",
  "/orgs/{org}/teams/{team_slug}/discussions",
  "/orgs/{org}/teams/{team_slug}/discussions/{discussion_number}/comments",
  "/repos/{owner}/{repo}/collaborators/{username}",
  "/repos/{owner}/{repo}/commits/{commit_sha}/comments",
  "/repos/{owner}/{repo}/issues",
  "/repos/{owner}/{repo}/issues/{issue_number}/comments",
  "/repos/{owner}/{repo}/issues/{issue_number}/sub_issue",
  "/repos/{owner}/{repo}/issues/{issue_number}/sub_issues/priority",
  "/repos/{owner}/{repo}/pulls",
  "/repos/{owner}/{repo}/pulls/{pull_number}/comments",
  "/repos/{owner}/{repo}/pulls/{pull_number}/comments/{comment_id}/replies",
  "/repos/{owner}/{repo}/pulls/{pull_number}/merge",
  "/repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers",
  "/repos/{owner}/{repo}/pulls/{pull_number}/reviews",
  "/repos/{owner}/{repo}/releases",
  "/teams/{team_id}/discussions",
  "/teams/{team_id}/discussions/{discussion_number}/comments"
];
function routeMatcher(paths) {
  const regexes = paths.map(
    (path) => path.split("/").map((c) => c.startsWith("{") ? "(?:.+?)" : c).join("/")
  );
  const regex2 = `^(?:${regexes.map((r) => `(?:${r})`).join("|")})[^/]*$`;
  return new RegExp(regex2, "i");
}
var regex = routeMatcher(triggers_notification_paths_default);
var triggersNotification = regex.test.bind(regex);
var groups = {};
var createGroups = function(Bottleneck, common) {
  groups.global = new Bottleneck.Group({
    id: "octokit-global",
    maxConcurrent: 10,
    ...common
  });
  groups.auth = new Bottleneck.Group({
    id: "octokit-auth",
    maxConcurrent: 1,
    ...common
  });
  groups.search = new Bottleneck.Group({
    id: "octokit-search",
    maxConcurrent: 1,
    minTime: 2e3,
    ...common
  });
  groups.write = new Bottleneck.Group({
    id: "octokit-write",
    maxConcurrent: 1,
    minTime: 1e3,
    ...common
  });
  groups.notifications = new Bottleneck.Group({
    id: "octokit-notifications",
    maxConcurrent: 1,
    minTime: 3e3,
    ...common
  });
};
function throttling(octokit, octokitOptions) {
  const {
    enabled = true,
    Bottleneck = import_light.default,
    id = "no-id",
    timeout = 1e3 * 60 * 2,
    // Redis TTL: 2 minutes
    connection
  } = octokitOptions.throttle || {};
  if (!enabled) {
    return {};
  }
  const common = { timeout };
  if (typeof connection !== "undefined") {
    common.connection = connection;
  }
  const state = Object.assign(
    {
      clustering: connection != null,
      triggersNotification,
      fallbackSecondaryRateRetryAfter: 60,
      retryAfterBaseValue: 1e3,
      id
    },
    octokitOptions.throttle
  );
  if (typeof state.onSecondaryRateLimit !== "function" || typeof state.onRateLimit !== "function") {
    throw new Error(`octokit/plugin-throttling error:
        You must pass the onSecondaryRateLimit and onRateLimit error handlers.
        See https://octokit.github.io/rest.js/#throttling

        const octokit = new Octokit({
          throttle: {
            onSecondaryRateLimit: (retryAfter, options) => {/* ... */},
            onRateLimit: (retryAfter, options) => {/* ... */}
          }
        })
    `);
  }
  let initialized = false;
  const initializeBottleneck = () => {
    if (initialized) {
      return;
    }
    initialized = true;
    if (groups.global == null) {
      createGroups(Bottleneck, common);
    }
    state.global = state.global ?? groups.global;
    state.auth = state.auth ?? groups.auth;
    state.search = state.search ?? groups.search;
    state.write = state.write ?? groups.write;
    state.notifications = state.notifications ?? groups.notifications;
    state.retryLimiter = state.retryLimiter ?? new Bottleneck();
    const events = {};
    const emitter = new Bottleneck.Events(events);
    events.on("secondary-limit", state.onSecondaryRateLimit);
    events.on("rate-limit", state.onRateLimit);
    events.on(
      "error",
      (e) => octokit.log.warn("Error in throttling-plugin limit handler", e)
    );
    state.retryLimiter.on("failed", async function(error, info) {
      const [state2, request, options] = info.args;
      const { pathname } = new URL(options.url, "http://github.test");
      const shouldRetryGraphQL = pathname.startsWith("/graphql") && error.status !== 401;
      if (!(shouldRetryGraphQL || error.status === 403 || error.status === 429)) {
        return;
      }
      const retryCount = ~~request.retryCount;
      request.retryCount = retryCount;
      options.request.retryCount = retryCount;
      const { wantRetry, retryAfter = 0 } = await (async function() {
        if (/\bsecondary rate\b/i.test(error.message)) {
          const retryAfter2 = Number(error.response.headers["retry-after"]) || state2.fallbackSecondaryRateRetryAfter;
          const wantRetry2 = await emitter.trigger(
            "secondary-limit",
            retryAfter2,
            options,
            octokit,
            retryCount
          );
          return { wantRetry: wantRetry2, retryAfter: retryAfter2 };
        }
        if (error.response.headers != null && error.response.headers["x-ratelimit-remaining"] === "0" || (error.response.data?.errors ?? []).some(
          (error2) => error2.type === "RATE_LIMITED"
        )) {
          const rateLimitReset = new Date(
            ~~error.response.headers["x-ratelimit-reset"] * 1e3
          ).getTime();
          const retryAfter2 = Math.max(
            // Add one second so we retry _after_ the reset time
            // https://docs.github.com/en/rest/overview/resources-in-the-rest-api?apiVersion=2022-11-28#exceeding-the-rate-limit
            Math.ceil((rateLimitReset - Date.now()) / 1e3) + 1,
            0
          );
          const wantRetry2 = await emitter.trigger(
            "rate-limit",
            retryAfter2,
            options,
            octokit,
            retryCount
          );
          return { wantRetry: wantRetry2, retryAfter: retryAfter2 };
        }
        return {};
      })();
      if (wantRetry) {
        request.retryCount++;
        return retryAfter * state2.retryAfterBaseValue;
      }
    });
  };
  octokit.hook.wrap("request", (request, options) => {
    initializeBottleneck();
    return wrapRequest(state, request, options);
  });
  return {};
}
throttling.VERSION = VERSION2;
throttling.triggersNotification = triggersNotification;

// src/github/octokit.ts
var import_undici = __toESM(require_undici(), 1);
var GateOctokit = Octokit2.plugin(retry, throttling);
var RetryOctokit = Octokit2.plugin(retry);
var DEFAULT_API_URL = "https://api.github.com";
function envVar(env, name) {
  const v = env[name.toLowerCase()] ?? env[name.toUpperCase()];
  return v && v.trim() ? v.trim() : void 0;
}
function proxyFor(env, url) {
  const u = new URL(url);
  const proxy = envVar(env, u.protocol === "https:" ? "https_proxy" : "http_proxy");
  if (!proxy) return null;
  const host = u.hostname.toLowerCase().replace(/^\[|\]$/g, "");
  const port = u.port || (u.protocol === "https:" ? "443" : "80");
  for (const raw of (envVar(env, "no_proxy") ?? "").split(/[,\s]+/).filter(Boolean)) {
    if (raw === "*") return null;
    const [h, p] = raw.toLowerCase().split(/:(?=\d+$)/);
    if (p && p !== port) continue;
    const bare = h.replace(/^\*?\./, "");
    if (host === bare || host.endsWith(`.${bare}`)) return null;
  }
  return proxy;
}
function proxyConfigured(env, url) {
  return proxyFor(env, url) !== null;
}
function proxyFetch(env, baseUrl) {
  const proxy = proxyFor(env, baseUrl);
  if (!proxy) return fetch;
  const dispatcher = new import_undici.ProxyAgent(proxy);
  return ((input, init) => (0, import_undici.fetch)(input, { ...init, dispatcher }));
}
var WRITE_SPACING_MS = 1e3;
var realClock = { now: () => Date.now(), sleep: (ms) => new Promise((r) => setTimeout(r, ms)) };
function writePacer(spacingMs, clock = realClock) {
  let last = -Infinity;
  let queue = Promise.resolve();
  const limiter = {
    schedule(_options, fn) {
      const run = queue.then(async () => {
        const wait = last + spacingMs - clock.now();
        if (wait > 0) await clock.sleep(wait);
        last = clock.now();
        return fn();
      });
      queue = run.catch(() => void 0);
      return run;
    }
  };
  return { key: () => limiter };
}
function writeSpacing(env, log) {
  const raw = env.NPU_BLOCK_GATE_GITHUB_WRITE_SPACING_MS?.trim();
  if (raw === void 0 || raw === "") return WRITE_SPACING_MS;
  if (/^\d{1,5}$/.test(raw) && Number(raw) <= 6e4) return Number(raw);
  log.warning(`NPU_BLOCK_GATE_GITHUB_WRITE_SPACING_MS=${JSON.stringify(raw.slice(0, 40))} is not whole milliseconds from 0 to 60000; writes stay ${WRITE_SPACING_MS} ms apart`);
  return WRITE_SPACING_MS;
}
function makeOctokit(o) {
  const env = o.env ?? process.env;
  const baseUrl = (o.baseUrl || env.GITHUB_API_URL || DEFAULT_API_URL).replace(/\/+$/, "");
  const maxWait = o.maxRateLimitWaitSec ?? 120;
  const maxRetries = o.maxRateLimitRetries ?? 2;
  const base = o.retryBaseMs ?? 1e3;
  const spacing = writeSpacing(env, o.log);
  const onLimit = (kind) => (retryAfter, options, _octokit, retryCount) => {
    const what = `${options.method} ${options.url}`;
    if (retryCount < maxRetries && retryAfter <= maxWait) {
      o.log.info(`GitHub ${kind} rate limit on ${what}: waiting ${retryAfter}s (retry ${retryCount + 1} of ${maxRetries})`);
      return true;
    }
    o.log.warning(
      `GitHub ${kind} rate limit on ${what}: retry-after ${retryAfter}s is over the ${maxWait}s bound or retries are used up; giving up`
    );
    return false;
  };
  return new GateOctokit({
    auth: o.token || void 0,
    baseUrl,
    userAgent: o.userAgent ?? "npu-block-gate",
    request: { fetch: proxyFetch(env, baseUrl) },
    log: {
      debug: (m) => o.log.debug(m),
      info: (m) => o.log.debug(m),
      warn: (m) => o.log.warning(m),
      // Failed requests are reported by the caller, which knows whether they matter.
      error: (m) => o.log.debug(m)
    },
    retry: { retries: o.retries ?? 3, retryAfterBaseValue: base },
    throttle: {
      // The plugin's own pacing (writes a second apart, those that notify people three), tunable.
      write: writePacer(spacing),
      notifications: writePacer(3 * spacing),
      retryAfterBaseValue: base,
      fallbackSecondaryRateRetryAfter: 60,
      onRateLimit: onLimit("primary"),
      onSecondaryRateLimit: onLimit("secondary")
    }
  });
}
function httpStatus(err) {
  const s = err?.status;
  return typeof s === "number" ? s : null;
}

export {
  GateOctokit,
  RetryOctokit,
  proxyConfigured,
  proxyFetch,
  writePacer,
  writeSpacing,
  makeOctokit,
  httpStatus
};
