"""JMESPath, bounded (issue 28): what an API URL tool's `response.jmespath` may be, and its evaluation
within a budget.

A JMESPath result holds references, not copies: `[@,@]` is a list of two references to its input,
so `b.[@,@].[@,@]…` doubles the *serialized* result at each step while the evaluation itself stays
tiny, and `[@,@][]` (a flatten) doubles the real list. Thirty steps of either would hold or write
gigabytes in the shared API process. Two guards, one at save and one at each call:

- `expression_problem` refuses, when the tool is saved, what cannot be evaluated (does not compile,
  nests deeper than `MAX_NESTING`, a slice step of 0) and what multiplies its input by its static
  shape: chained multi-selects (`[@,@].[@,@]`) whose factor passes `MAX_AMPLIFICATION`;
- `search` evaluates with `Bounded`, jmespath's own interpreter that counts what it builds: every
  new list, object or string is charged its length (what the call holds), and each new container's
  *weight*, the number of values its serialization writes out counting each reference again, must
  stay within the budget; a wall-clock deadline stops what neither catches. Operations that walk a
  whole value in C (`==`, `contains`, `to_string`, `join`) are measured before they run.

`evaluate` also gives, when it is cheap to know, a bound of the result's JSON length from the
expression's shape (how many times it may write out the answer) and the weight of what it built:
within twice the budget, the result may be written out in C as any answer is. Otherwise
`serialized_length` and `serialized_prefix` give the length of its JSON and its first characters
without ever writing the whole of it (a shared structure is measured once per object).

Pure: no I/O; the clock is a parameter.
"""

from __future__ import annotations

import functools
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from itertools import repeat
from typing import Any

import jmespath
import jmespath.exceptions
from jmespath import functions as _functions
from jmespath.visitor import Options, TreeInterpreter, _is_comparable  # jmespath's own test of `<` operands

# Nodes of the parsed expression nested in one another: the interpreter recurses once or twice per
# level, so a deep expression would break Python's stack during a call.
MAX_NESTING = 64
# How many times its input the static shape of an expression may write out: `[@,@]` is 2, each
# further `.[@,@]` doubles it; `{a: x, b: x}` is 2 and stays 2 over a projection; `{id: id, name: name}`
# is 1 (two parts of the value that do not overlap).
MAX_AMPLIFICATION = 1_024

# One call's budget, in values built (and written out), is this many times the answer's characters
# plus the tool's maxOutputChars: a selection or a reshaping of an answer stays well within it.
BUDGET_FACTOR = 4
# The wall-clock bound of one evaluation, for what the budget does not count.
DEADLINE_SECONDS = 2.0

_CONTAINERS = (list, dict)
_TICKS = 64  # charges between two readings of the clock
_ENCODE_STRING = json.encoder.encode_basestring  # type: ignore[attr-defined]  # the C function when there is one


class Stopped(Exception):
    """An evaluation stopped because it passed its budget or its deadline: `message` says which."""


class Failed(Exception):
    """An expression that cannot be evaluated on this answer (jmespath's own error, a slice step of 0,
    an operand of the wrong type, nesting deeper than the stack): `message` says what."""


# -- at save ------------------------------------------------------------------------------------


def expression_problem(expression: str) -> str | None:
    """Why `expression` cannot be a tool's `response.jmespath`, in a few words; None when it can."""
    try:
        parsed = jmespath.compile(expression).parsed
    except jmespath.exceptions.JMESPathError as e:
        return f"does not compile: {_first_line(e)}"
    except RecursionError:
        return "does not compile: nested too deeply for the parser"
    except ValueError as e:  # what the lexer's int() or json.loads refuse in a literal
        return f"does not compile: {_first_line(e)}"
    return shape_problem(parsed)


def shape_problem(parsed: dict[str, Any]) -> str | None:
    """What is wrong with the static shape of a parsed expression (jmespath's AST), walked without
    recursing: its nesting, a slice step of 0, its amplification."""
    # Post-order walk: each node's factor (how many times its input its result writes out at most).
    factors: dict[int, int] = {}
    stack: list[tuple[dict[str, Any], int, bool]] = [(parsed, 1, False)]
    while stack:
        node, depth, done = stack.pop()
        if depth > MAX_NESTING:
            return f"nests more than {MAX_NESTING} levels deep"
        children = [c for c in node.get("children", ()) if isinstance(c, dict)]
        if not done:
            if node["type"] == "slice" and node["children"][2] == 0:
                return "has a slice step of 0 (a[::0]); the step must be another number"
            stack.append((node, depth, True))
            stack.extend((child, depth + 1, False) for child in children)
            continue
        factor = _factor(node, children, [factors[id(c)] for c in children])
        if factor > MAX_AMPLIFICATION:
            return (f"multiplies its input more than {MAX_AMPLIFICATION} times (chained multi-selects such as "
                    "[@,@].[@,@] double it at each step)")
        factors[id(node)] = factor
    return None


def _factor(node: dict[str, Any], nodes: list[dict[str, Any]], children: list[int]) -> int:
    """At most how many times its input's JSON the node's result writes out (its own brackets, keys
    and constants aside): a sound bound, `Found.written_at_most` relies on it."""
    kind = node["type"]
    if kind in ("field", "current", "identity", "index", "slice"):
        return 1
    if kind in ("literal", "comparator", "not_expression"):
        return 0  # a constant of the expression's own text, or a boolean
    if kind in ("subexpression", "index_expression", "pipe", "projection", "value_projection"):
        product = 1
        for factor in children:
            product *= factor
        return product
    if kind == "filter_projection":  # [left, right, condition]: the condition only keeps or drops
        return children[0] * children[1]
    if kind in ("or_expression", "and_expression"):
        return max(children)
    if kind == "function_expression" and node["value"] == "map":
        return children[0] * children[1]
    if kind in ("multi_select_list", "multi_select_dict") and _disjoint(nodes):
        return 1  # {id: id, name: name}: parts of the value that do not overlap
    # multi-selects, key-value pairs, flatten, expref and other functions: at most what their parts write
    return max(1, sum(children)) if kind == "function_expression" else sum(children)


def _disjoint(parts: list[dict[str, Any]]) -> bool:
    """Whether a multi-select's parts are paths of fields (and indexes) from the value, each under
    another of its fields: they write out different parts of it, never one twice."""
    firsts = []
    for part in parts:
        path = part["children"][0] if part["type"] == "key_val_pair" else part
        steps = path["children"] if path["type"] in ("subexpression", "index_expression") else [path]
        if not steps or steps[0]["type"] != "field" or any(step["type"] not in ("field", "index") for step in steps):
            return False
        firsts.append(steps[0]["value"])
    return len(set(firsts)) == len(firsts)


# Nodes whose result may be something the evaluation built, not only a part of the value they apply to.
_BUILDING = frozenset({"multi_select_list", "multi_select_dict", "projection", "value_projection", "filter_projection",
                       "flatten", "slice", "function_expression"})
_PASSING = frozenset({"subexpression", "pipe", "index_expression", "or_expression", "and_expression", "key_val_pair"})


@dataclass(frozen=True)
class _Plan:
    """A parsed expression (held here, so that its nodes' ids stay theirs), the multi-selects that
    `Bounded` always charges in full (those with a part that may be something built, or the value
    itself, `@`, which may be a multi-select's result in turn: `[@,@].[@,@]`), and what bounds the
    length of its result's JSON: its factor, its widest multi-select, and the most characters one
    slot of a built list or object adds besides what it holds (a key, a constant, punctuation)."""

    tree: dict[str, Any]
    charged: frozenset[int]
    factor: int
    width: int
    slot_chars: int


