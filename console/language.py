"""The admin's language on the console's pages: a rule code (R10, V5, B7) becomes the rule's own words.

The domain's messages name the rule they enforce with its code ("'x' has no draft to publish (R10)"),
and the REST API keeps them so (clients and docs/rules.md read the codes). A person reading a page
gets the words: `plain(text)` takes the codes out of a message, and `rules_in(text)` names each
rule the message broke with its heading in docs/rules.md, for the problem fragment's "The rule:" line;
`rule_refs(text)` adds where each is explained (the console's rules page, /console/rules, at the anchor
docs/rules.md gives the rule), for its "Learn more" link.
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

# What each rule means, in the admin's words, for the console's page of the rules (/console/rules, each
# rule at the anchor docs/rules.md gives it: #r10) that a refusal's "Learn more" link opens.
EXPLAINED = {
    "R1": "A name is 1 to 64 letters, digits or underscores, not starting with a digit and not a word JavaScript "
          "reserves (such as class or null), so that a module can always be named inside another module's code. "
          "Parameter names follow the same shape.",
    "R2": "No two tools share a name, whatever their kind: a module, an API URL tool, a File Search tool (and each "
          "of its capabilities), a plan or a tool of the service itself. A deleted module's name is free again.",
    "R3": "Every tool says what it does in 1 to 2,000 characters: it is what an AI client reads to decide whether "
          "to call it.",
    "R4": "A module's source is at most 262,144 characters; a tool has at most 20 tags, 30 parameters and 20 "
          "imports, and each parameter name once.",
    "R5": "A module imports published modules only, never itself, and no chain of imports may lead back to where it "
          "started. This is checked when the draft is saved and again when it is published.",
    "R6": "A module runs with the published version of each module it imports, never a draft, so editing a library "
          "changes nothing for the modules that use it until you publish.",
    "R7": "Every edit changes the draft. Publishing makes the draft the next version; calls, plans and importing "
          "modules only ever see the published version.",
    "R8": "A module is Unpublished (never published), Published with a draft (changes pending) or Published "
          "(nothing pending).",
    "R9": "Switching on \u201cCall it as a tool\u201d gives a module its parameters, timeout, memory, tags and "
          "whether AI clients may call it in chat.",
    "R10": "Publishing runs the module and every module that imports it, directly or not, with the new version in "
           "place. If one of them would break, nothing is published and the review names it and why. With "
           "nothing changed since the last publish there is nothing to publish.",
    "R11": "Discarding a draft goes back to the published version; a module never published has no version to go "
           "back to, so its draft cannot be discarded (delete the module instead).",
    "R12": "A module cannot be deleted while another module imports it, a plan calls it or an agent names it; the "
           "refusal lists them. A deleted module keeps its history.",
    "R13": "A duplicate is a new, unpublished module with the same definition under a name of its own.",
    "R14": "A plan may call a tool directly; an agent, the tools it allows; an AI client in chat, the tools that may "
           "be called in chat and that its usage profile allows by name or by tag. A caller whose usage profile "
           "allows nothing is offered no tool at all, and an auditor calls nothing.",
    "R15": "When two tools share a name (only a tool of the service itself can take a name already used), a call "
           "reaches an external MCP tool first, then a tool of the service, then a plan, then the other kinds.",
    "R16": "A module's code may import modules but cannot call other tools: combining tools is what plans are for.",
    "V1": "Each argument is checked against its parameter's type (text, whole number, decimal, date, yes/no, list, "
          "object) before any code runs; a missing, unknown or mistyped argument is refused by name.",
    "V2": "The code gets a log, who is calling (never a token), number and date formatting for every locale, and "
          "HTTP requests to the hosts the service allows.",
    "V3": "The code gets no files, no other network, no host process and nothing kept from one call to the next.",
    "V4": "A call ends when it runs out of time, memory or stack, with an error saying which; the service keeps "
          "serving.",
    "V5": "The console shows at most 128 KB of a call's output; the rest is cut, and the call itself is not.",
    "B1": "Any published version can be put back into the draft, to publish again.",
    "B2": "Every change is kept in the history, and a module can be read as it stood at any moment.",
    "B3": "The publish review shows what would change and runs every check before anything is published.",
    "B4": "A tool's examples are checked each time it is published: an example whose output changes stops the "
          "publish.",
    "B5": "The history is chained so that a changed or removed event is detected.",
    "B6": "Several drafts can be published together as one changeset: all of them or none.",
    "B7": "A change is saved against the version you read; if someone saved in between, you are asked which to keep "
          "instead of losing either.",
}
assert set(EXPLAINED) == set(RULES)

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


def rule_refs(text: object) -> list[dict[str, str]]:
    """Each rule `text` names by code, in order, once each: its words and where the console explains it
    (`href`: the rules page at the anchor docs/rules.md gives it), for a refusal's "Learn more" link."""
    found: list[dict[str, str]] = []
    for match in _ANY.finditer(str(text or "")):
        code = match.group(0).removesuffix("'s")
        if code in RULES and all(r["words"] != RULES[code] for r in found):
            found.append({"words": RULES[code], "href": f"{RULES_PAGE}#{code.lower()}"})
    return found


# The console's page of every rule in words (console/routes/help.py), each at docs/rules.md's anchor.
RULES_PAGE = "/console/rules"


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
