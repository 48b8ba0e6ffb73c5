"""The sandbox's Intl: the JS shim over Babel, in a context built the way the sandbox builds it."""

from __future__ import annotations

import json

import _quickjs
import pytest

from sandbox.intl import INTL_JS, LOCALE_JS, intl_call

NBSP, NNBSP = "\u00a0", "\u202f"  # CLDR's spaces: before € in de-DE; fr-FR groups, 2:30 PM


def make_context() -> _quickjs.Context:
    ctx = _quickjs.Context()
    ctx.add_callable("$intl", intl_call)
    ctx.eval(
        "var Intl=(" + INTL_JS + ")($intl); delete globalThis.$intl; (" + LOCALE_JS + ")(function(){return Intl})"
    )
    return ctx


@pytest.fixture
def js():
    ctx = make_context()
    # 2024-01-15T14:30:00Z, a Monday
    ctx.eval("var d = new Date(Date.UTC(2024, 0, 15, 14, 30, 0))")
    return ctx.eval


def error_of(js, source: str) -> str:
    """The JS error a statement throws, as "Name: message" (or "no error")."""
    return js(f"(function(){{try{{ {source}; return 'no error' }}catch(e){{ return e.name + ': ' + e.message }}}})()")


# --- NumberFormat --------------------------------------------------------------------------


def test_seed_000_currency_example_prints_dollars_and_euros(js):
    assert js("new Intl.NumberFormat('en-US', {style: 'currency', currency: 'USD'}).format(1234.5)") == "$1,234.50"
    assert js("new Intl.NumberFormat('en-US', {style: 'currency', currency: 'EUR'}).format(1234.5)") == "€1,234.50"


@pytest.mark.parametrize(
    ("locale", "options", "expected"),
    [
        ("de-DE", "{style: 'currency', currency: 'EUR'}", f"1.234,50{NBSP}€"),
        ("fr-FR", "{style: 'currency', currency: 'EUR'}", f"1{NNBSP}234,50{NBSP}€"),
        ("ja-JP", "{style: 'currency', currency: 'JPY'}", "￥1,235"),
        ("en-US", "{style: 'currency', currency: 'JPY'}", "¥1,235"),
        ("en-US", "{style: 'currency', currency: 'usd', currencyDisplay: 'code'}", f"USD{NBSP}1,234.50"),
        ("en-US", "{style: 'currency', currency: 'USD', currencyDisplay: 'name'}", "1,234.50 US dollars"),
        ("en-US", "{style: 'currency', currency: 'XYZ'}", f"XYZ{NBSP}1,234.50"),
        ("en-US", "{style: 'currency', currency: 'USD', currencySign: 'accounting'}", "$1,234.50"),
    ],
)
def test_currency_follows_the_locale(js, locale, options, expected):
    assert js(f"new Intl.NumberFormat('{locale}', {options}).format(1234.5)") == expected


def test_currency_negative_and_plural_forms(js):
    assert js("new Intl.NumberFormat('en-US', {style: 'currency', currency: 'USD'}).format(-5)") == "-$5.00"
    assert js("new Intl.NumberFormat('en', {style: 'currency', currency: 'USD', currencySign: 'accounting'}).format(-5)") == "($5.00)"
    assert js("new Intl.NumberFormat('en', {style: 'currency', currency: 'USD', currencyDisplay: 'name'}).format(1)") == "1.00 US dollars"


def test_percent_rounds_to_whole_percents_by_default(js):
    assert js("new Intl.NumberFormat('en-US', {style: 'percent'}).format(0.256)") == "26%"
    assert js("new Intl.NumberFormat('de-DE', {style: 'percent'}).format(0.256)") == f"26{NBSP}%"
    assert js("new Intl.NumberFormat('en', {style: 'percent', minimumFractionDigits: 1}).format(0.12345)") == "12.3%"


