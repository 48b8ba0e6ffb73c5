"""The commands on code modules (docs/rules.md–docs/rest-api.md, docs/rules.md B1, B7), each run by the `CommandRunner`.

Each command reads: load → command → save, and returns the module as it now stands plus the
position of what it recorded, so the API can wait for the read model to catch up (read-your-writes).
A command that changes an import, or publishes, also records an event on the tenant's
`ImportGraph` and holds the tenant's graph lock; one that changes only the module's own text
touches neither.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from application.commands import Change, CommandRunner
from application.context import CallContext
from application.execution import Execution
from application.history import History
from application.imports import check_draft_imports
from application.quotas import Quotas
from application.store import Store
from domain.errors import (
    ChangesetRefused, CheckFailed, IdTaken, InUse, InvalidDefinition, InvalidInput, UnknownVersion, Violation,
)
from domain import annotations as tool_hints
from domain.annotations import uses_http
from domain.graph import bundle_order
from domain.model import CodeModule, Definition
from domain.ports import ExecutionResult
from domain.rules import id_violations, normalise_tool, validate_definition
from domain.tenants import MODULES

UNSET: Any = object()  # a PUT field that the request did not mention


MAX_CHANGESET = 100
MAX_MESSAGE = 2_000


@dataclass
class Changeset:
    """What a changeset published (or, dry, would): its id, the modules as they now stand, every check."""

    id: str
    modules: list[CodeModule]
    checks: list[tuple[str, ExecutionResult]]
    position: int | None = None


def changeset_violations(ids: Any, expected: Mapping[str, Any]) -> list[Violation]:
    """The request's own rules: 1 to 100 ids, each an id, none twice; If-Match only for those ids."""
    if not isinstance(ids, (list, tuple)) or not ids:
        return [Violation("ids", "B6", "name at least one module to publish")]
    found: list[Violation] = []
    if len(ids) > MAX_CHANGESET:
        found.append(Violation("ids", "B6", f"at most {MAX_CHANGESET} modules in one changeset, got {len(ids)}"))
    seen: set[str] = set()
    for i, module_id in enumerate(ids):
        found += id_violations(module_id, f"ids[{i}]")
        if module_id in seen:
            found.append(Violation(f"ids[{i}]", "B6", f"{module_id!r} is named twice"))
        seen.add(module_id)
    for module_id in expected:
        if module_id not in seen:
            found.append(Violation(f"ifMatch.{module_id}", "B7", f"{module_id!r} is not one of the ids"))
    return found


@dataclass(frozen=True)
class Written:
    """What a command recorded: the module as it now stands, and the log position to wait for."""

    module: CodeModule | None
    position: int | None


