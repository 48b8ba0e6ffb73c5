"""Running code (docs/rules.md R6, R10; docs/sandbox.md): a draft as the editor holds it, a published tool, and the
checks a publish makes of a module and of every module that imports it. Each run is one bundle
(`Execution`): the target and its published dependencies, in import order, for the sandbox. Every
run and check is one of its tenant's sandbox sessions (`application.fair_share`, docs/tenants.md)."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from heapq import heappop, heappush
from typing import Any

import networkx as nx

from application import spans
from application.call_log import CallLog
from application.context import CallContext, for_code
from application.fair_share import TenantSessions
from application.imports import _import_problem, check_draft_imports, check_imports
from application.store import Store
from domain.errors import (
    ImportCycle, ImportRefused, InvalidDefinition, InvalidInput, SandboxBusy, SandboxUnavailable, TenantBusy, ToolNotCallable, UnknownModule,
    Violation,
)
from domain.calls import TEST
from domain.graph import bundle_order, cycle_through, transitive_importers, with_edges
from domain.model import CodeModule, Definition, ImportGraph
from domain.ports import Execution as Bundle
from domain.ports import ExecutionError, ExecutionResult, Sandbox, SourceUnit
from domain.schemas import input_violations
from domain.rules import (
    DEFAULT_MEMORY_MB,
    DEFAULT_TIMEOUT,
    id_violations,
    imports_violations,
    normalise_tool,
    source_violations,
    tool_violations,
    validate_input,
)


class Execution:
    def __init__(self, store: Store, sandbox: Callable[[], Sandbox], sessions: TenantSessions | None = None) -> None:
        """`sessions`: each tenant's share of the sandbox; None, no share (one tenant, or a test)."""
        self._store = store
        self._sandbox = sandbox
        self._sessions = sessions
        # A module's Test is a call too (docs/calls.md): the composition root hands the log in.
        self.call_log = CallLog(None)
        self.checks_run = 0  # a publish's checks (R10, with its examples) run, and those that failed
        self.checks_refused = 0

    def sandbox(self) -> Sandbox:
        """The sandbox, or `SandboxUnavailable` when code execution is off."""
        return self._sandbox()

    def tenant_busy(self, tenant: str) -> bool:
        """Whether `tenant` holds every sandbox session of its share right now (a hint for a fast
        refusal before a call goes to a thread; the call itself still has the last word)."""
        return self._sessions is not None and self._sessions.busy(tenant)

    def _refuse_if_tenant_busy(self, tenant: str) -> None:
        """`TenantBusy` before any work for a call its tenant has no session left for: a flood
        refused costs the API as little as it can (the session taken later has the last word)."""
        if self._sessions is not None and self._sessions.busy(tenant):
            raise TenantBusy(self._sessions.limit)

    def _tenant_sandbox(self, tenant: str, sandbox: Sandbox | None = None) -> Sandbox:
        """`sandbox` (the sandbox by default) as `tenant` uses it: each call one of its sessions."""
        sandbox = sandbox if sandbox is not None else self._sandbox()
        return sandbox if self._sessions is None else self._sessions.sandbox(tenant, sandbox)

    def test(
        self,
        tenant: str,
        *,
        content: Any,
        imports: Any,
        tool: dict[str, Any] | None,
        input: Any,
        module_id: str | None,
        context: CallContext,
    ) -> ExecutionResult:
        """POST /test: runs a definition as the editor holds it; nothing is saved. The run, or its
        refusal, is a record of the call log (`via` test, the draft's hash as its definition)."""
        traced = spans.tool_call(tenant, module_id or "(draft)", None, context, via=TEST, kind="CODE")
        result = failure = None
        started, clock = time.time(), time.perf_counter()
        definition = {"content": content, "imports": imports, "tool": tool}
        try:
            result = self._test(tenant, content=content, imports=imports, tool=tool, input=input, module_id=module_id, context=context)
        except Exception as error:
            failure = error
            self.call_log.called(tenant, module_id or "(draft)", None, context, input, None, error, started,
                                 time.perf_counter() - clock, via=TEST, kind="CODE", definition=definition)
            raise
        finally:
            if traced is not None:
                spans.ended(traced, result, failure)
        self.call_log.called(tenant, module_id or "(draft)", None, context, input, result, None, started,
                             time.perf_counter() - clock, via=TEST, kind="CODE", definition=definition)
        return result

    def _test(self, tenant: str, *, content: Any, imports: Any, tool: dict[str, Any] | None, input: Any,
              module_id: str | None, context: CallContext) -> ExecutionResult:
        found = source_violations(content) + imports_violations(imports)
        tool = normalise_tool(tool)
        if tool is not None:
            found += tool_violations(tool)
        if module_id is not None:
            found += id_violations(module_id)
        if found:
            raise InvalidDefinition(found)
        if tool is not None:
            input = arguments(tool, input)
        sandbox = self._tenant_sandbox(tenant)
        name = module_id or "(draft)"  # not an identifier, so it cannot stand for a real module
        graph = self._store.graph(tenant)
        edges = check_draft_imports(self._store, graph, name, imports)
        definition = {"description": "", "content": content, "imports": imports, "tool": tool}
        bundle = self._bundle(tenant, name, edges, {name: definition}, input=input, context=context)
        return sandbox.run(bundle)

    def test_examples(
        self, tenant: str, *, content: Any, imports: Any, tool: dict[str, Any] | None, module_id: str | None,
        context: CallContext,
    ) -> list[ExampleRun]:
        """POST /test (B4): each example of the tool section run against the draft as the editor
        holds it, then the examples of every module that imports it, transitively, with this draft
        in place of its published version: each with what it expected and what it gave. Call after
        `test`, which checks the rest."""
        tool = normalise_tool(tool)
        name = module_id or "(draft)"
        graph = self._store.graph(tenant)
        edges = check_draft_imports(self._store, graph, name, imports)
        definition = {"description": "", "content": content, "imports": imports, "tool": tool}
        definitions: dict[str, Definition] = {name: definition}
        targets = [name] if tool is not None and tool.get("examples") else []
        if module_id is not None and graph.is_published(module_id):
            targets += transitive_importers(graph.published_importers(), edges, module_id)
        runs: list[ExampleRun] = []
        sandbox: Sandbox | None = None
        for target in targets:
            bundle = self._bundle(tenant, target, edges, definitions, context=context)
            target_tool = definitions[target]["tool"]
            examples = (target_tool or {}).get("examples") or []
            if not examples:
                continue
            sandbox = sandbox or self._tenant_sandbox(tenant)
            runs += [dataclasses.replace(run_example(sandbox, bundle, target_tool, example), module=module_id if target == name else target)
                     for example in examples]
        return runs

    def call_tool(self, tenant: str, name: str, input: Any, *, context: CallContext) -> ExecutionResult:
        """POST /api/v1/tools/{name}/call: runs the published version of a tool module."""
        sandbox, bundle = self._tool_run(tenant, name, input, context)
        return sandbox.run(bundle)

    async def acall_tool(self, tenant: str, name: str, input: Any, *, context: CallContext) -> ExecutionResult:
        """`call_tool` awaited on the event loop (issue 30): the same checks and bundle, then the
        sandbox's `arun` (the embedded sandbox waits for its worker's answer with no thread). For a
        caller whose reads of the module and graph ask no database (`CodeKind.acall` sees to it)."""
        sandbox, bundle = self._tool_run(tenant, name, input, context)
        return await sandbox.arun(bundle)

    def _tool_run(self, tenant: str, name: str, input: Any, context: CallContext) -> tuple[Sandbox, Bundle]:
        """The published tool module `name` checked (V1 on `input`) and bundled, and the tenant's sandbox to run it."""
        self._refuse_if_tenant_busy(tenant)
        module = self._store.find(tenant, name)
        if module is None or module.deleted:
            raise ToolNotCallable(name, "no such tool")
        if module.published is None:
            raise ToolNotCallable(name, "the module is not published")
        tool = module.published["tool"]
        if tool is None:
            raise ToolNotCallable(name, "the module is a library, not a tool")
        if not tool["enabled"]:
            raise ToolNotCallable(name, "the tool is disabled")
        given = arguments(tool, input)
        sandbox = self._tenant_sandbox(tenant)
        edges = self._store.graph(tenant).published_edges()
        bundle = self._bundle(tenant, name, edges, {name: module.published}, input=given, context=context)
        return sandbox, bundle

    def post_process(self, tenant: str, name: str, response: Any, *, context: CallContext) -> ExecutionResult:
        """An API URL tool's answer post-processed by the published tool module `name`: its
        `run(response)` with `{status, headers, body}`, no V1 on that input (the module's parameters
        are for the model's calls, this input is the API's). An error result when it cannot run.
        Its log lines are the caller's to redact and write to the service's log."""
        module = self._store.find(tenant, name)
        if module is None or module.deleted or module.published is None or module.published["tool"] is None:
            return ExecutionResult(error=ExecutionError("config", f"{name!r} is no longer a published tool module"))
        try:
            sandbox = self._tenant_sandbox(tenant)
        except SandboxUnavailable as e:
            return ExecutionResult(error=ExecutionError("config", e.detail))
        edges = self._store.graph(tenant).published_edges()
        bundle = self._bundle(tenant, name, edges, {name: module.published}, input=response, context=context)
        # The response may echo the API tool's secrets: the tool writes the module's log lines to
        # the service's log itself, once redacted (issue 28).
        return sandbox.run(dataclasses.replace(bundle, service_log=False))

    def publish_checks(
        self, sandbox: Sandbox, tenant: str, module: CodeModule, graph: ImportGraph, *, first_failure_only: bool,
        context: CallContext | None = None,
    ) -> tuple[Definition, list[tuple[str, ExecutionResult]]]:
        """R5 again, then the sandbox's check of the module and of every module that imports it,
        transitively, with the draft in place (R10): on every worker at once (within the tenant's
        share), answered in order."""
        sandbox = self._tenant_sandbox(tenant, sandbox)
        module._check_can_publish()
        module_id = module.module_id
        draft = module.draft
        assert draft is not None
        check_imports(self._store, graph, module_id, draft["imports"], at_publish=True)
        edges = with_edges(graph.published_edges(), module_id, draft["imports"])
        definitions = {module_id: draft}  # filled with each published definition loaded
        targets = [module_id, *transitive_importers(graph.published_importers(), edges, module_id)]

        def bundle(target: str) -> Bundle:
            return self._bundle(tenant, target, edges, definitions, context=context)

        def check(target: str, execution: Bundle) -> ExecutionResult:
            # R10's check, then the target's examples (B4) with the new version in place.
            return checked_with_examples(sandbox, target, execution, definitions[target]["tool"])

        return draft, self._counted(checked_in_order(sandbox, targets, bundle, first_failure_only=first_failure_only, check=check))

    def changeset_checks(
        self, sandbox: Sandbox, tenant: str, modules: Sequence[CodeModule], graph: ImportGraph, *,
        context: CallContext | None = None,
    ) -> list[tuple[str, ExecutionResult]]:
        """B6: R5 for every draft of the changeset against the graph as it will be (an import may
        name another module of the changeset; no cycle through their new imports together), then
        R10's check and the examples (B4) of each of them and of every module that imports any of
        them, transitively, once, with all the new versions in place: on every worker at once,
        answered dependencies first. Every check runs, so a refusal names every failing module."""
        sandbox = self._tenant_sandbox(tenant, sandbox)
        drafts: dict[str, Definition] = {}
        for module in modules:
            module._check_can_publish()
            assert module.draft is not None
            drafts[module.module_id] = module.draft
        found = [
            Violation(f"{module_id}.draftImports[{i}]", "R5", _import_problem(self._store, tenant, module_id, name))
            for module_id, draft in drafts.items()
            for i, name in enumerate(draft["imports"])
            if name == module_id or not (graph.is_published(name) or name in drafts)
        ]
        if found:
            raise ImportRefused(found, at_publish=True)
        edges: Mapping[str, Sequence[str]] = graph.published_edges()
        for module_id, draft in drafts.items():
            edges = with_edges(edges, module_id, draft["imports"])
        for module_id, draft in drafts.items():
            cycle = cycle_through(edges, module_id, draft["imports"])
            if cycle:
                raise ImportCycle(cycle, at_publish=True)
        importers = _ImportersAsWillBe(graph.published_importers(), drafts)
        targets = set(drafts)
        for module_id in drafts:
            targets.update(transitive_importers(importers, edges, module_id))
        ordered = dependencies_first(edges, targets)
        definitions: dict[str, Definition] = dict(drafts)

        def bundle(target: str) -> Bundle:
            return self._bundle(tenant, target, edges, definitions, context=context)

        def check(target: str, execution: Bundle) -> ExecutionResult:
            return checked_with_examples(sandbox, target, execution, definitions[target]["tool"])

        return self._counted(checked_in_order(sandbox, ordered, bundle, first_failure_only=False, check=check))

    def _counted(self, checks: list[tuple[str, ExecutionResult]]) -> list[tuple[str, ExecutionResult]]:
        """Counts a publish's checks, those run and those that refused it (the metrics read them)."""
        self.checks_run += len(checks)
        self.checks_refused += sum(1 for _, result in checks if result.error is not None)
        return checks

    def _bundle(
        self,
        tenant: str,
        target: str,
        edges: Mapping[str, Sequence[str]],
        definitions: dict[str, Definition],
        *,
        input: Any = None,
        context: CallContext | None = None,
    ) -> Bundle:
        """The bundle for `target` (R6): published dependencies first, `definitions` overriding.

        Published definitions loaded on the way are added to `definitions`, so a caller that builds
        many bundles (a publish) loads each module once. Not for several threads at once over one
        `definitions`: a publish builds its bundles on its own thread (`checked_in_order`).
        """
        units = []
        for name in bundle_order(edges, target):
            if name not in definitions:
                definitions[name] = self._published_definition(tenant, name)
            definition = definitions[name]
            units.append(SourceUnit(name, definition["content"], tuple(definition["imports"])))
        tool = definitions[target]["tool"]
        style = tool["style"] if tool else "module"
        return Bundle(
            units=tuple(units),
            input=input,
            timeout_millis=tool["timeoutMillis"] if tool else DEFAULT_TIMEOUT["module"],
            memory_limit_mb=tool["memoryLimitMb"] if tool else DEFAULT_MEMORY_MB,
            style=style,
            is_tool=tool is not None,
            context=for_code(context),
            date_parameters=tuple(p["name"] for p in (tool or {}).get("inputParameters", []) if p["type"] == "date"),
            events=context.events if context is not None else None,
        )

    def _published_definition(self, tenant: str, module_id: str) -> Definition:
        module = self._store.find(tenant, module_id)
        if module is None or module.published is None:
            raise UnknownModule(module_id)
        return module.published


