"""`--positions N`: block 0 on N real tokens instead of the prompt's few dozen.

The input is the run's prompt, continued with the prompt set's other prompts
(verify/prompts/<style>.txt, in file order, one newline between prompts) and,
when the set runs out, the whole set again from its first prompt ("repeated");
the token ids are then cut to N. A prompt already longer than N is truncated.
The text is tokenized once, as one string, the way the prompt itself is, so the
tokens are what the tokenizer makes of that text (one BOS at most). probe.json
`prompt.positions` records the method, the prompts used and the text's length.
"""

import dataclasses
import os

from npu_probe.core.errors import ProbeError
from npu_probe.core.tree import parse_prompt_lines


def _prompt_set(tree, style):
    path = os.path.join(tree.verify_dir, "prompts", f"{style}.txt")
    try:
        with open(path, encoding="utf-8") as f:
            lines = [p for _, p in parse_prompt_lines(f.read())]
    except (OSError, UnicodeDecodeError):
        lines = []
    return lines, tree.rel_llms(path)


@dataclasses.dataclass(frozen=True)
class Prompt:
    """The run's prompt: its text, its style (whose prompt set continues it) and its token ids."""

    text: str
    style: str
    tokens: tuple


def extend_tokens(tree, encode, prompt, n, limit):
    """(token ids of length n, probe.json prompt.positions record) for a Prompt, at most
    `limit` (the compiled seq_len). `encode(text)` is the tokenizer the prompt went through."""
    prompt, style, tokens = prompt.text, prompt.style, prompt.tokens
    if n <= 0:
        raise ProbeError("--positions", f"{n} is not a positive number of tokens")
    if n > limit:
        raise ProbeError("--positions", f"{n} exceeds the compiled seq_len {limit} (at most {limit} positions)")
    rec = {"requested": int(n), "real_len": int(n), "prompt_tokens": len(tokens), "method": None,
           "set": None, "prompts_used": 0, "cycles": 0, "text_chars": len(prompt)}
    if len(tokens) >= n:
        rec["method"] = "truncated" if len(tokens) > n else "prompt"
        return list(tokens[:n]), rec
    if style not in ("base", "instruct") and not os.path.isfile(os.path.join(tree.verify_dir, "prompts", f"{style}.txt")):
        style = "instruct"
    prompts, set_path = _prompt_set(tree, style)
    if not prompts:
        raise ProbeError(set_path, "--positions needs prompts to continue the prompt with; the file has none")
    rec["set"] = set_path
    # The canonical prompt is the set's first one: continue after it; a --prompt of its own continues with all.
    start = 1 if prompts and prompt == prompts[0] else 0
    order = prompts[start:] + prompts[:start] if start else list(prompts)
    text, ids, used = prompt, list(tokens), 0
    while len(ids) < n:
        nxt = order[used % len(order)]
        used += 1
        text = text + "\n" + nxt
        ids = encode(text)
        if used > 100000:
            raise ProbeError(set_path, "the prompt set does not tokenize to any tokens")
    rec["prompts_used"] = used
    rec["cycles"] = (used + start - 1) // len(prompts) if start else (used - 1) // len(prompts)
    rec["method"] = "continued" if used <= len(order) else "repeated"
    rec["text_chars"] = len(text)
    return list(ids[:n]), rec