def test_decimal_digits_rounding_and_grouping(js):
    assert js("new Intl.NumberFormat('en-US').format(1234.56789)") == "1,234.568"
    assert js("new Intl.NumberFormat('en', {minimumFractionDigits: 2}).format(5)") == "5.00"
    assert js("new Intl.NumberFormat('en', {maximumFractionDigits: 1}).format(1.25)") == "1.3"  # half away from zero
    assert js("new Intl.NumberFormat('en', {maximumFractionDigits: 2}).format(1.005)") == "1.01"  # the decimal 1.005
    assert js("new Intl.NumberFormat('en', {maximumFractionDigits: 0}).format(-2.5)") == "-3"
    assert js("new Intl.NumberFormat('en', {useGrouping: false}).format(1234567.5)") == "1234567.5"
    assert js("new Intl.NumberFormat('en', {minimumIntegerDigits: 3}).format(5)") == "005"
    assert js("new Intl.NumberFormat('en', {maximumSignificantDigits: 2}).format(123456)") == "120,000"
    assert js("new Intl.NumberFormat('hi-IN').format(12345678.5)") == "1,23,45,678.5"
    assert js("new Intl.NumberFormat('de-DE').format(1234.5)") == "1.234,5"
    assert js("new Intl.NumberFormat('fr-FR').format(1234567.891)") == f"1{NNBSP}234{NNBSP}567,891"


def test_sign_display(js):
    assert js("new Intl.NumberFormat('en', {signDisplay: 'always'}).format(5)") == "+5"
    assert js("new Intl.NumberFormat('en', {signDisplay: 'exceptZero'}).format(0)") == "0"
    assert js("new Intl.NumberFormat('en', {signDisplay: 'never'}).format(-5)") == "5"
    assert js("new Intl.NumberFormat('en', {signDisplay: 'always', style: 'currency', currency: 'USD'}).format(5)") == "+$5.00"


def test_non_finite_numbers_and_negative_zero_print_as_v8_does(js):
    nf = "new Intl.NumberFormat('en-US')"
    assert js(f"{nf}.format(NaN)") == "NaN"
    assert js(f"{nf}.format(Infinity)") == "∞"
    assert js(f"{nf}.format(-Infinity)") == "-∞"
    assert js(f"{nf}.format(-0)") == "-0"
    assert js(f"{nf}.format('1234.5')") == "1,234.5"
    assert js(f"{nf}.format()") == "NaN"


def test_bigint_is_formatted_exactly(js):
    assert js("new Intl.NumberFormat('en').format(12345678901234567890n)") == "12,345,678,901,234,567,890"
    assert js("(12345678901234567890n).toLocaleString('de')") == "12.345.678.901.234.567.890"
    assert js("new Intl.NumberFormat('en', {useGrouping: false}).format(2n ** 200n)") == str(2**200)
    assert js("new Intl.NumberFormat('en', {style: 'percent', useGrouping: false}).format(-(3n ** 99n))") == f"-{3**99}00%"


def test_format_works_detached_and_without_new(js):
    assert js("var nf = new Intl.NumberFormat('en'); [1000, 2000.5].map(nf.format).join('|')") == "1,000|2,000.5"
    assert js("nf.format === nf.format") is True
    assert js("Intl.NumberFormat('en-US', {style: 'currency', currency: 'USD'}).format(1)") == "$1.00"
    assert js("Intl.NumberFormat('en') instanceof Intl.NumberFormat") is True


def test_format_to_parts_splits_the_number(js):
    parts = json.loads(js("JSON.stringify(new Intl.NumberFormat('de-DE', {style: 'currency', currency: 'EUR'}).formatToParts(-1234567.5))"))
    assert parts == [
        {"type": "minusSign", "value": "-"},
        {"type": "integer", "value": "1"},
        {"type": "group", "value": "."},
        {"type": "integer", "value": "234"},
        {"type": "group", "value": "."},
        {"type": "integer", "value": "567"},
        {"type": "decimal", "value": ","},
        {"type": "fraction", "value": "50"},
        {"type": "literal", "value": NBSP},
        {"type": "currency", "value": "€"},
    ]
    percent = json.loads(js("JSON.stringify(new Intl.NumberFormat('en', {style: 'percent', signDisplay: 'always'}).formatToParts(0.5))"))
    assert percent == [{"type": "plusSign", "value": "+"}, {"type": "integer", "value": "50"}, {"type": "percentSign", "value": "%"}]


