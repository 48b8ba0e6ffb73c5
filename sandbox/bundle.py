"""Assembles the JavaScript a call evaluates (R6): the call's modules, and only the harness it needs.

A fresh QuickJS context costs about what a bare call costs, and compiling JavaScript is most of the
rest, so a program carries only what its call needs:

- a tool call in module style: each module defined inside its own function, which receives a
  fresh `exports` object and, as parameters named after them, the `exports` of the modules it
  imports (an importer sees its own imports and nothing else), then `$v=<target>.run(input)`.
  The worker reads `$v` itself (a promise is awaited by draining the job queue), serialises it
  with the engine's JSON.stringify under the call's limits, and types whatever escapes;
- a publish check of module-style code is the same program up to `run`, which it does not call:
  it looks for the links instead (`_LINKS`), so module code sees exactly what a call shows it;
- script style (docs/kinds/code-modules.md) uses the `$script` helper, compiled with its program, which ends with a
  JSON string `[1, value]` or `[0, type, message]` (a check only loads the libraries);
- what the environment injects (V2: `log`, `ai.context()`, `Intl` and the locale methods,
  `http.fetch`) and the depth cap on proxy chains are set up only when the bundle's source names
  them, and only what the capability profile grants. Code that reaches them under a computed
  name (`globalThis['lo' + 'g']`) finds nothing: they are not there to be found. The host
  function behind them is held by the harness's closure, never by a global.

Everything the harness defines starts with `$`, which no module id may contain (R1).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache

from domain.ports import Execution, SourceUnit
from domain.rules import is_valid_id
from domain.content import MAX_CONTENT_CHARS
from sandbox.capabilities import Capabilities
from sandbox.links import used_members

MAX_LOG_LINES = 50
MAX_LOG_CHARS = 500
# `ai.progress(done, total, message)`: the message's first characters (docs/javascript.md, "Progress").
MAX_PROGRESS_MESSAGE = 200

# The host function's payload caps, in characters, per kind: `l` a log line as a JSON string (the
# binding's own conversion of a string stops at a NUL, an escape crosses whole; each of the line's
# characters takes at most six), `i` an Intl request,
# `f` an http.fetch request (its body is capped at 1 MiB of UTF-8, which JSON may write with
# six-character escapes), `s` the name of a shim, `c` (ai.context()) none. The harness checks them
# in JavaScript, before a string crosses into Python, so a huge string never reaches the worker's
# own heap: it is refused inside the engine with a RangeError.
HOST_PAYLOAD_CHARS = {"l": 6 * MAX_LOG_CHARS + 2, "i": 1024 * 1024, "f": 6 * 1024 * 1024 + 65536, "s": 16, "c": 0,
                      "p": 6 * MAX_PROGRESS_MESSAGE + 128}

# What the environment injects (V2) is compiled into a call's program only when its source names
# it: a small tool that logs nothing costs what a bare context costs. The worker's one host function
# (`$host`, added to the context only for programs that use it) is captured by the harness's closure
# as `H`, behind the payload caps, and removed from the global object before any module runs:
# module code can reach only what the capability profile put there.
_HOST_OPEN = (
    "(function(R){var C=%s;function H(k,p){if(typeof k!='string'||!(k in C))throw TypeError('unknown host call');"
    "if(p!==undefined&&(typeof p!='string'||p.length>C[k]))throw RangeError(p!==undefined&&typeof p!='string'?"
    "'a host call takes a string':'the sandbox refuses a host call payload longer than '+C[k]+' characters');return R(k,p)}"
) % ("{__proto__:null," + ",".join(f"{k}:{v}" for k, v in HOST_PAYLOAD_CHARS.items()) + "}")
_HOST_CLOSE = "})($host);delete globalThis.$host;"
# A line crosses as the JSON of its first MAX_LOG_CHARS characters, written by the JSON.stringify the
# harness found (the binding's own conversion of a string stops at a NUL; an escape crosses whole).
_LOG = (
    "var J=JSON.stringify;globalThis.log=function log(v){try{v=typeof v=='string'?v:JSON.stringify(v)}catch(e){v='[a value JSON cannot show]'}"
    "H('l',J((''+v).slice(0,%d).toWellFormed()))};" % MAX_LOG_CHARS
)
_NO_LOG = "globalThis.log=function log(v){};"  # the profile withholds the log: lines go nowhere
# `ai.content.*` and `ai.result` (docs/javascript.md, "Rich results") make the values domain.content
# reads as MCP content: plain objects marked `$mcp`, built in JavaScript with no host call, their
# data capped here (`MAX_CONTENT_CHARS`) so that a huge image fails inside the engine, at once.
_AI_MEMBERS = (
    "content:(function(){var C=%d;function s(v,w){if(typeof v!='string')throw TypeError(w+' must be a string');return v}"
    "function b(v,w){s(v,w);if(v.length>C)throw RangeError(w+' is '+v.length+' characters of base64; a result carries at most '+C+"
    "' (about '+(C*3/4/1048576).toFixed(1)+' MiB)');return v}"
    "function o(k,x){x.$mcp=k;return Object.freeze(x)}"
    "function m(v,w){return v===undefined?v:s(v,w)}"
    "function d(u,r,w,keys){var x={uri:s(u,w+': uri')};r=r==null?{}:r;if(typeof r!='object')throw TypeError(w+': the second argument is an object');"
    "for(var i=0;i<keys.length;i++){var k=keys[i],v=r[k];if(v!==undefined)x[k]=k=='blob'?b(v,w+': blob'):s(v,w+': '+k)}return x}"
    "return Object.freeze({"
    "text:function(t){return o('text',{text:s(t,'ai.content.text(text): text')})},"
    "image:function(a,t){return o('image',{data:b(a,'ai.content.image(data, mimeType): data'),mimeType:s(t,'ai.content.image(data, mimeType): mimeType')})},"
    "audio:function(a,t){return o('audio',{data:b(a,'ai.content.audio(data, mimeType): data'),mimeType:s(t,'ai.content.audio(data, mimeType): mimeType')})},"
    "resource:function(u,r){return o('resource',d(u,r,'ai.content.resource(uri, {text or blob, mimeType})',['text','blob','mimeType']))},"
    "link:function(u,r){return o('link',d(u,r,'ai.content.link(uri, {name, title, description, mimeType})',['name','title','description','mimeType']))}"
    "})})(),"
    "result:function(c,v){if(!Array.isArray(c))c=[c];return Object.freeze({$mcp:'result',content:c,structuredContent:v===undefined?null:v})}"
) % MAX_CONTENT_CHARS
_AI = "globalThis.ai=Object.freeze({context:function(){return JSON.parse(H('c'))}," + _AI_MEMBERS + "});"
# `ai` without `ai.context()` (the source never names `context`, or the profile withholds it): no host call.
_AI_BARE = "globalThis.ai=Object.freeze({" + _AI_MEMBERS + "});"
# `ai.progress(done, total, message)` (the source names `progress`): its numbers checked here, and the
# three sent as one JSON array (`p`); the worker drops what would flood the client (sandbox.engine).
# Where the profile withholds the log (a call's one channel back while it runs) it does nothing.
_PROGRESS = (
    "progress:(function(J){var W='ai.progress(done, total, message): ';return function progress(d,t,m){"
    "if(typeof d!='number'||!isFinite(d))throw TypeError(W+'done must be a finite number');"
    "if(t!=null&&(typeof t!='number'||!isFinite(t)))throw TypeError(W+'total must be a finite number or null');"
    "H('p',J([d,t==null?null:t,m==null?null:(''+m).slice(0,%d).toWellFormed()]))}})(JSON.stringify),"
) % MAX_PROGRESS_MESSAGE
_PROGRESS_BARE = "progress:function progress(d,t,m){},"


def _ai(context: bool, progress: bool) -> str:
    """The `ai` object's setup: `ai.context()` and `ai.progress` when they are to reach the host."""
    if not progress:
        return _AI if context else _AI_BARE
    return ("globalThis.ai=Object.freeze({" + ("context:function(){return JSON.parse(H('c'))}," if context else "")
            + _PROGRESS + _AI_MEMBERS + "});")
