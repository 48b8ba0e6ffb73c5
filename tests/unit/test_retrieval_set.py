"""The retrieval set of File Search (tests/fixtures/retrieval_set.json; docs/kinds/file-search-tools.md,
bench/hybrid_search.py) holds to its own rule: a paraphrase question shares no content word with its
passage, not even a word's stem (two words of five letters or more starting with the same five are
one word here: "parent" and "parents", "reimburse" and "reimbursed"); a lexical question's words
are all in its passage. And it is as large as the issue asks: at least 50 paraphrase questions
over at least 200 chunks."""

from __future__ import annotations

import json
import re
from pathlib import Path

SET = Path(__file__).resolve().parents[1] / "fixtures" / "retrieval_set.json"

# Words that carry no content (the rule's, broader than the index's stop words).
FUNCTION_WORDS = frozenset("""
a about after all also am an and any are as at be been before but by can could did do does doing for from get gets
had has have how i if in into is it its let lets may me might more most much must my no not of off on or our out over
should so some such than that the their them then there these they this those to too up us was we were what when where
which while who whom why will with would you your yours s t ll m re ve d
""".split())
_WORD = re.compile(r"\w+")


def content_words(text: str) -> set[str]:
    return {w for w in (m.group(0).lower() for m in _WORD.finditer(text)) if w not in FUNCTION_WORDS}


def _key(word: str) -> str:
    return word[:5] if len(word) >= 5 else word


def shared(question: str, passage: str) -> set[str]:
    """The question's content words that its passage holds too (by their first five letters)."""
    keys = {_key(w) for w in content_words(passage)}
    return {w for w in content_words(question) if _key(w) in keys}


def load() -> dict:
    return json.loads(SET.read_text(encoding="utf-8"))


def test_each_paraphrase_question_shares_no_content_word_with_its_passage() -> None:
    data = load()
    passages = {p["id"]: p["text"] for p in data["passages"]}
    overlapping = {q["id"]: sorted(shared(q["question"], passages[q["passage"]]))
                   for q in data["questions"] if q["kind"] == "paraphrase"}
    assert {k: v for k, v in overlapping.items() if v} == {}


def test_each_lexical_question_is_words_of_its_passage() -> None:
    data = load()
    passages = {p["id"]: p["text"].lower() for p in data["passages"]}
    for question in (q for q in data["questions"] if q["kind"] == "lexical"):
        assert content_words(question["question"]) <= content_words(passages[question["passage"]]), question


def test_the_set_is_fifty_questions_over_two_hundred_chunks_at_least() -> None:
    data = load()
    ids = [p["id"] for p in data["passages"]]
    assert len(ids) == len(set(ids)) >= 200
    assert sum(q["kind"] == "paraphrase" for q in data["questions"]) >= 50
    assert all(q["passage"] in set(ids) for q in data["questions"])
    # Every passage is one chunk of the index (under its ~1,500 characters).
    assert max(len(p["text"]) for p in data["passages"]) < 1_500


def test_the_rule_itself_sees_a_shared_stem() -> None:
    assert shared("How much time off do new parents get?", "Parental leave for every parent") == {"parents"}
    assert shared("When is my pay?", "Salaries arrive monthly") == set()