@functools.lru_cache(maxsize=1_024)
def _prepared(expression: str) -> _Plan:
    tree = jmespath.compile(expression).parsed
    builds: dict[int, bool] = {}  # may be something built or the value the node applies to
    factors: dict[int, int] = {}
    charged = set()
    width, key, constant = 0, 0, 0
    stack: list[tuple[dict[str, Any], bool]] = [(tree, False)]
    while stack:
        node, done = stack.pop()
        children = [c for c in node.get("children", ()) if isinstance(c, dict)]
        if not done:
            stack.append((node, True))
            stack.extend((child, False) for child in children)
            continue
        kind = node["type"]
        builds[id(node)] = (kind in _BUILDING or kind in ("current", "identity")
                            or (kind in _PASSING and any(builds[id(c)] for c in children)))
        factors[id(node)] = _factor(node, children, [factors[id(c)] for c in children])
        if kind in ("multi_select_list", "multi_select_dict"):
            width = max(width, len(children))
            if any(builds[id(c)] for c in children):
                charged.add(id(node))
        elif kind == "key_val_pair":
            key = max(key, len(_ENCODE_STRING(node["value"])))
        elif kind == "literal":
            constant = max(constant, len(json.dumps(node["value"], ensure_ascii=False, separators=(",", ":"))))
    # a slot: its key and colon, its comma, a constant or a number a function made (24 characters
    # at most: -1.2345678901234567e-300), the brackets of a list or object in it
    slot_chars = key + 1 + 1 + max(constant, 24) + 2
    return _Plan(tree, frozenset(charged), factors[id(tree)], width, slot_chars)


def _first_line(error: Exception) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


# -- at each call -------------------------------------------------------------------------------


def budget_for(answer_chars: int, max_output_chars: int) -> int:
    return BUDGET_FACTOR * (answer_chars + max_output_chars)


# A JSON answer's parsed value writes out at most this many times its text: whitespace and escapes
# only shrink, and the worst number grows from 4 characters to 18 (1e15 is 1000000000000000.0).
_REWRITTEN = 4.5


@dataclass(frozen=True)
class Found:
    """An evaluation's result, and, when it is known without walking the result, at most how many
    characters its JSON has (within twice the budget): then writing it out in C is bounded too."""

    value: Any
    written_at_most: int | None


def search(expression: str, data: Any, *, budget: int, seconds: float = DEADLINE_SECONDS,
           clock: Callable[[], float] = time.monotonic) -> Any:
    """jmespath's answer for `expression` on `data`, exactly, or `Stopped` once it builds more than
    `budget` values or runs past `seconds`; `Failed` for what jmespath cannot evaluate."""
    return evaluate(expression, data, budget=budget, answer_chars=None, seconds=seconds, clock=clock).value


def evaluate(expression: str, data: Any, *, budget: int, answer_chars: int | None, seconds: float = DEADLINE_SECONDS,
             clock: Callable[[], float] = time.monotonic) -> Found:
    """`search`, with a bound of the result's JSON when `data` was parsed from `answer_chars` of JSON
    text and the expression's shape and what it built give one cheaply (`_Plan`); else None."""
    try:
        plan = _prepared(expression)
        interpreter = Bounded(budget, seconds, clock, plan.charged)
        value = interpreter.visit(plan.tree, data)
    except jmespath.exceptions.JMESPathError as e:
        raise Failed(f"jmespath failed: {_first_line(e)}") from None
    except RecursionError:
        raise Failed("jmespath failed: the expression or the answer is nested too deeply") from None
    except (ValueError, TypeError, OverflowError, ZeroDivisionError) as e:  # a[::0], contains('s', `1`)…
        raise Failed(f"jmespath failed: {_first_line(e)}") from None
    if answer_chars is None or interpreter.built_text:  # a text built (join, to_string) may be anywhere, many times
        return Found(value, None)
    # Parts of the answer written out at most `factor` times, plus every slot of what was built: those
    # it weighs (each reference counted again), each holding at most one multi-select of `width` slots.
    slots = (interpreter.weight(value) + 1) * (plan.width + 1)
    at_most = math.ceil(_REWRITTEN * plan.factor * answer_chars) + slots * plan.slot_chars + 64
    return Found(value, at_most if at_most <= 2 * budget else None)


class Bounded(TreeInterpreter):
    """jmespath's tree interpreter, charging what it builds. `_weights` holds each container it built
    (kept alive, so that no id is reused) with its weight: its length plus its built parts' weights."""

    def __init__(self, budget: int, seconds: float, clock: Callable[[], float], charged: frozenset[int] = frozenset()) -> None:
        super().__init__(Options(custom_functions=_Functions(self)))
        self._charged = charged
        self._budget = budget
        self._left = budget
        self._deadline = clock() + seconds
        self._seconds = seconds
        self._clock = clock
        self._ticks = 0  # the clock is read at the first charge
        self._weights: dict[int, int] = {}
        self._kept: list[Any] = []
        self.built_text = False

    def weight(self, value: Any) -> int:
        """How many values `value` holds, each reference counted again, when it is a container built
        in full (charged); 0 for anything else."""
        return self._weights.get(id(value), 0)

    # What is built, charged when it is.

    def _charge(self, built: Any) -> Any:
        kind = type(built)
        if kind is dict:
            parts: Any = built.values()
        elif kind is list:
            parts = built
        elif kind is str:
            self.built_text = True
            self._spend(len(built))
            return built
        else:
            return built
        weights = self._weights
        # (nothing built in full yet: no part can weigh anything)
        weight = len(built) + sum(map(weights.get, map(id, parts), repeat(0))) if weights else len(built)
        if weight > self._budget:
            raise Stopped(self._over())
        self._weights[id(built)] = weight
        self._kept.append(built)
        self._spend(len(built))
        return built

    def _spend(self, amount: int) -> None:
        self._left -= amount
        if self._left < 0:
            raise Stopped(self._over())
        self._ticks -= 1
        if self._ticks <= 0:  # the clock read every so many charges: reading it is not free
            self._ticks = _TICKS
            if self._clock() > self._deadline:
                raise Stopped(f"jmespath stopped: the evaluation ran past its time limit of {self._seconds:g} s")

    def _over(self) -> str:
        return (f"jmespath stopped: the expression builds more from this answer than its bound of {self._budget} "
                f"values or characters ({BUDGET_FACTOR} x (the answer's characters + maxOutputChars))")

    def measure(self, *values: Any) -> None:
        """Refuses (`Stopped`) to run a C operation over `values` whose serialized size passes the budget."""
        for value in values:
            if type(value) in _CONTAINERS and serialized_length(value) > self._budget:
                raise Stopped(self._over())

    # jmespath's own methods, with what they build charged.

    def visit_multi_select_list(self, node: dict[str, Any], value: Any) -> Any:
        if value is None:
            return None
        return self._select([self.visit(child, value) for child in node["children"]], node, value)

    def visit_multi_select_dict(self, node: dict[str, Any], value: Any) -> Any:
        if value is None:
            return None
        return self._select({child["value"]: self.visit(child["children"][0], value) for child in node["children"]}, node, value)

    def _select(self, built: Any, node: dict[str, Any], value: Any) -> Any:
        """A multi-select's result, charged. One whose parts are all parts of an answer's value, not
        built (`items[*].{id: id}`, the common case, once per element), is charged its length only:
        it holds nothing built, so it weighs its length, bounded by the expression itself."""
        if id(node) in self._charged or id(value) in self._weights:
            return self._charge(built)
        self._left -= len(built)
        if self._left < 0:
            raise Stopped(self._over())
        return built

    def visit_projection(self, node: dict[str, Any], value: Any) -> Any:
        return self._charge(super().visit_projection(node, value))

    def visit_value_projection(self, node: dict[str, Any], value: Any) -> Any:
        return self._charge(super().visit_value_projection(node, value))

    def visit_filter_projection(self, node: dict[str, Any], value: Any) -> Any:
        return self._charge(super().visit_filter_projection(node, value))

    def visit_flatten(self, node: dict[str, Any], value: Any) -> Any:
        return self._charge(super().visit_flatten(node, value))

    def visit_slice(self, node: dict[str, Any], value: Any) -> Any:
        return self._charge(super().visit_slice(node, value))

    def visit_comparator(self, node: dict[str, Any], value: Any) -> Any:
        # TreeInterpreter.visit_comparator, with both operands measured when `==` would walk them.
        left = self.visit(node["children"][0], value)
        right = self.visit(node["children"][1], value)
        if type(left) in _CONTAINERS and type(right) in _CONTAINERS and left is not right:  # (itself: at once)
            self.measure(left, right)
        compare = self.COMPARATOR_FUNC[node["value"]]
        if node["value"] in self._EQUALITY_OPS:
            return compare(left, right)
        if not (_is_comparable(left) and _is_comparable(right)):
            return None
        return compare(left, right)

    def visit_function_expression(self, node: dict[str, Any], value: Any) -> Any:
        arguments = [self.visit(child, value) for child in node["children"]]
        result = self._functions.call_function(node["value"], arguments)
        # What a function returns new is charged (join charges its text before making it).
        if node["value"] != "join" and type(result) in (str, list, dict) and not any(result is a for a in arguments):
            self._charge(result)
        return result


class _Functions(_functions.Functions):
    """jmespath's functions, each that walks or writes a whole value in C measured before it does."""

    def __init__(self, interpreter: Bounded) -> None:
        super().__init__()
        self._interpreter = interpreter

    @_functions.signature({"types": []})
    def _func_to_string(self, arg: Any) -> Any:
        self._interpreter.measure(arg)
        return super()._func_to_string(arg)

    @_functions.signature({"types": ["array", "string"]}, {"types": []})
    def _func_contains(self, subject: Any, search: Any) -> Any:
        if type(search) in _CONTAINERS:
            self._interpreter.measure(subject)
        return super()._func_contains(subject, search)

    @_functions.signature({"types": ["string"]}, {"types": ["array-string"]})
    def _func_join(self, separator: str, array: list[str]) -> str:
        # The joined length is known before the join: charged first, so a huge one is never made.
        self._interpreter.built_text = True
        self._interpreter._spend(len(separator) * max(len(array) - 1, 0) + sum(map(len, array)))
        return separator.join(array)


# -- the result's JSON --------------------------------------------------------------------------


def serialized_length(value: Any) -> int:
    """`len(json.dumps(value, ensure_ascii=False, separators=(",", ":")))`, each shared object
    measured once (so a result of references costs its distinct objects, not its written size)."""
    return _length(value, {})


def _length(value: Any, seen: dict[int, int]) -> int:
    kind = type(value)
    if kind is dict or kind is list:
        known = seen.get(id(value))
        if known is not None:
            return known
        # "{" key ":" value "," … "}" and "[" value "," … "]"
        size = 1 + max(len(value), 1)
        if kind is dict:
            try:
                size += sum(map(len, map(_ENCODE_STRING, value))) + len(value)
            except TypeError:  # a key that is not a string (never from JSON, nor from jmespath)
                size += sum(_key_length(k) + 1 for k in value)
            parts = value.values()
        else:
            parts = value
        for part in parts:  # the common leaves here, the rest by recursion: this runs once per value
            kind = type(part)
            if kind is str and len(part) < 256:
                size += len(_ENCODE_STRING(part))
            elif kind is int:
                size += len(int.__repr__(part))
            else:
                size += _length(part, seen)
        seen[id(value)] = size
        return size
    if kind is str:
        known = seen.get(id(value))  # a long text a result refers to many times is encoded once
        if known is None:
            known = seen[id(value)] = len(_ENCODE_STRING(value))
        return known
    if kind is int:
        return len(int.__repr__(value))
    return _SCALAR_LENGTHS.get(value, 0) if kind is bool or value is None else len(json.dumps(value))


_SCALAR_LENGTHS = {True: 4, False: 5, None: 4}


def _key_length(key: Any) -> int:
    return len(_ENCODE_STRING(key)) if type(key) is str else len(json.dumps({key: 0}, separators=(",", ":"))) - 4


def serialized_prefix(value: Any, limit: int) -> str:
    """The first `limit` characters of `value`'s JSON (as `serialized_length` counts it), written
    piece by piece and no further."""
    pieces: list[str] = []
    written = 0
    encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False)
    for piece in encoder.iterencode(value):
        pieces.append(piece)
        written += len(piece)
        if written >= limit:
            break
    return "".join(pieces)[:limit]
