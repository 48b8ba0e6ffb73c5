"""The hostile JavaScript of the adversarial suite, as data: each case a module-style source, the
input `run` gets, and what the call must give.

`expect` is one of:
- `("value", v)`: no error, and the output is exactly `v` (JSON equality, ints stay ints);
- `("error", {types})`: an error result whose type is one of `types`;
- `("typed", None)`: a value, or an error of one of the typed kinds (never a 500, crash or hang).

Sources that name `log` get the harness's host function `$host` in scope (sandbox.bundle), so a
case can call it directly, as any module can.
"""

from __future__ import annotations

from typing import Any

TYPED = {"runtime", "memory", "result", "timeout", "stack", "syntax"}
NUMBER_FORMAT = "new Intl.NumberFormat('en-US', {style: 'currency', currency: 'USD'}).format(1234.5)"
MB = 1024 * 1024


def case(id: str, source: str, expect: tuple[str, Any], *, input: Any = None, timeout_millis: int = 1000, memory_mb: int | None = None) -> dict[str, Any]:
    return {"id": id, "source": source, "expect": expect, "input": input, "timeout_millis": timeout_millis, "memory_mb": memory_mb}


def run(body: str) -> str:
    return "exports.run = function (input) { " + body + " };"


def arun(body: str) -> str:
    return "exports.run = async function (input) { " + body + " };"


# A 30 MB JSON text of ten million empty objects: small for the engine, huge once Python parses it.
MANY_OBJECTS = "('[' + '{},'.repeat(10 * 1024 * 1024) + '{}]').toWellFormed()"

# -- the host function called directly, with bad kinds and payloads -------------------------------

# What a direct call may give: a string or nothing back, or a JavaScript error the code can catch
# (or a typed error result: a payload too big for the call's memory is a `memory` error).
_DIRECT = "log; try { var r = $host(%s); return [typeof r === 'string' || r === undefined || r === null ? 'answered' : typeof r]; } catch (e) { return ['threw', e instanceof Error]; }"

KINDS = {
    "number": "1",
    "nan": "NaN",
    "null": "null",
    "undefined": "undefined",
    "object": "{}",
    "array": "['l']",
    "proxy": "new Proxy({}, {get: function () { throw new Error('trap'); }})",
    "symbol": "Symbol('l')",
    "bigint": "10n",
    "function": "function () { return 'l'; }",
    "unknown-letter": "'x'",
    "lone-surrogate": "'\\ud800'",
    "nul": "'l\\u0000'",
    "huge": "'l'.repeat(5 * 1024 * 1024)",
}
PAYLOADS = {
    "number": "42",
    "object": "{toString: function () { throw new Error('toString'); }}",
    "proxy": "new Proxy({}, {get: function () { throw new Error('trap'); }, ownKeys: function () { throw new Error('keys'); }})",
    "revoked-proxy": "(function () { var r = Proxy.revocable({}, {}); r.revoke(); return r.proxy; })()",
    "lone-surrogate": "'\\ud800\\udfff\\udc00'",
    "nul": "'a\\u0000b'",
    "not-json": "'{'",
    "json-deep": "'['.repeat(100000) + ']'.repeat(100000)",
    "symbol": "Symbol('s')",
}
HOST_LETTERS = ["l", "c", "i", "f", "s"]


def _direct_cases() -> list[dict[str, Any]]:
    cases = [case(f"host-kind-{name}", run(_DIRECT % f"{kind}, 'x'"), ("one-of", [["answered"], ["threw", True]])) for name, kind in KINDS.items()]
    for letter in HOST_LETTERS:
        for name, payload in PAYLOADS.items():
            cases.append(case(f"host-{letter}-{name}", run(_DIRECT % f"'{letter}', {payload}"), ("one-of", [["answered"], ["threw", True]])))
    cases += [
        case("host-no-arguments", run(_DIRECT % ""), ("one-of", [["answered"], ["threw", True]])),
        case("host-many-arguments", run(_DIRECT % "'l', 'a', 'b', 'c', {}, []"), ("one-of", [["answered"], ["threw", True]])),
        case("host-as-constructor", run("log; try { new $host('l', 'x'); return 'made'; } catch (e) { return 'threw'; }"), ("typed", None)),
        case("host-called-with-this", run("log; try { return typeof $host.call({}, 'c'); } catch (e) { return 'threw'; }"), ("typed", None)),
        # A payload the host must read as a whole before it can refuse it (finding 1): a memory error
        # or an answer, never a worker that grows without bound or a failed service.
        case("host-intl-many-objects", run("log; return typeof $host('i', " + MANY_OBJECTS + ");"), ("typed", None), memory_mb=64, timeout_millis=5000),
        case("host-fetch-many-objects", run("log; return typeof $host('f', " + MANY_OBJECTS + ");"), ("typed", None), memory_mb=64, timeout_millis=5000),
        case("host-log-30mb", run("log; $host('l', 'x'.repeat(30 * 1024 * 1024)); return 'logged';"), ("typed", None), memory_mb=64, timeout_millis=5000),
        # where the harness hides `$host` from the program altogether, these are a ReferenceError
        case("host-source-unknown", run("log; return $host('s', 'nothing');"), ("value-or-unreachable", "undefined")),
        case("host-context-no-token", run("log; return $host('c').indexOf('tsa_') === -1;"), ("value-or-unreachable", True)),
    ]
    return cases


