"""Which import members a source uses (`dates.year`), the input of the publish link check (R10)."""

from __future__ import annotations

import pytest

from sandbox.links import used_members

DATES = ("dates",)


@pytest.mark.parametrize(
    "source",
    [
        pytest.param("return 'Report ' + dates.year(input.day);", id="call"),
        pytest.param("var y = dates.year;", id="property"),
        pytest.param("return dates?.year(input.day);", id="optional-chaining"),
        pytest.param("return dates?.year;", id="optional-property"),
        pytest.param("return dates\n  .year(input.day);", id="across-lines"),
        pytest.param("return dates . year(input.day);", id="spaced"),
        pytest.param("return input.n / dates.year(input.day) / 2;", id="between-divisions"),
        pytest.param("if (/^\\d+$/.test(input.day)) return dates.year(input.day);", id="after-a-regex"),
    ],
)
def test_finds_a_member_read_on_an_import(source: str) -> None:
    assert used_members(source, DATES) == (("dates", "year"),)


@pytest.mark.parametrize(
    "source",
    [
        pytest.param('return dates["year"](input.day);', id="double-quotes"),
        pytest.param("return dates['year'](input.day);", id="single-quotes"),
        pytest.param('return dates[ "year" ];', id="spaced"),
    ],
)
def test_finds_a_member_read_with_brackets_and_a_string(source: str) -> None:
    assert used_members(source, DATES) == (("dates", "year"),)


def test_finds_a_member_used_inside_a_template_substitution() -> None:
    # The text of a template literal is not code, but what `${…}` holds is.
    assert used_members("return `Report ${dates.year(input.day)}`;", DATES) == (("dates", "year"),)


@pytest.mark.parametrize(
    "source",
    [
        pytest.param('return "dates.year";', id="double-quoted-string"),
        pytest.param("return 'dates.year';", id="single-quoted-string"),
        pytest.param("return 'it\\'s dates.year';", id="string-with-escaped-quote"),
        pytest.param("return `dates.year`;", id="template-literal"),
        pytest.param("return `line one\ndates.year`;", id="multi-line-template"),
        pytest.param("// dates.year(input.day)\nreturn 1;", id="line-comment"),
        pytest.param("return 1; // uses dates.year", id="trailing-line-comment"),
        pytest.param("/* dates.year(input.day) */ return 1;", id="block-comment"),
        pytest.param("/*\n * dates.year\n */\nreturn 1;", id="multi-line-block-comment"),
        pytest.param("return /dates.year/.test(input.day);", id="regex-literal"),
        pytest.param("return input.day.replace(/dates.year/g, '');", id="regex-argument"),
        pytest.param("return input.dates.year;", id="property-named-like-the-import"),
        pytest.param("return obj?.dates.year;", id="optional-property-named-like-the-import"),
        pytest.param("return datesAndMore.year;", id="longer-name"),
        pytest.param("return mydates.year;", id="name-ending-like-the-import"),
        pytest.param("return dates;", id="no-member"),
        pytest.param("return dates(1);", id="called-not-read"),
    ],
)
def test_ignores_what_is_not_a_member_read_on_an_import(source: str) -> None:
    assert used_members(source, DATES) == ()


def test_ignores_names_that_are_not_imports() -> None:
    source = "return other.year(input.day) + Math.max(1, 2) + dates.month(input.day);"
    assert used_members(source, DATES) == (("dates", "month"),)


def test_a_module_without_imports_uses_nothing() -> None:
    assert used_members("return dates.year(input.day);", ()) == ()


def test_members_come_in_order_of_first_use_without_duplicates() -> None:
    source = """
    var y = dates.year(input.day);
    var n = text.count(input.body);
    var m = dates.month(input.day);
    return dates.year(input.day) + text.count('x') + dates?.year;
    """
    assert used_members(source, ("dates", "text")) == (
        ("dates", "year"),
        ("text", "count"),
        ("dates", "month"),
    )


def test_a_use_after_a_comment_and_a_string_is_still_found() -> None:
    source = "// dates.month is not used\nvar label = 'dates.day';\nreturn label + dates.year(input.day);"
    assert used_members(source, DATES) == (("dates", "year"),)


def test_an_unterminated_comment_hides_the_rest_of_the_source() -> None:
    # An unterminated comment is a syntax error the sandbox reports; the scan must just not fail.
    assert used_members("return 1; /* dates.year", DATES) == ()