class Modules:
    def __init__(self, store: Store, commands: CommandRunner, execution: Execution, history: History,
                 quotas: Quotas | None = None) -> None:
        self._store = store
        self._commands = commands
        self._execution = execution
        self._history = history
        self._quotas = quotas

    def create(
        self, tenant: str, module_id: str, *, description: Any, content: Any, imports: Any, tool: dict[str, Any] | None, by: str,
    ) -> Written:
        """POST /: a new UNPUBLISHED module (or a new life of a deleted id)."""
        found = id_violations(module_id)
        definition = _definition(description, content, imports, tool)
        try:
            validate_definition(definition)
            found += imported_annotation_violations(self._store, tenant, definition)
        except InvalidDefinition as invalid:
            found += invalid.violations
        if found:
            raise InvalidDefinition(found)
        holder = self._store.tool_holding(tenant, module_id)
        if holder:
            raise IdTaken(module_id, holder)
        imports = definition["imports"]
        quotas = self._quotas if self._quotas is not None and self._quotas.limited(tenant, MODULES) else None

        def attempt() -> Change[CodeModule]:
            existing = self._store.find(tenant, module_id, for_update=True)
            if existing is not None and not existing.deleted:
                raise IdTaken(module_id)
            if quotas is not None:
                quotas.check(tenant, MODULES)
            graph = self._store.graph(tenant, for_update=True) if imports else None
            if graph is not None:
                check_draft_imports(self._store, graph, module_id, imports)
                graph.link(module_id, published=None, draft=imports)
            if existing is None:
                module = CodeModule(tenant=tenant, module_id=module_id, definition=definition, by=by)
            else:
                module = existing
                module.recreate(definition, by)
            return Change(module, save=(module, graph))

        # A module nobody can import yet needs no graph node until it imports something or is published;
        # the tenant's lock is held all the same while a quota counts its modules (docs/tenants.md).
        lock = tenant if imports or quotas is not None else None
        return Written(*self._commands.run(attempt, name=module_id, lock=lock))

    def update(
        self, tenant: str, module_id: str, *, description: Any = UNSET, content: Any = UNSET, imports: Any = UNSET,
        tool: Any = UNSET, by: str, expected: int | None = None,
    ) -> Written:
        """PUT /{id}: changes the draft; an unmentioned field keeps its current value. With
        `expected` (If-Match, B7), only while the module is still at that version."""
        lock = tenant if imports is not UNSET else None
        return self._change_draft(tenant, module_id, description, content, imports, tool, by, expected, lock=lock)

    def revert(self, tenant: str, module_id: str, version: Any, *, by: str, expected: int | None = None) -> Written:
        """POST /{id}/revert (B1): published version `version` becomes the draft again, checked as
        any draft is (R5 against today's graph). The live `enabled` switch stays as it is."""
        module = self._store.module(tenant, module_id)
        definition = self._history.published_versions(tenant, module_id).get(version)
        if definition is None:
            raise UnknownVersion(module_id, version)
        live = module.published["tool"] if module.published is not None else None
        tool = definition["tool"]
        if tool is not None and live is not None:
            tool = {**tool, "enabled": live["enabled"]}
        return self._change_draft(
            tenant, module_id, definition["description"], definition["content"], definition["imports"], tool, by, expected,
            lock=tenant, reverting_to=version,
        )

    def _change_draft(
        self, tenant: str, module_id: str, description: Any, content: Any, imports: Any, tool: Any, by: str,
        expected: int | None, *, lock: str | None, reverting_to: int | None = None,
    ) -> Written:
        def attempt() -> Change[CodeModule]:
            module = self._store.module(tenant, module_id, for_update=True)
            subject = self._commands.subject(module, module_id, expected)
            current = module.current
            definition = _definition(
                current["description"] if description is UNSET else description,
                current["content"] if content is UNSET else content,
                current["imports"] if imports is UNSET else imports,
                current["tool"] if tool is UNSET else tool,
            )
            validate_definition(definition)
            violations = imported_annotation_violations(self._store, tenant, definition)
            if violations:
                raise InvalidDefinition(violations)
            # The graph is loaded only when the imports change: the module knows its own.
            imports_changed = definition["imports"] != current["imports"]
            graph = self._store.graph(tenant, for_update=True) if imports_changed else None
            if graph is not None:
                check_draft_imports(self._store, graph, module_id, definition["imports"])
            # `enabled` is live (docs/kinds/index.md): it switches the published tool at once, draft or not.
            enabled_changed = definition["tool"] is not None and module.set_enabled(definition["tool"]["enabled"], by)
            if reverting_to is not None:
                changed = module.revert(reverting_to, definition, by)
            else:
                changed = module.change_draft(definition, by)
            if not changed and not enabled_changed:
                return Change(module)
            if graph is not None:
                # A graph node keeps draft imports only where they differ from the published ones.
                node = graph.nodes.get(module_id)
                published = node["published"] if node is not None else None
                graph.link(module_id, published=published, draft=None if definition["imports"] == published else definition["imports"])
            return Change(module, save=(module, graph), subject=subject)

        return Written(*self._commands.run(attempt, name=module_id, lock=lock))

    def publish(
        self, tenant: str, module_id: str, *, by: str, expected: int | None = None, context: CallContext | None = None,
        message: str | None = None,
    ) -> Written:
        """POST /{id}/publish: R5 again, then R10's check of the module and all its importers. The
        checks run with `context` as `ai.context()`: the publisher's, as a call of theirs would."""
        sandbox = self._execution.sandbox()

        def attempt() -> Change[CodeModule]:
            module = self._store.module(tenant, module_id, for_update=True)
            subject = self._commands.subject(module, module_id, expected)
            graph = self._store.graph(tenant, for_update=True)
            draft, checks = self._execution.publish_checks(sandbox, tenant, module, graph, first_failure_only=True, context=context)
            for target, result in checks:
                if result.error is not None:
                    raise CheckFailed(target, result.error.type, result.error.message)
            module.publish(by, message=message)
            graph.link(module_id, published=draft["imports"], draft=None)
            return Change(module, save=(module, graph), subject=subject)

        return Written(*self._commands.run(attempt, name=module_id, lock=tenant))

    def publish_changeset(
        self, tenant: str, ids: Sequence[str], *, by: str, message: str | None = None,
        expected: Mapping[str, int] | None = None, context: CallContext | None = None, dry_run: bool = False,
    ) -> Changeset:
        """POST /publish (B6): every draft of `ids` checked together against the graph as it will be,
        then published in one transaction (all or nothing), each `Published` event naming the
        changeset and `message`. With `dry_run`, every check is made and answered; nothing is
        recorded. `expected` holds the If-Match of some modules (B7)."""
        found = changeset_violations(ids, expected or {})
        if found:
            raise InvalidInput(found)
        sandbox = self._execution.sandbox()
        changeset_id = f"cs_{uuid.uuid4().hex[:20]}"

        def attempt() -> Change[Changeset]:
            modules = [self._store.module(tenant, module_id, for_update=not dry_run) for module_id in ids]
            subjects = [self._commands.subject(m, m.module_id, (expected or {}).get(m.module_id)) for m in modules]
            graph = self._store.graph(tenant, for_update=not dry_run)
            checks = self._execution.changeset_checks(sandbox, tenant, modules, graph, context=context)
            failures = [(target, r.error.type, r.error.message) for target, r in checks if r.error is not None]
            if dry_run:
                return Change(Changeset(changeset_id, modules, checks))
            if failures:
                raise ChangesetRefused(failures)
            drafts = {m.module_id: m.draft for m in modules}
            for module in modules:
                module.publish(by, changeset=changeset_id, message=message)
            for module_id, draft in drafts.items():
                assert draft is not None
                graph.link(module_id, published=draft["imports"], draft=None)
            return Change(Changeset(changeset_id, modules, checks), save=(*modules, graph), subjects=subjects)

        changeset, position = self._commands.run(attempt, name=", ".join(ids), lock=None if dry_run else tenant)
        changeset.position = position
        return changeset

    def preview_publish(
        self, tenant: str, module_id: str, *, context: CallContext | None = None
    ) -> tuple[CodeModule, list[tuple[str, ExecutionResult]]]:
        """POST /{id}/publish?dryRun=true (B3): every check a publish would make, each one's result;
        nothing is recorded. Import rules (R5) refuse as they would at publish."""
        sandbox = self._execution.sandbox()
        module = self._store.module(tenant, module_id)
        graph = self._store.graph(tenant)
        _, checks = self._execution.publish_checks(sandbox, tenant, module, graph, first_failure_only=False, context=context)
        return module, checks

    def discard_draft(self, tenant: str, module_id: str, *, by: str, expected: int | None = None) -> Written:
        """DELETE /{id}/draft (R11)."""

        def attempt() -> Change[CodeModule]:
            module = self._store.module(tenant, module_id, for_update=True)
            subject = self._commands.subject(module, module_id, expected)
            module.discard_draft(by)
            graph = self._store.graph(tenant, for_update=True)
            node = graph.nodes.get(module_id)
            relink = node is not None and node["draft"] is not None
            if relink:
                graph.link(module_id, published=node["published"], draft=None)
            return Change(module, save=(module, graph if relink else None), subject=subject)

        return Written(*self._commands.run(attempt, name=module_id, lock=tenant))

    def delete(self, tenant: str, module_id: str, *, by: str, expected: int | None = None) -> Written:
        """DELETE /{id} (R12): refused while anything uses the module."""

        def attempt() -> Change[None]:
            module = self._store.module(tenant, module_id, for_update=True)
            subject = self._commands.subject(module, module_id, expected)
            graph = self._store.graph(tenant, for_update=True)
            users = self._store.registry(tenant).users_of(module_id)
            used_by = {"modules": [m for m in graph.importers_of(module_id) if m != module_id], **users,
                       **self._store.users_of(tenant, module_id)}
            if any(used_by.values()):
                raise InUse(module_id, used_by)
            module.delete(by)
            has_node = module_id in graph.nodes
            if has_node:
                graph.unlink(module_id)
            return Change(None, save=(module, graph if has_node else None), subject=subject)

        return Written(*self._commands.run(attempt, name=module_id, lock=tenant))

    def duplicate(self, tenant: str, module_id: str, new_id: Any, *, by: str) -> Written:
        """POST /{id}/duplicate (R13): a new UNPUBLISHED module from the current definition."""
        source = self._store.module(tenant, module_id).current
        return self.create(
            tenant, new_id, description=source["description"], content=source["content"], imports=source["imports"],
            tool=source["tool"], by=by,
        )


def _definition(description: Any, content: Any, imports: Any, tool: Any) -> Definition:
    return {
        "description": description,
        "content": content,
        "imports": list(imports) if isinstance(imports, (list, tuple)) else imports,
        "tool": normalise_tool(tool) if isinstance(tool, dict) else tool,
    }


def imported_annotation_violations(store: Store, tenant: str, definition: Mapping[str, Any]) -> list[Violation]:
    """R17 across imports: a tool whose annotations say `openWorldHint: false` while a module it
    imports (published, transitively) calls `http.fetch`. (Its own code is `validate_definition`'s.)"""
    tool = definition.get("tool")
    given = tool.get("annotations") if isinstance(tool, dict) else None
    if not isinstance(given, dict) or given.get("openWorldHint") is not False or not definition["imports"]:
        return []
    edges = store.graph(tenant).published_edges()
    seen: set[str] = set()
    for first in definition["imports"]:
        for needed in bundle_order(edges, first):
            if needed in seen:
                continue
            seen.add(needed)
            module = store.find(tenant, needed)
            if module is not None and module.published is not None and uses_http(module.published["content"]):
                return tool_hints.violations(given, tool_hints.module_facts(needed), "tool.annotations")
    return []
