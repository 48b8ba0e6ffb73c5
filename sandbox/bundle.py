"""Assembles the JavaScript a call evaluates (R6): the call's modules, and only the harness it needs.

A fresh QuickJS context costs about what a bare call costs, and compiling JavaScript is most of the
rest, so a program carries only what its call needs:

- a tool call in module style: each module defined inside its own function, which receives a
  fresh `exports` object and, as parameters named after them, the `exports` of the modules it
  imports (an importer sees its own imports and nothing else), then `$v=<target>.run(input)`.
  The worker reads `$v` itself (a promise is awaited by draining the job queue), serialises it
  with the engine's JSON.stringify under the call's limits, and types whatever escapes;
- checks (publish) and script style (seed 000) use the `$check` / `$script` helpers, compiled with
  their program, which end with a JSON string `[1, value]` or `[0, type, message]`;
- what the environment injects (V2: `log`, `ai.context()`, `Intl` and the locale methods,
  `http.fetch`) and the depth cap on proxy chains are set up only when the bundle's source names
  them, and `ai` and `http` only when the capability profile grants them. Code that reaches them
  under a computed name (`globalThis['lo' + 'g']`) finds nothing: they are not there to be found.

Everything the harness defines starts with `$`, which no module id may contain (R1).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache

from domain.ports import Execution, SourceUnit
from domain.rules import is_valid_id
from sandbox.links import used_members

MAX_LOG_LINES = 50
MAX_LOG_CHARS = 500

# What the environment injects (V2) is compiled into a call's program only when its source names
# it: a small tool that logs nothing costs what a bare context costs. `$host` is the worker's one
# host function, added to the context only for programs that use it.
_LOG = (
    "function log(v){try{v=typeof v=='string'?v:JSON.stringify(v)}catch(e){v='[a value JSON cannot show]'}"
    "$host('l',(''+v).slice(0,%d).toWellFormed())}" % MAX_LOG_CHARS
)
_AI = "globalThis.ai=Object.freeze({context:function(){return JSON.parse($host('c'))}});"
_NAMES = {
    "log": re.compile(r"\blog\b"),
    "ai": re.compile(r"\bai\b"),
    "intl": re.compile(r"Intl|toLocale"),
    "http": re.compile(r"\bhttp\b"),
    "proxy": re.compile(r"\bProxy\b"),
}

# The capabilities compiled into a call's program when its source names them. `Intl` and the
# locale methods load their shims (sandbox.intl) from the host on first use.
_INTL = (
    "(function(H){var I,L=0;function g(){return I||(I=(0,eval)(H('s','intl'))(function(q){return H('i',q)}))}"
    "Object.defineProperty(globalThis,'Intl',{configurable:true,get:function(){var v=g();"
    "Object.defineProperty(globalThis,'Intl',{value:v,writable:true,configurable:true});return v},"
    "set:function(v){Object.defineProperty(globalThis,'Intl',{value:v,writable:true,configurable:true})}});"
    "function S(p,k){var s=p[k]=function(){if(!L){L=1;(0,eval)(H('s','locale'))(g)}var f=p[k];"
    "if(f===s)throw TypeError(k+' is not available');return f.apply(this,arguments)}}"
    "S(Number.prototype,'toLocaleString');S(Date.prototype,'toLocaleString');"
    "S(Date.prototype,'toLocaleDateString');S(Date.prototype,'toLocaleTimeString');S(BigInt.prototype,'toLocaleString')})($host);\n"
)
_HTTP = (
    "globalThis.http=(function(H){var F;return Object.freeze({fetch:function(u,o){"
    "F=F||(0,eval)(H('s','fetch'))(function(q){return H('f',q)});return F.fetch(u,o)}})})($host);\n"
)
# quickjs-ng walks a proxy chain without recursing, but other engines' stack overflows on deep
# chains (CVE-2023-31922) show what they are for: chains deeper than any real use are refused.
_PROXY = (
    "(function(P){var d=new WeakMap;function c(t){var n=(d.get(t)||0)+1;if(n>10000)"
    "throw RangeError('Maximum call stack size exceeded (proxies nested deeper than 10000)');return n}"
    "function X(t,h){if(!new.target)throw TypeError(\"Constructor Proxy requires 'new'\");var n=c(t),p=new P(t,h);d.set(p,n);return p}"
    "X.revocable=function(t,h){var n=c(t),r=P.revocable(t,h);d.set(r.proxy,n);return r};globalThis.Proxy=X})(Proxy);\n"
)

_RESULT = """function $e(e,t){try{e=e&&e.name?e.name+': '+e.message:String(e)}catch(x){e='an unprintable value was thrown'}return JSON.stringify([0,t||'',e])}
function $s(v){var t=typeof v;try{if(t=='function'||t=='symbol'||t=='bigint')throw TypeError('the result is a '+t+', which is not JSON');return JSON.stringify([1,v===undefined?null:v])}catch(e){return $e(e,'result')}}
"""
_CHECK = _RESULT + """function $check(load,links,tool){try{var t=load();
var x=links.filter(function(l){var m=$m[l[0]];return m===null||m===undefined||!(l[1] in Object(m))});
if(x.length)return $e({name:'LinkError',message:x.map(function(l){return 'uses '+l[0]+'.'+l[1]+', which '+l[0]+' does not export'}).join('; ')},'link');
if(tool&&typeof t.run!='function')return $e({name:'LinkError',message:'a tool module must assign a function to exports.run'},'link');
return $s(true)}catch(e){return $e(e)}}
"""
_SCRIPT = _RESULT + """function $script(load,imports,i,source,run){try{load();if(!run)return $s(true);
for(var k=0;k<imports.length;k++)globalThis[imports[k]]=$m[imports[k]];for(var p in i)globalThis[p]=i[p];
var v;try{v=(0,eval)(source)}catch(x){if(x instanceof SyntaxError&&/return not in a function/.test(x.message))v=$body();else throw x}
return $s(v)}catch(e){return $e(e)}}
"""


@dataclass(frozen=True)
class Program:
    text: str
    # (first line in the program, unit name) for every unit, to place a syntax error.
    unit_lines: tuple[tuple[int, str], ...]
    # "value": the worker reads `$v`; "json": the program's value is the JSON outcome.
    kind: str = "value"
    # Whether the program calls the worker's host function (`log`, `ai`, `Intl`, `http`).
    host: bool = False

    def locate(self, line: int) -> tuple[str, int] | None:
        """The unit and its own line number for a line of the program."""
        found = None
        for first, name in self.unit_lines:
            if line >= first:
                found = (name, line - first + 1)
        return found


@lru_cache(maxsize=1024)
def _units(units: tuple[SourceUnit, ...], first_line: int) -> tuple[str, tuple[tuple[int, str], ...], frozenset[str]]:
    """Statements that define each unit's exports in `$m`; their line map; the capabilities named."""
    parts = []
    unit_lines: list[tuple[int, str]] = []
    line = first_line
    for unit in units:
        params = ",".join(("exports", *unit.imports))
        args = ",".join(("{}", *(f"$m[{json.dumps(i)}]" for i in unit.imports)))
        unit_lines.append((line + 1, unit.name))
        text = f"$m[{json.dumps(unit.name)}]=(function({params}){{\n{unit.content}\n;return exports}})({args});\n"
        parts.append(text)
        line += text.count("\n")
    return "".join(parts), tuple(unit_lines), _named(units)


