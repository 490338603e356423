// The GitHub Action: inputs and context, then each model dir through its job (jobs.ts: probe,
// report or full; what they ask of check(), the probe and the run-dir fetch goes through the port,
// github/ports.ts) or the fleet's job (affected, summary), then the step outputs. One try/catch
// ends in core.setFailed; an infrastructure or input error says so and is never a FAIL verdict.
import * as core from '@actions/core';
import { GateError, EXIT, oneLine } from './errors.ts';
import { plain } from './text/escape.ts';
import { parseInputs } from './github/inputs.ts';
import { readContext } from './github/context.ts';
import { openSession, out } from './github/session.ts';
import { persistedCredentials } from './github/checkout.ts';
import { runModel } from './github/jobs.ts';
import { REAL_PORTS, type Ports } from './github/ports.ts';
import { parseFleetInputs } from './github/fleet-inputs.ts';
import { affectedJob } from './github/affected-job.ts';
import { summaryJob } from './github/summary-job.ts';
import { outputsFor, type ModelResult } from './github/outputs.ts';

/** The Action. `ports`: check(), the probe and the run-dir fetch (the real ones; tests pass recorded results). */
export async function run(env: NodeJS.ProcessEnv = process.env, ports: Ports = REAL_PORTS): Promise<void> {
  try {
    const inputs = parseInputs((name) => core.getInput(name), env);
    if (inputs.token) core.setSecret(inputs.token);
    const fleet = inputs.mode === 'affected' || inputs.mode === 'summary' ? parseFleetInputs((name) => core.getInput(name), env.GITHUB_WORKSPACE || process.cwd()) : null;
    const session = await openSession(inputs, readContext(env, inputs.token), env);
    if (fleet) {
      // The fleet's modes: about the tree and the workflow run, not one model dir.
      const r = inputs.mode === 'affected' ? { ...(await affectedJob(session, fleet, ports)), failure: null } : await summaryJob(session, fleet);
      for (const [k, v] of Object.entries(r.outputs)) core.setOutput(k, v);
      if (r.failure) core.setFailed(r.failure);
      return;
    }
    const creds = inputs.mode === 'report' ? null : persistedCredentials(session.workspace);
    if (creds) out.warning(`the checkout keeps the job's token in ${creds} (actions/checkout without persist-credentials: false); the probe's sandbox hides it, but a run without the sandbox would hand it to the model code: check out with persist-credentials: false`, 'npu-block-gate: token in the checkout');
    const results: ModelResult[] = [];
    for (const modelDir of inputs.modelDirs) results.push(await runModel(session, modelDir, ports));
    for (const [k, v] of Object.entries(outputsFor(results))) core.setOutput(k, v);
    const failure = failureMessage(results);
    if (failure) core.setFailed(failure);
  } catch (e) {
    core.setOutput('outcome', 'error');
    const kind = e instanceof GateError && e.exitCode === EXIT.input ? 'bad input' : 'infrastructure error';
    core.setFailed(`npu-block-gate could not run (${kind}, not a FAIL verdict): ${oneLine(e)}`);
  }
}

/** One line for the step's failure: the failed gates per model, then what could not be judged. */
function failureMessage(results: ModelResult[]): string | null {
  const parts: string[] = [];
  const failed = results.filter((r) => r.outcome === 'fail');
  const errored = results.filter((r) => r.outcome === 'error');
  if (failed.length) {
    const gates = (r: ModelResult) => (r.report?.gates ?? []).filter((g) => g.status === 'fail').map((g) => g.id).join(', ');
    parts.push(`Phase 2 FAIL: ${failed.map((r) => `${plain(r.report?.model.name ?? r.key, 64)} (${gates(r)} failed)`).join('; ')}`);
  }
  if (errored.length) parts.push(`could not judge ${errored.map((r) => `${r.key}: ${r.error}`).join('; ')} (an input or infrastructure error, not a FAIL verdict)`);
  return parts.length ? parts.join('. ') : null;
}
