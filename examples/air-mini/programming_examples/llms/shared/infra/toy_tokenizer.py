"""A deterministic toy tokenizer for air-mini (no download, no vocabulary file).

encode(text, vocab_size): BOS (id 1), then one id per piece, where pieces are
runs of letters/digits and single punctuation marks; words longer than 8
characters are split into chunks of 6 (crude sub-words). A piece's id is
2 + FNV-1a(piece) mod (vocab_size - 2), so ids 0 (pad) and 1 (BOS) are never
produced by text.
"""

import re

BOS_ID = 1
_PIECE = re.compile(r"[A-Za-z0-9]+|[^\sA-Za-z0-9]")


def _fnv1a(s):
    h = 0x811C9DC5
    for byte in s.encode("utf-8"):
        h ^= byte
        h = (h * 0x01000193) & 0xFFFFFFFF
    return h


def pieces(text):
    out = []
    for p in _PIECE.findall(text):
        if p.isalnum() and len(p) > 8:
            out.extend(p[i:i + 6] for i in range(0, len(p), 6))
        else:
            out.append(p)
    return out


def encode(text, vocab_size):
    return [BOS_ID] + [2 + _fnv1a(p) % (vocab_size - 2) for p in pieces(text)]


def read_prompts(path):
    """Prompts of a verify/prompts/*.txt file: one a line, '#' comments skipped."""
    lines = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            s = line.strip()
            if s and not s.startswith("#"):
                lines.append(s)
    return lines
