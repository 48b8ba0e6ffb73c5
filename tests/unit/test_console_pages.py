"""The console's Jinja environment (console/pages.py): `row.name` of a plain dict is read as its item
at once, with the result Jinja's own lookup gives in every case."""

from __future__ import annotations

from collections import OrderedDict
from types import SimpleNamespace

import pytest
from jinja2 import Environment, StrictUndefined, UndefinedError

from console.pages import Pages


@pytest.fixture
def ours() -> Environment:
    return Pages().env


def _both(ours: Environment, source: str, **context: object) -> tuple[str, str]:
    plain = Environment(autoescape=True, undefined=StrictUndefined)
    return ours.from_string(source).render(**context), plain.from_string(source).render(**context)


def test_a_dicts_item_an_objects_attribute_and_dicts_own_methods_read_as_jinja_reads_them(ours: Environment) -> None:
    rows = [{"name": "a<b", "kind": "code"}, {"name": "c", "kind": "api", "items": "an item called items"}]
    source = ("{% for r in rows %}{{ r.name }}/{{ r.kind }};{% endfor %}"
              "{{ rows[1].items() | list | length }} {{ d.get('x', 'none') }} {{ o.name }} {{ od.name }} {{ rows[0].keys()|list }}")
    mine, jinja = _both(ours, source, rows=rows, d={}, o=SimpleNamespace(name="obj"), od=OrderedDict(name="ordered"))
    assert mine == jinja
    assert "a&lt;b/code;c/api;" in mine and "obj" in mine and "ordered" in mine


def test_a_missing_key_is_still_an_error(ours: Environment) -> None:
    with pytest.raises(UndefinedError):
        ours.from_string("{{ row.missing }}").render(row={"name": "x"})
    assert ours.from_string("{{ row.missing is defined }}").render(row={"name": "x"}) == "False"
