"""The module repository's commands (DESIGN §2–§3), as an `eventsourcing` application.

Each command reads: load → command → save, and returns plain values plus the position of what it
recorded, so the API can wait for the read model to catch up (read-your-writes). Library errors
become domain errors here (`raise … from None`); the API never sees an eventsourcing exception.

Publishes, and saves that change an import, are serialized per tenant by a `GraphLock` (a thread
lock with SQLite, an advisory lock across processes with PostgreSQL), and each of them also records
an event on the tenant's `ImportGraph`: one that raced another anyway fails on the graph's version,
is retried against the new graph, and so two publishes can never close a cycle or break a
dependent between them. Saves that leave every import as it was touch neither the lock nor the
graph. A command whose module itself changed under it is not retried: it is a 409, and the other
writer's change stands.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from copy import deepcopy
from dataclasses import dataclass
from typing import Any

from eventsourcing.application import AggregateNotFoundError, Application, LRUCache, Repository, project_aggregate
from eventsourcing.persistence import IntegrityError

from domain.errors import (
    CheckFailed,
    ConcurrentChange,
    PreconditionFailed,
    UnknownVersion,
    IdTaken,
    ImportCycle,
    ImportRefused,
    InUse,
    InvalidDefinition,
    ToolNotCallable,
    UnknownModule,
    Violation,
)
from domain.callers import TOKENS_ID, CallerRegistry, TokenRegistry, registry_id
from domain.graph import bundle_order, find_cycle, transitive_importers, with_edges
from domain.model import CodeModule, Definition, ImportGraph, graph_aggregate_id, module_aggregate_id
from domain.ports import Execution, ExecutionResult, GraphLock, NoOtherTools, Sandbox, SourceUnit, ToolNames
from domain.rules import (
    DEFAULT_MEMORY_MB,
    DEFAULT_TIMEOUT,
    id_violations,
    imports_violations,
    normalise_tool,
    source_violations,
    tool_violations,
    validate_definition,
    validate_input,
)

_ATTEMPTS = 5
UNSET: Any = object()  # a PUT field that the request did not mention


class ThreadGraphLock(GraphLock):
    """Serializes the graph changes of one tenant within this process."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}

    @contextlib.contextmanager
    def hold(self, tenant: str) -> Iterator[None]:
        with self._guard:
            lock = self._locks.setdefault(tenant, threading.Lock())
        with lock:
            yield


class NewestAggregateCache(LRUCache):
    """An LRU cache of aggregates that never goes back: a put of an older version than the one
    held is dropped (a thread that read an aggregate before another thread's save must not put
    its stale copy over the saved one)."""

    def __init__(self, maxsize: int) -> None:
        super().__init__(maxsize)
        self._putting = threading.Lock()

    def put(self, key: Any, value: Any) -> Any:
        with self._putting:
            link = self.cache.get(key)
            held = link[self.RESULT] if link is not None else None
            if held is not None and value is not None and held.version >= value.version:
                return None, None
            return super().put(key, value)


class SharedAggregateRepository(Repository):
    """eventsourcing's repository, with cached aggregates that no thread ever changes.

    Request threads share what the cache holds (a read takes no copy). eventsourcing's own
    fast-forward applies newer events to the cached object in place, under a lock that only other
    fast-forwards take: a thread reading that object meanwhile saw it change under it (issue 12,
    11a). Here a fast-forward applies the new events to a copy, and the copy replaces the cached
    object; the object a reader holds stays as it was read. Only a cache hit with newer events
    pays for the copy; a hit with none (nearly every read) costs what it did.
    """

    def get(
        self,
        aggregate_id: Any,
        *,
        version: int | None = None,
        projector_func: Any = project_aggregate,
        fastforward_skipping: bool = False,
        deepcopy_from_cache: bool = True,
    ) -> Any:
        if not self.cache or version is not None:
            return super().get(aggregate_id, version=version, projector_func=projector_func)
        try:
            aggregate = self.cache.get(aggregate_id)
        except KeyError:
            aggregate = self._reconstruct_aggregate(aggregate_id, None, projector_func)
            self.cache.put(aggregate_id, aggregate)
        else:
            if self.fastforward:
                new_events = list(self.event_store.get(originator_id=aggregate_id, gt=aggregate.version))
                if new_events:
                    aggregate = projector_func(deepcopy(aggregate), new_events)
                    if aggregate is None:
                        raise AggregateNotFoundError(aggregate_id)
                    self.cache.put(aggregate_id, aggregate)
        if deepcopy_from_cache and self.deepcopy_from_cache:
            # A command changes its own copy; the cached object changes only by being replaced.
            aggregate = deepcopy(aggregate)
        return aggregate


