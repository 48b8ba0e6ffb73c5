"""`Intl` for the sandbox: ECMA-402's NumberFormat and DateTimeFormat over Babel (docs/javascript.md V2).

QuickJS has no `Intl`, so the sandbox gives scripts a small JavaScript shim (`INTL_JS`) that
coerces every argument and option in JavaScript — getters, Proxies and throwing `toString` stay
ordinary JS errors — and sends one JSON string to one host function, `intl_call`, which formats
with Babel's CLDR data and never raises. `LOCALE_JS` points `Number`, `BigInt` and `Date`'s
`toLocale*String` at a lazily loaded `Intl`.

Protocol: a request is a JSON array `[op, ...args]`; the reply is `{"ok": value}` or
`{"error": ["RangeError" | "TypeError", message]}`, which the shim throws as that JS error.

    ["locales", tags]             canonical tags (Intl.getCanonicalLocales)
    ["supported", tags]           the tags that resolve to Babel data (supportedLocalesOf)
    ["nf", tags, options]         {"options": resolvedOptions, "key": string}
    ["nf.format", key, number]    string; number is String(x), "-0", "NaN" or a BigInt's digits
    ["nf.parts", key, number]     [[type, value], ...]
    ["dtf", tags, options, kind]  {"options": ..., "key": string}; kind "any" (the constructor),
                                  "date", "time" or "all" (toLocale{Date,Time,}String defaults)
    ["dtf.format", key, millis]   string; millis is a finite epoch time within ±8.64e15
    ["dtf.parts", key, millis]    [[type, value], ...]

A key is the resolved formatter's settings as a JSON array in a string, so formatting is
stateless and each formatter is built once per process (lru_cache on the key); the constructor
resolves and validates options once.

Numbers go through Babel's format_decimal, format_percent, format_currency, format_unit,
format_compact_decimal and format_compact_currency; this module maps the options to their arguments,
rounds as ECMA-402 does (half away from zero, fraction or significant digits) before Babel sees the
number, and splits Babel's string into formatToParts' parts. `python -m bench.intl_vs_node` compares
200 cases with Node's Intl.

Known gaps. Babel's data has no narrow currency symbols (narrowSymbol shows the symbol), no
currencySpacing and no minimumGroupingDigits (both filled in here) and no "{1} 'at' {0}" date-time
glue. Digits are always Latin; notations other than "standard" take style decimal only (compact
also currency); a NaN or ∞ with a unit takes the singular; Python's datetime limits dates to the
years 1 to 9999.
"""

from __future__ import annotations

import copy
import datetime
import decimal
import json
import re
import unicodedata
import zoneinfo
from functools import lru_cache
from typing import Any

from babel import Locale, UnknownLocaleError
from babel.dates import DateTimeFormat as _BabelFields
from babel.dates import match_skeleton, tokenize_pattern
from json.encoder import encode_basestring_ascii as _encode_string

from babel.numbers import (
    NumberPattern,
    format_compact_currency,
    format_compact_decimal,
    format_currency,
    format_decimal,
    format_percent,
    get_currency_name,
    get_currency_precision,
    get_currency_symbol,
    get_currency_unit_pattern,
    parse_pattern,
)
from babel.units import UnknownUnitError, format_compound_unit, format_unit

__all__ = ["INTL_JS", "LOCALE_JS", "intl_call"]

_INTL_SOURCE = r"""(function (call) {
  "use strict";
  var parse = JSON.parse, stringify = JSON.stringify, define = Object.defineProperty;
  var slots = new WeakMap();
  // Every request is made by JSON.stringify: a flat, well-formed string the binding can convert
  // (a concatenated "rope" or a lone surrogate makes the call fail before Python sees it).
  function host(request) {
    var r = parse(call(stringify(request)));
    if (r.error) throw new (r.error[0] === "TypeError" ? TypeError : RangeError)(r.error[1]);
    return r.ok;
  }
  function tags(locales) {
    if (locales === undefined) return [];
    if (typeof locales === "string") return [locales];
    if (locales === null) throw new TypeError("Cannot convert undefined or null to object");
    var o = Object(locales), n = +o.length, out = [];
    n = n > 0 ? Math.min(Math.floor(n), 9007199254740991) : 0;
    for (var i = 0; i < n; i++) {
      if (!(i in o)) continue;
      var v = o[i];
      if (typeof v !== "string" && (typeof v !== "object" || v === null))
        throw new TypeError("Language ID should be string or object.");
      out.push(String(v));
    }
    return out;
  }
  function text(v) {
    if (typeof v === "symbol") throw new TypeError("Cannot convert a Symbol value to a string");
    return String(v);
  }
  // names: [option, kind, ...]; kind s string, n number, b boolean, g useGrouping (boolean or string)
  function read(options, names) {
    if (options === undefined) return {};
    if (options === null) throw new TypeError("Cannot convert undefined or null to object");
    var o = Object(options), r = {};
    for (var i = 0; i < names.length; i += 2) {
      var v = o[names[i]], kind = names[i + 1];
      if (v === undefined) continue;
      r[names[i]] = kind === "s" ? text(v) : kind === "n" ? +v : kind === "b" ? !!v
        : v === true ? true : !v ? false : text(v);
    }
    return r;
  }
  function slot(that, type, name) {
    var s = slots.get(that);
    if (!s || s.type !== type) throw new TypeError("Method " + name + " called on incompatible receiver");
    return s;
  }
  function parts(list) {
    return list.map(function (p) { return { type: p[0], value: p[1] }; });
  }
  function number(x) {
    if (typeof x !== "bigint") {
      x = Number(x);
      if (x !== x) return "NaN";
      if (x === 0 && 1 / x < 0) return "-0";
    }
    return String(x);
  }
  function time(d) {
    var t = d === undefined ? Date.now() : Number(d);
    if (!(Math.abs(t) <= 8.64e15)) throw new RangeError("Invalid time value");
    return Math.trunc(t) + 0;
  }
  function method(target, name, value) {
    define(target, name, { value: value, writable: true, configurable: true });
  }
  function formatter(C, type, op, arg) {
    var name = "Intl." + type;
    method(C, "supportedLocalesOf", function supportedLocalesOf(locales) {
      return host(["supported", tags(locales)]);
    });
    var proto = C.prototype;
    define(proto, Symbol.toStringTag, { value: name, configurable: true });
    define(proto, "format", { configurable: true, get: function () {
      var s = slot(this, op, "get " + name + ".prototype.format");
      return s.bound || (s.bound = function (x) {
        return host([op + ".format", s.key, arg(x)]);
      });
    } });
    method(proto, "formatToParts", function formatToParts(x) {
      var s = slot(this, op, name + ".prototype.formatToParts");
      return parts(host([op + ".parts", s.key, arg(x)]));
    });
    method(proto, "resolvedOptions", function resolvedOptions() {
      return Object.assign({}, slot(this, op, name + ".prototype.resolvedOptions").options);
    });
    return function (that, request) {
      var r = host(request);
      slots.set(that, { type: op, key: r.key, options: r.options, bound: undefined });
    };
  }
  var NF = ["style", "s", "currency", "s", "currencyDisplay", "s", "currencySign", "s", "unit", "s",
    "unitDisplay", "s", "notation", "s", "compactDisplay", "s", "minimumIntegerDigits", "n",
    "minimumFractionDigits", "n",
    "maximumFractionDigits", "n", "minimumSignificantDigits", "n", "maximumSignificantDigits", "n",
    "useGrouping", "g", "signDisplay", "s"];
  var DTF = ["weekday", "s", "era", "s", "year", "s", "month", "s", "day", "s", "dayPeriod", "s",
    "hour", "s", "minute", "s", "second", "s", "fractionalSecondDigits", "n", "timeZoneName", "s",
    "hour12", "b", "hourCycle", "s", "timeZone", "s", "dateStyle", "s", "timeStyle", "s"];
  function NumberFormat(locales, options) {
    if (!new.target) return new NumberFormat(locales, options);
    initNumber(this, ["nf", tags(locales), read(options, NF)]);
  }
  // The third argument is internal: toLocale{Date,Time,}String pass "date", "time" or "all".
  function DateTimeFormat(locales, options, kind) {
    if (!new.target) return new DateTimeFormat(locales, options, kind);
    kind = kind === "date" || kind === "time" || kind === "all" ? kind : "any";
    initDate(this, ["dtf", tags(locales), read(options, DTF), kind]);
  }
  var initNumber = formatter(NumberFormat, "NumberFormat", "nf", number);
  var initDate = formatter(DateTimeFormat, "DateTimeFormat", "dtf", time);
  var Intl = {};
  method(Intl, "getCanonicalLocales", function getCanonicalLocales(locales) {
    return host(["locales", tags(locales)]);
  });
  method(Intl, "NumberFormat", NumberFormat);
  method(Intl, "DateTimeFormat", DateTimeFormat);
  define(Intl, Symbol.toStringTag, { value: "Intl", configurable: true });
  [NumberFormat.prototype, NumberFormat, DateTimeFormat.prototype, DateTimeFormat, Intl]
    .forEach(Object.freeze);
  return Intl;
})"""
# Each context that uses Intl compiles this: indentation and comments would cost compile time.
INTL_JS = "\n".join(line.strip() for line in _INTL_SOURCE.splitlines() if not line.lstrip().startswith("//"))