Check = Callable[[str, Bundle], ExecutionResult]


def checked_in_order(
    sandbox: Sandbox, targets: Sequence[str], bundle: Callable[[str], Bundle], *, first_failure_only: bool,
    check: Check | None = None,
) -> list[tuple[str, ExecutionResult]]:
    """R10's checks of `targets`, up to the sandbox's parallelism at a time, answered in the order
    of `targets` whichever finishes first.

    Checks start in that order (dependencies first). Each of `parallelism` threads (the caller's
    one of them) takes the next target, builds its bundle and checks it, then takes the next:
    no thread hands a check to another, which cost more CPU than the checks themselves on a
    machine as busy as its sandbox's workers make it (issue 15). Bundles are built one at a time
    (`bundle` shares what it loads between them). A check beyond the first starts only while the
    sandbox has a session to spare (`busy`: the tenant's share and the whole pool's), so the
    publish never holds the last ones against other callers' tool calls, and one refused all the
    same (`SandboxBusy`, `TenantBusy`) while another of ours runs starts again after it; a refusal
    with nothing of ours running is the caller's, as it always was. With `first_failure_only`, nothing starts after a failure is
    known, and the failure answered is the first in order: the earlier checks still running are
    waited for. An error other than a check's result (a bundle that cannot be built) ends the
    publish: nothing starts after it, and it is raised once the running checks are done.
    """
    check = check or (lambda _, execution: sandbox.check(execution))
    width = max(1, min(sandbox.parallelism(), len(targets)))
    if width == 1:
        return _one_at_a_time(check, targets, bundle, first_failure_only=first_failure_only)
    state = _Checks(sandbox, targets, bundle, first_failure_only, check)
    helpers = [threading.Thread(target=state.work, name=f"publish-check-{n}", daemon=True) for n in range(1, width)]
    for helper in helpers:
        helper.start()
    state.work()
    for helper in helpers:
        helper.join()
    if state.failure is not None:
        raise state.failure
    return [(target, state.results[index]) for index, target in enumerate(targets[: state.stop + 1])]


