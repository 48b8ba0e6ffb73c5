"""`python -m bench.intl_vs_node`: the sandbox's `Intl` against Node's, case by case.

Two hundred formatting cases (locales × styles × options) run through the sandbox's Intl — the
shim and host function a tool's JavaScript gets, in a QuickJS context built as the sandbox builds
it — and through one `node` process that evaluates the same expressions. The table counts the exact
matches and lists each difference. `tests/contract/test_intl_vs_node.py` holds the differences we
accept (CLDR release or data Babel lacks), each with its reason, and fails on any other.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys


@dataclasses.dataclass(frozen=True)
class Case:
    """One formatting: `Intl.<kind>(locale, options).<method>(value)`; value is a JS expression."""

    kind: str  # "NumberFormat" or "DateTimeFormat"
    locale: str
    options: dict
    value: str
    method: str = "format"  # or "formatToParts", compared as JSON

    @property
    def id(self) -> str:
        options = json.dumps(self.options, separators=(",", ":"), ensure_ascii=False)
        return f"{self.locale} {options} {self.value}" + ("" if self.method == "format" else f" ({self.method})")

    @property
    def source(self) -> str:
        value = f"new Date({self.value})" if self.kind == "DateTimeFormat" else self.value
        options = json.dumps(self.options, ensure_ascii=False)
        call = f"new Intl.{self.kind}({json.dumps(self.locale)}, {options}).{self.method}({value})"
        return call if self.method == "format" else f"JSON.stringify({call})"


def _nf(locale: str, options: dict, *values: str) -> list[Case]:
    return [Case("NumberFormat", locale, options, value) for value in values]


def _cases() -> list[Case]:
    cases: list[Case] = []
    # decimal, the locale's grouping and symbols
    for locale in ("en-US", "de-DE", "fr-FR", "ja-JP", "hi-IN", "es-ES", "pt-BR", "de-CH", "sv-SE", "pl-PL", "it-IT", "ru-RU"):
        cases += _nf(locale, {}, "1234567.891", "-0.5")
    # decimal digit options, grouping and sign display
    cases += _nf("en-US", {"minimumFractionDigits": 2}, "5")
    cases += _nf("en-US", {"maximumFractionDigits": 1}, "1.25")
    cases += _nf("en-US", {"minimumIntegerDigits": 3}, "5")
    cases += _nf("en-US", {"useGrouping": False}, "1234567.5")
    cases += _nf("en-US", {"signDisplay": "exceptZero"}, "0", "-1")
    cases += _nf("en-US", {"signDisplay": "negative"}, "-0")
    cases += _nf("en-US", {"signDisplay": "never"}, "-5")
    for locale in ("en-US", "de-DE"):
        cases += _nf(locale, {"maximumFractionDigits": 0}, "2.5", "-2.5")
        cases += _nf(locale, {"maximumSignificantDigits": 3}, "123456")
        cases += _nf(locale, {"minimumSignificantDigits": 5}, "1.5")
        cases += _nf(locale, {"minimumSignificantDigits": 2, "maximumSignificantDigits": 4}, "0.000123456")
        cases += _nf(locale, {"signDisplay": "always"}, "5", "0")
    cases += _nf("en-US", {}, "-0", "NaN", "-Infinity", "12345678901234567890n")
    cases += _nf("es-ES", {}, "1234", "12345")
    cases += _nf("pl-PL", {}, "1234")
    cases += _nf("en-US", {"useGrouping": "min2"}, "1234", "12345")
    # percent
    for locale in ("en-US", "de-DE", "fr-FR", "ja-JP", "es-ES", "tr-TR"):
        cases += _nf(locale, {"style": "percent"}, "0.256", "-0.5")
    cases += _nf("en-US", {"style": "percent", "minimumFractionDigits": 1}, "0.12345")
    cases += _nf("en-US", {"style": "percent", "signDisplay": "always"}, "0.5")
    # currency, four displays
    pairs = (("en-US", "USD"), ("en-US", "EUR"), ("en-US", "JPY"), ("de-DE", "EUR"), ("de-DE", "USD"), ("fr-FR", "EUR"),
             ("ja-JP", "JPY"), ("en-GB", "GBP"), ("de-CH", "CHF"), ("zh-CN", "CNY"), ("ko-KR", "KRW"))  # fmt: skip
    for locale, currency in pairs:
        for display in ("symbol", "code", "name", "narrowSymbol"):
            cases += _nf(locale, {"style": "currency", "currency": currency, "currencyDisplay": display}, "1234.5")
    # currency: negative, accounting, sign display, digits
    for locale, currency in (("en-US", "USD"), ("de-DE", "EUR"), ("fr-FR", "EUR"), ("ja-JP", "JPY")):
        cases += _nf(locale, {"style": "currency", "currency": currency}, "-5")
    for locale, currency in (("en-US", "USD"), ("de-DE", "EUR")):
        cases += _nf(locale, {"style": "currency", "currency": currency, "currencySign": "accounting"}, "-5")
    cases += _nf("en-US", {"style": "currency", "currency": "USD", "signDisplay": "always"}, "5")
    cases += _nf("en-US", {"style": "currency", "currency": "USD", "currencyDisplay": "name"}, "1")
    cases += _nf("en-US", {"style": "currency", "currency": "USD", "maximumFractionDigits": 0}, "1234.5")
    cases += _nf("en-US", {"style": "currency", "currency": "XYZ"}, "1234.5")
    # unit, three displays
    for unit in ("kilometer-per-hour", "celsius", "liter", "megabyte", "foot"):
        for display in ("short", "long", "narrow"):
            cases += _nf("en-US", {"style": "unit", "unit": unit, "unitDisplay": display}, "16")
    for locale in ("de-DE", "fr-FR", "ja-JP"):
        for display in ("short", "long"):
            cases += _nf(locale, {"style": "unit", "unit": "kilometer", "unitDisplay": display}, "1.5")
    cases += _nf("en-US", {"style": "unit", "unit": "hour", "unitDisplay": "long"}, "1", "-2")
    cases += _nf("en-US", {"style": "unit", "unit": "byte"}, "1024", "1")  # default short
    cases += _nf("en-US", {"style": "unit", "unit": "percent"}, "50")
    cases += _nf("en-US", {"style": "unit", "unit": "liter-per-kilometer", "unitDisplay": "long"}, "3")
    # compact
    for locale in ("en-US", "de-DE", "ja-JP", "fr-FR"):
        for display in ("short", "long"):
            cases += _nf(locale, {"notation": "compact", "compactDisplay": display}, "1234", "1500000")
    cases += _nf("en-US", {"notation": "compact"}, "999999", "0.123", "-12345", "987654321")
    # scientific and engineering
    cases += _nf("en-US", {"notation": "scientific"}, "123456", "0.00012", "-1.5")
    cases += _nf("de-DE", {"notation": "scientific"}, "123456")
    cases += _nf("en-US", {"notation": "engineering"}, "123456", "0.00012", "1234")
    cases += _nf("en-US", {"notation": "scientific", "maximumSignificantDigits": 2}, "99999")
    # DateTimeFormat: 2024-01-15T14:30:00Z, a Monday
    moment = "Date.UTC(2024, 0, 15, 14, 30, 0)"
    for locale in ("en-US", "en-GB", "de-DE", "ja-JP"):
        for style in ({}, {"dateStyle": "full"}, {"dateStyle": "short"}, {"timeStyle": "short"}):
            cases.append(Case("DateTimeFormat", locale, {"timeZone": "UTC", **style}, moment))
    for options in (
        {"dateStyle": "medium", "timeStyle": "medium"},
        {"month": "short", "day": "numeric"},
        {"weekday": "long", "year": "numeric", "month": "long", "day": "numeric"},
        {"hour": "numeric", "minute": "2-digit", "timeZone": "America/New_York"},
        {"timeStyle": "long", "timeZone": "Asia/Tokyo"},
        {"year": "numeric", "month": "2-digit", "day": "2-digit", "hour": "2-digit", "minute": "2-digit", "hour12": False},
    ):
        cases.append(Case("DateTimeFormat", "en-US", {"timeZone": "UTC", **options}, moment))
    return cases


CASES = _cases()

_NNBSP = (
    "CLDR puts a narrow no-break space (U+202F) before AM/PM; Node's V8 replaces it with a plain space "
    "in format() for web compatibility; Babel keeps CLDR's, and tests/unit/test_intl.py "
    "asserts the U+202F."
)
# Differences we accept, by case id, each with why.
ACCEPTED: dict[str, str] = {
    'en-US {"timeZone":"UTC","timeStyle":"short"} Date.UTC(2024, 0, 15, 14, 30, 0)': _NNBSP,
    'en-US {"timeZone":"UTC","dateStyle":"medium","timeStyle":"medium"} Date.UTC(2024, 0, 15, 14, 30, 0)': _NNBSP,
    'en-US {"timeZone":"Asia/Tokyo","timeStyle":"long"} Date.UTC(2024, 0, 15, 14, 30, 0)': _NNBSP,
}
# formatToParts for each NumberFormat case: the part types are what Babel's strings do not carry.
PARTS_CASES = [dataclasses.replace(case, method="formatToParts") for case in CASES if case.kind == "NumberFormat"]


def sandbox_results(cases: list[Case]) -> dict[str, str]:
    """Each case through the sandbox's Intl, built as sandbox.bundle builds it for a tool's code."""
    import _quickjs

    from sandbox.intl import INTL_JS, LOCALE_JS, intl_call

    ctx = _quickjs.Context()
    ctx.add_callable("$intl", intl_call)
    ctx.eval("var Intl=(" + INTL_JS + ")($intl); delete globalThis.$intl; (" + LOCALE_JS + ")(function(){return Intl})")
    wrap = "(function(){try{return String(%s)}catch(e){return 'ERROR ' + e.name + ': ' + e.message}})()"
    return {case.id: ctx.eval(wrap % case.source) for case in cases}


_NODE_SCRIPT = r"""
let input = "";
process.stdin.on("data", (chunk) => { input += chunk; });
process.stdin.on("end", () => {
  const out = {};
  for (const [id, source] of JSON.parse(input)) {
    try { out[id] = String((0, eval)(source)); } catch (e) { out[id] = "ERROR " + e.name + ": " + e.message; }
  }
  process.stdout.write(JSON.stringify(out));
});
"""


def node_results(cases: list[Case], node: str = "node") -> dict[str, str]:
    """Each case through Node's Intl, all in one process (the cases go in as JSON on stdin)."""
    request = json.dumps([[case.id, case.source] for case in cases])
    done = subprocess.run([node, "-e", _NODE_SCRIPT], input=request, capture_output=True, text=True, timeout=120, check=True)
    return json.loads(done.stdout)


