"""Which function runs block 0, and how (probe.json `integration.entry` / `runner`).

Preference:
  1. `run_single_block` in `<model>_prefill.py`: the seed's Phase 2 entry point.
  2. a `run_transformer_block*` function reachable from `<model>_prefill.py`,
     else `<model>_inference.py`, else the verify adapter (smollm2_1_7b has no
     prefill module; its adapter imports llama32_1b_prefill.run_transformer_block),
     with the `compile_all_kernels` of the module it came from or was defined in.
  3. the adapter's `build_runner(...).prefill(tokens)` layer-0 `ffn_out`.

This only finds the callable. Whether the model may inherit llama's block or
must be kernel-first is the seed's Step 1 rule, decided by the plan from the
kernel sequences (npu_probe.plan.step1), not from where a function is defined; the
defined-in test below is only the fallback when no plan is at hand.
"""

import dataclasses
import os
import sys

from npu_probe.core.errors import ProbeError
from npu_probe.core.tree import import_tree_module, module_file_exists

BLOCK_PREFIX = "run_transformer_block"
SINGLE_BLOCK = "run_single_block"
COMPILE_ALL = "compile_all_kernels"


@dataclasses.dataclass
class Entry:
    path: str  # kernel-first | inheritance | adapter (the Step 1 label)
    kind: str  # single | block | adapter (how block 0 runs: probe.json integration.runner)
    entry: str  # dotted name recorded in probe.json
    reason: str
    func: object = None
    module: object = None  # module whose compile_all_kernels is used
    compile_all: object = None

    def defined_in(self, tree):
        """Where the block function is defined: {module, file (tree-relative), model (its model dir)},
        None for the adapter's runner. A fact of its own: the path label follows the seed's rule."""
        if self.func is None:
            return None
        import inspect  # noqa: PLC0415

        try:
            path = inspect.getsourcefile(self.func)
        except TypeError:
            path = None
        model = None
        if path:
            rel = os.path.relpath(os.path.abspath(path), tree.llms_dir)
            model = None if rel.startswith("..") or os.sep not in rel else rel.split(os.sep)[0]
        return {"module": getattr(self.func, "__module__", None) or "?",
                "file": tree.rel(path) if path else None, "model": model}


def dotted_name(func):
    """`tiny_llama.tiny_llama_prefill.run_transformer_block` for a function in a
    bare-imported `<model>_prefill` module (the tree imports them by bare name)."""
    mod = getattr(func, "__module__", None) or "?"
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", "?")
    if "." not in mod:
        for suffix in ("_prefill", "_inference"):
            if mod.endswith(suffix) and len(mod) > len(suffix):
                return f"{mod[: -len(suffix)]}.{mod}.{name}"
    return f"{mod}.{name}"


def _defined_in(func, module):
    return getattr(func, "__module__", None) == module.__name__


def is_block_name(name):
    return name == BLOCK_PREFIX or name.startswith(BLOCK_PREFIX + "_")


def _block_functions(module):
    """(name, func) for every run_transformer_block* in the module, under its own
    name or an alias (`run_transformer_block as run_prefill_block`)."""
    out = []
    for name, value in vars(module).items():
        if callable(value) and (is_block_name(name) or is_block_name(getattr(value, "__name__", ""))):
            out.append((name, value))
    return out


def _rank_block_functions(model, module):
    """Own module first; within that, a suffix naming this model
    (run_transformer_block_qwen3 for qwen3_0_6b), then other suffixes, then the plain name."""

    def key(item):
        name, func = item
        real = getattr(func, "__name__", name)
        suffix = real[len(BLOCK_PREFIX) + 1:] if real != BLOCK_PREFIX else ""
        rank = 0 if suffix and model.startswith(suffix) else (1 if suffix else 2)
        return (0 if _defined_in(func, module) else 1, rank, name)

    return sorted(_block_functions(module), key=key)


