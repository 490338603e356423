"""A model's Makefile, read as make would for what the plan needs: variables, ifdef/ifeq
blocks, recipes, and $(VAR) / $(if ...) expansion; plus the `--opt value` pairs of a recipe."""

import dataclasses
import re

from npu_probe.plan.static.parse import read_text, source_lines


@dataclasses.dataclass


class Makefile:
    path: str
    vars: dict  # name -> (raw value, line)
    recipes: dict  # target -> [(line, command text with continuations joined)]


_RE_MAKE_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*(\?=|:=|::=|\+=|=)\s?(.*)$")
_RE_MAKE_TARGET = re.compile(r"^([A-Za-z0-9_.%/-]+(?:\s+[A-Za-z0-9_.%/-]+)*)\s*:(?!=)")


def parse_makefile(path, environ):
    """Variables and recipes of a Makefile; ifdef/ifndef follow `environ` and the
    file's own variables (as make does), ifeq/ifneq compare expanded text."""
    text = read_text(path)
    if text is None:
        return None
    lines = source_lines(text)
    vars_, recipes = {}, {}
    stack = []  # (active, taken) per open conditional
    target = None
    i = 0
    while i < len(lines):
        start = i
        line = lines[i]
        while line.endswith("\\") and i + 1 < len(lines):
            i += 1
            line = line[:-1] + " " + lines[i].strip()
        i += 1
        active = all(a for a, _ in stack)
        if line.startswith("\t"):
            if target and active:
                recipes[target].append((start + 1, line.strip()))
            continue
        stripped = line.strip()
        word = stripped.split(None, 1)[0] if stripped else ""
        if word in ("ifdef", "ifndef", "ifeq", "ifneq"):
            cond = _make_condition(word, stripped[len(word):].strip(), vars_, environ) if active else False
            stack.append((cond, cond))
            continue
        if word == "else" and stack:
            a, taken = stack[-1]
            rest = stripped[4:].strip()
            if rest:  # else ifdef X
                w = rest.split(None, 1)[0]
                cond = (not taken) and _make_condition(w, rest[len(w):].strip(), vars_, environ)
                stack[-1] = (cond, taken or cond)
            else:
                stack[-1] = (not taken, True)
            continue
        if word == "endif" and stack:
            stack.pop()
            continue
        if not active or not stripped or stripped.startswith("#"):
            continue
        m = _RE_MAKE_ASSIGN.match(stripped)
        if m:
            name, op, value = m.groups()
            value = value.split(" #")[0].rstrip() if "#" in value else value.rstrip()
            if op == "?=" and name in vars_:
                continue
            if op == "+=" and name in vars_:
                value = vars_[name][0] + " " + value
            vars_[name] = (value, start + 1)
            target = None
            continue
        m = _RE_MAKE_TARGET.match(stripped)
        if m and not stripped.startswith("."):
            target = m.group(1).split()[0]
            recipes.setdefault(target, [])
        elif m:
            target = None
    return Makefile(path, vars_, recipes)


def _make_condition(word, arg, vars_, environ):
    if word in ("ifdef", "ifndef"):
        name = arg.strip()
        defined = bool(vars_.get(name, ("",))[0].strip()) or bool(environ.get(name))
        return defined if word == "ifdef" else not defined
    m = re.match(r"^\((.*),(.*)\)$", arg) or re.match(r"^[\"'](.*)[\"']\s+[\"'](.*)[\"']$", arg)
    if not m:
        return True
    a = make_expand(m.group(1).strip(), vars_, environ)[0]
    b = make_expand(m.group(2).strip(), vars_, environ)[0]
    return (a == b) if word == "ifeq" else (a != b)


def _split_args(s):
    """Split make function arguments on top-level commas."""
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return out


def make_expand(text, vars_, environ, depth=0):
    """(expanded text, [variables whose value ended up in it]). Knows $(VAR),
    ${VAR} and $(if c,a,b); other functions stay as written."""
    used = []
    if depth > 20:
        return text, used
    out = ""
    i = 0
    while i < len(text):
        if text[i] == "$" and i + 1 < len(text) and text[i + 1] in "({":
            close = ")" if text[i + 1] == "(" else "}"
            j, level = i + 2, 1
            while j < len(text) and level:
                if text[j] == text[i + 1]:
                    level += 1
                elif text[j] == close:
                    level -= 1
                j += 1
            inner = text[i + 2:j - 1]
            if inner.startswith("if "):
                parts = _split_args(inner[3:])
                cond, _ = make_expand(parts[0].strip(), vars_, environ, depth + 1)
                pick = parts[1] if cond.strip() else (parts[2] if len(parts) > 2 else "")
                val, u = make_expand(pick.strip(), vars_, environ, depth + 1)
                out += val
                used += u
            elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", inner):
                raw = vars_.get(inner, (environ.get(inner, ""), None))[0]
                val, u = make_expand(raw, vars_, environ, depth + 1)
                out += val
                used += [inner] + u
            else:
                out += text[i:j]
            i = j
        else:
            out += text[i]
            i += 1
    return out, used


_RE_CMD_ARG = re.compile(r"""--([\w-]+)(?:=|\s+)("(?:[^"\\]|\\.)*"|'[^']*'|\S+)""")


def command_args(cmd):
    """{option: raw value} of `--opt value` / `--opt=value` pairs in a shell command."""
    out = {}
    for m in _RE_CMD_ARG.finditer(cmd):
        out.setdefault(m.group(1), m.group(2))
    return out


def unquote(s):
    if len(s) >= 2 and s[0] == s[-1] and s[0] in "\"'":
        return s[1:-1]
    return s