def compare(cases: list[Case] = CASES, node: str = "node") -> tuple[dict[str, str], dict[str, str], list[str]]:
    """Ours, Node's, and the ids of the cases where they differ."""
    ours, theirs = sandbox_results(cases), node_results(cases, node)
    return ours, theirs, [case.id for case in cases if ours[case.id] != theirs[case.id]]


def report(cases: list[Case], ours: dict[str, str], theirs: dict[str, str], reasons: dict[str, str] | None = None) -> str:
    """The table: exact matches out of the total, then each difference with Node's and our output."""
    reasons = reasons or {}
    differences = [case for case in cases if ours[case.id] != theirs[case.id]]
    lines = [f"Intl, sandbox against Node {_node_version()}: {len(cases) - len(differences)} of {len(cases)} exact matches"]
    for case in differences:
        lines.append(f"- {case.kind} {case.id}")
        lines.append(f"    node: {theirs[case.id]!r}")
        lines.append(f"    ours: {ours[case.id]!r}")
        if case.id in reasons:
            lines.append(f"    why:  {reasons[case.id]}")
    return "\n".join(lines)


def _node_version() -> str:
    try:
        done = subprocess.run(["node", "-p", "process.version + ' (CLDR ' + process.versions.cldr + ')'"],
                              capture_output=True, text=True, timeout=30)  # fmt: skip
        return done.stdout.strip()
    except OSError:
        return "(absent)"


def main() -> int:
    if shutil.which("node") is None:
        print("node is not installed", file=sys.stderr)
        return 2
    ours, theirs, _ = compare(CASES + PARTS_CASES)
    print(report(CASES, ours, theirs, ACCEPTED))
    print()
    print(report(PARTS_CASES, ours, theirs, ACCEPTED).replace(" exact matches", " exact matches of formatToParts"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
