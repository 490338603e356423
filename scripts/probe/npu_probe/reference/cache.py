"""The reference cache around one run (npu_probe.reference.refcache: key, entries): the key, a
read-only lookup, and probe.json `reference.cache`. The probe never writes the cache: it runs
the tree's own code, and a pull request's code must not shape what a later trusted run reads.
The trusted process stores a miss after the verdict (src/cache/reference.ts), from the run
dir's reference tensors and the key and inputs recorded here."""

import json
import os
import time

from npu_probe.reference import refcache
from npu_probe.reference.hf import reference_record


class RefCache:
    def __init__(self, ctx, want_layers, boundaries=None):
        spec, model = ctx.spec, ctx.model
        self.log, self.cfg, self.real_len = ctx.log, model.cfg, spec.real_len
        self.key = self.dir = self.inputs = self.kind = None
        self.want_boundaries = boundaries
        self.boundaries = None
        self.hit, self.load_seconds = False, 0.0
        self.root = refcache.cache_root(ctx.options.ref_cache)
        if self.root is None:
            return
        layers = list(range(max(int(self.cfg["n_layers"]) - 1, 1))) if want_layers else [0]
        build = getattr(model.adapter, "build_hf_model", None)
        adapter_file = os.path.join(spec.tree.model_dir, "verify_adapter.py") if callable(build) else None
        try:
            self.inputs, why = refcache.key_inputs(spec.tree, reference_record(ctx.state.ref_kind, spec.hf_id),
                                                   spec.tokens, layers, adapter_file, boundaries)
        except OSError as exc:
            self.inputs, why = None, f"cannot hash the reference sources ({exc}); not cached"
        if self.inputs is None:
            self.log.step(f"reference cache: {why}")
            return
        self.key = refcache.cache_key(self.inputs)
        self.dir = os.path.join(self.root, self.key)

    def lookup(self):
        if self.key is None or not os.path.isdir(self.dir):
            return None
        t = time.monotonic()
        arrays = refcache.load(self.dir, self.inputs["layers"], self.real_len, self.cfg["emb_dim"])
        if arrays is None:
            self.log.step(f"reference cache: entry {self.key[:12]} unreadable or wrong shape; recomputing")
            return None
        if self.want_boundaries:
            self.boundaries = refcache.load_boundaries(self.dir, self.real_len)
            if self.boundaries is None:
                self.log.step(f"reference cache: entry {self.key[:12]} holds no readable boundaries; recomputing")
                return None
        try:
            with open(os.path.join(self.dir, refcache.META_FILE), encoding="utf-8") as f:
                self.kind = json.load(f).get(refcache.META_KIND)
        except (OSError, ValueError, AttributeError):
            self.kind = None
        self.hit, self.load_seconds = True, time.monotonic() - t
        self.log.step(f"reference cache hit {self.key[:12]}")
        return arrays

    def missed(self, kind):
        if self.key is not None and not self.hit:
            self.kind = kind
            self.log.step(f"reference cache miss {self.key[:12]} (a trusted run stores it after the verdict)")

    def record(self):
        if self.key is None:
            return None
        return {"key": self.key, "hit": self.hit, "dir": self.dir, "root": self.root, "kind": self.kind,
                "inputs": self.inputs}
