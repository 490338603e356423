"""Numbers of a reference output: their cosine, whether they are finite, and which of a model's
weights are not (named when an output holds a NaN or an Inf, so the message says which checkpoint
tensor is broken, not only which output value). numpy and torch are imported only when called."""


def cosine(a, b):
    import numpy as np  # noqa: PLC0415

    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    den = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(a @ b / den) if den else (1.0 if not a.any() and not b.any() else 0.0)


def not_finite(arrays):
    """Whether any of `arrays` holds a NaN or an Inf."""
    import numpy as np  # noqa: PLC0415

    return not all(np.isfinite(np.asarray(x)).all() for x in arrays)


def nonfinite_weights(model, limit=4):
    """["<name> (<n> NaN, <m> Inf)", ...] for the first `limit` parameters and buffers of a torch
    module holding a NaN or an Inf, with "... and N more" when there are more; [] when none does
    (or `model` is not a torch module)."""
    named = getattr(model, "named_parameters", None)
    if named is None:
        return []
    import torch  # noqa: PLC0415 - only with a torch model

    found = []
    tensors = list(named()) + list(getattr(model, "named_buffers", lambda: [])())
    for name, t in tensors:
        if not torch.is_floating_point(t):
            continue
        with torch.no_grad():
            nan = int(torch.isnan(t).sum())
            inf = int(torch.isinf(t).sum())
        if nan or inf:
            found.append(f"{name} ({', '.join(x for x in (f'{nan} NaN' if nan else '', f'{inf} Inf' if inf else '') if x)})")
    if len(found) > limit:
        found = found[:limit] + [f"... and {len(found) - limit} more"]
    return found


def describe(model, model_id):
    """One clause naming the broken weights of `model` (the HF checkpoint `model_id`)."""
    names = nonfinite_weights(model)
    if names:
        return f"the HF checkpoint {model_id} holds non-finite weights: {'; '.join(names)}"
    return f"no weight of the HF checkpoint {model_id} is NaN or Inf (the non-finite values arise in its forward)"