_NAMES = {
    "log": re.compile(r"\blog\b"),
    "ai": re.compile(r"\bai\b"),
    "context": re.compile(r"\bcontext\b"),
    "intl": re.compile(r"Intl|toLocale"),
    "http": re.compile(r"\bhttp\b"),
    "progress": re.compile(r"\bprogress\b"),
    "proxy": re.compile(r"\bProxy\b"),
    "normalize": re.compile(r"normalize"),
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
    "S(Date.prototype,'toLocaleDateString');S(Date.prototype,'toLocaleTimeString');S(BigInt.prototype,'toLocaleString')})(H);\n"
)
_HTTP = (
    "globalThis.http=(function(H){var F;return Object.freeze({fetch:function(u,o){"
    "F=F||(0,eval)(H('s','fetch'))(function(q){return H('f',q)});return F.fetch(u,o)}})})(H);\n"
)
# quickjs-ng walks a proxy chain without recursing, but other engines' stack overflows on deep
# chains (CVE-2023-31922) show what they are for: chains deeper than any real use are refused.
_PROXY = (
    "(function(P){var d=new WeakMap;function c(t){var n=(d.get(t)||0)+1;if(n>10000)"
    "throw RangeError('Maximum call stack size exceeded (proxies nested deeper than 10000)');return n}"
    "function X(t,h){if(!new.target)throw TypeError(\"Constructor Proxy requires 'new'\");var n=c(t),p=new P(t,h);d.set(p,n);return p}"
    "X.revocable=function(t,h){var n=c(t),r=P.revocable(t,h);d.set(r.proxy,n);return r};globalThis.Proxy=X})(Proxy);\n"
)
# quickjs-ng's String.prototype.normalize fails without an exception value when its buffer cannot
# be allocated (the value thrown is the engine's "uninitialized" marker, `typeof` "unknown"): what
# it throws then is made the out-of-memory error every other allocation failure throws.
_NORMALIZE = (
    "(function(N,A){var n={normalize:function(){try{return A(N,this,arguments)}catch(e){"
    "if(typeof e=='unknown')throw new InternalError('out of memory');throw e}}}.normalize;"
    "Object.defineProperty(String.prototype,'normalize',{value:n,writable:true,configurable:true})})"
    "(String.prototype.normalize,Reflect.apply);\n"
)