def test_resolved_options_report_the_defaults(js):
    options = json.loads(js("JSON.stringify(new Intl.NumberFormat('en-US', {style: 'currency', currency: 'usd'}).resolvedOptions())"))
    assert options["locale"] == "en-US"
    assert options["currency"] == "USD"
    assert (options["minimumFractionDigits"], options["maximumFractionDigits"]) == (2, 2)
    assert json.loads(js("JSON.stringify(new Intl.NumberFormat().resolvedOptions())"))["maximumFractionDigits"] == 3


@pytest.mark.parametrize(
    ("locale", "options", "value", "expected"),
    [
        ("en-US", "{style: 'unit', unit: 'kilometer-per-hour'}", "16", "16 km/h"),
        ("en-US", "{style: 'unit', unit: 'kilometer-per-hour', unitDisplay: 'long'}", "16", "16 kilometers per hour"),
        ("en-US", "{style: 'unit', unit: 'hour', unitDisplay: 'long'}", "1", "1 hour"),
        ("en-US", "{style: 'unit', unit: 'celsius', unitDisplay: 'narrow'}", "16", "16°C"),
        ("de-DE", "{style: 'unit', unit: 'kilometer', unitDisplay: 'long'}", "1.5", "1,5 Kilometer"),
        ("en-US", "{style: 'unit', unit: 'megabyte-per-second', unitDisplay: 'long'}", "2", "2 megabytes per second"),
        ("en-US", "{notation: 'compact'}", "1234", "1.2K"),
        ("en-US", "{notation: 'compact'}", "999999", "1M"),
        ("en-US", "{notation: 'compact', compactDisplay: 'long'}", "1500000", "1.5 million"),
        ("ja-JP", "{notation: 'compact'}", "1500000", "150万"),
        ("en-US", "{notation: 'compact', style: 'currency', currency: 'USD'}", "1234", "$1.2K"),
        ("en-US", "{notation: 'scientific'}", "123456", "1.235E5"),
        ("en-US", "{notation: 'scientific', maximumSignificantDigits: 2}", "99999", "1E5"),
        ("en-US", "{notation: 'engineering'}", "0.00012", "120E-6"),
        ("es-ES", "{}", "1234", "1234"),  # CLDR's minimumGroupingDigits 2
        ("es-ES", "{}", "12345", "12.345"),
        ("de-CH", "{}", "1234567.5", "1'234'567.5"),
        ("sv-SE", "{}", "-5", "\u22125"),
    ],
)
def test_units_compact_and_scientific_notation_and_locale_grouping(js, locale, options, value, expected):
    assert js(f"new Intl.NumberFormat('{locale}', {options}).format({value})") == expected


def test_unit_and_compact_parts_name_the_unit_and_the_suffix(js):
    unit = json.loads(js("JSON.stringify(new Intl.NumberFormat('en', {style: 'unit', unit: 'hour', unitDisplay: 'long'}).formatToParts(-2))"))
    assert unit == [{"type": "minusSign", "value": "-"}, {"type": "integer", "value": "2"}, {"type": "literal", "value": " "}, {"type": "unit", "value": "hours"}]
    compact = json.loads(js("JSON.stringify(new Intl.NumberFormat('en', {notation: 'compact'}).formatToParts(1234))"))
    assert compact == [{"type": "integer", "value": "1"}, {"type": "decimal", "value": "."}, {"type": "fraction", "value": "2"}, {"type": "compact", "value": "K"}]
    science = json.loads(js("JSON.stringify(new Intl.NumberFormat('en', {notation: 'scientific'}).formatToParts(0.00012))"))
    assert [p["type"] for p in science] == ["integer", "decimal", "fraction", "exponentSeparator", "exponentMinusSign", "exponentInteger"]
    options = json.loads(js("JSON.stringify(new Intl.NumberFormat('en', {notation: 'compact'}).resolvedOptions())"))
    assert (options["useGrouping"], options["maximumSignificantDigits"], options["roundingPriority"]) == ("min2", 2, "morePrecision")


# --- locales -------------------------------------------------------------------------------


def test_locale_lists_take_the_first_supported_and_fall_back_to_en_us(js):
    assert js("new Intl.NumberFormat(['xx', 'de-DE']).resolvedOptions().locale") == "de-DE"
    assert js("new Intl.NumberFormat('xx-YY').format(1234.5)") == "1,234.5"
    assert js("new Intl.NumberFormat('xx-YY').resolvedOptions().locale") == "en-US"
    assert js("new Intl.NumberFormat('de-XX').resolvedOptions().locale") == "de"
    assert js("new Intl.NumberFormat('en-US-u-nu-arab').resolvedOptions().locale") == "en-US"