def compile_function(module, func=None):
    """(module, compile_all_kernels) for a block found in `module`: its own, an
    alias of the real one (`compile_all_kernels as compile_prefill_kernels`),
    else the one beside the block function's definition. (None, None) if none."""
    own = vars(module).get(COMPILE_ALL)
    if callable(own):
        return module, own
    for value in vars(module).values():
        if callable(value) and getattr(value, "__name__", None) == COMPILE_ALL:
            return sys.modules.get(value.__module__, module), value
    home = sys.modules.get(getattr(func, "__module__", None) or "")
    if home is not None and callable(vars(home).get(COMPILE_ALL)):
        return home, vars(home)[COMPILE_ALL]
    return None, None


def _label(own, step1):
    if step1 and step1.get("path") in ("kernel-first", "inheritance"):
        return step1["path"]
    return "kernel-first" if own else "inheritance"


def choose_entry(model, adapter, adapter_name, prefill_module=None, fallback_modules=(), step1=None):
    """Pick the block entry point. `prefill_module` is `<model>_prefill` (None when
    the file does not exist); `fallback_modules` are searched after it, in order
    (`<model>_inference`, the adapter). `step1` is the plan's Step 1 record."""
    if prefill_module is not None:
        func = vars(prefill_module).get(SINGLE_BLOCK)
        if callable(func):
            own = _defined_in(func, prefill_module)
            cmod, compile_all = compile_function(prefill_module, func)
            return Entry(
                path=_label(own, step1),
                kind="single",
                entry=dotted_name(func),
                reason=(
                    f"{prefill_module.__name__} defines run_single_block, the seed's Phase 2 entry point"
                    if own
                    else f"{prefill_module.__name__}.run_single_block is {dotted_name(func)}, reused from another module"
                ),
                func=func,
                module=cmod or prefill_module,
                compile_all=compile_all,
            )
    for module in (prefill_module, *fallback_modules):
        if module is None:
            continue
        ranked = _rank_block_functions(model, module)
        if not ranked:
            continue
        name, func = ranked[0]
        cmod, compile_all = compile_function(module, func)
        if compile_all is None:
            continue
        own = _defined_in(func, module)
        others = [n for n, _ in ranked[1:]]
        also = f"; also present: {', '.join(others)}" if others else ""
        if own:
            reason = f"no run_single_block; {module.__name__} defines its own {name}{also}"
        else:
            reason = (f"no run_single_block; {module.__name__} calls {dotted_name(func)} "
                      f"(defined in {func.__module__}){also}")
        return Entry(path=_label(own, step1), kind="block", entry=dotted_name(func), reason=reason,
                     func=func, module=cmod, compile_all=compile_all)
    why = "no run_single_block or run_transformer_block* with compile_all_kernels"
    where = f"{model}_prefill.py" if prefill_module is not None else f"no {model}_prefill.py"
    if not callable(getattr(adapter, "build_runner", None)):
        raise ProbeError(adapter_name, f"{why} ({where}) and the adapter has no build_runner: no way to run block 0")
    # No block function to call: the label says so, unless the plan found one statically.
    return Entry(
        path=step1["path"] if step1 and step1.get("block") and step1.get("path") in ("kernel-first", "inheritance")
        else "adapter",
        kind="adapter",
        entry=f"{adapter_name}.build_runner",
        reason=f"{why} ({where}); using the adapter's runner prefill, layer 0 ffn_out",
    )


def load_block_modules(tree):
    """(prefill_module or None, inference_module or None). The inference module is
    imported only when there is no prefill module to look at."""
    prefill = None
    inference = None
    name = f"{tree.model}_prefill"
    if module_file_exists(tree, name):
        prefill = import_tree_module(name, f"{tree.model}/{name}.py (import)")
    else:
        inf = f"{tree.model}_inference"
        if module_file_exists(tree, inf):
            inference = import_tree_module(inf, f"{tree.model}/{inf}.py (import)")
    return prefill, inference
