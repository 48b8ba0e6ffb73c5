"""Which members of its imports a module's source uses (`dates.year`), for the publish link check.

Publishing `dates` without `year` must be refused while `report` calls `dates.year(...)`, even
though `report` only reaches that line when it runs. The check therefore compares what each
importer's source names on an import with what the new version actually exports. The scan skips
comments, string and template literals and regular expressions, so that `"dates.year"` in a string
is not a use.
"""

from __future__ import annotations

import re
from functools import lru_cache

_IDENT_START = re.compile(r"[A-Za-z_$]")
_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
# After these a `/` starts a regular expression rather than a division.
_REGEX_AFTER_WORDS = {"return", "typeof", "instanceof", "in", "of", "new", "delete", "void", "throw", "case", "do", "else", "yield", "await"}
_DOT = re.compile(r"\s*(?:\?\.|\.)\s*([A-Za-z_$][A-Za-z0-9_$]*)")
_BRACKET = re.compile(r"\s*(?:\?\.)?\[\s*(['\"])([A-Za-z0-9_$]+)\1\s*\]")


def code_only(source: str) -> str:
    """The source with comments and literal contents blanked out (same length and lines).

    The expressions inside a template literal's `${…}` stay: they are code.
    """
    out = list(source)
    _scan(source, 0, out, inside_substitution=False)
    return "".join(out)


def _scan(source: str, i: int, out: list[str], *, inside_substitution: bool) -> int:
    """Blanks from `i`; inside a `${…}`, stops at its closing brace and answers its position."""
    n = len(source)
    depth = 0
    last_significant = ""  # the last token's text, to tell a regex from a division
    while i < n:
        ch = source[i]
        nxt = source[i + 1] if i + 1 < n else ""
        if ch == "/" and nxt == "/":
            end = source.find("\n", i)
            end = n if end < 0 else end
            _blank(out, i, end)
            i = end
        elif ch == "/" and nxt == "*":
            end = source.find("*/", i + 2)
            end = n if end < 0 else end + 2
            _blank(out, i, end)
            i = end
        elif ch in "'\"":
            end = _string_end(source, i, ch)
            _blank(out, i + 1, end - 1)
            i = end
            last_significant = "literal"
        elif ch == "`":
            i = _template(source, i, out)
            last_significant = "literal"
        elif ch == "/" and _regex_allowed(last_significant):
            end = _regex_end(source, i)
            _blank(out, i + 1, end - 1)
            i = end
            last_significant = "literal"
        elif _IDENT_START.match(ch):
            match = _IDENT.match(source, i)
            assert match is not None
            last_significant = match.group(0)
            i = match.end()
        else:
            if inside_substitution and ch == "{":
                depth += 1
            elif inside_substitution and ch == "}":
                if depth == 0:
                    return i
                depth -= 1
            if not ch.isspace():
                last_significant = ch
            i += 1
    return n


def _template(source: str, start: int, out: list[str]) -> int:
    """Blanks a template literal's text, scanning its substitutions as code; answers its end."""
    i, n = start + 1, len(source)
    while i < n:
        ch = source[i]
        if ch == "\\":
            _blank(out, i, i + 2)
            i += 2
        elif ch == "`":
            return i + 1
        elif ch == "$" and source.startswith("{", i + 1):
            i = _scan(source, i + 2, out, inside_substitution=True) + 1
        else:
            _blank(out, i, i + 1)
            i += 1
    return n


def _blank(out: list[str], start: int, end: int) -> None:
    for j in range(start, min(end, len(out))):
        if out[j] != "\n":
            out[j] = " "


def _string_end(source: str, start: int, quote: str) -> int:
    i, n = start + 1, len(source)
    while i < n:
        ch = source[i]
        if ch == "\\":
            i += 2
            continue
        if ch == quote:
            return i + 1
        if ch == "\n" and quote != "`":
            return i
        i += 1
    return n


def _regex_allowed(previous: str) -> bool:
    if previous in ("", "literal"):
        return previous == ""
    if previous in _REGEX_AFTER_WORDS:
        return True
    if _IDENT_START.match(previous) or previous[0].isdigit():
        return False
    return previous not in (")", "]", "}")


def _regex_end(source: str, start: int) -> int:
    i, n, in_class = start + 1, len(source), False
    while i < n:
        ch = source[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "\n":
            return i
        if ch == "[":
            in_class = True
        elif ch == "]":
            in_class = False
        elif ch == "/" and not in_class:
            i += 1
            while i < n and (source[i].isalnum()):
                i += 1
            return i
        i += 1
    return n


@lru_cache(maxsize=4096)
def used_members(source: str, imports: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """The `(import, member)` pairs that `source` reads, in order of first use."""
    if not imports:
        return ()
    code = code_only(source)
    names = "|".join(re.escape(name) for name in imports)
    found: list[tuple[str, str]] = []
    for match in re.finditer(rf"(?<![A-Za-z0-9_$.])({names})(?![A-Za-z0-9_$])", code):
        # `dates.year` is read in the code; `dates["year"]` in the source, whose string the code blanks.
        member = _DOT.match(code, match.end()) or _BRACKET.match(source, match.end())
        if member is None:
            continue
        pair = (match.group(1), member.group(1) if member.re is _DOT else member.group(2))
        if pair not in found:
            found.append(pair)
    return tuple(found)
