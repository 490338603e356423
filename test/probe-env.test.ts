// The probe's environment is an allow-list (issue 15): a runner's credentials under any name stay
// out; what Python, XRT, the mlir-air toolchain and the HF cache need gets through; the admin's
// names and the tree's own knobs are added on purpose.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { spawnSync } from 'node:child_process';
import { allowed, hfHomeOf, hubCacheOf, parseEnvNames, probeEnv } from '../src/probe/env.ts';
import { hfHome, hfHubCache } from '../src/contract.ts';
import { check } from '../src/check/index.ts';
import { REPO } from './helpers/airmini.ts';
import { findNumpyPython } from './helpers/python.ts';

/** What real runners carry (issue 15's list) and the Action's own tokens. */
const SECRETS = {
  GH_PAT: 'ghp_x', OPENAI_KEY: 'sk-x', DOCKERHUB_PASS: 'p', REGISTRY_PWD: 'p', DATABASE_URL: 'postgres://u:p@h/db', SLACK_WEBHOOK_URL: 'https://hooks.slack.example/x',
  SSH_KEY: '-----BEGIN', GPG_PASSPHRASE: 'p', ARTIFACTORY_CREDS: 'u:p', KUBECONFIG: '/home/runner/.kube/config', VAULT_ADDR: 'https://vault.example',
  'INPUT_GITHUB-TOKEN': 'ghs_secret', INPUT_MODEL_DIR: 'm', ACTIONS_RUNTIME_TOKEN: 'rt', ACTIONS_ID_TOKEN_REQUEST_TOKEN: 'oidc', ACTIONS_ID_TOKEN_REQUEST_URL: 'u',
  ACTIONS_RESULTS_URL: 'r', GITHUB_TOKEN: 't', GH_TOKEN: 't2', GITHUB_OUTPUT: '/r/_temp/out', GITHUB_ENV: '/r/_temp/env', GITHUB_STEP_SUMMARY: '/r/_temp/sum',
  AWS_SECRET_ACCESS_KEY: 'x', NPM_TOKEN: 'x', HF_TOKEN: 'hf_x', HUGGING_FACE_HUB_TOKEN: 'hf_y', RUNNER_TRACKING_ID: 'x', SSH_AUTH_SOCK: '/run/user/1000/ssh',
  DBUS_SESSION_BUS_ADDRESS: 'unix:path=/run/user/1000/bus', XILINX_LICENSE_KEY: 'lic', AIR_API_TOKEN: 'x', LD_PRELOAD: '/tmp/evil.so',
};
const NEEDED = {
  PATH: '/usr/bin', HOME: '/home/runner', LANG: 'C.UTF-8', LC_ALL: 'C.UTF-8', TZ: 'UTC', PYTHONPATH: '/opt/mlir-air/python', LD_LIBRARY_PATH: '/opt/xilinx/xrt/lib',
  HF_HOME: '/srv/hf', HF_HUB_CACHE: '/srv/hf/hub', HF_HUB_OFFLINE: '1', TRANSFORMERS_OFFLINE: '1', XILINX_XRT: '/opt/xilinx/xrt', XRT_INI_PATH: '/etc/xrt.ini',
  MLIR_AIE_INSTALL_DIR: '/opt/mlir-aie', PEANO_INSTALL_DIR: '/opt/peano', AIR_MINI_INJECT: 'stale_tail', NPU_BLOCK_GATE_NPU_LOCK: '/tmp/l', NPU_BLOCK_GATE_UMASK: '002',
};

test('the probe gets what Python, XRT, mlir-air and the HF cache need, and not one of the runner\'s credentials', () => {
  const env = probeEnv({ ...SECRETS, ...NEEDED, GITHUB_SHA: 'abc', NPU_BLOCK_GATE_PYTHON: '/p', RANDOM_THING: 'x' });
  assert.equal(Object.keys(env).sort(), Object.keys(NEEDED).sort());
  for (const k of Object.keys(SECRETS)) assert.not.ok(k in env, k);
});

test('the admin\'s names pass whatever they look like; the tree\'s knobs pass unless they look like a credential', () => {
  const base = { ...SECRETS, ...NEEDED, TEMPORAL_CAUSAL_SKIP: '1', Q4NX_SEQ_LEN: '2048' };
  const env = probeEnv(base, { names: ['ARTIFACTORY_CREDS'], knobs: ['TEMPORAL_CAUSAL_SKIP', 'Q4NX_SEQ_LEN', 'GH_PAT', 'DATABASE_URL'] });
  assert.is(env.ARTIFACTORY_CREDS, 'u:p');
  assert.is(env.TEMPORAL_CAUSAL_SKIP, '1');
  assert.is(env.Q4NX_SEQ_LEN, '2048');
  assert.not.ok('GH_PAT' in env, 'a knob named like a token stays out');
  // A knob list is only as good as the tree that wrote it: DATABASE_URL is a name check.ts never
  // passes for an untrusted run at all (probe.ts), and a trusted tree that reads it gets it.
  assert.ok(allowed('DATABASE_URL', { knobs: ['DATABASE_URL'] }));
  assert.not.ok(allowed('DATABASE_URL'));
});

