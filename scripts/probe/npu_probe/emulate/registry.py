"""The kernel registry at tiny shapes: kernel_registry.registry_lookup.gemm_config answering a
shape the registry lacks with the production shape it stands for, so the tree passes the
production f32 scratch arguments."""


class RegistryShim:
    """kernel_registry.registry_lookup.gemm_config / gemm_config_method, answering a
    shape the registry lacks with the production shape it stands for."""

    def __init__(self, tiny, prod, prod_seq=2048):
        self.map = {}
        for key in ("emb", "q_dim", "kv_dim", "hidden"):
            self.map.setdefault(tiny[key], prod[key])
        self.prod_seq = prod_seq
        self.lookups = []
        self._saved = None

    def _mapped(self, m, k, n):
        return (self.prod_seq, self.map.get(k, k), self.map.get(n, n))

    def install(self, module):
        orig, orig_m = module.gemm_config, getattr(module, "gemm_config_method", None)
        self._saved = (module, orig, orig_m)

        def gemm_config(M, K, N, output_dtype="bf16", precision="high"):
            try:
                return orig(M, K, N, output_dtype, precision)
            except KeyError:
                pm = self._mapped(M, K, N)
                rec = {"shape": [M, K, N], "as": list(pm), "dtype": output_dtype, "precision": precision}
                try:
                    out = orig(*pm, output_dtype, precision)
                except KeyError:
                    out = _fallback(precision)
                    rec["as"] = None
                rec["method"] = out["method"]
                if rec not in self.lookups:
                    self.lookups.append(rec)
                return out

        module.gemm_config = gemm_config
        if orig_m is not None:
            def gemm_config_method(M, K, N, output_dtype, method, precision="high"):
                try:
                    return orig_m(M, K, N, output_dtype, method, precision)
                except KeyError:
                    return orig_m(*self._mapped(M, K, N), output_dtype, method, precision)

            module.gemm_config_method = gemm_config_method

    def uninstall(self):
        if self._saved:
            module, orig, orig_m = self._saved
            module.gemm_config = orig
            if orig_m is not None:
                module.gemm_config_method = orig_m
            self._saved = None


def _fallback(precision):
    if precision == "low":
        return {"method": "direct", "tile": {"tile_m": 64, "tile_k_l2": 64, "tile_k_l1": 32, "tile_n": 64},
                "gflops": 0.0, "mean_rel_L1": 0.0}
    return {"method": "drain", "tile": {"tile_m": 32, "tile_k_l2": 64, "tile_k_l1": 32, "tile_n": 128},
            "gflops": 0.0, "mean_rel_L1": 0.0}