def _named(units: tuple[SourceUnit, ...]) -> frozenset[str]:
    source = "".join(unit.content for unit in units)
    return frozenset(name for name, pattern in _NAMES.items() if pattern.search(source))


@lru_cache(maxsize=64)
def _setup(named: frozenset[str], http: bool, context: bool) -> str:
    """One line that sets up what the source names and the capability profile grants."""
    parts = []
    if "log" in named:
        parts.append(_LOG)
    if "ai" in named and context:
        parts.append(_AI)
    if "intl" in named:
        parts.append(_INTL)
    if "http" in named and http:
        parts.append(_HTTP)
    if "proxy" in named:
        parts.append(_PROXY)
    return "".join(parts).replace("\n", "")


@lru_cache(maxsize=1024)
def _links(units: tuple[SourceUnit, ...]) -> str:
    return json.dumps([[dep, member] for unit in units for dep, member in used_members(unit.content, unit.imports)])


def _input(value: object, dates: tuple[str, ...]) -> str:
    """The input as a JavaScript expression: a literal (JSON is JavaScript) unless it holds a
    `__proto__` key, which a literal would turn into a prototype; `date` parameters become Dates."""
    text = json.dumps(value)
    if "__proto__" in text:
        text = f"JSON.parse({json.dumps(text)})"
    if dates:
        text = f"(function(i,d){{for(var k of d)if(typeof i[k]=='string')i[k]=new Date(i[k]);return i}})({text},{json.dumps(list(dates))})"
    return text


def build_program(execution: Execution, *, check: bool, http: bool = True, context: bool = True) -> Program:
    """The call's program for a run (`check=False`) or a load-and-link check (`check=True`);
    `http.fetch` and `ai.context()` exist only when the capability profile grants them."""
    if execution.style == "script":
        # The script is also compiled as the body of `$body`: a syntax error then escapes the
        # evaluation with its line, and a script that ends with an explicit `return` runs as a body.
        script = execution.target
        prefix = f"var $m={{}};\n{_SCRIPT}function $body(){{\n{script.content}\n}}\n"
        libraries, library_lines, _ = _units(execution.units[:-1], prefix.count("\n") + 2)
        setup = _setup(_named(execution.units), http, context)
        unit_lines = ((_SCRIPT.count("\n") + 3, script.name), *library_lines)
        parameters = {k: v for k, v in (execution.input or {}).items() if is_valid_id(k)}
        text = prefix + (
            f"$script(function(){{\n{libraries}}},{json.dumps(list(script.imports))},"
            f"{_input(parameters, execution.date_parameters)},{json.dumps(script.content)},{'false' if check else 'true'})"
        )
        return Program(text=setup + text, unit_lines=unit_lines, kind="json", host="$host" in setup)
    if check:
        head = "var $m={};\n" + _CHECK + "$check(function(){\n"
        body, unit_lines, named = _units(execution.units, head.count("\n") + 1)
        setup = _setup(named, http, context)
        text = (
            head + body + f"return $m[{json.dumps(execution.target.name)}]}},"
            f"{_links(execution.units)},{'true' if execution.is_tool else 'false'})"
        )
        return Program(text=setup + text, unit_lines=unit_lines, kind="json", host="$host" in setup)
    head, unit_lines, host = _run_head(execution.units, http, context)
    return Program(text=f"{head}{_input(execution.input, execution.date_parameters)})", unit_lines=unit_lines, kind="value", host=host)


@lru_cache(maxsize=1024)
def _run_head(units: tuple[SourceUnit, ...], http: bool, context: bool) -> tuple[str, tuple[tuple[int, str], ...], bool]:
    """A tool call's program up to its input: the setup, the modules, `$v=<target>.run(`."""
    body, unit_lines, named = _units(units, 2)
    setup = _setup(named, http, context)
    return f"{setup}var $m={{}};\n{body}$v=$m[{json.dumps(units[-1].name)}].run(", unit_lines, "$host" in setup