class _Checks:
    """What `checked_in_order`'s threads share, under one lock."""

    def __init__(self, sandbox: Sandbox, targets: Sequence[str], bundle: Callable[[str], Bundle], first_failure_only: bool,
                 check: Check) -> None:
        self.sandbox = sandbox
        self.check = check
        self.targets = targets
        self.bundle = bundle
        self.first_failure_only = first_failure_only
        self.results: dict[int, ExecutionResult] = {}
        self.to_start = list(range(len(targets)))  # a heap: a refused check goes back in its place
        self.built: dict[int, Bundle] = {}  # refused checks' bundles, kept for their next start
        self.stop = len(targets)  # the first failure known, with first_failure_only
        self.failure: BaseException | None = None
        self.running = 0
        self.refused = False  # since one of ours last finished: start no other before one does
        self.changed = threading.Condition()

    def work(self) -> None:
        while (taken := self._take()) is not None:
            index, execution = taken
            try:
                result = self.check(self.targets[index], execution)
            except (SandboxBusy, TenantBusy) as busy:
                with self.changed:
                    self.running -= 1
                    if self.running == 0 and self.failure is None:
                        self.failure = busy  # nothing of ours ran: the caller's refusal
                    else:
                        heappush(self.to_start, index)
                        self.built[index] = execution
                        self.refused = True
                    self.changed.notify_all()
                continue
            except BaseException as error:
                self._fail(error)
                return
            with self.changed:
                self.running -= 1
                self.refused = False
                self.results[index] = result
                if self.first_failure_only and result.error is not None:
                    self.stop = min(self.stop, index)
                self.changed.notify_all()

    def _take(self) -> tuple[int, Bundle] | None:
        with self.changed:
            while True:
                if self.failure is not None or not self.to_start or self.to_start[0] >= self.stop:
                    return None
                if self.running == 0 or not (self.refused or self.sandbox.busy()):
                    break
                self.changed.wait()
            index = heappop(self.to_start)
            self.running += 1
            try:
                execution = self.built.pop(index, None) or self.bundle(self.targets[index])
            except BaseException as error:
                self.running -= 1
                self.failure = self.failure or error
                self.changed.notify_all()
                return None
            return index, execution

    def _fail(self, error: BaseException) -> None:
        with self.changed:
            self.running -= 1
            self.failure = self.failure or error
            self.changed.notify_all()


def _one_at_a_time(
    check: Check, targets: Sequence[str], bundle: Callable[[str], Bundle], *, first_failure_only: bool
) -> list[tuple[str, ExecutionResult]]:
    """A sandbox of one worker: its checks on the caller's thread, where two thread hand-offs per
    check would cost more than they overlap."""
    checks = []
    for target in targets:
        result = check(target, bundle(target))
        checks.append((target, result))
        if first_failure_only and result.error is not None:
            break
    return checks


def arguments(tool: dict[str, Any], input: Any) -> Any:
    """V1 before any JavaScript runs; in script style every declared parameter is a variable. A
    tool with its own `inputSchema` (V6) takes what the schema accepts, as it is given."""
    schema = tool.get("inputSchema")
    if schema is not None:
        given = {} if input is None else input
        found = input_violations(schema, given)
        if found:
            raise InvalidInput(found)
        return given
    return validate_input(tool["inputParameters"], input, omitted_as_null=tool["style"] == "script")


# -- examples (B4) ---------------------------------------------------------------------------------

SHOWN_CHARS = 300  # of an expected or actual value, in a refusal's message


@dataclass(frozen=True)
class ExampleRun:
    """One example run: what it expected and what the run gave, each `{"output": …}` or `{"error": …}`."""

    name: str
    passed: bool
    expected: dict[str, Any]
    actual: dict[str, Any]
    module: str | None = None  # whose example: the module tested, or a module that imports it

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "passed": self.passed, "expected": self.expected, "actual": self.actual,
                "module": self.module}