# -- prototype pollution before Intl and http.fetch --------------------------------------------------

POLLUTIONS = {
    "object-getter-throws": "Object.defineProperty(Object.prototype, 'style', {get: function () { throw new Error('polluted'); }, configurable: true});",
    "object-then": "Object.prototype.then = function (ok) { ok('hijacked'); };",
    "object-toJSON": "Object.prototype.toJSON = function () { return 'hijacked'; };",
    "object-locale": "Object.prototype.locale = 'xx-invalid'; Object.prototype.currency = 'XXX';",
    "array-join": "Array.prototype.join = function () { throw new Error('polluted join'); };",
    "array-iterator": "Array.prototype[Symbol.iterator] = function () { throw new Error('polluted iterator'); };",
    "array-push-map": "Array.prototype.push = function () { return 0; }; Array.prototype.map = function () { return []; };",
    "json-parse": "JSON.parse = function () { return {status: 200, text: 'forged', headers: {}}; };",
    "json-stringify": "JSON.stringify = function () { return '{\"url\":\"http://169.254.169.254/\"}'; };",
    "json-both-throw": "JSON.parse = JSON.stringify = function () { throw new Error('polluted JSON'); };",
    "string-methods": "String.prototype.replace = String.prototype.split = String.prototype.slice = function () { throw new Error('polluted string'); };",
    "string-toString": "String.prototype.toString = function () { return 'http://169.254.169.254/'; }; String.prototype.valueOf = String.prototype.toString;",
    "function-apply-call": "Function.prototype.apply = Function.prototype.call = function () { throw new Error('polluted apply'); };",
    "promise-then": "Promise.prototype.then = function () { throw new Error('polluted then'); };",
    "error-constructor": "Error = function () { return {message: 'forged'}; }; TypeError = Error;",
    "object-freeze": "Object.freeze = function (o) { return o; }; Object.keys = function () { return ['__proto__']; };",
}


def _pollution_cases() -> list[dict[str, Any]]:
    cases = []
    for name, pollution in POLLUTIONS.items():
        # Intl still formats correctly, or the call fails with a typed error
        cases.append(case(f"pollute-{name}-intl", run(f"{pollution} return {NUMBER_FORMAT};"), ("value-or", ("$1,234.50", TYPED))))
        # http.fetch to a listener nobody allowed never reaches it (the test checks the listener). What
        # the promise resolves to is the program's own business: code that replaced JSON.parse
        # before its first fetch can forge an answer for itself, as it could replace globalThis.http.
        fetch = (
            f"{pollution} try {{ var r = await http.fetch('{{LISTENER}}'); "
            "return 'resolved ' + String(r && r.status); } catch (e) { return 'refused'; }"
        )
        cases.append(case(f"pollute-{name}-fetch", arun(fetch), ("typed", None)))
    return cases


# -- getters and Symbol.toPrimitive on option objects ------------------------------------------------

