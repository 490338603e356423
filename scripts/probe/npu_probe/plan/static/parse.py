"""Parse a tree file without running it: the running Python first, then blanking the lines
only a newer Python reads, then a regex scan. Cached by path, mtime and size (the plan parses
the same shared/ files for every model), with per-file facts memoised on the result.

Standard library only; nothing here imports a module of the tree.
"""

import ast
import dataclasses
import os
import re
import sys

PY_SUFFIX = ".py"

# SyntaxError texts that only mean "this Python is too old" (PEP 701 f-strings
# parse on 3.12+: nested same quotes, backslashes and comments inside {}).
_FSTRING_ERROR = re.compile(r"f-string", re.IGNORECASE)
# Version-only syntax recognisable from the failing line itself.
_LINE_SYNTAX_NEEDS = (
    (re.compile(r"^\s*type\s+[A-Za-z_]\w*(\[.*\])?\s*="), (3, 12), "type alias statement"),
    (re.compile(r"^\s*(async\s+)?def\s+[A-Za-z_]\w*\s*\["), (3, 12), "generic function (PEP 695)"),
    (re.compile(r"^\s*class\s+[A-Za-z_]\w*\s*\["), (3, 12), "generic class (PEP 695)"),
    (re.compile(r"^\s*except\s*\*"), (3, 11), "except* (PEP 654)"),
    (re.compile(r"^\s*match\s+[^=]+:\s*(#.*)?$"), (3, 10), "match statement (PEP 634)"),
)


@dataclasses.dataclass


class SyntaxIssue:
    line: int  # as the running Python reports it
    message: str
    needs: tuple = None  # (major, minor) when only a newer Python is needed
    feature: str = ""
    source_line: int = 0  # the line holding the construct (3.11 reports f-string errors a line late)


@dataclasses.dataclass


class Parsed:
    path: str
    text: str
    tree: ast.Module = None  # None when even the fallback could not parse
    issues: list = dataclasses.field(default_factory=list)  # SyntaxIssue, first is authoritative
    fallback: str = None  # None | "blanked" (ast after blanking version-only lines) | "regex"
    memo: dict = dataclasses.field(default_factory=dict)  # per-file facts, computed once


def source_lines(text):
    """Lines as Python numbers them (str.splitlines also splits on \\f, \\x1c, U+2028...)."""
    return re.split(r"\r\n|\r|\n", text)


_PARSE_CACHE = {}


def read_text(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def parse_file(path):
    """Parsed for `path` (cached by mtime/size), or None when it cannot be read."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    key = (os.path.abspath(path), st.st_mtime_ns, st.st_size)
    hit = _PARSE_CACHE.get(key)
    if hit is None:
        text = read_text(path)
        if text is None:
            return None
        hit = parse_source(text, path)
        _PARSE_CACHE[key] = hit
    return hit


def classify_syntax_error(exc, lines):
    """SyntaxIssue for `exc`: `needs` is set when the code is valid on a newer Python."""
    lineno = exc.lineno or 0
    msg = " ".join(str(exc.msg or exc).split())
    if _FSTRING_ERROR.search(msg) and sys.version_info[:2] < (3, 12):
        return SyntaxIssue(lineno, msg, (3, 12), "f-string (PEP 701)", _fstring_line(lines, lineno))
    text = lines[lineno - 1] if 0 < lineno <= len(lines) else ""
    for pattern, needs, feature in _LINE_SYNTAX_NEEDS:
        if pattern.search(text) and sys.version_info[:2] < needs:
            return SyntaxIssue(lineno, msg, needs, feature, lineno)
    return SyntaxIssue(lineno, msg, source_line=lineno)


_FSTRING_START = re.compile(r"(?<![\w])(?:[rR][fF]|[fF][rR]?)[\"']")


def _fstring_line(lines, lineno):
    """The line where the failing f-string starts: Python 3.11 reports the error
    on the line after a string that ends its line, so look back a few lines."""
    for ln in range(min(lineno, len(lines)), max(0, lineno - 10), -1):
        if _FSTRING_START.search(lines[ln - 1]):
            return ln
    return lineno


def parse_source(text, path="<string>"):
    """Parse with the running Python; on a version-only error, blank the line and
    retry so later version-only lines are found too and the rest of the file can
    still be read with ast. Anything else falls back to a regex import scan."""
    result = Parsed(path=path, text=text)
    lines = source_lines(text)
    work = list(lines)
    for _ in range(64):  # a file with more version-only lines than this is not worth more
        try:
            tree = ast.parse("\n".join(work) + "\n", filename=path)
        except SyntaxError as exc:
            issue = classify_syntax_error(exc, work)
            if any(i.line == issue.line for i in result.issues):
                break  # blanking did not get past it
            if not result.issues or issue.needs:
                result.issues.append(issue)
            target = issue.source_line or issue.line
            if issue.needs is None or not (0 < target <= len(work)):
                break  # a real tree error (or a blanking artefact after one): stop here
            # Blanking keeps line numbers; `None` keeps call arguments and statements valid.
            indent = re.match(r"\s*", work[target - 1]).group(0)
            work[target - 1] = indent + "None"
            continue
        result.tree = tree
        result.fallback = "blanked" if result.issues else None
        return result
    result.fallback = "regex"
    return result


def memo(fn):
    """Cache a per-file fact on the Parsed (the parse cache keeps it across plans)."""
    def wrapper(parsed, *args):
        key = (fn.__name__,) + args
        if key not in parsed.memo:
            parsed.memo[key] = fn(parsed, *args)
        return parsed.memo[key]
    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper

