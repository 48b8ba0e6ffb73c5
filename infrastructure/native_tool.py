"""Native tools (callType LOCAL): Python functions named in the tools file, called in process.

`resolve_entrypoint` imports a `package.module:function` once, when the file is loaded, so that a
typo stops the start rather than the first call. `signature_schema` derives the JSON Schema of a
function's keyword arguments with pydantic when the file declares none. `NativeTool.call` checks
the arguments against the entry's schema, calls `function(**arguments)` and turns whatever the
function raises into an error result: a tool never raises into the caller.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import re
import time
from collections.abc import Callable
from typing import Any

from jsonschema import Draft202012Validator
from pydantic import TypeAdapter
from pydantic.json_schema import GenerateJsonSchema
from pydantic_core import PydanticSerializationError, to_jsonable_python

from domain.catalog import DeclaredTool, ToolEntry
from domain.ports import ExecutionError, ExecutionResult
from domain.values import too_deep, well_formed

log = logging.getLogger("toolsmith.tools.native")

_ENTRYPOINT = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*\Z", re.ASCII)


class EntrypointError(ValueError):
    """Why an entrypoint cannot be a tool; the message is meant to follow the field's path."""


def resolve_entrypoint(entrypoint: str) -> Callable[..., Any]:
    """The plain function behind `package.module:function` (a dotted attribute path is allowed)."""
    if not _ENTRYPOINT.match(entrypoint):
        raise EntrypointError("must be 'package.module:function'")
    module_name, attribute = entrypoint.split(":")
    try:
        target: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name and (module_name == e.name or module_name.startswith(e.name + ".")):
            raise EntrypointError(f"no module named {e.name!r}") from None
        raise EntrypointError(f"importing {module_name!r} failed: {type(e).__name__}: {e}") from None
    except (Exception, SystemExit) as e:  # importing runs the module's code: anything can happen
        raise EntrypointError(f"importing {module_name!r} failed: {type(e).__name__}: {e}") from None
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise EntrypointError(f"{module_name!r} has no attribute {attribute!r}")
        target = getattr(target, part)
    if not callable(target):
        raise EntrypointError(f"{attribute!r} is not callable")
    if inspect.iscoroutinefunction(target):
        raise EntrypointError(f"{attribute!r} is an async function; a native tool is a plain function")
    _check_keyword_callable(target, attribute)
    return target


def _check_keyword_callable(function: Callable[..., Any], attribute: str) -> None:
    """A tool is called with named arguments only, so positional-only parameters could never be given."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return  # some builtins have no signature; the declared inputSchema then has to do
    positional = [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.VAR_POSITIONAL)]
    if positional:
        raise EntrypointError(f"{attribute!r} takes positional-only parameters ({', '.join(positional)}); "
                              "a tool is called with named arguments")


class _NoTitles(GenerateJsonSchema):
    """Pydantic titles every property after its name ("A" for `a`): noise in a tool's schema."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def signature_schema(function: Callable[..., Any]) -> dict[str, Any]:
    """The JSON Schema of the function's keyword arguments, from its annotations and defaults.
    Raises `EntrypointError` when an annotation has no JSON Schema (an arbitrary class)."""
    try:
        schema = TypeAdapter(function).json_schema(schema_generator=_NoTitles)
    except Exception as e:
        first_line = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise EntrypointError(f"no inputSchema can be derived from its signature ({first_line}); "
                              "declare inputSchema") from None
    schema.pop("title", None)
    return schema


class NativeTool(DeclaredTool):
    """A Python function called in this process (from the API's worker threads)."""

    def __init__(self, entry: ToolEntry, entrypoint: str, function: Callable[..., Any]) -> None:
        self.entry = entry
        self.entrypoint = entrypoint
        self._function = function
        self._validator = Draft202012Validator(entry.input_schema)

    def __repr__(self) -> str:
        return f"NativeTool(name={self.entry.name!r}, entrypoint={self.entrypoint!r})"

    def call(self, arguments: dict[str, Any], context: dict[str, Any]) -> ExecutionResult:
        started = time.perf_counter()

        def result(output: Any = None, error: ExecutionError | None = None) -> ExecutionResult:
            return ExecutionResult(output=output, error=error, duration_millis=(time.perf_counter() - started) * 1000)

        problems = _argument_problems(self._validator, arguments)
        if problems:
            return result(error=ExecutionError("input", problems))
        try:
            output = self._function(**arguments)
        except Exception as e:
            log.warning("native tool %s raised %s", self.entry.name, type(e).__name__, exc_info=True,
                        extra={"tool": self.entry.name, "entrypoint": self.entrypoint})
            return result(error=ExecutionError("runtime", f"{type(e).__name__}: {e}"))
        if too_deep(output):
            return result(output=output)  # the toolbox refuses it (a `result` error) without reading it
        try:
            # Dates, sets, dataclasses and pydantic models become their JSON form, as in a FastAPI route;
            # lone surrogates become U+FFFD first (pydantic cannot encode them).
            return result(output=to_jsonable_python(well_formed(output)))
        except (PydanticSerializationError, ValueError):  # ValueError: nested past pydantic's limit inside an object
            return result(error=ExecutionError("result", f"the result ({type(output).__name__}) cannot be read as JSON"))


def _argument_problems(validator: Draft202012Validator, arguments: Any) -> str:
    """Every way the arguments miss the schema, each named by its path; empty when they fit."""
    problems = []
    for error in sorted(validator.iter_errors(arguments), key=lambda e: list(map(str, e.absolute_path))):
        where = ".".join(map(str, error.absolute_path))
        problems.append(f"{where}: {error.message}" if where else error.message)
    return "; ".join(problems)
