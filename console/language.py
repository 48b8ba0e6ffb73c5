"""The admin's language on the console's pages: a rule code (R10, V5, B7) becomes the rule's own words.

The domain's messages name the rule they enforce with its code ("'x' has no draft to publish (R10)"),
and the REST API keeps them so (clients and docs/rules.md read the codes). A person reading a page
gets the words: `plain(text)` takes the codes out of a message, and `rules_in(text)` names each
rule the message broke with its heading in docs/rules.md, for the problem fragment's "The rule:" line.
Both are Jinja filters (`{{ detail|plain }}`, `{% for r in detail|rules_in %}`), as are `kind_words`
(`{{ t.callType|kind_words }}`: "API URL tool" for `API_URL`) and `event_words` (`DocumentAdded` →
"Document added", for the history pages).
"""

from __future__ import annotations

import re
from functools import cache

from api.kinds import registered_words, words_of

# Each rule's heading in docs/rules.md (that page explains it): the words a person reads instead of the code.
RULES = {
    "R1": "a name is a JavaScript identifier",
    "R2": "a name is taken once, across every kind of tool",
    "R3": "a description is required",
    "R4": "sizes are bounded",
    "R5": "imports name published modules, with no cycle",
    "R6": "modules that import this one run against its published version",
    "R7": "editing changes the draft; publishing snapshots it",
    "R8": "a module is new, published, or published with a draft",
    "R9": "the tool section",
    "R10": "publishing re-checks every module that imports this one",
    "R11": "discarding a draft goes back to the published version",
    "R12": "something in use cannot be deleted",
    "R13": "a duplicate is a new module with its own name",
    "R14": "a caller may call only the tools its usage profile allows",
    "R15": "when two tools share a name, one kind wins",
    "R16": "a code module calls no other tool",
    "V1": "parameters are typed and checked before any JavaScript runs",
    "V2": "what the code is given",
    "V3": "what the code is not given",
    "V4": "limits end a call, never the service",
    "V5": "the console shows at most 128 KB of output",
    "B1": "revert",
    "B2": "history and time travel",
    "B3": "the publish preview",
    "B4": "examples are contracts",
    "B5": "the history is tamper-evident",
    "B6": "changesets",
    "B7": "a change is made against the version it read",
}

_CODE = r"(?<!['\"])\b[RVB]\d{1,2}\b(?:'s)?"
# A code with what joins it to the rest of a parenthesis: "R1, ", "V5: ", "R10; ", "R5 against"...
_IN_PARENS = re.compile(r"\(([^()]*)\)")
_LEADING = re.compile(rf"^\s*(?:{_CODE}(?:\s*[,;:+–-]\s*|\s+and\s+|\s+))+")
_ANY = re.compile(_CODE)
# Raw values a message may carry from the domain: the kinds' constants (each registered kind's words,
# `KindPlugin.words`) and a plan node's type.
_ENUMS = {"DIRECT_TOOL": "direct tool"}


def _enums() -> dict[str, str]:
    return {**registered_words(), **_ENUMS}


@cache
def _enum_pattern(names: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(r"\b(" + "|".join(re.escape(name) for name in names) + r")\b(?:\s+tool\b)?")


def _parenthesis(match: re.Match[str]) -> str:
    inside = match.group(1)
    if not _ANY.search(inside):
        return match.group(0)
    rest = _LEADING.sub("", inside)
    rest = _ANY.sub("", rest)
    rest = re.sub(r"\s*[,;]\s*(?=[,;]|$)", "", rest).strip(" ,;:")
    return f"({rest})" if rest else ""


def plain(text: object) -> str:
    """`text` without rule codes (the parentheses that held only codes go too) or raw kind names."""
    if text is None:
        return ""
    words = _IN_PARENS.sub(_parenthesis, str(text))
    words = _ANY.sub(lambda m: f"the rule that {RULES[m.group(0).removesuffix(chr(39) + 's')]}"
                     if m.group(0).removesuffix(chr(39) + "s") in RULES else "", words)
    enums = _enums()
    words = _enum_pattern(tuple(sorted(enums))).sub(lambda m: enums[m.group(1)], words)
    words = re.sub(r"\ba ([AEIOU])", r"an \1", words)  # "a API URL tool" reads "an API URL tool"
    # The console calls a tool's or record's identifier its Name (the REST API's messages say "id", its
    # field's name there); an organization has both an id and a display name, so its id stays an id.
    if "organization" not in words:
        words = re.sub(r"\b(the|an|The|An) id\b(?= ['\"])", lambda m: {"the": "the", "The": "The", "an": "a", "An": "A"}[m.group(1)] + " name", words)
    return re.sub(r"\s+([.,;:])", r"\1", re.sub(r"[ \t]{2,}", " ", words)).strip()


def rules_in(text: object) -> list[str]:
    """The words of each rule `text` names by code, in order, once each."""
    found: list[str] = []
    for match in _ANY.finditer(str(text or "")):
        words = RULES.get(match.group(0).removesuffix("'s"))
        if words and words not in found:
            found.append(words)
    return found


# What each kind of tool is called on a page (the REST API's `callType` values are for clients), for
# the kinds whose plugin does not say it (`KindPlugin.words`).
KINDS = {"PLAN": "plan", "LOCAL": "native tool", "MCP": "external MCP tool"}


def kind_words(call_type: object) -> str:
    """`API_URL` → "API URL tool": a tool's kind as a person reads it (its kind's words, `KindPlugin.words`;
    an unknown one as it is)."""
    return words_of(call_type) or KINDS.get(str(call_type), str(call_type or ""))


def event_words(event_type: object) -> str:
    """An event's class name as words: `DocumentAdded` → "Document added", `Created` → "Created"."""
    parts = re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", str(event_type or ""))
    if not parts:
        return str(event_type or "")
    return " ".join([parts[0], *(w if w.isupper() and len(w) > 1 else w.lower() for w in parts[1:])])
