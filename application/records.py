"""Commands on plans, agents, MCP servers, usage profiles and tokens (seed 003, seed 004, DESIGN §8).

Every change is an event on the tenant's `CallerRegistry` (tokens: on the `TokenRegistry`). Changes
that name tools hold the tenant's graph lock, like a module's delete, so that a plan cannot start
calling a module while that module is being deleted (R12); a change that raced another on the
registry's version is retried against the new state.
"""

from __future__ import annotations

import hashlib
import secrets
from application.repository import ModuleRepository
from domain.callers import AGENT, PLAN, PROFILE, SERVER, CallerRegistry, Record, record_violations, tool_names
from domain.errors import ConcurrentChange, InUse, InvalidRecord, RecordTaken, UnknownRecord, Violation
from domain.graph import find_cycle
from application.toolbox import Toolbox

_ATTEMPTS = 5
ROLES = ("admin", "auditor", "caller")
TOKEN = "token"


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class CallerRecords:
    def __init__(self, modules: ModuleRepository, toolbox: Toolbox) -> None:
        self._modules = modules
        self._toolbox = toolbox

    # -- queries -----------------------------------------------------------------------------

    def list(self, tenant: str, kind: str) -> list[Record]:
        return self._modules.registry(tenant).all(kind)

    def get(self, tenant: str, kind: str, record_id: str) -> Record:
        record = self._modules.registry(tenant).get(kind, record_id)
        if record is None:
            raise UnknownRecord(kind, record_id)
        return record

    def users_of(self, tenant: str, name: str) -> dict[str, list[str]]:
        return self._modules.registry(tenant).users_of(name)

    # -- commands ----------------------------------------------------------------------------

    def save(self, tenant: str, kind: str, body: Record, *, by: str, create: bool) -> tuple[Record, int | None]:
        """POST (create) or PUT (replace) a record; answers it and the log position to wait for."""
        found = record_violations(kind, body)
        if found:
            raise InvalidRecord(found)
        with self._modules.graph_lock.hold(tenant):
            for _ in range(_ATTEMPTS):
                registry = self._modules.registry(tenant, for_update=True)
                existing = registry.get(kind, body["id"])
                if create and existing is not None:
                    raise RecordTaken(kind, body["id"])
                if not create and existing is None:
                    raise UnknownRecord(kind, body["id"])
                self._check_names(tenant, registry, kind, body)
                if existing is not None and _same(existing, body):
                    return existing, None
                registry.save(kind, body, by)
                position = self._modules.save_or_conflict(registry)
                if position is not None:
                    return registry.get(kind, body["id"]), position  # type: ignore[return-value]
        raise ConcurrentChange(body["id"])

    def delete(self, tenant: str, kind: str, record_id: str, *, by: str) -> int | None:
        """DELETE a record; a plan exposed as a tool is refused while plans or agents name it (R12)."""
        with self._modules.graph_lock.hold(tenant):
            for _ in range(_ATTEMPTS):
                registry = self._modules.registry(tenant, for_update=True)
                record = registry.get(kind, record_id)
                if record is None:
                    raise UnknownRecord(kind, record_id)
                if kind == PLAN and record["exposeAsTool"]:
                    users = {"modules": [], **registry.users_of(record_id)}
                    users["plans"] = [p for p in users["plans"] if p != record_id]
                    if any(users.values()) and not self._toolbox_names_elsewhere(tenant, record_id):
                        raise InUse(record_id, users)
                registry.delete(kind, record_id, by)
                position = self._modules.save_or_conflict(registry)
                if position is not None:
                    return position
        raise ConcurrentChange(record_id)

    def attach(self, tenant: str, server_id: str, tool: str, *, by: str) -> tuple[Record, int | None]:
        """Attaches a tool to an MCP server (seed 003); attaching it twice changes nothing."""
        return self._attachment(tenant, server_id, tool, by, attach=True)

    def detach(self, tenant: str, server_id: str, tool: str, *, by: str) -> tuple[Record, int | None]:
        """Removes only the attachment; the tool and its other servers are untouched."""
        return self._attachment(tenant, server_id, tool, by, attach=False)

    def _attachment(self, tenant: str, server_id: str, tool: str, by: str, *, attach: bool) -> tuple[Record, int | None]:
        for _ in range(_ATTEMPTS):
            registry = self._modules.registry(tenant, for_update=True)
            server = registry.get(SERVER, server_id)
            if server is None:
                raise UnknownRecord(SERVER, server_id)
            if attach:
                if tool in server["tools"]:
                    return server, None
                if tool not in self._toolbox.names(tenant) and not self._modules.is_module(tenant, tool):
                    raise UnknownRecord("tool", tool)
                registry.attach(server_id, tool, by)
            else:
                if tool not in server["tools"]:
                    raise UnknownRecord(f"tool attached to {server_id!r}", tool)
                registry.detach(server_id, tool, by)
            position = self._modules.save_or_conflict(registry)
            if position is not None:
                return registry.get(SERVER, server_id), position  # type: ignore[return-value]
        raise ConcurrentChange(server_id)

    # -- tokens ------------------------------------------------------------------------------

    def tokens(self, tenant: str) -> list[Record]:
        tokens = self._modules.tokens().tokens.values()
        return sorted((_public(t) for t in tokens if t["tenant"] == tenant), key=lambda t: t["createdAt"] or "")

    def issue_token(self, tenant: str, name: str, role: str, usage_profile: str | None, *, by: str) -> tuple[Record, str]:
        """A new bearer token: answered once with its secret; only its SHA-256 is recorded."""
        found = []
        if role not in ROLES:
            found.append(Violation("role", "DESIGN §8", f"must be one of {', '.join(ROLES)}"))
        if not name or len(name) > 200:
            found.append(Violation("name", "DESIGN §8", "a token has a name of 1 to 200 characters"))
        if usage_profile is not None:
            if role != "caller":
                found.append(Violation("usageProfile", "R14", "only caller tokens have a usage profile"))
            elif self._modules.registry(tenant).get(PROFILE, usage_profile) is None:
                found.append(Violation("usageProfile", "R14", f"no usage profile {usage_profile!r}"))
        if found:
            raise InvalidRecord(found)
        secret = "tsk_" + secrets.token_urlsafe(32)
        token_id = secrets.token_hex(8)
        for _ in range(_ATTEMPTS):
            registry = self._modules.tokens(for_update=True)
            registry.issue(token_id, token_digest(secret), name, role, tenant, usage_profile, by)
            if self._modules.save_or_conflict(registry) is not None:
                return _public(registry.tokens[token_id]), secret
        raise ConcurrentChange(token_id)

    def revoke_token(self, tenant: str, token_id: str, *, by: str) -> None:
        for _ in range(_ATTEMPTS):
            registry = self._modules.tokens(for_update=True)
            token = registry.tokens.get(token_id)
            if token is None or token["tenant"] != tenant:
                raise UnknownRecord(TOKEN, token_id)
            registry.revoke(token_id, by)
            if self._modules.save_or_conflict(registry) is not None:
                return
        raise ConcurrentChange(token_id)

    def find_token(self, token: str) -> Record | None:
        """The issued token with this secret, or None (revoked tokens are gone)."""
        registry = self._modules.tokens()
        token_id = registry.by_digest.get(token_digest(token))
        return registry.tokens.get(token_id) if token_id is not None else None

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
                elif name not in known and not (kind == SERVER and self._modules.is_module(tenant, name)):
                    found.append(Violation(field.format(i), "R14", f"no tool named {name!r}"))
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


def _public(token: Record) -> Record:
    return {k: v for k, v in token.items() if k not in ("digest", "tenant")}