_RESULT = """function $e(e,t){try{e=e&&e.name?e.name+': '+e.message:String(e)}catch(x){e='an unprintable value was thrown'}return JSON.stringify([0,t||'',e])}
function $s(v){var t=typeof v;try{if(t=='function'||t=='symbol'||t=='bigint')throw TypeError('the result is a '+t+', which is not JSON');return JSON.stringify([1,v===undefined?null:v])}catch(e){return $e(e,'result')}}
"""
_SCRIPT = _RESULT + """function $script(load,imports,i,source,run){try{load();if(!run)return $s(true);
for(var k=0;k<imports.length;k++)globalThis[imports[k]]=$m[imports[k]];for(var p in i)globalThis[p]=i[p];
var v;try{v=(0,eval)(source)}catch(x){if(x instanceof SyntaxError&&/return not in a function/.test(x.message))v=$body();else throw x}
return $s(v)}catch(e){return $e(e)}}
"""
# A publish check of module-style code (after the modules were defined exactly as a call defines
# them): the indexes of the links whose member is missing, then "run" if a tool lacks exports.run.
_LINKS = (
    "(function(m,l,t){var x='';for(var i=0;i<l.length;i++){var e=m[l[i][0]];"
    "if(e===null||e===undefined||!(l[i][1] in Object(e)))x+=(x?',':'')+i}"
    "if(!x&&t!==null&&typeof m[t].run!='function')x='run';return x})"
)


