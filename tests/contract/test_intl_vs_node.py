"""The sandbox's Intl against Node's: 200 formatting cases, and formatToParts for the number ones.

Each case runs through the shim and host function a tool's JavaScript gets and through one `node`
process (bench/intl_vs_node.py). Every difference must be listed in ACCEPTED with its reason, and
every listed one must still differ: a new difference, or a fixed one left on the list, fails.
`python -m bench.intl_vs_node` prints the same table.
"""

from __future__ import annotations

import os
import shutil

import pytest

from bench.intl_vs_node import ACCEPTED, CASES, PARTS_CASES, compare, report

@pytest.fixture(scope="module")
def results():
    node = shutil.which("node")
    if node is None:
        if os.environ.get("CI"):
            pytest.fail("node is required in CI (Node 20) to compare Intl against it")
        pytest.skip("node is not installed")
    ours, theirs, differences = compare(CASES + PARTS_CASES, node)
    return ours, theirs, set(differences)


def test_there_are_two_hundred_distinct_cases():
    assert len(CASES) == 200
    assert len({case.id for case in CASES}) == 200


def test_format_matches_node_but_for_the_accepted_differences(results):
    ours, theirs, differences = results
    print(report(CASES, ours, theirs, ACCEPTED))  # shown with -s, and on failure
    formatted = {case.id for case in CASES} & differences
    assert sorted(formatted - set(ACCEPTED)) == [], "new differences from Node"
    assert sorted(set(ACCEPTED) - formatted) == [], "accepted differences that are gone: take them off the list"


def test_number_parts_match_node(results):
    ours, theirs, differences = results
    print(report(PARTS_CASES, ours, theirs, ACCEPTED))
    assert sorted({case.id for case in PARTS_CASES} & differences) == []