OPTION_TRICKS = {
    "getter-throws": "{get style() { throw new Error('getter'); }}",
    "getter-loops": "{get style() { for (;;) {} }}",
    "toPrimitive-throws": "{style: {[Symbol.toPrimitive]: function () { throw new Error('prim'); }}}",
    "toPrimitive-huge": "{currency: {[Symbol.toPrimitive]: function () { return 'U'.repeat(1024 * 1024); }}, style: 'currency'}",
    "toPrimitive-surrogate": "{currency: {[Symbol.toPrimitive]: function () { return '\\ud800SD'; }}, style: 'currency'}",
    "valueOf-digits": "{minimumFractionDigits: {valueOf: function () { return 1e9; }}}",
    "proxy-options": "new Proxy({}, {get: function (t, k) { if (k === 'style') throw new Error('proxy'); return undefined; }})",
    "proxy-ownKeys": "new Proxy({}, {ownKeys: function () { throw new Error('keys'); }})",
}
DATE_TRICKS = {
    "getter-throws": "{get timeZone() { throw new Error('getter'); }}",
    "getter-loops": "{get year() { for (;;) {} }}",
    "toPrimitive-throws": "{timeZone: {[Symbol.toPrimitive]: function () { throw new Error('prim'); }}}",
    "toPrimitive-huge": "{timeZone: {[Symbol.toPrimitive]: function () { return 'U'.repeat(1024 * 1024); }}}",
    "toPrimitive-surrogate": "{timeZone: {[Symbol.toPrimitive]: function () { return 'UT\\ud800'; }}}",
    "valueOf-digits": "{fractionalSecondDigits: {valueOf: function () { return 1e9; }}}",
    "proxy-options": "new Proxy({}, {get: function (t, k) { if (k === 'timeZone') throw new Error('proxy'); return undefined; }})",
    "proxy-ownKeys": "new Proxy({}, {ownKeys: function () { throw new Error('keys'); }})",
}
FETCH_TRICKS = {
    "method-getter-throws": "{get method() { throw new Error('getter'); }}",
    "method-toPrimitive": "{method: {[Symbol.toPrimitive]: function () { return 'CONNECT'; }}}",
    "headers-proxy": "{headers: new Proxy({}, {ownKeys: function () { throw new Error('keys'); }})}",
    "headers-toString-crlf": "{headers: {'X-A': {toString: function () { return 'a\\r\\nHost: evil'; }}}}",
    "headers-getter-loops": "{headers: {get 'X-A'() { for (;;) {} }}}",
    "body-toPrimitive": "{method: 'POST', body: {[Symbol.toPrimitive]: function () { return 'x'; }}}",
    "options-proxy": "new Proxy({}, {get: function () { throw new Error('trap'); }})",
    "url-object-toString": "{}",
}


def _option_cases() -> list[dict[str, Any]]:
    cases = []
    for name, options in OPTION_TRICKS.items():
        expect = ("error", {"timeout"}) if "loops" in name else ("typed", None)
        cases.append(case(f"intl-number-{name}", run(f"return new Intl.NumberFormat('en-US', {options}).format(1234.5);"), expect))
        date = DATE_TRICKS[name]
        cases.append(case(f"intl-date-{name}", run(f"return new Intl.DateTimeFormat('en-US', {date}).format(new Date(0));"), expect))
    cases.append(case("intl-locale-toString-throws", run("return new Intl.NumberFormat({toString: function () { throw new Error('x'); }}).format(1);"), ("typed", None)))
    cases.append(case("intl-locale-proxy", run("return new Intl.NumberFormat(new Proxy(['en-US'], {get: function () { throw new Error('x'); }})).format(1);"), ("typed", None)))
    cases.append(case("intl-locale-huge", run("return new Intl.NumberFormat('en-' + 'a'.repeat(1024 * 1024)).format(1);"), ("typed", None)))
    cases.append(case("tolocalestring-options-getter", run("return (1234.5).toLocaleString('en-US', {get style() { throw new Error('getter'); }});"), ("typed", None)))
    for name, options in FETCH_TRICKS.items():
        url = "{toString: function () { return '{LISTENER}'; }}" if name == "url-object-toString" else "'{LISTENER}'"
        body = f"try {{ var r = await http.fetch({url}, {options}); return 'resolved ' + r.status; }} catch (e) {{ return 'refused'; }}"
        expect = ("error", {"timeout"}) if "loops" in name else ("value", "refused")
        cases.append(case(f"fetch-{name}", arun(body), expect))
    return cases


# -- Proxies given to host-facing APIs, and thrown ----------------------------------------------------

_TRAPS = "{get: function () { throw new Error('get'); }, ownKeys: function () { throw new Error('keys'); }, getOwnPropertyDescriptor: function () { throw new Error('desc'); }}"