@dataclass(frozen=True)
class Program:
    text: str
    # (first line in the program, unit name) for every unit, to place a syntax error.
    unit_lines: tuple[tuple[int, str], ...]
    # "value": the program ends with `$v=<target>.run(input)` (what it throws kept in `$x`) and the
    # worker writes `$v`;
    # "json": the program's value is the JSON outcome (script style); "check": the program's value
    # is what `_LINKS` found missing (indexes into `links`, or "run").
    kind: str = "value"
    # Whether the program calls the worker's host function (`log`, `ai`, `Intl`, `http`).
    host: bool = False
    # For a check: the (module, member) pairs the modules use, which the link check looks for.
    links: tuple[tuple[str, str], ...] = ()

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
    named: frozenset[str] = frozenset()
    line = first_line
    for unit in units:
        text, lines, names = _unit(unit)
        unit_lines.append((line + 1, unit.name))
        parts.append(text)
        named |= names
        line += lines
    return "".join(parts), tuple(unit_lines), named


@lru_cache(maxsize=8192)
def _unit(unit: SourceUnit) -> tuple[str, int, frozenset[str]]:
    """One unit's statement, its number of lines, and the capabilities its source names. Cached
    per unit, not only per bundle: a publish's bundles are all new (the published module's new
    version is in each), but each importer's own unit is the one its last check used (issue 15)."""
    params = ",".join(("exports", *unit.imports))
    args = ",".join(("{}", *(f"$m[{json.dumps(i)}]" for i in unit.imports)))
    text = f"$m[{json.dumps(unit.name)}]=(function({params}){{\n{unit.content}\n;return exports}})({args});\n"
    return text, text.count("\n"), _named_in(unit.content)


def _named(units: tuple[SourceUnit, ...]) -> frozenset[str]:
    named: frozenset[str] = frozenset()
    for unit in units:
        named |= _unit(unit)[2]
    return named


def _named_in(source: str) -> frozenset[str]:
    return frozenset(name for name, pattern in _NAMES.items() if pattern.search(source))


@lru_cache(maxsize=256)
def _setup(named: frozenset[str], grants: Capabilities) -> tuple[str, bool]:
    """One line that sets up what the source names and the capability profile grants, and whether
    it needs the host function."""
    hosted = []
    if "log" in named:
        hosted.append(_LOG if grants.log else _NO_LOG)
    if "ai" in named:
        progress = "progress" in named
        hosted.append(_ai(grants.context and "context" in named, progress and grants.log)
                      if not progress or grants.log else _AI_BARE.replace("Object.freeze({", "Object.freeze({" + _PROGRESS_BARE, 1))
    if "intl" in named and grants.intl:
        hosted.append(_INTL)
    if "http" in named and grants.http:
        hosted.append(_HTTP)
    uses_host = any(part is not _NO_LOG and part is not _AI_BARE for part in hosted)
    parts = [_HOST_OPEN, *hosted, _HOST_CLOSE] if uses_host else hosted
    if "proxy" in named:
        parts.append(_PROXY)
    if "normalize" in named:
        parts.append(_NORMALIZE)
    return "".join(parts).replace("\n", ""), uses_host


@lru_cache(maxsize=1024)
def _links(units: tuple[SourceUnit, ...]) -> tuple[tuple[str, str], ...]:
    return tuple((dep, member) for unit in units for dep, member in used_members(unit.content, unit.imports))


_json = json.JSONEncoder().encode  # json.dumps(value) without its keyword handling, per call