def test_canonical_and_supported_locales(js):
    assert js("Intl.getCanonicalLocales(['EN-us', 'de-de', 'en-US']).join()") == "en-US,de-DE"
    assert js("Intl.NumberFormat.supportedLocalesOf(['xx', 'de-DE', 'fr']).join()") == "de-DE,fr"
    assert js("Intl.DateTimeFormat.supportedLocalesOf('ja-JP').join()") == "ja-JP"


# --- DateTimeFormat ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("locale", "expected"),
    [("en-US", "1/15/2024"), ("en-GB", "15/01/2024"), ("de-DE", "15.1.2024"), ("fr-FR", "15/01/2024"), ("ja-JP", "2024/1/15")],
)
def test_date_defaults_to_numeric_year_month_day(js, locale, expected):
    assert js(f"new Intl.DateTimeFormat('{locale}').format(d)") == expected


@pytest.mark.parametrize(
    ("locale", "options", "expected"),
    [
        ("en-US", "{dateStyle: 'full'}", "Monday, January 15, 2024"),
        ("en-US", "{dateStyle: 'short'}", "1/15/24"),
        ("en-GB", "{dateStyle: 'long'}", "15 January 2024"),
        ("de-DE", "{dateStyle: 'full'}", "Montag, 15. Januar 2024"),
        ("en-US", "{timeStyle: 'short'}", f"2:30{NNBSP}PM"),
        ("en-US", "{timeStyle: 'full'}", f"2:30:00{NNBSP}PM Coordinated Universal Time"),
        ("en-US", "{dateStyle: 'medium', timeStyle: 'medium'}", f"Jan 15, 2024, 2:30:00{NNBSP}PM"),
        ("en-GB", "{timeStyle: 'short', hour12: true}", "02:30 pm"),
    ],
)
def test_date_and_time_styles(js, locale, options, expected):
    assert js(f"new Intl.DateTimeFormat('{locale}', {options}).format(d)") == expected


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ("{weekday: 'long', year: 'numeric', month: 'long', day: 'numeric'}", "Monday, January 15, 2024"),
        ("{month: 'short', day: 'numeric'}", "Jan 15"),
        ("{month: '2-digit', day: '2-digit', year: 'numeric'}", "01/15/2024"),
        ("{hour: '2-digit', minute: '2-digit'}", "02:30 PM"),
        ("{hour: 'numeric', minute: 'numeric', hour12: false}", "14:30"),
        ("{year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric'}", "1/15/2024, 2:30 PM"),
        ("{hour: 'numeric', minute: 'numeric', second: 'numeric', fractionalSecondDigits: 3}", "2:30:00.000 PM"),
        ("{era: 'long', year: 'numeric'}", "2024 Anno Domini"),
    ],
)
def test_component_options_pick_a_cldr_pattern(js, options, expected):
    assert js(f"new Intl.DateTimeFormat('en-US', {options}).format(d)") == expected


def test_time_zones_convert_and_name_themselves(js):
    assert js("new Intl.DateTimeFormat('en-US', {timeStyle: 'long', timeZone: 'America/New_York'}).format(d)") == f"9:30:00{NNBSP}AM EST"
    assert js("new Intl.DateTimeFormat('en-US', {timeZone: 'Asia/Tokyo', hour: 'numeric', minute: 'numeric'}).format(d)") == "11:30 PM"
    assert js("new Intl.DateTimeFormat('en-US', {timeZone: 'Asia/Kolkata', timeZoneName: 'short'}).format(d)") == "1/15/2024, GMT+5:30"
    assert js("new Intl.DateTimeFormat('en', {timeZone: 'america/new_york'}).resolvedOptions().timeZone") == "America/New_York"
    assert js("new Intl.DateTimeFormat().resolvedOptions().timeZone") == "UTC"  # the sandbox has no local zone