def run_example(sandbox: Sandbox, bundle: Bundle, tool: dict[str, Any], example: dict[str, Any]) -> ExampleRun:
    """Runs `bundle` with the example's input (V1 as a call's) and compares (`compared`)."""
    return compared(example, sandbox.run(dataclasses.replace(bundle, input=arguments(tool, example.get("input")))))


def compared(example: dict[str, Any], result: ExecutionResult) -> ExampleRun:
    """An example against what its run gave: an expected output as JSON (true is not 1, 1 is
    1.0), an expected error by its type."""
    expected = {"error": example["error"]} if example.get("error") is not None else {"output": example.get("output")}
    if result.error is not None:
        actual: dict[str, Any] = {"error": result.error.type, "message": result.error.message}
        passed = expected.get("error") == result.error.type
    else:
        actual = {"output": result.output}
        passed = "output" in expected and same_json(expected["output"], result.output)
    return ExampleRun(example["name"], passed, expected, actual)


def checked_with_examples(sandbox: Sandbox, target: str, bundle: Bundle, tool: dict[str, Any] | None) -> ExecutionResult:
    """R10's check of `target`, then each of its examples, the first that fails answered as an
    `example` failure naming it, what it expected and what it got. The check and the examples
    are one visit to one of the sandbox's workers (`Sandbox.check_then_run`)."""
    examples = (tool or {}).get("examples") or []
    if not examples:
        return sandbox.check(bundle)
    assert tool is not None
    result, runs = sandbox.check_then_run(bundle, [arguments(tool, example.get("input")) for example in examples])
    if result.error is not None:
        return result
    for example, outcome in zip(examples, runs, strict=True):
        run = compared(example, outcome)
        if not run.passed:
            got = (f"the error {run.actual['error']}: {run.actual['message']}" if "error" in run.actual
                   else _shown(run.actual["output"]))
            wanted = f"the error {run.expected['error']}" if "error" in run.expected else _shown(run.expected["output"])
            return ExecutionResult(error=ExecutionError(
                "example", f"example {run.name!r} of {target}: expected {wanted}, got {got}"))
    return result


