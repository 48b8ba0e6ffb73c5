"""console.language: a domain message's rule codes become words on the console's pages (the REST API keeps them)."""

from __future__ import annotations

import pytest

from console.language import event_words, kind_words, plain, rules_in


@pytest.mark.parametrize(("message", "shown"), [
    ("'dates' has no draft to publish (R10)", "'dates' has no draft to publish"),
    ("the id 'weather' is already used by a API_URL tool (R2)", "the name 'weather' is already used by an API URL tool"),
    ("an organization with the id 'acme' exists already", "an organization with the id 'acme' exists already"),
    ("must not start with a digit (R1, at most 40 characters)", "must not start with a digit (at most 40 characters)"),
    ("output cut (V5: up to 128 KB)", "output cut (up to 128 KB)"),
    ("not allowed for this caller (R14)", "not allowed for this caller"),
    ("checked against every importer (R5, R6, R10).", "checked against every importer."),
    ("R12 refuses while there is one", "the rule that something in use cannot be deleted refuses while there is one"),
    ("a module named 'R2' is kept", "a module named 'R2' is kept"),  # a name in quotes is a name, not a code
    ("nothing to change", "nothing to change"),
    (None, ""),
])
def test_plain_takes_the_rule_codes_out(message: str | None, shown: str) -> None:
    assert plain(message) == shown


def test_rules_in_names_each_rule_once_in_words() -> None:
    assert rules_in("publishing would break 'b' (R10); see R10 and R12") == [
        "publishing re-checks every module that imports this one", "something in use cannot be deleted"]
    assert rules_in("no code here") == []


def test_kind_words() -> None:
    assert [kind_words(k) for k in ("CODE", "API_URL", "FILE_SEARCH", "PLAN", "LOCAL", "MCP", "OTHER")] == [
        "code module", "API URL tool", "File Search tool", "plan", "native tool", "external MCP tool", "OTHER"]


def test_event_words() -> None:
    assert [event_words(t) for t in ("Created", "DocumentAdded", "ConfigChanged", "URLTemplateSet", "")] == [
        "Created", "Document added", "Config changed", "URL template set", ""]


def test_rule_refs_link_each_rule_once_to_the_rules_page_at_its_docs_anchor() -> None:
    from pathlib import Path

    from console.language import EXPLAINED, RULES, rule_refs

    assert rule_refs("publishing would break 'b' (R10); see R10 and R12") == [
        {"words": "publishing re-checks every module that imports this one", "href": "/console/rules#r10"},
        {"words": "something in use cannot be deleted", "href": "/console/rules#r12"}]
    assert rule_refs("a module named 'R2' is kept") == []
    # every rule has its words and an explanation without a code, at the anchor docs/rules.md gives it
    docs = (Path(__file__).resolve().parents[2] / "docs" / "rules.md").read_text()
    for code in RULES:
        assert f"{{ #{code.lower()} }}" in docs, code
        assert plain(EXPLAINED[code]) == EXPLAINED[code], f"{code}'s explanation names a rule by its code"