test('parseEnvNames: commas, spaces or new lines; what is not a name is reported', () => {
  assert.equal(parseEnvNames('A, B\nC_1,,A'), { names: ['A', 'B', 'C_1'], bad: [] });
  assert.equal(parseEnvNames('OK,1BAD,no-dash'), { names: ['OK'], bad: ['1BAD', 'no-dash'] });
});

test('the HF hub cache is where huggingface_hub looks: HF_HUB_CACHE, HF_HOME/hub, XDG_CACHE_HOME, ~/.cache', () => {
  assert.is(hubCacheOf({ HF_HUB_CACHE: '/a', HF_HOME: '/b' }, null), '/a');
  assert.is(hubCacheOf({ HF_HOME: '/b' }, null), '/b/hub');
  assert.is(hubCacheOf({ XDG_CACHE_HOME: '/x' }, null), '/x/huggingface/hub');
  assert.is(hubCacheOf({ HOME: '/home/r' }, null), '/home/r/.cache/huggingface/hub');
  assert.is(hubCacheOf({}, '/home/p'), '/home/p/.cache/huggingface/hub');
  // the older name, the order of the two, and no home at all
  assert.is(hubCacheOf({ HUGGINGFACE_HUB_CACHE: '/old', HF_HOME: '/b' }, null), '/old');
  assert.is(hubCacheOf({ HF_HUB_CACHE: '/a', HUGGINGFACE_HUB_CACHE: '/old' }, null), '/a');
  assert.is(hubCacheOf({ HF_HOME: '/b' }, null), '/b/hub');
  assert.is(hubCacheOf({}, null), null);
  // the probe's $HOME comes before the account's home (huggingface_hub expands ~ with $HOME)
  assert.is(hubCacheOf({ HOME: '/home/r' }, '/home/p'), '/home/r/.cache/huggingface/hub');
});

test('the hub rules live once: the probe\'s cache and HF home are contract.json\'s (src/contract.ts), from the same home', () => {
  const envs = [{}, { HF_HOME: '/h' }, { XDG_CACHE_HOME: '/x' }, { HF_HUB_CACHE: '/c' }, { HUGGINGFACE_HUB_CACHE: '/o' }, { HF_HOME: '/h', XDG_CACHE_HOME: '/x' }];
  for (const env of envs) {
    assert.is(hubCacheOf(env, '/home/p'), hfHubCache(env, '/home/p'), JSON.stringify(env));
    assert.is(hfHomeOf(env, '/home/p'), hfHome(env, '/home/p'), JSON.stringify(env));
  }
  assert.is(hfHomeOf({ HOME: '/home/r' }, null), '/home/r/.cache/huggingface');
  assert.is(hfHomeOf({}, null), null);
});

/** check() on a fake tree whose compile reads FAKE_HOSTILE_READ (a knob `plan` lists), set in this process. */
async function knobRun(untrusted: boolean, names: string[] = []) {
  const root = mkdtempSync(join(tmpdir(), 'nbg-knob-'));
  const py = findNumpyPython()!;
  const model = spawnSync(py, ['-c', `import sys; sys.path.insert(0, ${JSON.stringify(REPO)}); from test.python.fakes import fake_tree; print(fake_tree.build(${JSON.stringify(root)}))`], { encoding: 'utf8' }).stdout.trim();
  const lines: string[] = [];
  process.env.FAKE_HOSTILE_READ = '/nonexistent';
  try {
    const r = await check({
      mode: 'full', modelDir: model, promptStyle: null, prompt: null, python: py, runDir: join(root, 'run'), threshold: null, writeDocs: false, timeoutSec: 120,
      commit: null, bisect: false, cache: false, force: true, probeEnvNames: names,
      isolation: { mode: untrusted ? 'none' : 'auto', untrusted, allowUnisolated: untrusted },
    }, { log: { step: (m) => lines.push(m), warn: (m) => lines.push(m) } });
    return { env: r.report.kernel_cache!.inputs!.env as Record<string, string | null>, lines };
  } finally {
    delete process.env.FAKE_HOSTILE_READ;
  }
}

test('the tree\'s knobs reach a trusted run\'s probe (and its kernel cache key); an untrusted run gets them only from the admin\'s list', async () => {
  const trusted = await knobRun(false);
  assert.is(trusted.env.FAKE_HOSTILE_READ, '/nonexistent');
  assert.ok(trusted.lines.some((l) => /^probe env: the tree's knobs FAKE_HOSTILE_READ passed$/.test(l)), trusted.lines.join('\n'));
  const untrusted = await knobRun(true);
  assert.is(untrusted.env.FAKE_HOSTILE_READ, null);
  assert.ok(untrusted.lines.some((l) => /the tree's knobs FAKE_HOSTILE_READ are set here but not passed to an untrusted run \(list them in probe-env/.test(l)), untrusted.lines.join('\n'));
  const listed = await knobRun(true, ['FAKE_HOSTILE_READ']);
  assert.is(listed.env.FAKE_HOSTILE_READ, '/nonexistent');
});

test.run();