def same_json(a: Any, b: Any) -> bool:
    """Equality of two JSON values: numbers by value, but a boolean is never a number."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "…"


# -- changesets (B6) --------------------------------------------------------------------------------


class _ImportersAsWillBe(Mapping[str, frozenset[str]]):
    """The published importers, with each changeset module's new imports in place of its old."""

    def __init__(self, published: Mapping[str, frozenset[str]], drafts: Mapping[str, Definition]) -> None:
        self._published = published
        self._drafts = drafts

    def __getitem__(self, module: str) -> frozenset[str]:
        found = set(self._published.get(module, frozenset())) - set(self._drafts)
        found.update(m for m, draft in self._drafts.items() if module in draft["imports"])
        return frozenset(found)

    def __iter__(self) -> Iterator[str]:
        yield from {*self._published, *(name for draft in self._drafts.values() for name in draft["imports"])}

    def __len__(self) -> int:
        return sum(1 for _ in self)


def dependencies_first(edges: Mapping[str, Sequence[str]], targets: Collection[str]) -> list[str]:
    """`targets` ordered so that each comes after the targets it imports (ties by name)."""
    graph = nx.DiGraph()
    graph.add_nodes_from(sorted(targets))
    graph.add_edges_from((dependency, module) for module in targets for dependency in edges.get(module, ()) if dependency in targets)
    return list(nx.lexicographical_topological_sort(graph))