@dataclass(frozen=True)
class Written:
    """What a command recorded: the module as it now stands, and the log position to wait for."""

    module: CodeModule | None
    position: int | None


class ModuleRepository(Application):
    """Commands on code modules; queries that must be exact (the graph, a module) read the event store."""

    name = "toolsmith"

    def __init__(
        self,
        env: dict[str, str] | None = None,
        *,
        sandbox: Callable[[], Sandbox],
        tool_names: ToolNames | None = None,
        graph_lock: GraphLock | None = None,
    ) -> None:
        super().__init__(env)
        self._sandbox = sandbox
        self._tool_names = tool_names or NoOtherTools()
        self._graph_lock = graph_lock or ThreadGraphLock()

    def construct_repository(self) -> Repository:
        """eventsourcing's settings, with a cache whose aggregates threads may share (see
        `SharedAggregateRepository`)."""
        made = super().construct_repository()
        repository = SharedAggregateRepository(
            event_store=made.event_store,
            snapshot_store=made.snapshot_store,
            fastforward=made.fastforward,
            fastforward_skipping=made.fastforward_skipping,
            deepcopy_from_cache=made.deepcopy_from_cache,
        )
        if made.cache is not None:
            # eventsourcing makes an unbounded cache for a size of 0: so does a huge bound.
            repository.cache = NewestAggregateCache(made.cache.maxsize if isinstance(made.cache, LRUCache) else sys.maxsize)
        return repository

    # -- queries -------------------------------------------------------------------------------

    def module(self, tenant: str, module_id: str, *, for_update: bool = False) -> CodeModule:
        """A live module. Without `for_update` the object is shared with the cache and other threads:
        only read it (no thread ever changes it, see `SharedAggregateRepository`)."""
        module = self._load(tenant, module_id, for_update=for_update)
        if module is None or module.deleted:
            raise UnknownModule(module_id)
        return module

    def graph(self, tenant: str, *, for_update: bool = False) -> ImportGraph:
        try:
            return self.repository.get(graph_aggregate_id(tenant), deepcopy_from_cache=for_update)
        except AggregateNotFoundError:
            return ImportGraph(tenant=tenant)

    def module_events(self, tenant: str, module_id: str) -> list[Any]:
        """Every event of a module, in order, through all its lives (B2); empty when it never existed."""
        if not isinstance(module_id, str) or id_violations(module_id):
            return []
        return list(self.repository.event_store.get(module_aggregate_id(tenant, module_id)))

    def graph_events(self, tenant: str) -> list[Any]:
        return list(self.repository.event_store.get(graph_aggregate_id(tenant)))

    def published_versions(self, tenant: str, module_id: str) -> dict[int, Definition]:
        """Each published version's definition, by number (B1, B2)."""
        return {e.version: e.definition for e in self.module_events(tenant, module_id) if isinstance(e, CodeModule.Published)}

    def registry(self, tenant: str, *, for_update: bool = False) -> CallerRegistry:
        """The tenant's plans, agents, MCP servers and usage profiles."""
        try:
            return self.repository.get(registry_id(tenant), deepcopy_from_cache=for_update)
        except AggregateNotFoundError:
            return CallerRegistry(tenant=tenant)

    def tokens(self, *, for_update: bool = False) -> TokenRegistry:
        try:
            return self.repository.get(TOKENS_ID, deepcopy_from_cache=for_update)
        except AggregateNotFoundError:
            return TokenRegistry()

    def tool_holding(self, tenant: str, name: str) -> str | None:
        """The kind of tool that holds `name` (R2), as the kinds say; None when none does."""
        return self._tool_names.holder_of(tenant, name)

    def is_module(self, tenant: str, name: str) -> bool:
        """Whether a (non-deleted) module holds `name`, from the event store."""
        module = self._load(tenant, name)
        return module is not None and not module.deleted

    def published_tools(self, tenant: str) -> list[CodeModule]:
        """Every module whose published version is a tool, from the import graph's published nodes."""
        graph = self.graph(tenant)
        found = []
        for name in list(graph.published_edges()):
            module = self._load(tenant, name)
            if module is not None and module.published is not None and module.published["tool"] is not None:
                found.append(module)
        return found

    def save_or_conflict(self, *aggregates: Any) -> int | None:
        """Saves atomically; None when another writer got there first (nothing was written)."""
        return self._save(*aggregates)

    @property
    def graph_lock(self) -> GraphLock:
        return self._graph_lock

    def position(self) -> int:
        return self.recorder.max_notification_id() or 0

    # -- commands ------------------------------------------------------------------------------

    def create(
        self,
        tenant: str,
        module_id: str,
        *,
        description: Any,
        content: Any,
        imports: Any,
        tool: dict[str, Any] | None,
        by: str,
    ) -> Written:
        """POST /: a new UNPUBLISHED module (or a new life of a deleted id)."""
        found = id_violations(module_id)
        definition = _definition(description, content, imports, tool)
        try:
            validate_definition(definition)
        except InvalidDefinition as invalid:
            found += invalid.violations
        if found:
            raise InvalidDefinition(found)
        holder = self.tool_holding(tenant, module_id)
        if holder:
            raise IdTaken(module_id, holder)
        imports = definition["imports"]
        # A module nobody can import yet needs no graph node until it imports something or is published.
        with self._graph_lock.hold(tenant) if imports else contextlib.nullcontext():
            for _ in range(_ATTEMPTS):
                existing = self._load(tenant, module_id, for_update=True)
                if existing is not None and not existing.deleted:
                    raise IdTaken(module_id)
                graph = self.graph(tenant, for_update=True) if imports else None
                if graph is not None:
                    self._check_draft_imports(graph, module_id, imports)
                    graph.link(module_id, published=None, draft=imports)
                if existing is None:
                    module = CodeModule(tenant=tenant, module_id=module_id, definition=definition, by=by)
                else:
                    module = existing
                    module.recreate(definition, by)
                position = self._save(module, graph)
                if position is not None:
                    return Written(module, position)
        raise ConcurrentChange(module_id)

    def update(
        self,
        tenant: str,
        module_id: str,
        *,
        description: Any = UNSET,
        content: Any = UNSET,
        imports: Any = UNSET,
        tool: Any = UNSET,
        by: str,
        expected: int | None = None,
    ) -> Written:
        """PUT /{id}: changes the draft; an unmentioned field keeps its current value. With
        `expected` (If-Match, B7), only while the module is still at that version."""
        with self._graph_lock.hold(tenant) if imports is not UNSET else contextlib.nullcontext():
            return self._update(tenant, module_id, description, content, imports, tool, by, expected)

    def revert(self, tenant: str, module_id: str, version: Any, *, by: str, expected: int | None = None) -> Written:
        """POST /{id}/revert (B1): published version `version` becomes the draft again, checked as
        any draft is (R5 against today's graph). The live `enabled` switch stays as it is."""
        module = self.module(tenant, module_id)
        definition = self.published_versions(tenant, module_id).get(version)
        if definition is None:
            raise UnknownVersion(module_id, version)
        live = module.published["tool"] if module.published is not None else None
        tool = definition["tool"]
        if tool is not None and live is not None:
            tool = {**tool, "enabled": live["enabled"]}
        with self._graph_lock.hold(tenant):
            return self._update(
                tenant, module_id, definition["description"], definition["content"], definition["imports"], tool, by, expected,
                reverting_to=version,
            )

    def _update(
        self, tenant: str, module_id: str, description: Any, content: Any, imports: Any, tool: Any, by: str,
        expected: int | None, *, reverting_to: int | None = None,
    ) -> Written:
        for _ in range(_ATTEMPTS):
            module = self.module(tenant, module_id, for_update=True)
            version = module.version
            _expect(module, expected)
            current = module.current
            definition = _definition(
                current["description"] if description is UNSET else description,
                current["content"] if content is UNSET else content,
                current["imports"] if imports is UNSET else imports,
                current["tool"] if tool is UNSET else tool,
            )
            validate_definition(definition)
            graph = self.graph(tenant, for_update=True)
            # A graph node keeps draft imports only where they differ from the published ones.
            node = graph.nodes.get(module_id, {"published": None, "draft": None})
            edges_now = node["draft"] if node["draft"] is not None else (node["published"] or [])
            imports_changed = definition["imports"] != edges_now
            if imports_changed:
                self._check_draft_imports(graph, module_id, definition["imports"])
            # `enabled` is live (seed 003): it switches the published tool at once, draft or not.
            enabled_changed = definition["tool"] is not None and module.set_enabled(definition["tool"]["enabled"], by)
            if reverting_to is not None:
                changed = module.revert(reverting_to, definition, by)
            else:
                changed = module.change_draft(definition, by)
            if not changed and not enabled_changed:
                return Written(module, None)
            if imports_changed:
                draft_edges = None if definition["imports"] == node["published"] else definition["imports"]
                graph.link(module_id, published=node["published"], draft=draft_edges)
            position = self._save(module, graph if imports_changed else None)
            if position is not None:
                return Written(module, position)
            self._raise_if_module_moved(tenant, module_id, version, expected)
        raise ConcurrentChange(module_id)

    def publish(
        self, tenant: str, module_id: str, *, by: str, expected: int | None = None, context: dict[str, Any] | None = None
    ) -> Written:
        """POST /{id}/publish: R5 again, then R10's check of the module and all its importers. The
        checks run with `context` as `ai.context()`: the publisher's, as a call of theirs would."""
        sandbox = self._sandbox()
        with self._graph_lock.hold(tenant):
            for _ in range(_ATTEMPTS):
                module = self.module(tenant, module_id, for_update=True)
                _expect(module, expected)
                graph = self.graph(tenant, for_update=True)
                draft, checks = self._publish_checks(sandbox, tenant, module, graph, first_failure_only=True, context=context)
                for target, result in checks:
                    if result.error is not None:
                        raise CheckFailed(target, result.error.type, result.error.message)
                version = module.version
                module.publish(by)
                graph.link(module_id, published=draft["imports"], draft=None)
                position = self._save(module, graph)
                if position is not None:
                    return Written(module, position)
                self._raise_if_module_moved(tenant, module_id, version, expected)
        raise ConcurrentChange(module_id)

    def preview_publish(
        self, tenant: str, module_id: str, *, context: dict[str, Any] | None = None
    ) -> tuple[CodeModule, list[tuple[str, ExecutionResult]]]:
        """POST /{id}/publish?dryRun=true (B3): every check a publish would make, each one's result;
        nothing is recorded. Import rules (R5) refuse as they would at publish."""
        sandbox = self._sandbox()
        module = self.module(tenant, module_id)
        _, checks = self._publish_checks(sandbox, tenant, module, self.graph(tenant), first_failure_only=False, context=context)
        return module, checks

    def _publish_checks(
        self, sandbox: Sandbox, tenant: str, module: CodeModule, graph: ImportGraph, *, first_failure_only: bool,
        context: dict[str, Any] | None = None,
    ) -> tuple[Definition, list[tuple[str, ExecutionResult]]]:
        """R5 again, then the sandbox's check of the module and of every module that imports it,
        transitively, with the draft in place (R10)."""
        module._check_can_publish()
        module_id = module.module_id
        draft = module.draft
        assert draft is not None
        edges = with_edges(graph.published_imports(), module_id, draft["imports"])
        self._check_imports(graph, module_id, draft["imports"], edges, at_publish=True)
        definitions = {module_id: draft}  # filled with each published definition loaded
        checks = []
        for target in [module_id, *transitive_importers(edges, module_id)]:
            result = sandbox.check(self._execution(tenant, target, edges, definitions, context=context))
            checks.append((target, result))
            if result.error is not None and first_failure_only:
                break
        return draft, checks

    def discard_draft(self, tenant: str, module_id: str, *, by: str, expected: int | None = None) -> Written:
        """DELETE /{id}/draft (R11)."""
        with self._graph_lock.hold(tenant):
            return self._discard_draft(tenant, module_id, by, expected)

    def _discard_draft(self, tenant: str, module_id: str, by: str, expected: int | None) -> Written:
        for _ in range(_ATTEMPTS):
            module = self.module(tenant, module_id, for_update=True)
            version = module.version
            _expect(module, expected)
            module.discard_draft(by)
            graph = self.graph(tenant, for_update=True)
            node = graph.nodes.get(module_id)
            relink = node is not None and node["draft"] is not None
            if relink:
                graph.link(module_id, published=node["published"], draft=None)
            position = self._save(module, graph if relink else None)
            if position is not None:
                return Written(module, position)
            self._raise_if_module_moved(tenant, module_id, version, expected)
        raise ConcurrentChange(module_id)

    def delete(self, tenant: str, module_id: str, *, by: str, expected: int | None = None) -> Written:
        """DELETE /{id} (R12): refused while anything uses the module."""
        with self._graph_lock.hold(tenant):
            return self._delete(tenant, module_id, by, expected)

    def _delete(self, tenant: str, module_id: str, by: str, expected: int | None) -> Written:
        for _ in range(_ATTEMPTS):
            module = self.module(tenant, module_id, for_update=True)
            version = module.version
            _expect(module, expected)
            graph = self.graph(tenant, for_update=True)
            used_by = {"modules": [m for m in graph.importers_of(module_id) if m != module_id], **self.registry(tenant).users_of(module_id)}
            if any(used_by.values()):
                raise InUse(module_id, used_by)
            module.delete(by)
            has_node = module_id in graph.nodes
            if has_node:
                graph.unlink(module_id)
            position = self._save(module, graph if has_node else None)
            if position is not None:
                return Written(None, position)
            self._raise_if_module_moved(tenant, module_id, version, expected)
        raise ConcurrentChange(module_id)

    def duplicate(self, tenant: str, module_id: str, new_id: Any, *, by: str) -> Written:
        """POST /{id}/duplicate (R13): a new UNPUBLISHED module from the current definition."""
        source = self.module(tenant, module_id).current
        return self.create(
            tenant,
            new_id,
            description=source["description"],
            content=source["content"],
            imports=source["imports"],
            tool=source["tool"],
            by=by,
        )

    # -- running code --------------------------------------------------------------------------

    def test(
        self,
        tenant: str,
        *,
        content: Any,
        imports: Any,
        tool: dict[str, Any] | None,
        input: Any,
        module_id: str | None,
        context: dict[str, Any],
    ) -> ExecutionResult:
        """POST /test: runs a definition as the editor holds it; nothing is saved."""
        found = source_violations(content) + imports_violations(imports)
        tool = normalise_tool(tool)
        if tool is not None:
            found += tool_violations(tool)
        if module_id is not None:
            found += id_violations(module_id)
        if found:
            raise InvalidDefinition(found)
        if tool is not None:
            input = _arguments(tool, input)
        sandbox = self._sandbox()
        name = module_id or "(draft)"  # not an identifier, so it cannot stand for a real module
        graph = self.graph(tenant)
        edges = self._check_draft_imports(graph, name, imports)
        definition = {"description": "", "content": content, "imports": imports, "tool": tool}
        execution = self._execution(tenant, name, edges, {name: definition}, input=input, context=context)
        return sandbox.run(execution)

    def call_tool(self, tenant: str, name: str, input: Any, *, context: dict[str, Any]) -> ExecutionResult:
        """POST /api/v1/tools/{name}/call: runs the published version of a tool module."""
        module = self._load(tenant, name)
        if module is None or module.deleted:
            raise ToolNotCallable(name, "no such tool")
        if module.published is None:
            raise ToolNotCallable(name, "the module is not published")
        tool = module.published["tool"]
        if tool is None:
            raise ToolNotCallable(name, "the module is a library, not a tool")
        if not tool["enabled"]:
            raise ToolNotCallable(name, "the tool is disabled")
        arguments = _arguments(tool, input)
        sandbox = self._sandbox()
        edges = self.graph(tenant).published_edges()
        execution = self._execution(tenant, name, edges, {name: module.published}, input=arguments, context=context)
        return sandbox.run(execution)

    # -- helpers -------------------------------------------------------------------------------

    def _load(self, tenant: str, module_id: str, *, for_update: bool = False) -> CodeModule | None:
        if not isinstance(module_id, str) or id_violations(module_id):
            return None
        try:
            return self.repository.get(module_aggregate_id(tenant, module_id), deepcopy_from_cache=for_update)
        except AggregateNotFoundError:
            return None

    def _save(self, *aggregates: Any) -> int | None:
        """Saves atomically; None when another writer got there first (nothing was written)."""
        try:
            recordings = self.save(*aggregates)
        except IntegrityError:
            return None
        return recordings[-1].notification.id if recordings else self.position()

    def _raise_if_module_moved(self, tenant: str, module_id: str, version: int, expected: int | None = None) -> None:
        """After a failed save: a conflict on the module itself is the client's 409, not a retry;
        one on the tenant's graph alone (another module's import change or publish) is retried.

        It asks the event store, not the aggregate cache: the cache may not have the other
        writer's event yet (another process's, or this process's before its save returns), and a
        retry from that stale version would overwrite the other change.
        """
        if self.recorder.select_events(module_aggregate_id(tenant, module_id), gt=version, limit=1):
            if expected is not None:
                raise PreconditionFailed(module_id, etag(expected), "a newer version")
            raise ConcurrentChange(module_id)

    def _check_draft_imports(self, graph: ImportGraph, module_id: str, imports: list[str]) -> dict[str, list[str]]:
        """R5 at save, against the published graph plus this draft; answers that graph."""
        edges = with_edges(graph.published_imports(), module_id, imports)
        self._check_imports(graph, module_id, imports, edges, at_publish=False)
        return edges

    def _check_imports(
        self, graph: ImportGraph, module_id: str, imports: list[str], edges: Mapping[str, list[str]], *, at_publish: bool
    ) -> None:
        """R5: imports name published modules, not the module itself, and close no cycle in `edges`."""
        found = [
            Violation(f"draftImports[{i}]", "R5", self._import_problem(graph.tenant, module_id, name))
            for i, name in enumerate(imports)
            if name == module_id or not graph.is_published(name)
        ]
        if found:
            raise ImportRefused(found, at_publish=at_publish)
        cycle = find_cycle(edges, through=module_id)
        if cycle:
            raise ImportCycle(cycle, at_publish=at_publish)

    def _import_problem(self, tenant: str, module_id: str, name: str) -> str:
        if name == module_id:
            return f"a module cannot import itself ({name!r})"
        module = self._load(tenant, name)
        if module is None or module.deleted:
            return f"no module {name!r} to import"
        return f"{name!r} is not published; only published modules can be imported"

    def _execution(
        self,
        tenant: str,
        target: str,
        edges: Mapping[str, list[str]],
        definitions: dict[str, Definition],
        *,
        input: Any = None,
        context: dict[str, Any] | None = None,
    ) -> Execution:
        """The bundle for `target` (R6): published dependencies first, `definitions` overriding.

        Published definitions loaded on the way are added to `definitions`, so a caller that builds
        many bundles (a publish) loads each module once.
        """
        units = []
        for name in bundle_order(edges, target):
            if name not in definitions:
                definitions[name] = self._published_definition(tenant, name)
            definition = definitions[name]
            units.append(SourceUnit(name, definition["content"], tuple(definition["imports"])))
        tool = definitions[target]["tool"]
        style = tool["style"] if tool else "module"
        return Execution(
            units=tuple(units),
            input=input,
            timeout_millis=tool["timeoutMillis"] if tool else DEFAULT_TIMEOUT["module"],
            memory_limit_mb=tool["memoryLimitMb"] if tool else DEFAULT_MEMORY_MB,
            style=style,
            is_tool=tool is not None,
            context=context or {},
            date_parameters=tuple(p["name"] for p in (tool or {}).get("inputParameters", []) if p["type"] == "date"),
        )

    def _published_definition(self, tenant: str, module_id: str) -> Definition:
        module = self._load(tenant, module_id)
        if module is None or module.published is None:
            raise UnknownModule(module_id)
        return module.published


def etag(version: int) -> str:
    """B7: a module's entity tag, its aggregate version (every change makes a new one)."""
    return f'"{version}"'


def _expect(module: CodeModule, expected: int | None) -> None:
    if expected is not None and module.version != expected:
        raise PreconditionFailed(module.module_id, etag(expected), etag(module.version))


def _arguments(tool: dict[str, Any], input: Any) -> Any:
    """V1 before any JavaScript runs; in script style every declared parameter is a variable."""
    return validate_input(tool["inputParameters"], input, omitted_as_null=tool["style"] == "script")


def _definition(description: Any, content: Any, imports: Any, tool: Any) -> Definition:
    return {
        "description": description,
        "content": content,
        "imports": list(imports) if isinstance(imports, (list, tuple)) else imports,
        "tool": normalise_tool(tool) if isinstance(tool, dict) else tool,
    }
