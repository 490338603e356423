// dist/hook.js: what the runner's job hooks run (`agent hooks install` copies it with the chunks
// it imports). `agent ...` only, as dist/cli.js would run it, without loading the judging
// pipeline: every job pays this process's start-up before its first step.
import { agentMain } from './agent/cli.ts';

const [command, ...rest] = process.argv.slice(2);
if (command !== 'agent') {
  process.stderr.write('npu-block-gate: error: dist/hook.js runs `agent ...` only (the runner hooks); for anything else run dist/cli.js\n');
  process.exitCode = 2;
} else {
  agentMain(rest).then((code) => { process.exitCode = code; });
}