def test_format_takes_a_number_or_nothing(js):
    assert js("new Intl.DateTimeFormat('en-US').format(0)") == "1/1/1970"
    assert js("new Intl.DateTimeFormat('en-US', {year: 'numeric'}).format()") == js("String(new Date().getUTCFullYear())")
    parts = json.loads(js("JSON.stringify(new Intl.DateTimeFormat('en-US').formatToParts(d))"))
    assert [p["type"] for p in parts] == ["month", "literal", "day", "literal", "year"]


def test_to_locale_string_methods_use_intl(js):
    assert js("d.toLocaleString('en-US')") == "1/15/2024, 2:30:00 PM"
    assert js("d.toLocaleDateString('en-US')") == "1/15/2024"
    assert js("d.toLocaleTimeString('en-US')") == "2:30:00 PM"
    assert js("d.toLocaleDateString('de-DE', {dateStyle: 'long'})") == "15. Januar 2024"
    assert js("d.toLocaleDateString()") == "1/15/2024"
    assert js("new Date(NaN).toLocaleString()") == "Invalid Date"
    assert js("(1234.5).toLocaleString()") == "1,234.5"
    assert js("(1234.5).toLocaleString('de-DE', {style: 'currency', currency: 'EUR'})") == f"1.234,50{NBSP}€"


def test_locale_methods_load_intl_only_when_used():
    ctx = _quickjs.Context()
    ctx.eval("var loads = 0; (" + LOCALE_JS + ")(function(){ loads++; return {NumberFormat: function(){ return {format: String} }} })")
    assert ctx.eval("loads") == 0
    assert ctx.eval("(5).toLocaleString()") == "5"
    assert ctx.eval("loads") == 1


# --- errors --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("new Intl.NumberFormat('en-US', {style: 'currency'})", "TypeError: Currency code is required with currency style."),
        ("new Intl.NumberFormat('en-US', {style: 'currency', currency: 'US'})", "RangeError: Invalid currency code : US"),
        ("new Intl.NumberFormat('en_US')", "RangeError: Incorrect locale information provided"),
        ("new Intl.NumberFormat('en', {maximumFractionDigits: 200})", "RangeError: maximumFractionDigits value is out of range."),
        ("new Intl.NumberFormat('en', {minimumFractionDigits: 3, maximumFractionDigits: 1})", "RangeError: maximumFractionDigits value is out of range."),
        ("new Intl.NumberFormat('en', {style: 'bogus'})", "RangeError: Value bogus out of range for Intl.NumberFormat options property style"),
        ("new Intl.NumberFormat('en', {style: 'unit', unit: 'parsec'})", "RangeError: Invalid unit argument for Intl.NumberFormat() 'parsec'"),
        ("new Intl.NumberFormat([5])", "TypeError: Language ID should be string or object."),
        ("new Intl.DateTimeFormat('en').format(new Date('nope'))", "RangeError: Invalid time value"),
        ("new Intl.DateTimeFormat('en', {timeZone: 'Nowhere/City'})", "RangeError: Invalid time zone specified: Nowhere/City"),
        ("new Intl.DateTimeFormat('en', {dateStyle: 'full', year: 'numeric'})", "TypeError: Can't set option year when dateStyle is used"),
        ("new Intl.DateTimeFormat('en', {dateStyle: 'huge'})", "RangeError: Value huge out of range for Intl.DateTimeFormat options property dateStyle"),
        ("Intl.NumberFormat.prototype.format", "TypeError: Method get Intl.NumberFormat.prototype.format called on incompatible receiver"),
    ],
)
def test_bad_arguments_throw_catchable_js_errors(js, source, expected):
    assert error_of(js, source) == expected


def test_errors_are_real_js_error_instances(js):
    assert js("try { new Intl.NumberFormat('en', {style: 'currency'}) } catch (e) { e instanceof TypeError }") is True
    assert js("try { new Intl.NumberFormat('??') } catch (e) { e instanceof RangeError }") is True