def _proxy_cases() -> list[dict[str, Any]]:
    return [
        case("log-proxy-throwing", run(f"log(new Proxy({{}}, {_TRAPS})); return 'logged';"), ("value-or", ("logged", TYPED))),
        case("log-proxy-revoked", run("var r = Proxy.revocable({}, {}); r.revoke(); log(r.proxy); return 'logged';"), ("value-or", ("logged", TYPED))),
        case("log-proxy-deep-chain", run("var p = {}; for (var i = 0; i < 20000; i++) p = new Proxy(p, {}); log(p); return 'logged';"), ("typed", None)),
        case("result-proxy-throwing", run(f"return new Proxy({{a: 1}}, {_TRAPS});"), ("error", {"result", "runtime"})),
        case("result-proxy-revoked", run("var r = Proxy.revocable({}, {}); r.revoke(); return r.proxy;"), ("error", {"result", "runtime"})),
        case("result-proxy-plain", run("return new Proxy({a: 1}, {});"), ("value", {"a": 1})),
        case("result-proxy-lying-keys", run("return new Proxy({}, {ownKeys: function () { return ['a', 'b']; }, getOwnPropertyDescriptor: function () { return {value: 1, enumerable: true, configurable: true}; }});"), ("typed", None)),
        case("result-promise-resolves-proxy", arun(f"return new Proxy({{}}, {_TRAPS});"), ("error", {"result", "runtime"})),
        # finding 12: a thrown Proxy is a typed runtime error in the program's words, not the binding's
        case("throw-proxy", run("throw new Proxy({}, {});"), ("error-message-not", ("runtime", "Concurrency issue"))),
        case("throw-proxy-throwing", run(f"throw new Proxy({{}}, {_TRAPS});"), ("error-message-not", ("runtime", "Concurrency issue"))),
        case("reject-with-proxy", arun(f"throw new Proxy({{}}, {_TRAPS});"), ("error-message-not", ("runtime", "Concurrency issue"))),
        case("intl-format-proxy-number", run(f"return new Intl.NumberFormat('en-US').format(new Proxy({{}}, {_TRAPS}));"), ("typed", None)),
        case("context-proxy-replaced", run("ai.context = new Proxy(function () {}, {apply: function () { throw new Error('x'); }}); return typeof ai.context();"), ("typed", None)),
    ]


# -- deep and huge values, both ways -------------------------------------------------------------------

DEEP = [255, 300, 1000, 10000]


def _deep_cases() -> list[dict[str, Any]]:
    cases = [
        case("result-depth-100-array", run("var v = 1; for (var i = 0; i < 100; i++) v = [v]; return v;"), ("depth", 100)),
        case("result-depth-100-object", run("var v = 1; for (var i = 0; i < 100; i++) v = {k: v}; return JSON.stringify(v).length;"), ("value", 100 * 6 + 1)),
    ]
    for depth in [*DEEP, 100000]:
        types = {"result"} if depth < 100000 else {"result", "stack"}
        cases.append(case(f"result-depth-{depth}-array", run(f"var v = 1; for (var i = 0; i < {depth}; i++) v = [v]; return v;"), ("error", types)))
        cases.append(case(f"result-depth-{depth}-object", run(f"var v = 1; for (var i = 0; i < {depth}; i++) v = {{k: v}}; return v;"), ("error", types)))
        cases.append(case(f"result-depth-{depth}-async", arun(f"var v = 1; for (var i = 0; i < {depth}; i++) v = [v]; return v;"), ("error", types)))
    for depth in DEEP:
        cases.append(case(f"log-depth-{depth}", run(f"var v = 1; for (var i = 0; i < {depth}; i++) v = [v]; log(v); return 'logged';"), ("value-or", ("logged", TYPED))))
        cases.append(case(f"throw-depth-{depth}", run(f"var v = 1; for (var i = 0; i < {depth}; i++) v = [v]; throw v;"), ("error", {"runtime", "stack"})))
    cases += [
        case("result-string-5mb", run("return 'x'.repeat(5 * 1024 * 1024).length;"), ("value", 5 * MB)),
        case("result-string-4mb", run("return 'x'.repeat(4 * 1024 * 1024);"), ("string-length", 4 * MB)),
        case("result-rope-string", run("var s = ''; for (var i = 0; i < 100000; i++) s += 'ab'; return s;"), ("string-length", 200000)),
        case("result-array-1m", run("return new Array(1000000).fill(7);"), ("array-length", 1000000)),
        case("result-object-100k-keys", run("var o = {}; for (var i = 0; i < 100000; i++) o['k' + i] = i; return Object.keys(o).length;"), ("value", 100000)),
        case("result-string-600mb", run("return 'x'.repeat(600 * 1024 * 1024);"), ("error", {"memory"}), memory_mb=128, timeout_millis=5000),
        case("log-string-20mb", run("log('x'.repeat(20 * 1024 * 1024)); return 'logged';"), ("logs-short", 500), memory_mb=128, timeout_millis=5000),
        case("normalize-oom", run("return 'a\\u0301'.repeat(1024 * 1024 * 8).normalize('NFC').length;"), ("error", {"memory"}), memory_mb=16, timeout_millis=5000),
        case("normalize-nfkd-oom", run("return '\\ufdfa'.repeat(1024 * 1024 * 4).normalize('NFKD').length;"), ("error", {"memory"}), memory_mb=16, timeout_millis=5000),
    ]
    return cases