def _input(value: object, dates: tuple[str, ...]) -> str:
    """The input as a JavaScript expression: a literal (JSON is JavaScript) unless it holds a
    `__proto__` key, which a literal would turn into a prototype; `date` parameters become Dates."""
    text = _json(value)
    if "__proto__" in text:
        text = f"JSON.parse({json.dumps(text)})"
    if dates:
        text = f"(function(i,d){{for(var k of d)if(typeof i[k]=='string')i[k]=new Date(i[k]);return i}})({text},{json.dumps(list(dates))})"
    return text


_ALL = Capabilities("all")


def build_program(execution: Execution, *, check: bool, capabilities: Capabilities | None = None) -> Program:
    """The call's program for a run (`check=False`) or a load-and-link check (`check=True`);
    `log`, `ai.context()`, `Intl` and `http.fetch` exist only when the capability profile grants them.

    A check of module-style code defines the modules with exactly the text a call defines them
    with (same setup, same globals, same lines), so module code cannot tell a check from a call;
    only then, where a call would call `run`, it looks for the links instead."""
    grants = capabilities or _ALL
    if execution.style == "script":
        # The script is also compiled as the body of `$body`: a syntax error then escapes the
        # evaluation with its line, and a script that ends with an explicit `return` runs as a body.
        script = execution.target
        prefix = f"var $m={{}};\n{_SCRIPT}function $body(){{\n{script.content}\n}}\n"
        libraries, library_lines, _ = _units(execution.units[:-1], prefix.count("\n") + 2)
        setup, host = _setup(_named(execution.units), _grants(grants))
        unit_lines = ((_SCRIPT.count("\n") + 3, script.name), *library_lines)
        parameters = {k: v for k, v in (execution.input or {}).items() if is_valid_id(k)}
        text = prefix + (
            f"$script(function(){{\n{libraries}}},{json.dumps(list(script.imports))},"
            f"{_input(parameters, execution.date_parameters)},{json.dumps(script.content)},{'false' if check else 'true'})"
        )
        return Program(text=setup + text, unit_lines=unit_lines, kind="json", host=host)
    if check:
        head, unit_lines, host = _modules(execution.units, _grants(grants))
        target = json.dumps(execution.target.name)
        links = _links(execution.units)
        tail = f"{_LINKS}($m,{json.dumps(links)},{target if execution.is_tool else 'null'})"
        return Program(text=head + tail, unit_lines=unit_lines, kind="check", host=host, links=links)
    opening, unit_lines, host = _call(execution.units, _grants(grants))
    return Program(text=opening + _input(execution.input, execution.date_parameters) + _CALL_END, unit_lines=unit_lines, kind="value", host=host)


# What `run` throws is kept in `$x` before it escapes, so the worker can read its text exactly
# (the binding's own reading of a thrown value stops at a NUL). `$x` exists before `run` is
# called, so that keeping it allocates nothing: a call out of memory stays out of memory.
_CALL_END = ")}catch(e){$x=e;throw e}"


@lru_cache(maxsize=1024)
def _call(units: tuple[SourceUnit, ...], grants: Capabilities) -> tuple[str, tuple[tuple[int, str], ...], bool]:
    """A call's program up to its input (the modules, then the call of the target's `run`), made
    once per bundle: a call adds only its input."""
    head, unit_lines, host = _modules(units, grants)
    return f"{head}$x=undefined;try{{$v=$m[{json.dumps(units[-1].name)}].run(", unit_lines, host


@lru_cache(maxsize=64)
def _grants(capabilities: Capabilities) -> Capabilities:
    """The grants alone (not the profile's name), so that profiles granting the same share a cache entry."""
    return Capabilities("", log=capabilities.log, context=capabilities.context, intl=capabilities.intl, http=capabilities.http)


@lru_cache(maxsize=1024)
def _modules(units: tuple[SourceUnit, ...], grants: Capabilities) -> tuple[str, tuple[tuple[int, str], ...], bool]:
    """A module-style program up to where `run` is called: the setup and the modules."""
    body, unit_lines, named = _units(units, 2)
    setup, host = _setup(named, grants)
    return f"{setup}var $m={{}};\n{body}", unit_lines, host
