"""Assembles the JavaScript a call evaluates (R6): a fixed prelude, then the call's own modules.

The prelude (`log`, `ai`, and the functions that call the target and encode its result) is the same
for every call, so the runner evaluates it in a fresh context before a call arrives; compiling code
is most of what a small call costs in QuickJS. The call's program is then one call of `$run`,
`$check` or `$script` whose first argument is a function that defines each module inside its own
function. That function receives a fresh `exports` object and, as parameters named after them, the
`exports` of the modules it imports: an importer sees its own imports and nothing else. Everything
the harness defines starts with `$`, which no module id may contain (R1).

Every path ends with a JSON string, `[1, value, logs]` or `[0, type, message, logs]` (an empty type
is classified by the runner from the message). Only a parse error, an interrupt or an exhausted heap
escape the evaluation. When `run` returns a promise the program ends with `null`, and the runner
drains the job queue, then reads `$r`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache

from domain.ports import Execution, SourceUnit
from domain.rules import is_valid_id
from sandbox.links import used_members

MAX_LOG_LINES = 50
MAX_LOG_CHARS = 500

# Evaluated once per fresh context, before the call: what every call needs, kept small because
# compiling is what a context costs.
PRELUDE = """var $g=[],$r=null,$m={},$c='{}';
function log(v){if($g.length<%(lines)d){try{v=typeof v=='string'?v:JSON.stringify(v)}catch(e){}$g.push(String(v).slice(0,%(chars)d))}}
var ai=Object.freeze({context:function(){return JSON.parse($c)}});
function $e(e,t){try{e=e&&e.name?e.name+': '+e.message:String(e)}catch(x){e='an unprintable value was thrown'}return JSON.stringify([0,t||'',e,$g])}
function $s(v){var t=typeof v;try{if(t=='function'||t=='symbol')throw TypeError('the result is a '+t+', which is not JSON');return JSON.stringify([1,v===undefined?null:v,$g])}catch(e){return $e(e,'result')}}
function $in(i,d){i=JSON.parse(i);if(d)for(var k=0;k<d.length;k++)if(typeof i[d[k]]=='string')i[d[k]]=new Date(i[d[k]]);return i}
function $run(l,i,c,d){$c=c;try{var t=l().run;if(typeof t!='function')throw TypeError('the module does not assign a function to exports.run');var v=t($in(i,d));
if(v!==null&&typeof v=='object'&&typeof v.then=='function'){v.then(function(v){$r=$s(v)},function(e){$r=$e(e)});return null}return $s(v)}catch(e){return $e(e)}}
""" % {"lines": MAX_LOG_LINES, "chars": MAX_LOG_CHARS}

# Defined by the programs that use them; neither is on a tool call's path.
_CHECK = """function $check(load,links,tool){try{var t=load();
var x=links.filter(function(l){var m=$m[l[0]];return m===null||m===undefined||!(l[1] in Object(m))});
if(x.length)return $e({name:'LinkError',message:x.map(function(l){return 'uses '+l[0]+'.'+l[1]+', which '+l[0]+' does not export'}).join('; ')},'link');
if(tool&&typeof t.run!='function')return $e({name:'LinkError',message:'a tool module must assign a function to exports.run'},'link');
return $s(true)}catch(e){return $e(e)}}
"""
_SCRIPT = """function $script(load,imports,i,c,d,source,run){$c=c;try{load();if(!run)return $s(true);
for(var k=0;k<imports.length;k++)globalThis[imports[k]]=$m[imports[k]];i=$in(i,d);for(var p in i)globalThis[p]=i[p];
var v;try{v=(0,eval)(source)}catch(x){if(x instanceof SyntaxError&&/return not in a function/.test(x.message))v=$body();else throw x}
return $s(v)}catch(e){return $e(e)}}
"""


@dataclass(frozen=True)
class Program:
    text: str
    # (first line in the program, unit name) for every unit, to place a syntax error.
    unit_lines: tuple[tuple[int, str], ...]

    def locate(self, line: int) -> tuple[str, int] | None:
        """The unit and its own line number for a line of the program."""
        found = None
        for first, name in self.unit_lines:
            if line >= first:
                found = (name, line - first + 1)
        return found


@lru_cache(maxsize=1024)
def _loader(units: tuple[SourceUnit, ...], returns: str | None, helper_lines: int = 0) -> tuple[str, tuple[tuple[int, str], ...]]:
    """`function(){…}` that defines each unit's exports in `$m` and returns the target's."""
    parts = ["function(){\n"]
    unit_lines: list[tuple[int, str]] = []
    line = 2 + helper_lines
    for unit in units:
        params = ",".join(("exports", *unit.imports))
        args = ",".join(("{}", *(f"$m[{json.dumps(i)}]" for i in unit.imports)))
        unit_lines.append((line + 1, unit.name))
        text = f"$m[{json.dumps(unit.name)}]=(function({params}){{\n{unit.content}\n;return exports}})({args});\n"
        parts.append(text)
        line += text.count("\n")
    parts.append(f"return $m[{json.dumps(returns)}]}}" if returns else "}")
    return "".join(parts), tuple(unit_lines)


@lru_cache(maxsize=1024)
def _links(units: tuple[SourceUnit, ...]) -> str:
    return json.dumps([[dep, member] for unit in units for dep, member in used_members(unit.content, unit.imports)])


def build_program(execution: Execution, *, check: bool) -> Program:
    """The call's program for a run (`check=False`) or a load-and-link check (`check=True`)."""
    # json.dumps with its default arguments uses a cached encoder: much faster on this path.
    context = json.dumps(json.dumps(execution.context))
    dates = json.dumps(list(execution.date_parameters)) if execution.date_parameters else "0"
    if execution.style == "script":
        # The script is also compiled as the body of `$body`: a syntax error then escapes the
        # evaluation with its line, and a script that ends with an explicit `return` runs as a body.
        script = execution.target
        prefix = f"{_SCRIPT}function $body(){{\n{script.content}\n}}\n"
        loader, library_lines = _loader(execution.units[:-1], None, prefix.count("\n"))
        unit_lines = ((_SCRIPT.count("\n") + 2, script.name), *library_lines)
        parameters = {k: v for k, v in (execution.input or {}).items() if is_valid_id(k)}
        text = prefix + (
            f"$script({loader},{json.dumps(list(script.imports))},{json.dumps(json.dumps(parameters))},"
            f"{context},{dates},{json.dumps(script.content)},{'false' if check else 'true'})"
        )
    elif check:
        loader, unit_lines = _loader(execution.units, execution.target.name, _CHECK.count("\n"))
        text = _CHECK + f"$check({loader},{_links(execution.units)},{'true' if execution.is_tool else 'false'})"
    else:
        loader, unit_lines = _loader(execution.units, execution.target.name)
        text = f"$r=$run({loader},{json.dumps(json.dumps(execution.input))},{context},{dates})"
    return Program(text=text, unit_lines=unit_lines)
