import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { probeEnv } from '../src/probe/run.ts';

test('the probe (the model tree\'s own code) never sees the Action\'s credentials', () => {
  const env = probeEnv({
    PATH: '/usr/bin', HOME: '/root', HF_HUB_OFFLINE: '1', NPU_BLOCK_GATE_PYTHON: '/p', AIR_MINI_INJECT: 'x', GITHUB_SHA: 'abc',
    'INPUT_GITHUB-TOKEN': 'ghs_secret', INPUT_MODEL_DIR: 'm', ACTIONS_RUNTIME_TOKEN: 'rt', ACTIONS_ID_TOKEN_REQUEST_TOKEN: 'oidc',
    ACTIONS_ID_TOKEN_REQUEST_URL: 'u', ACTIONS_RESULTS_URL: 'r', GITHUB_TOKEN: 't', GH_TOKEN: 't2', gh_enterprise_token: 't3',
  });
  assert.equal(Object.keys(env).sort(), ['AIR_MINI_INJECT', 'GITHUB_SHA', 'HF_HUB_OFFLINE', 'HOME', 'NPU_BLOCK_GATE_PYTHON', 'PATH']);
});

test.run();