@pytest.mark.parametrize(
    "source",
    [
        "new Intl.NumberFormat('en').format(Symbol())",
        "new Intl.NumberFormat('en', {maximumFractionDigits: Symbol()})",
        "new Intl.NumberFormat(Symbol())",
        "new Intl.NumberFormat('en', new Proxy({}, {get() { throw new Error('trap') }}))",
        "new Intl.NumberFormat(new Proxy([], {get() { throw new Error('trap') }}))",
        "new Intl.NumberFormat('en').format({toString() { throw new Error('boom') }, valueOf() { throw new Error('boom') }})",
        "new Intl.NumberFormat('en', {style: {toString() { throw new Error('boom') }}})",
        "new Intl.NumberFormat('en', {maximumFractionDigits: 1e300})",
        "new Intl.NumberFormat('en', {minimumIntegerDigits: Infinity})",
        "new Intl.NumberFormat('en').format(10n ** 200000n)",
        "new Intl.NumberFormat('en').format(10n ** 5000n)",
        "new Intl.NumberFormat('en-' + 'x'.repeat(5000))",
        "new Intl.NumberFormat('\\ud800')",
        "new Intl.NumberFormat('en', {currency: 'a\\ud800b'})",
        "new Intl.DateTimeFormat('en', {timeZone: '../../etc/passwd'})",
        "new Intl.DateTimeFormat('en', {timeZone: 'x'.repeat(100000)})",
        "new Intl.DateTimeFormat('en').format(8.64e15)",
        "new Intl.DateTimeFormat('en').format({valueOf() { return 1n }})",
        "Intl.getCanonicalLocales({length: -1})",
        "Intl.NumberFormat.prototype.formatToParts.call({}, 1)",
    ],
)
def test_hostile_arguments_give_a_js_error_or_a_result_and_the_context_survives(source):
    ctx = make_context()
    # Only the error's name comes back: a message may echo a lone surrogate the binding can't convert.
    outcome = ctx.eval(f"(function(){{try{{ var r = {source}; return 'ok' }}catch(e){{ return 'error ' + e.name }}}})()")
    assert outcome == "ok" or outcome in ("error TypeError", "error RangeError", "error Error")
    assert ctx.eval("1+1") == 2
    assert ctx.eval("new Intl.NumberFormat('en-US', {style: 'currency', currency: 'USD'}).format(1234.5)") == "$1,234.50"


# --- the host function ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "request_",
    [
        None,
        5,
        b'["locales", []]',
        "not json",
        "{}",
        "[]",
        '["nope"]',
        '["nf"]',
        '["nf", "en", {}]',
        '["nf", ["en"], []]',
        '["nf", [["en"]], {}]',
        '["nf", ["en"], {"style": ["currency"]}]',
        '["nf.format", "not a key", "1"]',
        '["nf.format", "[\\"en-US\\"]", "1"]',
        '["nf.format", "[\\"en-US\\", \\"decimal\\", null, \\"symbol\\", \\"standard\\", 1, 0, 3, null, null, \\"auto\\", \\"auto\\"]", "1e999999999"]',
        '["nf.format", "[\\"en-US\\", \\"decimal\\", null, \\"symbol\\", \\"standard\\", 1, 0, 3, null, null, \\"auto\\", \\"auto\\"]", "sNaN"]',
        '["dtf.format", "[\\"en-US\\", \\"y\\", \\"UTC\\"]", 1e300]',
        '["dtf.format", "[\\"en-US\\", \\"y\\", \\"Nowhere\\"]", 0]',
        '["dtf", ["en"], {"timeZone": 5}, "any"]',
        "[" * 100_000 + "]" * 100_000,
        '["locales", ["\\ud800"]]',
    ],
)
def test_intl_call_never_raises(request_):
    reply = json.loads(intl_call(request_))
    assert list(reply) in (["ok"], ["error"])  # "sNaN" is a NaN to Decimal, and formats
    assert reply.get("error", ["RangeError"])[0] in ("RangeError", "TypeError")


def test_intl_call_speaks_the_documented_protocol():
    made = json.loads(intl_call(json.dumps(["nf", ["en-US"], {"style": "currency", "currency": "USD"}])))["ok"]
    assert made["options"]["currency"] == "USD"
    assert json.loads(intl_call(json.dumps(["nf.format", made["key"], "1234.5"]))) == {"ok": "$1,234.50"}
    assert json.loads(intl_call(json.dumps(["nf.parts", made["key"], "-1"])))["ok"][0] == ["minusSign", "-"]
    assert json.loads(intl_call(json.dumps(["nf", ["en"], {"style": "currency"}]))) == {
        "error": ["TypeError", "Currency code is required with currency style."]
    }
