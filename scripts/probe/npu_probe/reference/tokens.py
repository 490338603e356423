"""The prompt's token ids, the way verify_runner gets them: the adapter's tokenize(), else the
HF AutoTokenizer of the weights' name."""

import numpy as np

from npu_probe.core.call import call_tree
from npu_probe.core.errors import MissingDependency, ProbeError


def tokenize(tree, adapter, model_name, prompt):
    """(token ids, tokenizer label, tokenizer object or None)."""
    fn = getattr(adapter, "tokenize", None)
    if callable(fn):
        ids = call_tree(f"{tree.model}.verify_adapter.tokenize", fn, prompt)
        label, tok = f"{tree.model}.verify_adapter.tokenize", None
    else:
        try:
            from transformers import AutoTokenizer  # noqa: PLC0415 - only in the user's env
        except ImportError as exc:
            raise MissingDependency(
                "transformers.AutoTokenizer",
                ImportError(
                    f"transformers is not importable ({exc}); the adapter has no tokenize(), "
                    "so the probe needs transformers to tokenize the prompt as verify_runner does"
                ),
            ) from exc
        tok = call_tree(f"AutoTokenizer.from_pretrained({model_name})", AutoTokenizer.from_pretrained, model_name)
        ids = call_tree(f"AutoTokenizer({model_name}).encode", tok.encode, prompt)
        label = f"transformers.AutoTokenizer({model_name})"
    try:
        ids = [int(t) for t in np.asarray(ids).reshape(-1)]
    except (TypeError, ValueError) as exc:
        raise ProbeError(label, f"tokenizer returned non-integer ids ({exc})") from exc
    if not ids:
        raise ProbeError(label, "prompt tokenized to 0 tokens")
    return ids, label, tok
