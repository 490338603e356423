"""The real-tree fixtures one test run shares: scripts/test.mjs builds them once, at its start,
into $NPU_BLOCK_GATE_TEST_FIXTURES, while the first suites already run.

    <dir>/mlir-air/       programming_examples/ and LICENSE of the real tree, with
                          shared/infra/cache.py's PEP 701 lines rewritten when this Python is
                          older than 3.12 (test_real_aliasing.make_parseable_here)
    <dir>/hub/            tiny random checkpoints of every fakes/tiny_hf arch (only when this
                          Python has torch and transformers)
    <dir>/fixtures.json   {"tree", "rewritten", "hub", "checkpoints": {arch: as_dict()}, "env"}
    <dir>/failed.txt      instead of fixtures.json when the build failed: why

A test that uses them (test/helpers/twins.ts, test_real_twins) waits for one of the two files,
copies what it writes into and reads the rest in place; nothing writes into <dir>. Without
$NPU_BLOCK_GATE_TEST_FIXTURES (a test file run by hand), `load()` is None and the test builds
its own, as before.

usage: python test/python/fakes/shared_fixtures.py DIR TREE_ROOT   (TREE_ROOT "-": no real tree)
"""

import json
import os
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ENV = "NPU_BLOCK_GATE_TEST_FIXTURES"


def copy_tree(src, dest):
    """The parts of the real tree a run needs (programming_examples/, LICENSE: MIT, kept with
    every copy), made parseable by this Python. Returns the rewritten cache.py line numbers."""
    repo = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
    if repo not in sys.path:
        sys.path.insert(0, repo)
    from test.python.test_real_aliasing import make_parseable_here  # noqa: PLC0415
    os.makedirs(dest)
    shutil.copytree(os.path.join(src, "programming_examples"), os.path.join(dest, "programming_examples"),
                    ignore=shutil.ignore_patterns("__pycache__", "build_peano", "build_chess"))
    shutil.copy2(os.path.join(src, "LICENSE"), os.path.join(dest, "LICENSE"))
    return make_parseable_here(os.path.join(dest, "programming_examples", "llms", "shared", "infra", "cache.py"))


def has_torch():
    import importlib.util  # noqa: PLC0415

    return all(importlib.util.find_spec(n) for n in ("torch", "transformers", "tokenizers", "safetensors", "ml_dtypes"))


def build(out, tree_src):
    record = {"tree": None, "rewritten": [], "hub": None, "checkpoints": {}, "env": {}}
    if tree_src:
        record["tree"] = os.path.join(out, "mlir-air")
        record["rewritten"] = copy_tree(tree_src, record["tree"])
    if has_torch():
        sys.path.insert(0, HERE)
        try:
            import tiny_hf  # noqa: PLC0415
        finally:
            sys.path.remove(HERE)
        hub = os.path.join(out, "hub")
        record["hub"] = hub
        record["checkpoints"] = {a: tiny_hf.build(a, hub).as_dict() for a in tiny_hf.ARCHS}
        record["env"] = tiny_hf.offline_env(hub)
    tmp = os.path.join(out, "fixtures.json.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1)
    os.replace(tmp, os.path.join(out, "fixtures.json"))
    return record


def load(timeout=1200):
    """The shared fixtures of this run (waiting while they are built), or None outside one."""
    d = os.environ.get(ENV)
    if not d:
        return None
    deadline = time.monotonic() + timeout
    while True:
        if os.path.isfile(os.path.join(d, "fixtures.json")):
            with open(os.path.join(d, "fixtures.json"), encoding="utf-8") as f:
                return json.load(f)
        if os.path.isfile(os.path.join(d, "failed.txt")):
            with open(os.path.join(d, "failed.txt"), encoding="utf-8") as f:
                raise RuntimeError(f"the shared test fixtures could not be built: {f.read().strip()}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"the shared test fixtures in {d} were not built within {timeout} s")
        time.sleep(0.2)


def checkpoints(fx):
    """fixtures.json's checkpoints as fakes.tiny_hf.TinyCheckpoint (no torch needed)."""
    sys.path.insert(0, HERE)
    try:
        import tiny_hf  # noqa: PLC0415
    finally:
        sys.path.remove(HERE)
    out = {}
    for arch, d in fx["checkpoints"].items():
        d = dict(d)
        d["config"] = tiny_hf.TreeConfig(**d["config"])
        out[arch] = tiny_hf.TinyCheckpoint(**d)
    return out


if __name__ == "__main__":
    out_dir, src = sys.argv[1], sys.argv[2]
    try:
        build(out_dir, None if src == "-" else src)
    except BaseException as exc:  # the readers wait for one of the two files
        with open(os.path.join(out_dir, "failed.txt"), "w", encoding="utf-8") as f:
            f.write(f"{type(exc).__name__}: {exc}\n")
        raise