# -- lone surrogates and NUL in results, logs and errors; numbers exact -------------------------------


def _text_cases() -> list[dict[str, Any]]:
    return [
        case("result-nul", run("return 'a\\u0000b';"), ("value", "a\u0000b")),
        case("result-only-nul", run("return '\\u0000';"), ("value", "\u0000")),
        case("result-nul-in-array", run("return ['a\\u0000b', '\\u0000'];"), ("value", ["a\u0000b", "\u0000"])),
        case("result-nul-key", run("var o = {}; o['k\\u0000'] = 'v\\u0000'; return o;"), ("value", {"k\u0000": "v\u0000"})),
        case("result-lone-high", run("return 'a\\ud800b';"), ("value-or", ("a\ufffdb", {"result"}))),
        case("result-lone-low", run("return '\\udc00';"), ("value-or", ("\ufffd", {"result"}))),
        case("result-lone-in-array", run("return ['\\ud800', 'ok'];"), ("value-or", (["\ufffd", "ok"], {"result"}))),
        case("result-lone-key", run("var o = {}; o['\\ud800'] = 1; return o;"), ("value-or", ({"\ufffd": 1}, {"result"}))),
        case("result-lone-nested-key", run("var o = {}; o['\\udfff'] = 1; return {a: [o]};"), ("value-or", ({"a": [{"\ufffd": 1}]}, {"result"}))),
        case("result-pair-kept", run("return '\\ud83d\\ude00';"), ("value", "\U0001F600")),
        case("result-nul-and-lone", run("return '\\u0000\\ud800';"), ("value-or", ("\u0000\ufffd", {"result"}))),
        case("log-nul", run("log('a\\u0000b'); return 1;"), ("logs", ["a\u0000b"])),
        case("log-lone", run("log('a\\ud800'); return 1;"), ("logs", ["a\ufffd"])),
        case("log-object-with-nul-and-lone", run("var o = {}; o['\\ud800'] = '\\u0000'; log(o); return 1;"), ("logs-any", None)),
        case("throw-message-nul", run("throw new Error('a\\u0000b');"), ("error-message", ("runtime", "a\u0000b"))),
        case("throw-message-lone", run("throw new Error('a\\ud800');"), ("error", {"runtime"})),
        case("throw-string-lone", run("throw '\\udc00';"), ("error", {"runtime"})),
        case("int-2-31", run("return 2 ** 31;"), ("exact", 2147483648)),
        case("int-2-53", run("return 2 ** 53;"), ("exact", 9007199254740992)),
        case("int-negative-2-31", run("return -(2 ** 31) - 1;"), ("exact", -2147483649)),
        case("int-in-array", run("return [2 ** 40, 1];"), ("exact", [1099511627776, 1])),
        case("int-in-object", run("return {n: 4294967296};"), ("exact", {"n": 4294967296})),
        case("float-stays-float", run("return 0.5;"), ("exact", 0.5)),
        case("negative-zero", run("return -0;"), ("value", 0)),
        case("nan-is-null", run("return NaN;"), ("value", None)),
        case("echo-nul-argument", run("return input;"), ("value", {"a\u0000": "b\u0000"}), input={"a\u0000": "b\u0000"}),
    ]


CASES: list[dict[str, Any]] = [*_direct_cases(), *_pollution_cases(), *_option_cases(), *_proxy_cases(), *_deep_cases(), *_text_cases()]
