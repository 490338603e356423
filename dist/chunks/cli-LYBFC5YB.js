import { createRequire as __nbgCreateRequire } from 'node:module'; const require = __nbgCreateRequire(import.meta.url);
import {
  planModel
} from "./chunk-AF6PDVLF.js";
import "./chunk-HNFTTV67.js";
import {
  stderrLog
} from "./chunk-N7GSAKQW.js";
import {
  COMMAND
} from "./chunk-AEVRNM6T.js";
import {
  EXIT,
  GateError,
  InfraError,
  InputError,
  hubCacheOf,
  oneLine,
  toolRoot
} from "./chunk-7HMQRJMS.js";
import "./chunk-A6YGPO6E.js";

// src/fixture/cli.ts
import { parseArgs } from "node:util";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
var FIXTURE_HELP = `Usage:
  ${COMMAND} fixture hf-tiny   --model-dir DIR [--model CHOICE] [--python P] [--hub DIR]
  ${COMMAND} fixture tree-copy --tree SRC --out DEST [--python P]

For trying \`check --emulate\` on a real mlir-air model on a machine with no NPU and no network
(README, "The real tree without an NPU").

hf-tiny    builds a tiny RANDOM checkpoint with the model's architecture (llama, smollm2, qwen2 or
           qwen3, told by the model's own config: Q/K norm, QKV bias, grouped KV heads), with its
           config.json fields at a small size and a byte-level BPE tokenizer of its family, and puts
           it in the local HF hub cache under the model's own HF id (the one \`make diagnosis\` loads:
           the Makefile's MODEL, or --model). Its weights are random: use a scratch HF_HUB_CACHE; a
           real download already there is never written over. Needs torch, transformers,
           tokenizers and safetensors in the Python (found as \`check\` finds it).
tree-copy  copies SRC's programming_examples/ and LICENSE into the new dir DEST (a run writes into
           the model dir) and, when the Python is older than 3.12, rewrites in the copy only the
           tree's PEP 701 f-strings (shared/infra/cache.py), which only build a printed table.

Options:
  --model-dir DIR   the model dir (programming_examples/llms/<model>)
  --model CHOICE    MODEL_CHOICES key (base, instruct) or HF id (default: make diagnosis's MODEL)
  --python P        the Python (default: as check finds it: $NPU_BLOCK_GATE_PYTHON, a venv, python3)
  --hub DIR         the HF hub cache to write into (default: $HF_HUB_CACHE, $HF_HOME/hub,
                    ~/.cache/huggingface/hub: where check reads)
  --tree SRC        the mlir-air tree to copy
  --out DEST        the new dir the copy goes to

Exit codes: 0 built, 2 usage or bad input (a real download in the way), 3 could not build (no torch).
`;
var OPTIONS = {
  "model-dir": { type: "string" },
  model: { type: "string" },
  python: { type: "string" },
  hub: { type: "string" },
  tree: { type: "string" },
  out: { type: "string" },
  help: { type: "boolean", short: "h" }
};
function archOf(c) {
  if (c.qk_norm) return "qwen3";
  if (c.qkv_bias) return "qwen2";
  return c.n_kv_heads !== void 0 && c.n_kv_heads === c.n_heads ? "smollm2" : "llama";
}
function runBuilder(python, script, args, err) {
  return new Promise((done, fail) => {
    const p = spawn(python, [script, ...args], { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1" } });
    let out = "";
    let errText = "";
    p.stdout.on("data", (d) => {
      out += d;
    });
    p.stderr.on("data", (d) => {
      errText += d;
    });
    p.on("error", (e) => fail(new InputError(`cannot run ${python}: ${oneLine(e)}`)));
    p.on("close", (code) => {
      if (code !== 0 && errText) err.write(errText.endsWith("\n") ? errText : `${errText}
`);
      done({ code: code ?? 3, out, err: errText });
    });
  });
}
function scriptPath(name) {
  const root = toolRoot();
  const p = root ? join(root, "scripts", "fixture", name) : "";
  if (!root || !existsSync(p)) throw new InfraError(`scripts/fixture/${name} is not beside this npu-block-gate (run it from a clone or the package)`);
  return p;
}
async function hfTiny(v, out, err) {
  const modelDir = v["model-dir"];
  if (!modelDir) throw new InputError(`fixture hf-tiny needs --model-dir DIR (see ${COMMAND} fixture --help)`);
  const log = stderrLog(void 0, (s) => err.write(s));
  const plan = {
    mode: "full",
    modelDir,
    promptStyle: null,
    prompt: null,
    model: v.model ?? null,
    python: v.python ?? null,
    runDir: "",
    threshold: null,
    writeDocs: false,
    timeoutSec: 120,
    commit: null
  };
  const p = JSON.parse(await planModel(plan, true, log));
  const id = p.effective?.model_id;
  const python = p.python?.executable;
  if (!id || !p.config || !python) throw new InfraError(`the plan of ${modelDir} names no HF model id or config; see \`${COMMAND} plan --model-dir ${modelDir}\``);
  if (p.refusal) throw new InputError(`Phase 2 cannot run on this model (see \`${COMMAND} plan --model-dir ${modelDir}\`)`, modelDir);
  const hub = resolve(v.hub ?? hubCacheOf(process.env, null) ?? "");
  if (!hub || hub === resolve("")) throw new InputError("no HF hub cache dir: pass --hub DIR or set HF_HUB_CACHE");
  const arch = archOf(p.config);
  log.step(`fixture: building a tiny random ${arch} checkpoint as ${id} in ${hub} (with ${python})`);
  const r = await runBuilder(python, scriptPath("tiny_hf.py"), ["--hub", hub, "--arch", arch, "--hf-id", id], err);
  if (r.code === 2) throw new InputError(oneLine(r.err.trim().split("\n").pop() ?? "refused"));
  if (r.code !== 0) {
    const last = r.err.trim().split("\n").pop() ?? `exit ${r.code}`;
    throw new InfraError(`building the checkpoint failed with ${python}: ${last}${/No module named/.test(r.err) ? ' (the Python needs torch, transformers, tokenizers and safetensors: README, "The real tree without an NPU")' : ""}`);
  }
  const ck = JSON.parse(r.out.trim().split("\n").pop());
  out.write(`${ck.hf_id}: a tiny RANDOM ${arch} checkpoint (like ${ck.like}), revision ${ck.revision}
  in ${ck.snapshot}
  for \`check --emulate\` only (its weights are random, never the real model's); check reads it offline with HF_HUB_CACHE=${hub}
`);
  return EXIT.pass;
}
async function treeCopy(v, out, err) {
  const tree = v.tree;
  const dest = v.out;
  if (!tree || !dest) throw new InputError(`fixture tree-copy needs --tree SRC and --out DEST (see ${COMMAND} fixture --help)`);
  if (!existsSync(join(tree, "programming_examples", "llms"))) throw new InputError("is not an mlir-air tree (no programming_examples/llms)", tree);
  const python = v.python ?? process.env.NPU_BLOCK_GATE_PYTHON ?? "python3";
  const r = await runBuilder(python, scriptPath("tree_copy.py"), [resolve(tree), resolve(dest)], err);
  if (r.code !== 0) throw new InputError(oneLine(r.err.trim().split("\n").pop() ?? `exit ${r.code}`));
  const c = JSON.parse(r.out.trim().split("\n").pop());
  out.write(`${c.dest}: a copy of ${resolve(tree)} (programming_examples/, LICENSE)
` + (c.rewritten.length ? `  rewritten for ${python}, older than 3.12 (PEP 701 f-strings; the tree needs >= 3.12): ${c.rewritten.join(", ")}
` : "  unchanged: this Python parses the tree as it is\n"));
  return EXIT.pass;
}
async function fixtureMain(argv, out, err) {
  try {
    let parsed;
    try {
      parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
    } catch (e) {
      throw new InputError(`${oneLine(e).replace(/^TypeError \[[A-Z_]+\]: /, "")} (see ${COMMAND} fixture --help)`);
    }
    const [what, ...rest] = parsed.positionals;
    if (parsed.values.help || what === void 0 || what === "help") {
      out.write(FIXTURE_HELP);
      return EXIT.pass;
    }
    if (rest.length) throw new InputError(`unexpected argument ${JSON.stringify(rest[0])} (see ${COMMAND} fixture --help)`);
    if (what === "hf-tiny") return await hfTiny(parsed.values, out, err);
    if (what === "tree-copy") return await treeCopy(parsed.values, out, err);
    throw new InputError(`unknown fixture ${JSON.stringify(what)} (hf-tiny, tree-copy; see ${COMMAND} fixture --help)`);
  } catch (e) {
    const code = e instanceof GateError ? e.exitCode : EXIT.infra;
    err.write(`npu-block-gate: ${code === EXIT.input ? "error" : "error (infrastructure)"}: ${oneLine(e)}
`);
    return code;
  }
}
export {
  fixtureMain
};
