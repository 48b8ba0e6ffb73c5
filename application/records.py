"""Commands on plans, agents, MCP servers and usage profiles (docs/kinds/index.md, docs/kinds/code-modules.md, docs/security.md).

Every change is an event on the tenant's `CallerRegistry`, run by the `CommandRunner`. Changes
that name tools hold the tenant's graph lock, like a module's delete, so that a plan cannot start
calling a module while that module is being deleted (R12); a change that raced another on the
registry's version is run again against the new state.
"""

from __future__ import annotations

from application.commands import Change, CommandRunner
from application.store import Store
from application.toolbox import Toolbox
from domain.callers import AGENT, PLAN, SERVER, CallerRegistry, Record, record_violations, tool_names
from domain.errors import InUse, InvalidRecord, RecordTaken, UnknownRecord, Violation
from domain.graph import find_cycle


class CallerRecords:
    def __init__(self, store: Store, commands: CommandRunner, toolbox: Toolbox) -> None:
        self._store = store
        self._commands = commands
        self._toolbox = toolbox

    # -- queries -----------------------------------------------------------------------------

    def list(self, tenant: str, kind: str) -> list[Record]:
        return self._store.registry(tenant).all(kind)

    def get(self, tenant: str, kind: str, record_id: str) -> Record:
        record = self._store.registry(tenant).get(kind, record_id)
        if record is None:
            raise UnknownRecord(kind, record_id)
        return record

    def users_of(self, tenant: str, name: str) -> dict[str, list[str]]:
        return self._store.registry(tenant).users_of(name)

    # -- commands ----------------------------------------------------------------------------

    def save(self, tenant: str, kind: str, body: Record, *, by: str, create: bool) -> tuple[Record, int | None]:
        """POST (create) or PUT (replace) a record; answers it and the log position to wait for."""
        found = record_violations(kind, body)
        if found:
            raise InvalidRecord(found)

        def attempt() -> Change[Record]:
            registry = self._store.registry(tenant, for_update=True)
            existing = registry.get(kind, body["id"])
            if create and existing is not None:
                raise RecordTaken(kind, body["id"])
            if not create and existing is None:
                raise UnknownRecord(kind, body["id"])
            self._check_names(tenant, registry, kind, body)
            if existing is not None and _same(existing, body):
                return Change(existing)
            registry.save(kind, body, by)
            return Change(registry.get(kind, body["id"]), save=(registry,))  # type: ignore[arg-type]

        return self._commands.run(attempt, name=body["id"], lock=tenant)

    def delete(self, tenant: str, kind: str, record_id: str, *, by: str) -> int | None:
        """DELETE a record; a plan exposed as a tool is refused while plans or agents name it (R12)."""

        def attempt() -> Change[None]:
            registry = self._store.registry(tenant, for_update=True)
            record = registry.get(kind, record_id)
            if record is None:
                raise UnknownRecord(kind, record_id)
            if kind == PLAN and record["exposeAsTool"]:
                users = {"modules": [], **registry.users_of(record_id)}
                users["plans"] = [p for p in users["plans"] if p != record_id]
                if any(users.values()) and not self._toolbox_names_elsewhere(tenant, record_id):
                    raise InUse(record_id, users)
            registry.delete(kind, record_id, by)
            return Change(None, save=(registry,))

        _, position = self._commands.run(attempt, name=record_id, lock=tenant)
        return position

    def attach(self, tenant: str, server_id: str, tool: str, *, by: str) -> tuple[Record, int | None]:
        """Attaches a tool to an MCP server (docs/kinds/index.md); attaching it twice changes nothing."""
        return self._attachment(tenant, server_id, tool, by, attach=True)

    def detach(self, tenant: str, server_id: str, tool: str, *, by: str) -> tuple[Record, int | None]:
        """Removes only the attachment; the tool and its other servers are untouched."""
        return self._attachment(tenant, server_id, tool, by, attach=False)

    def _attachment(self, tenant: str, server_id: str, tool: str, by: str, *, attach: bool) -> tuple[Record, int | None]:
        def attempt() -> Change[Record]:
            registry = self._store.registry(tenant, for_update=True)
            server = registry.get(SERVER, server_id)
            if server is None:
                raise UnknownRecord(SERVER, server_id)
            if attach:
                if tool in server["tools"]:
                    return Change(server)
                if (tool not in self._toolbox.names(tenant) and not self._store.is_module(tenant, tool)
                        and self._toolbox.holder_of(tenant, tool) is None):
                    raise UnknownRecord("tool", tool)
                registry.attach(server_id, tool, by)
            else:
                if tool not in server["tools"]:
                    raise UnknownRecord(f"tool attached to {server_id!r}", tool)
                registry.detach(server_id, tool, by)
            return Change(registry.get(SERVER, server_id), save=(registry,))  # type: ignore[arg-type]

        return self._commands.run(attempt, name=server_id)

    # -- rules -------------------------------------------------------------------------------

    def _check_names(self, tenant: str, registry: CallerRegistry, kind: str, body: Record) -> None:
        """The tools a plan, an agent or a server names exist; R2 for a plan exposed as a tool;
        no plan reaches itself through the plans its nodes call."""
        # R2 first: a name another tool holds is refused whatever the nodes say.
        if kind == PLAN and body["exposeAsTool"]:
            holder = self._toolbox.holder_of(tenant, body["id"], besides=PLAN)
            if holder is not None:
                raise RecordTaken(PLAN, body["id"], taken_by=holder)
        found: list[Violation] = []
        field = {PLAN: "nodes[{}].toolName", AGENT: "allowedTools[{}]", SERVER: "tools[{}]"}.get(kind)
        if field is not None:
            known = self._toolbox.names(tenant)
            for i, name in enumerate(tool_names(kind, body)):
                if name == body["id"] and kind == PLAN:
                    found.append(Violation(field.format(i), "R14", "a plan cannot call itself"))
                elif name not in known and not (kind == SERVER and self._store.is_module(tenant, name)) and not (
                        # A server may name a tool that stands for several (a File Search tool).
                        kind == SERVER and len(self._toolbox.expanded(tenant, [name])) > 1) and not (
                        # ... or a name that is not a tool (a prompt: MCP servers offer those too).
                        kind == SERVER and self._toolbox.holder_of(tenant, name) is not None):
                    found.append(Violation(field.format(i), "R14", f"no tool named {name!r}"))
        if kind == SERVER:
            # A pinned tool is one the server offers: attached (or one capability of an attached group).
            attached = set(body["tools"]) | set(self._toolbox.expanded(tenant, body["tools"]))
            for i, name in enumerate((body.get("toolSearch") or {}).get("pinned", [])):
                if name not in attached:
                    found.append(Violation(f"toolSearch.pinned[{i}]", "R14", f"{name!r} is not attached to this server"))
        if kind == PLAN and not found:
            # A node reaches a plan only when that plan is exposed as a tool.
            edges = {p["id"]: tool_names(PLAN, p) for p in registry.all(PLAN) if p["exposeAsTool"] and p["id"] != body["id"]}
            edges[body["id"]] = tool_names(PLAN, body)
            reachable = {p for p in edges if p != body["id"] or body["exposeAsTool"]}
            plans_only = {p: [t for t in tools if t in reachable] for p, tools in edges.items()}
            cycle = find_cycle(plans_only, through=body["id"])
            if cycle:
                found.append(Violation("nodes", "R14", "the plans would call each other in a cycle: " + " → ".join(cycle)))
        if found:
            raise InvalidRecord(found)

    def _toolbox_names_elsewhere(self, tenant: str, name: str) -> bool:
        """Whether the name stays a tool without the plan (a module or a declared tool holds it too)."""
        return self._toolbox.listed_besides(tenant, name, besides=PLAN)


def _same(existing: Record, body: Record) -> bool:
    return all(existing.get(k) == v for k, v in body.items())