LOCALE_JS = (
    "(function(I){var N=Number.prototype,D=Date.prototype,v=N.valueOf,t=D.getTime,"
    "d=function(k){return function(l,o){var x=t.call(this);"
    'return x!==x?"Invalid Date":I().DateTimeFormat(l,o,k).format(x)}};'
    "N.toLocaleString=function(l,o){return I().NumberFormat(l,o).format(v.call(this))};"
    'if(typeof BigInt=="function"){var b=BigInt.prototype.valueOf;'
    "BigInt.prototype.toLocaleString=function(l,o){return I().NumberFormat(l,o).format(b.call(this))}}"
    'D.toLocaleString=d("all");D.toLocaleDateString=d("date");D.toLocaleTimeString=d("time")})'
)

DEFAULT_LOCALE = "en-US"
DEFAULT_TIME_ZONE = "UTC"
_MAX_DIGITS = 100_000  # a BigInt longer than this is refused rather than formatted


class IntlError(Exception):
    """A JS error for the shim to throw: `kind` is "RangeError" or "TypeError"."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


def _range(message: str) -> IntlError:
    return IntlError("RangeError", message)


def intl_call(request: str) -> str:
    """The host function: one JSON request in, one JSON reply out, never an exception."""
    try:
        if not isinstance(request, str):
            raise IntlError("TypeError", "Intl request must be a string")
        args = json.loads(request)
        if not isinstance(args, list) or not args or args[0] not in _OPS:
            raise IntlError("TypeError", "Unknown Intl request")
        result = _OPS[args[0]](*args[1:])
        if type(result) is str:  # the common case, format(): skip the general encoder
            return '{"ok": ' + _encode_string(result) + "}"
        return json.dumps({"ok": result})
    except IntlError as error:
        return json.dumps({"error": [error.kind, error.message]})
    except Exception:  # the engine must never see a Python exception
        return '{"error": ["RangeError", "Intl could not handle this value"]}'


# --- locales -------------------------------------------------------------------------------

_LOCALE_ID = re.compile(
    r"(?P<language>[a-z]{2,3}|[a-z]{5,8})(?:-(?P<script>[a-z]{4}))?(?:-(?P<region>[a-z]{2}|\d{3}))?"
    r"(?P<variants>(?:-(?:[a-z\d]{5,8}|\d[a-z\d]{3}))*)"
    r"(?P<extensions>(?:-[\da-wyz](?:-[a-z\d]{2,8})+)*(?:-x(?:-[a-z\d]{1,8})+)?)",
    re.IGNORECASE | re.ASCII,
)


@lru_cache(maxsize=512)
def _canonical_tag(tag: Any) -> str:
    """ECMA-402's CanonicalizeUnicodeLocaleId, minus CLDR's alias tables."""
    match = _LOCALE_ID.fullmatch(tag) if isinstance(tag, str) else None
    if match is None:
        raise _range("Incorrect locale information provided")
    language, script, region, variants, extensions = match.groups()
    variant_list = variants.lower().split("-")[1:]
    singletons = re.findall(r"-([\da-wyz])(?=-)", extensions.lower().split("-x-")[0])
    if len(set(variant_list)) != len(variant_list) or len(set(singletons)) != len(singletons):
        raise _range("Incorrect locale information provided")
    out = [language.lower()]
    if script:
        out.append(script.title())
    if region:
        out.append(region.upper())
    return "-".join(out + variant_list) + extensions.lower()


def _canonical_list(tags: list) -> list[str]:
    if not isinstance(tags, list):
        raise IntlError("TypeError", "locales must be a list")
    return list(dict.fromkeys(_canonical_tag(tag) for tag in tags))


@lru_cache(maxsize=512)
def _supported(tag: str) -> str | None:
    """The longest prefix of `tag` that Babel has data for (ECMA-402's LookupMatcher)."""
    subtags = re.split(r"-[\da-wyz]-", tag, maxsplit=1)[0].split("-")
    while subtags:
        candidate = "-".join(subtags)
        try:
            Locale.parse(candidate, sep="-")
            return candidate
        except (UnknownLocaleError, ValueError, TypeError):
            subtags.pop()
    return None


@lru_cache(maxsize=256)
def _babel_locale(tag: str) -> Locale:
    return Locale.parse(tag, sep="-")


def _resolve_locale(tags: list) -> str:
    """First supported tag wins; an unknown but well-formed one falls back as browsers do."""
    for tag in _canonical_list(tags):
        found = _supported(tag)
        if found:
            return found
    return DEFAULT_LOCALE


def _op_locales(tags: list) -> list[str]:
    return _canonical_list(tags)


def _op_supported(tags: list) -> list[str]:
    return [tag for tag in _canonical_list(tags) if _supported(tag)]


# --- options -------------------------------------------------------------------------------

_ABSENT = object()


def _string_option(options: dict, name: str, allowed: tuple, default: Any, owner: str) -> Any:
    value = options.get(name, _ABSENT)
    if value is _ABSENT:
        return default
    if not isinstance(value, str) or value not in allowed:
        raise _range(f"Value {value} out of range for {owner} options property {name}")
    return value


def _number_option(options: dict, name: str, low: int, high: int, default: Any) -> Any:
    value = options.get(name, _ABSENT)
    if value is _ABSENT:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise _range(f"{name} value is out of range.")
    return int(value)


def _options(options: Any) -> dict:
    if not isinstance(options, dict):
        raise IntlError("TypeError", "options must be an object")
    return options


# --- NumberFormat --------------------------------------------------------------------------

_NF = "Intl.NumberFormat"
# ECMA-402's sanctioned simple units; a unit option is one of these or "<one>-per-<another>".
_UNITS = frozenset(
    "acre bit byte celsius centimeter day degree fahrenheit fluid-ounce foot gallon gigabit gigabyte gram hectare "
    "hour inch kilobit kilobyte kilogram kilometer liter megabit megabyte meter microsecond mile mile-scandinavian "
    "milliliter millimeter millisecond minute month nanosecond ounce percent petabyte pound second stone terabit "
    "terabyte week yard year".split()
)
# CLDR's minimumGroupingDigits 2 (no separator in 1234), which Babel's data leaves out: the locales
# (of those Babel has) where CLDR 48 sets it.
_MIN2_LOCALES = frozenset(
    "be be-BY bg bg-BG es es-EA es-ES es-GQ es-IC es-PH et et-EE hu hu-HU hy hy-AM ia ia-001 ie ie-EE it it-CH "
    "it-IT it-SM it-VA ka ka-GE lv lv-LV pl pl-PL pt-CH pt-CV pt-GQ pt-GW pt-LU pt-MO pt-MZ pt-PT pt-ST pt-TL "
    "ru-UA sl sl-SI sq sq-AL sq-MK sq-XK".split()
)


def _op_nf(tags: list, options: dict) -> dict:
    return _resolve_number(tuple(_canonical_list(tags)), tuple(sorted(_options(options).items())))


@lru_cache(maxsize=512)
def _resolve_number(tags: tuple, items: tuple) -> dict:
    """ECMA-402's InitializeNumberFormat and SetNumberFormatDigitOptions, validated once."""
    options = dict(items)
    tag = _resolve_locale(list(tags))
    style = _string_option(options, "style", ("decimal", "percent", "currency", "unit"), "decimal", _NF)
    currency = options.get("currency", _ABSENT)
    if currency is not _ABSENT:
        if not isinstance(currency, str) or not re.fullmatch(r"[A-Za-z]{3}", currency):
            raise _range(f"Invalid currency code : {currency}")
        currency = currency.upper()
    elif style == "currency":
        raise IntlError("TypeError", "Currency code is required with currency style.")
    display = _string_option(
        options, "currencyDisplay", ("symbol", "narrowSymbol", "code", "name"), "symbol", _NF
    )
    sign_kind = _string_option(options, "currencySign", ("standard", "accounting"), "standard", _NF)
    unit = options.get("unit", _ABSENT)
    if unit is not _ABSENT and (not isinstance(unit, str) or not all(u in _UNITS for u in unit.split("-per-", 1))):
        raise _range(f"Invalid unit argument for Intl.NumberFormat() '{unit}'")
    if style == "unit" and unit is _ABSENT:
        raise IntlError("TypeError", "Invalid unit argument for Intl.NumberFormat() ''")
    unit_display = _string_option(options, "unitDisplay", ("short", "narrow", "long"), "short", _NF)
    notation = _string_option(
        options, "notation", ("standard", "scientific", "engineering", "compact"), "standard", _NF
    )
    compact_display = _string_option(options, "compactDisplay", ("short", "long"), "short", _NF)
    if notation != "standard" and style not in ("decimal", "currency" if notation == "compact" else "decimal"):
        raise _range(f"Intl.NumberFormat notation '{notation}' with style '{style}' is not supported in this sandbox")

    if style == "currency" and notation == "standard":
        default_min = default_max = get_currency_precision(currency)
    elif style == "percent":
        default_min = default_max = 0
    else:
        default_min, default_max = 0, 0 if notation == "compact" else 3
    min_int = _number_option(options, "minimumIntegerDigits", 1, 21, 1)
    min_sig = max_sig = min_frac = max_frac = None
    priority = "auto"
    if "minimumSignificantDigits" in options or "maximumSignificantDigits" in options:
        min_sig = _number_option(options, "minimumSignificantDigits", 1, 21, 1)
        max_sig = _number_option(options, "maximumSignificantDigits", min_sig, 21, 21)
    elif "minimumFractionDigits" in options or "maximumFractionDigits" in options:
        min_frac = _number_option(options, "minimumFractionDigits", 0, 100, None)
        max_frac = _number_option(options, "maximumFractionDigits", 0, 100, None)
        if min_frac is None:
            min_frac = min(default_min, max_frac)
        elif max_frac is None:
            max_frac = max(default_max, min_frac)
        elif min_frac > max_frac:
            raise _range("maximumFractionDigits value is out of range.")
    elif notation == "compact":  # two significant digits or whole numbers, whichever shows more
        min_frac, max_frac, min_sig, max_sig, priority = 0, 0, 1, 2, "morePrecision"
    else:
        min_frac, max_frac = default_min, default_max

    grouping = options.get("useGrouping", "min2" if notation == "compact" else "auto")
    if grouping is True:
        grouping = "always"
    elif grouping in ("true", "false"):
        grouping = "auto"
    elif grouping is not False and grouping not in ("min2", "auto", "always"):
        raise _range(f"Value {grouping} out of range for {_NF} options property useGrouping")
    sign = _string_option(
        options, "signDisplay", ("auto", "never", "always", "exceptZero", "negative"), "auto", _NF
    )

    resolved: dict[str, Any] = {"locale": tag, "numberingSystem": "latn", "style": style}
    if style == "currency":
        resolved |= {"currency": currency, "currencyDisplay": display, "currencySign": sign_kind}
    if style == "unit":
        resolved |= {"unit": unit, "unitDisplay": unit_display}
    resolved["minimumIntegerDigits"] = min_int
    if min_sig is not None:
        resolved |= {"minimumSignificantDigits": min_sig, "maximumSignificantDigits": max_sig}
    if min_frac is not None:
        resolved |= {"minimumFractionDigits": min_frac, "maximumFractionDigits": max_frac}
    resolved |= {"useGrouping": grouping, "notation": notation}
    if notation == "compact":
        resolved["compactDisplay"] = compact_display
    resolved |= {
        "signDisplay": sign,
        "roundingMode": "halfExpand",
        "roundingIncrement": 1,
        "trailingZeroDisplay": "auto",
        "roundingPriority": priority,
    }
    key = json.dumps([tag, style, currency if style == "currency" else None, display, sign_kind,
                      unit if style == "unit" else None, unit_display, notation, compact_display,
                      min_int, min_frac, max_frac, min_sig, max_sig, grouping, sign])  # fmt: skip
    _number_format(key)  # build it now: the first format() should be as cheap as the rest
    return {"options": resolved, "key": key}


def _op_nf_format(key: str, number: str) -> str:
    return "".join([value for _, value in _number_format(key).parts(number)])


def _op_nf_parts(key: str, number: str) -> list:
    return _number_format(key).parts(number)


@lru_cache(maxsize=512)
def _number_format(key: str) -> _NumberFormat:
    return _NumberFormat(*json.loads(key))


_Part = tuple[str, str]


class _NumberFormat:
    """One resolved NumberFormat: ECMA-402's rounding and sign, then Babel's format_* functions.

    Babel formats the rounded number whole (patterns, symbols, grouping, currency and unit names,
    plural forms, compact patterns); the string is then split back into ECMA-402's parts, which
    Babel has no notion of, and the sign, spacing and grouping rules Babel lacks are applied there."""

    def __init__(self, tag, style, currency, display, sign_kind, unit, unit_display, notation, compact_display,
                 min_int, min_frac, max_frac, min_sig, max_sig, grouping, sign):  # fmt: skip
        locale = _babel_locale(tag)
        self.symbols = symbols = dict(locale.number_symbols["latn"])  # Babel's lookups are slow per call
        self.locale = _QuoteSafeLocale.parse(tag, sep="-") if "'" in "".join(symbols.values()) else locale
        self.style, self.currency, self.display, self.unit, self.unit_display = style, currency, display, unit, unit_display
        self.notation, self.compact_display = notation, compact_display
        self.min_int, self.min_frac, self.max_frac = min_int, min_frac, max_frac
        self.min_sig, self.max_sig, self.sign = min_sig, max_sig, sign
        if style == "currency" and display != "name":  # Babel has no narrow symbols: narrowSymbol shows the symbol
            base = locale.currency_formats["accounting" if sign_kind == "accounting" else "standard"]
        elif style == "percent":
            base = locale.percent_formats[None]
        else:
            base = locale.decimal_formats[None]
        self.pattern = copy.copy(parse_pattern(base))
        if display == "code":  # ¤¤ is the ISO code in a CLDR pattern
            self.pattern.prefix, self.pattern.suffix = (
                tuple(re.sub("¤+", "¤¤", affix) for affix in affixes) for affixes in (base.prefix, base.suffix)
            )
        self.pattern.int_prec = (min_int, max(min_int, base.int_prec[1]))
        if grouping is False or base.grouping[0] >= 1000:
            self.pattern.grouping = (1000, 1000)
        self.plus_swaps = "-" in self.pattern.prefix[1] + self.pattern.suffix[1]
        self.ungrouped = copy.copy(self.pattern)
        self.ungrouped.grouping = (1000, 1000)
        min2 = grouping == "min2" or (grouping == "auto" and tag in _MIN2_LOCALES)
        self.group_from = self.pattern.grouping[0] + (2 if min2 else 1)  # integer digits that get a separator
        if style == "currency":
            self.currency_text = currency if display == "code" else get_currency_symbol(currency, locale)
        numbers = "|".join(re.escape(symbols[name]) for name in ("infinity", "nan")) + "|NaN"
        group, point, exponent = (re.escape(symbols[name]) for name in ("group", "decimal", "exponential"))
        self.core = re.compile(
            rf"(?:{numbers}|\d(?:\d|{group}(?=\d)|{point}(?=\d))*)(?:{exponent}{re.escape(symbols['minusSign'])}?\d+)?"
        )
        self.labels = {"unit": "unit", "currency": "currency"}.get(style if style == "unit" or display == "name" else "")
        if notation == "compact":
            self.labels = "compact"

    def parts(self, number: str) -> list[_Part]:
        value = decimal.Decimal(number)
        negative = value.is_signed()
        value = value.copy_abs()  # exact: abs() rounds to the context's 28 digits
        if value.is_finite() and value.adjusted() > _MAX_DIGITS:
            raise _range("Number too large to format")
        # Exact arithmetic for any digits a BigInt has; ECMA-402 rounds half away from zero.
        digits = len(value.as_tuple().digits) + max(value.adjusted(), 0) if value.is_finite() else 1
        with decimal.localcontext(prec=digits + 130, rounding=decimal.ROUND_HALF_UP):
            text, zero = self._babel(value, negative)
        return self._split((text[0].replace(_QUOTE, "'"), text[1]), zero)

    def _sign(self, negative: bool, zero: bool) -> str:
        display = self.sign
        if display == "auto":
            return "-" if negative else ""
        if display == "never":
            return ""
        if display == "negative":
            return "-" if negative and not zero else ""
        if display == "exceptZero":
            return "" if zero else "-" if negative else "+"
        return "-" if negative else "+"

    def _babel(self, value: decimal.Decimal, negative: bool) -> tuple[str, bool]:
        """The number, rounded as ECMA-402 says, through the Babel function for its style."""
        scale = 2 if self.style == "percent" else 0
        if not value.is_finite():
            rounded, fraction = value, 0
        elif self.notation in ("scientific", "engineering"):
            return self._scientific(value, negative)
        elif self.notation == "compact":
            return self._compact(value, negative)
        else:
            rounded, fraction = self._round(value.scaleb(scale))
        zero = rounded.is_zero()
        sign = self._sign(negative, zero)
        pattern = self._pattern(rounded, fraction)
        # "+" is written as the minus and swapped, unless the negative pattern has none (accounting's parentheses)
        signed = rounded.copy_negate() if sign == "-" or (sign == "+" and self.plus_swaps) else rounded
        if self.style == "percent":
            text = format_percent(signed.scaleb(-scale), pattern, self.locale)
        elif self.style == "currency" and self.display == "name" and not rounded.is_finite():  # no plural for NaN
            name, number = get_currency_name(self.currency, 0, self.locale), format_decimal(signed, pattern, self.locale)
            text = get_currency_unit_pattern(self.currency, 0, self.locale).format(number, name)
        elif self.style == "currency":
            kind = "name" if self.display == "name" else "standard"
            text = format_currency(signed, self.currency, pattern, self.locale, currency_digits=False, format_type=kind)
        elif self.style == "unit":
            text = self._unit(signed if rounded.is_finite() else format_decimal(signed, pattern, self.locale), pattern)
        else:
            text = format_decimal(signed, pattern, self.locale)
        return (text, sign), zero

    def _unit(self, value: decimal.Decimal | str, pattern: NumberPattern) -> str:
        length = self.unit_display
        try:
            return format_unit(value, self.unit, length, pattern, self.locale)
        except UnknownUnitError:  # a "-per-" unit CLDR has no name for: Babel's per-pattern
            numerator, denominator = self.unit.split("-per-")
            return format_compound_unit(value, numerator, denominator_unit=denominator, length=length,
                                        format=pattern, locale=self.locale)  # fmt: skip

    def _round(self, value: decimal.Decimal) -> tuple[decimal.Decimal, int]:
        """ECMA-402's rounding of a non-negative finite value: (the rounded value, fraction digits shown)."""
        by_fraction = by_digits = None
        if self.max_frac is not None:
            rounded = value.quantize(decimal.Decimal(1).scaleb(-self.max_frac))
            shown = max(len(_fraction(rounded).rstrip("0")), self.min_frac)
            by_fraction = rounded.quantize(decimal.Decimal(1).scaleb(-shown)), shown
        if self.max_sig is not None:
            rounded = value.quantize(decimal.Decimal(1).scaleb(value.adjusted() - self.max_sig + 1))
            rounded = rounded.quantize(decimal.Decimal(1).scaleb(rounded.adjusted() - self.max_sig + 1))
            shown = len(_fraction(rounded).rstrip("0"))
            needed = self.min_sig - 1 - (rounded.adjusted() if not rounded.is_zero() else 0)
            shown = max(shown, needed, 0)
            by_digits = rounded.quantize(decimal.Decimal(1).scaleb(-shown)), shown
        if by_fraction and by_digits:  # roundingPriority "morePrecision": the one that shows more
            return by_digits if by_digits[1] > by_fraction[1] else by_fraction
        return by_fraction or by_digits

    def _pattern(self, rounded: decimal.Decimal, fraction: int) -> NumberPattern:
        """The locale's pattern with this number's fraction digits and the grouping rules applied."""
        integer_digits = max(rounded.adjusted() + 1, 1) if rounded.is_finite() and not rounded.is_zero() else 1
        pattern = copy.copy(self.pattern if integer_digits >= self.group_from else self.ungrouped)
        pattern.frac_prec = (fraction, fraction)
        return pattern

    def _scientific(self, value: decimal.Decimal, negative: bool) -> tuple[tuple[str, str], bool]:
        """A mantissa by format_decimal and CLDR's exponent symbol (Babel's format_scientific has no
        engineering notation and lets a rounded mantissa reach 10)."""
        step = 3 if self.notation == "engineering" else 1
        exponent = (value.adjusted() // step) * step if not value.is_zero() else 0
        mantissa, fraction = self._round(value.scaleb(-exponent))
        if mantissa.adjusted() >= step:  # 9.9996 → 10.000: one place (or three) further
            exponent += step
            mantissa, fraction = self._round(value.scaleb(-exponent))
        zero = mantissa.is_zero()
        sign = self._sign(negative, zero)
        pattern = copy.copy(self.ungrouped)
        pattern.frac_prec = (fraction, fraction)
        text = format_decimal(mantissa.copy_negate() if sign else mantissa, pattern, self.locale)
        minus = self.symbols["minusSign"] if exponent < 0 else ""
        return (text + self.symbols["exponential"] + minus + str(abs(exponent)), sign), zero

    def _compact(self, value: decimal.Decimal, negative: bool) -> tuple[tuple[str, str], bool]:
        """format_compact_decimal (or _currency) on the value rounded in its compact magnitude."""
        formats = self.locale.compact_decimal_formats[self.compact_display]
        divisor = _compact_divisor(value, formats)
        rounded, fraction = self._round(value / divisor)
        zero = rounded.is_zero()
        sign = self._sign(negative, zero)
        if divisor == 1:  # too small to compact: the plain pattern, whose fraction Babel would not round
            pattern = self._pattern(rounded, fraction)
            signed = rounded.copy_negate() if sign else rounded
            if self.style == "currency":
                return (format_currency(signed, self.currency, pattern, self.locale, currency_digits=False), sign), zero
            return (format_decimal(signed, pattern, self.locale), sign), zero
        signed = rounded * divisor
        signed = signed.copy_negate() if sign else signed
        if self.style == "currency":
            text = format_compact_currency(signed, self.currency, locale=self.locale, fraction_digits=fraction)
        else:
            text = format_compact_decimal(signed, format_type=self.compact_display, locale=self.locale,
                                          fraction_digits=fraction)  # fmt: skip
        return (text, sign), zero

    def _split(self, babel: tuple[str, str], zero: bool) -> list[_Part]:
        """Babel's string as ECMA-402 parts: the number's own parts, then each side's affix."""
        text, sign = babel
        match = self.core.search(text)
        parts = self._affix(text[: match.start()], sign, True)
        parts += self._number(match.group())
        parts += self._affix(text[match.end() :], sign, False)
        if sign == "+" and not any(kind == "plusSign" for kind, _ in parts):  # no minus to swap: (accounting)
            parts = [("plusSign", self.symbols["plusSign"])] + parts
        return parts if self.display == "name" else _spaced(parts)

    def _number(self, text: str) -> list[_Part]:
        if text in ("NaN", self.symbols["nan"]):
            return [("nan", self.symbols["nan"])]
        if text == self.symbols["infinity"]:
            return [("infinity", text)]
        mantissa, exponent_symbol, exponent = text.partition(self.symbols["exponential"])
        integer, point, fraction = mantissa.partition(self.symbols["decimal"])
        parts: list[_Part] = []
        for piece in re.split(f"({re.escape(self.symbols['group'])})", integer):
            if piece:
                parts.append(("group" if piece == self.symbols["group"] else "integer", piece))
        if point:
            parts += [("decimal", point), ("fraction", fraction)]
        if exponent_symbol:
            parts.append(("exponentSeparator", exponent_symbol))
            if exponent.startswith(self.symbols["minusSign"]):
                parts.append(("exponentMinusSign", self.symbols["minusSign"]))
                exponent = exponent[len(self.symbols["minusSign"]) :]
            parts.append(("exponentInteger", exponent))
        return parts

    def _affix(self, text: str, sign: str, before: bool) -> list[_Part]:
        """Signs, percent and the currency as their own parts; a unit, a compact suffix or a currency
        name is the rest without its spaces (its sign is the one next to the number); the rest is literal."""
        minus = ("-", self.symbols["minusSign"])
        tail: list[_Part] = []
        if self.labels:
            if before and text.endswith(minus):
                size = 1 if text.endswith("-") else len(minus[1])
                text, tail = text[:-size], [self._sign_part(sign)]
            signs = [re.escape(self.currency_text)] if self.style == "currency" and self.display != "name" else []
        else:
            signs = [re.escape(self.currency_text)] if self.style == "currency" else []
            signs += ["[-+%]", re.escape(self.symbols["minusSign"]), re.escape(self.symbols["percentSign"])]
        parts: list[_Part] = []
        for piece in re.split(f"({'|'.join(signs)})", text) if signs else [text]:
            if not piece:
                continue
            if self.style == "currency" and self.display != "name" and piece == self.currency_text:
                parts.append(("currency", piece))
            elif piece in minus:
                parts.append(self._sign_part(sign))
            elif piece == "+":
                parts.append(("plusSign", self.symbols["plusSign"]))
            elif piece in ("%", self.symbols["percentSign"]) and not self.labels:
                parts.append(("percentSign", self.symbols["percentSign"]))
            elif self.labels and piece.strip():
                lead, label, trail = re.fullmatch(r"(\s*)(.*?)(\s*)", piece, re.DOTALL).groups()
                parts += [(kind, v) for kind, v in (("literal", lead), (self.labels, label), ("literal", trail)) if v]
            else:
                parts.append(("literal", piece))
        return parts + tail

    def _sign_part(self, sign: str) -> _Part:
        """Babel writes every sign as a minus: "+" (signDisplay) is the same place with the plus."""
        return ("plusSign", self.symbols["plusSign"]) if sign == "+" else ("minusSign", self.symbols["minusSign"])


_QUOTE = "\ue000"  # stands in for an apostrophe in a number symbol while Babel formats


class _QuoteSafeLocale(Locale):
    """Babel drops quote pairs from its whole output (CLDR's pattern quoting), which would eat
    de-CH's apostrophe group separator (1'234'567): Babel gets a stand-in, put back after."""

    @property
    def number_symbols(self) -> dict:
        latn = super().number_symbols["latn"]
        return {"latn": {name: value.replace("'", _QUOTE) for name, value in latn.items()}}


def _fraction(value: decimal.Decimal) -> str:
    return f"{value:f}".partition(".")[2]


def _compact_divisor(value: decimal.Decimal, formats: Any) -> decimal.Decimal:
    """What CLDR's compact pattern for this magnitude divides by (1: no compact form), as Babel's
    format_compact_decimal picks it."""
    if value.is_zero():
        return decimal.Decimal(1)
    for magnitude in sorted((int(m) for m in formats["other"]), reverse=True):
        if value >= magnitude:
            pattern = parse_pattern(formats["other"][str(magnitude)]).pattern
            if pattern == "0":
                return decimal.Decimal(1)
            return decimal.Decimal(magnitude // 10 ** (pattern.count("0") - 1))
    return decimal.Decimal(1)


def _spaced(parts: list[_Part]) -> list[_Part]:
    """CLDR currencySpacing (Babel has none): a no-break space between a letter-like currency
    and the number's first or last digit, as in "USD 1.00"."""
    for i, (kind, value) in enumerate(parts):
        if kind != "currency" or not _spaceable(value):
            continue
        before = parts[i - 1][0] if i else None
        after = parts[i + 1][0] if i + 1 < len(parts) else None
        if after in ("integer",) and _spaceable(value[-1]):
            return parts[: i + 1] + [("literal", "\xa0")] + parts[i + 1 :]
        if before in ("integer", "fraction") and _spaceable(value[0]):
            return parts[:i] + [("literal", "\xa0")] + parts[i:]
    return parts


def _spaceable(char: str) -> bool:
    return bool(char) and unicodedata.category(char[0])[0] not in "SZ"


# --- DateTimeFormat ------------------------------------------------------------------------

_DTF = "Intl.DateTimeFormat"
_STYLES = ("full", "long", "medium", "short")
# ECMA-402 component options, in resolvedOptions order, with their CLDR skeleton fields.
_COMPONENTS: dict[str, dict[str, str]] = {
    "weekday": {"narrow": "EEEEE", "short": "EEE", "long": "EEEE"},
    "era": {"narrow": "GGGGG", "short": "G", "long": "GGGG"},
    "year": {"2-digit": "yy", "numeric": "y"},
    "month": {"2-digit": "MM", "numeric": "M", "narrow": "MMMMM", "short": "MMM", "long": "MMMM"},
    "day": {"2-digit": "dd", "numeric": "d"},
    "dayPeriod": {"narrow": "BBBBB", "short": "B", "long": "BBBB"},
    "hour": {"2-digit": "hh", "numeric": "h"},
    "minute": {"2-digit": "mm", "numeric": "m"},
    "second": {"2-digit": "ss", "numeric": "s"},
    "fractionalSecondDigits": {},
    "timeZoneName": {
        "short": "z", "long": "zzzz", "shortOffset": "O", "longOffset": "OOOO",
        "shortGeneric": "v", "longGeneric": "vvvv",
    },  # fmt: skip
}
_DATE_FIELDS = ("weekday", "year", "month", "day")
_TIME_FIELDS = ("dayPeriod", "hour", "minute", "second", "fractionalSecondDigits")
_HOUR_CHARS = {"h11": "K", "h12": "h", "h23": "H", "h24": "k"}
# Pattern characters by ECMA-402 part type (UTS 35 date field symbols).
_FIELD_TYPES = {
    **dict.fromkeys("G", "era"),
    **dict.fromkeys("yYuUr", "year"),
    **dict.fromkeys("ML", "month"),
    **dict.fromkeys("d", "day"),
    **dict.fromkeys("Eec", "weekday"),
    **dict.fromkeys("abB", "dayPeriod"),
    **dict.fromkeys("hHKk", "hour"),
    **dict.fromkeys("m", "minute"),
    **dict.fromkeys("s", "second"),
    **dict.fromkeys("S", "fractionalSecond"),
    **dict.fromkeys("zZOvVXx", "timeZoneName"),
}
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def _op_dtf(tags: list, options: dict, kind: str) -> dict:
    items = tuple(sorted(_options(options).items()))
    return _resolve_date(tuple(_canonical_list(tags)), items, kind)


@lru_cache(maxsize=512)
def _resolve_date(tags: tuple, items: tuple, kind: str) -> dict:
    """ECMA-402's CreateDateTimeFormat: options to one CLDR pattern, validated once."""
    options = dict(items)
    required, defaults = {"any": ("any", "date"), "date": ("date", "date"),
                          "time": ("time", "time"), "all": ("any", "all")}[kind]  # fmt: skip
    tag = _resolve_locale(list(tags))
    locale = _babel_locale(tag)
    hour12 = options.get("hour12")
    if hour12 is not None and not isinstance(hour12, bool):
        raise IntlError("TypeError", "hour12 must be a boolean")
    hour_cycle = _string_option(options, "hourCycle", tuple(_HOUR_CHARS), None, _DTF)
    zone_option = options.get("timeZone", DEFAULT_TIME_ZONE)
    if not isinstance(zone_option, str):
        raise _range(f"Invalid time zone specified: {zone_option}")
    zone_name = _zone(zone_option)[0]

    requested: dict[str, Any] = {}
    for name, values in _COMPONENTS.items():
        if name == "fractionalSecondDigits":
            value = _number_option(options, name, 1, 3, None)
        else:
            value = _string_option(options, name, tuple(values), None, _DTF)
        if value is not None:
            requested[name] = value
    date_style = _string_option(options, "dateStyle", _STYLES, None, _DTF)
    time_style = _string_option(options, "timeStyle", _STYLES, None, _DTF)
    if date_style or time_style:
        if requested:
            used = "dateStyle" if date_style else "timeStyle"
            raise IntlError("TypeError", f"Can't set option {next(iter(requested))} when {used} is used")
        if required == "date" and not date_style:
            raise IntlError("TypeError", "Invalid option : timeStyle")
        if required == "time" and not time_style:
            raise IntlError("TypeError", "Invalid option : dateStyle")
    else:
        checked = {"date": _DATE_FIELDS, "time": _TIME_FIELDS}.get(required, _DATE_FIELDS + _TIME_FIELDS)
        if not any(name in requested for name in checked):
            if defaults in ("date", "all"):
                requested |= {"year": "numeric", "month": "numeric", "day": "numeric"}
            if defaults in ("time", "all"):
                requested |= {"hour": "numeric", "minute": "numeric", "second": "numeric"}
            requested = {name: requested[name] for name in _COMPONENTS if name in requested}

    resolved: dict[str, Any] = {"locale": tag, "calendar": "gregory", "numberingSystem": "latn",
                                "timeZone": zone_name}  # fmt: skip
    cycle = None
    if "hour" in requested or time_style:
        cycle = _hour_cycle(locale, hour12, hour_cycle)
        resolved |= {"hourCycle": cycle, "hour12": cycle in ("h11", "h12")}
    if date_style or time_style:
        override = hour12 is not None or hour_cycle is not None
        pattern = _style_pattern(locale, date_style, time_style, override, cycle)
        resolved |= {name: style for name, style in (("dateStyle", date_style), ("timeStyle", time_style)) if style}
    else:
        pattern = _components_pattern(locale, requested, cycle)
        resolved |= requested
    key = json.dumps([tag, pattern, zone_name])
    _date_format(key)  # build it now: the first format() should be as cheap as the rest
    return {"options": resolved, "key": key}


def _op_dtf_format(key: str, millis: float) -> str:
    return "".join([value for _, value in _date_format(key).parts(millis)])


def _op_dtf_parts(key: str, millis: float) -> list:
    return _date_format(key).parts(millis)


@lru_cache(maxsize=512)
def _date_format(key: str) -> _DateFormat:
    return _DateFormat(*json.loads(key))


@lru_cache(maxsize=1)
def _zone_names() -> dict[str, str]:
    return {name.lower(): name for name in zoneinfo.available_timezones()}


_UTC_NAMES = {"utc", "etc/utc", "etc/gmt", "gmt", "etc/uct", "uct", "etc/universal", "universal",
              "etc/zulu", "zulu", "etc/greenwich", "greenwich", "gmt0", "etc/gmt0"}  # fmt: skip


@lru_cache(maxsize=256)
def _zone(name: str) -> tuple[str, datetime.tzinfo]:
    """An IANA name, case-insensitively, to its canonical spelling and tzinfo."""
    if name.lower() in _UTC_NAMES:
        return "UTC", datetime.timezone.utc  # needs no tz database
    canonical = _zone_names().get(name.lower())
    if canonical is None:
        raise _range(f"Invalid time zone specified: {name}")
    return canonical, zoneinfo.ZoneInfo(canonical)


def _hour_cycle(locale: Locale, hour12: bool | None, hour_cycle: str | None) -> str:
    default = next((c for c in locale.time_formats["short"].pattern if c in "hHKk"), "h")
    twelve = next((c for c in locale.datetime_skeletons["hm"].pattern if c in "hK"), "h")
    if hour12 is not None:
        return ("h11" if twelve == "K" else "h12") if hour12 else "h23"
    if hour_cycle:
        return hour_cycle
    return {"K": "h11", "h": "h12", "H": "h23", "k": "h24"}[default]


def _style_pattern(
    locale: Locale, date_style: str | None, time_style: str | None, override: bool, cycle: str | None
) -> str:
    date = locale.date_formats[date_style].pattern if date_style else None
    time = locale.time_formats[time_style].pattern if time_style else None
    if time and override:
        time = _with_hour_cycle(locale, time, cycle)
    if date and time:
        return str(locale.datetime_formats[date_style]).replace("{1}", date).replace("{0}", time)
    return date or time


def _with_hour_cycle(locale: Locale, pattern: str, cycle: str) -> str:
    """A time style pattern with hour12/hourCycle applied (5:03 PM ↔ 17:03)."""
    char = _HOUR_CHARS[cycle]
    tokens = tokenize_pattern(pattern)
    fields = [value for kind, value in tokens if kind == "field"]
    if any((c in "hK") == (char in "hK") for c, _ in fields if c in "hHKk"):  # same clock
        return _pattern([(k, (char, v[1]) if k == "field" and v[0] in "hHKk" else v) for k, v in tokens])
    skeleton = {_FIELD_TYPES.get(c, c): c * n for c, n in fields if c not in "abB"}
    skeleton["hour"] = char * len(skeleton.get("hour", "h"))
    return _skeleton_pattern(locale, skeleton)


def _pattern(tokens: list) -> str:
    """Babel's untokenize_pattern, but quoting every literal that holds a letter or a quote."""
    out = []
    for kind, value in tokens:
        if kind == "field":
            out.append(value[0] * value[1])
        elif re.search(r"[A-Za-z']", value):
            out.append("'" + value.replace("'", "''") + "'")
        else:
            out.append(value)
    return "".join(out)


def _components_pattern(locale: Locale, requested: dict, cycle: str | None) -> str:
    skeleton = {name: _COMPONENTS[name][value] for name, value in requested.items()
                if name != "fractionalSecondDigits"}  # fmt: skip
    if "hour" in skeleton:
        skeleton["hour"] = _HOUR_CHARS[cycle] * len(skeleton["hour"])
        if cycle in ("h23", "h24"):
            skeleton.pop("dayPeriod", None)  # a 24-hour clock shows no day period
    pattern = _skeleton_pattern(locale, skeleton)
    digits = requested.get("fractionalSecondDigits")
    if digits:
        decimal_symbol = locale.number_symbols["latn"]["decimal"]
        fraction = "S" * digits
        if "s" in pattern:
            pattern = re.sub(r"s+", lambda m: f"{m.group(0)}'{decimal_symbol}'{fraction}", pattern, count=1)
        else:
            pattern = f"{pattern} {fraction}" if pattern else fraction
    return pattern


_DATE_PART = ("era", "year", "month", "weekday", "day")


def _skeleton_pattern(locale: Locale, skeleton: dict[str, str]) -> str:
    """A CLDR skeleton to a pattern the way ICU's DateTimePatternGenerator does, in brief:
    best available format for the whole, else for the date and time halves joined by the
    locale's date-time glue; field widths then adjusted to the request."""
    whole = _match(locale, skeleton)
    if whole is not None:
        return whole
    date = {k: v for k, v in skeleton.items() if k in _DATE_PART}
    time = {k: v for k, v in skeleton.items() if k not in _DATE_PART}
    date_pattern = _part_pattern(locale, date)
    time_pattern = _part_pattern(locale, time)
    if not date_pattern or not time_pattern:
        return date_pattern or time_pattern
    month, weekday = len(skeleton.get("month", "")), len(skeleton.get("weekday", ""))
    width = "full" if month >= 4 and weekday == 4 else "long" if month >= 4 else "medium" if month == 3 else "short"
    glue = str(locale.datetime_formats[width])
    return glue.replace("{1}", date_pattern).replace("{0}", time_pattern)


def _part_pattern(locale: Locale, skeleton: dict[str, str]) -> str:
    if not skeleton:
        return ""
    found = _match(locale, skeleton)
    if found is not None:
        return found
    # An era or a zone the locale has no format for is appended, as CLDR's appendItems do.
    core = {k: v for k, v in skeleton.items() if k not in ("era", "timeZoneName")}
    found = _match(locale, core) if core else ""
    if found is None:
        found = " ".join(core.values())
    extras = [skeleton[k] for k in ("era", "timeZoneName") if k in skeleton]
    return " ".join([found] + extras if found else extras)


def _match(locale: Locale, skeleton: dict[str, str]) -> str | None:
    available = locale.datetime_skeletons
    wanted = "".join("v" if name == "timeZoneName" else _matchable(value) for name, value in skeleton.items())
    best = wanted if wanted in available else match_skeleton(wanted, available)
    if best is None:
        return None
    return _adjust(available[best].pattern, skeleton)


def _matchable(field: str) -> str:
    """CLDR's skeleton keys spell a short weekday E and know only the h and H clocks."""
    return "E" if field == "EEE" else field.replace("K", "h").replace("k", "H")


def _adjust(pattern: str, skeleton: dict[str, str]) -> str:
    """Give the matched pattern's fields the requested widths (ICU's adjustFieldTypes)."""
    tokens = []
    for kind, value in tokenize_pattern(pattern):
        field = _FIELD_TYPES.get(value[0]) if kind == "field" else None
        want = skeleton.get(field or "")
        if want is not None:
            value = _adjusted(field, value[0], value[1], want)
        tokens.append((kind, value))
    return _pattern(tokens)


def _adjusted(field: str, char: str, width: int, want: str) -> tuple[str, int]:
    asked = len(want)
    if field == "timeZoneName":
        return want[0], asked
    if field == "hour":
        return want[0], max(width, asked)
    if field in ("era", "dayPeriod"):
        return char, asked
    if field == "year":
        return char, 2 if asked == 2 else width
    if field == "weekday":
        if asked != 3:
            return char, asked
        return char, width if char == "E" or width >= 3 else 3
    if field == "month":
        if (asked >= 3) != (width >= 3):
            return char, width
        return char, asked if asked >= 3 else max(width, asked)
    return char, max(width, asked)


class _DateFormat:
    """One resolved DateTimeFormat: a tokenized CLDR pattern; names come from Babel's fields."""

    def __init__(self, tag: str, pattern: str, zone_name: str) -> None:
        self.locale = _babel_locale(tag)
        self.zone = _zone(zone_name)[1]
        # (part type, literal text or field symbols, how to render a field: a function, "babel", None)
        self.tokens = []
        for kind, value in tokenize_pattern(pattern):
            if kind == "chars":
                self.tokens.append(("literal", value, None))
            else:
                char, width = value
                render = _NUMERIC_FIELDS.get(char) if width <= 2 or char in "yS" else None
                self.tokens.append((_FIELD_TYPES.get(char, "literal"), char * width, render or "babel"))

    def parts(self, millis: float) -> list[_Part]:
        if isinstance(millis, bool) or not isinstance(millis, (int, float)) or not abs(millis) <= 8.64e15:
            raise _range("Invalid time value")
        try:
            moment = (_EPOCH + datetime.timedelta(milliseconds=int(millis))).astimezone(self.zone)
        except OverflowError:
            raise _range("Intl in this sandbox formats years 1 to 9999 only") from None
        fields = None
        out: list[_Part] = []
        for kind, value, render in self.tokens:
            if render == "babel":
                if fields is None:
                    fields = _BabelFields(moment, self.locale)
                value = _zone_text(fields, value) if kind == "timeZoneName" else fields[value]
            elif render is not None:
                value = render(moment, len(value))
            if kind == "literal" and out and out[-1][0] == "literal":
                out[-1] = ("literal", out[-1][1] + value)
            elif value:
                out.append((kind, value))
        return out


def _year(moment: datetime.datetime, width: int) -> str:
    return f"{moment.year % 100:02d}" if width == 2 else str(moment.year).zfill(width)


# UTS 35's numeric fields, rendered directly: Babel's general path costs more than the rest.
_NUMERIC_FIELDS = {
    "y": _year,
    "M": lambda m, w: str(m.month).zfill(w),
    "L": lambda m, w: str(m.month).zfill(w),
    "d": lambda m, w: str(m.day).zfill(w),
    "h": lambda m, w: str(m.hour % 12 or 12).zfill(w),
    "H": lambda m, w: str(m.hour).zfill(w),
    "K": lambda m, w: str(m.hour % 12).zfill(w),
    "k": lambda m, w: str(m.hour or 24).zfill(w),
    "m": lambda m, w: str(m.minute).zfill(w),
    "s": lambda m, w: str(m.second).zfill(w),
    "S": lambda m, w: f"{m.microsecond:06d}"[:w],
}


def _zone_text(fields: _BabelFields, token: str) -> str:
    """Babel's zone names, with CLDR's localized GMT format where Babel prints +0530 or nothing."""
    if token in ("O", "z", "zz", "zzz"):
        name = fields["z"] if token != "O" else None
        if name and name[0] not in "+-":
            return name
        return _short_gmt(fields["OOOO"])
    return fields[token] or _short_gmt(fields["OOOO"])


def _short_gmt(long_gmt: str) -> str:
    """GMT+05:30 → GMT+5:30, GMT-05:00 → GMT-5, GMT+00:00 → GMT (UTS 35's short GMT format)."""
    match = re.search(r"([+-])(\d\d):(\d\d)", long_gmt)
    if not match:
        return long_gmt
    sign, hours, minutes = match.groups()
    if hours == "00" and minutes == "00":
        offset = ""
    else:
        offset = sign + str(int(hours)) + ("" if minutes == "00" else ":" + minutes)
    return long_gmt[: match.start()] + offset + long_gmt[match.end() :]


_OPS = {
    "locales": _op_locales,
    "supported": _op_supported,
    "nf": _op_nf,
    "nf.format": _op_nf_format,
    "nf.parts": _op_nf_parts,
    "dtf": _op_dtf,
    "dtf.format": _op_dtf_format,
    "dtf.parts": _op_dtf_parts,
}
