"""The callers of tools (docs/kinds/code-modules.md, docs/kinds/index.md, docs/rules.md R12–R14): plans, agents, MCP servers and
usage profiles of one tenant, and the tokens of every tenant.

Each tenant's records live in one `CallerRegistry` aggregate. They are few (tens, not thousands),
every change to them is small, and one aggregate gives what the rules need in one exact read from
the event store: R12 (a module is in use while a plan or an agent names it), R2 (a plan exposed as
a tool holds its name) and the tools an MCP server offers. Its events name the record's kind and
id, so an auditor reads each change on its own. Tokens live in one `TokenRegistry` for the whole
store, since a bearer token must be found before its tenant is known; only their SHA-256 is kept.

The shape of each record (types, unknown fields) is the API's to check; the rules here name the
field and the rule they break, like the module rules of `domain/rules.py`.

Both registries are snapshotted (`Store.snapshotting_intervals`) and every event type is
version 1: a change of shape bumps the event's `class_version`, and the registry's for its
snapshot's state, each with an upcaster (`domain/versions.py`).
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime
from functools import lru_cache
from typing import Any
from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.domain import event

from domain.chain import Chained

from domain.errors import Violation
from domain.rules import MAX_TAG_LENGTH, MAX_TAGS, description_violations, id_violations

PLAN = "plan"
AGENT = "agent"
SERVER = "MCP server"
PROFILE = "usage profile"
KINDS = (PLAN, AGENT, SERVER, PROFILE)

MAX_NODES = 50
MAX_NAMED_TOOLS = 200
NODE_TYPES = ("DIRECT_TOOL",)
# Agents, MCP servers and usage profiles are not tools, so their ids need not be identifiers; an
# MCP server's id is a path segment of its URL.
_SLUG = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}\Z")

_NAMESPACE = uuid5(NAMESPACE_URL, "https://toolsmith.invalid/aggregates")
TOKENS_ID = uuid5(_NAMESPACE, "tokens")

Record = dict[str, Any]


@lru_cache(maxsize=1_024)
def registry_id(tenant: str) -> UUID:
    return uuid5(_NAMESPACE, f"callers/{tenant}")


class CallerRegistry(Chained):
    """One tenant's plans, agents, MCP servers and usage profiles."""

    @staticmethod
    def create_id(tenant: str) -> UUID:  # type: ignore[override]
        return registry_id(tenant)

    @event("Started")
    def __init__(self, tenant: str, previous_hash: str = "") -> None:
        self.tenant = tenant
        self.records: dict[str, dict[str, Record]] = {kind: {} for kind in KINDS}

    # -- queries -----------------------------------------------------------------------------

    def get(self, kind: str, record_id: str) -> Record | None:
        return self.records[kind].get(record_id)

    def all(self, kind: str) -> list[Record]:
        return [self.records[kind][i] for i in sorted(self.records[kind])]

    def exposed_plan(self, name: str) -> Record | None:
        plan = self.records[PLAN].get(name)
        return plan if plan is not None and plan["exposeAsTool"] else None

    def users_of(self, tool: str) -> dict[str, list[str]]:
        """R12: the plans whose DIRECT_TOOL nodes, and the agents whose allowed tools, name `tool`."""
        return {
            "plans": sorted(p["id"] for p in self.records[PLAN].values() if tool in tool_names(PLAN, p)),
            "agents": sorted(a["id"] for a in self.records[AGENT].values() if tool in a["allowedTools"]),
        }

    # -- commands ----------------------------------------------------------------------------

    def save(self, kind: str, body: Record, by: str) -> None:
        self._saved(kind=kind, record_id=body["id"], body=body, by=by)

    def delete(self, kind: str, record_id: str, by: str) -> None:
        self._deleted(kind=kind, record_id=record_id, by=by)

    def attach(self, server_id: str, tool: str, by: str) -> None:
        self._attached(server_id=server_id, tool=tool, by=by)

    def detach(self, server_id: str, tool: str, by: str) -> None:
        self._detached(server_id=server_id, tool=tool, by=by)

    @event("RecordSaved")
    def _saved(self, kind: str, record_id: str, body: Record, by: str, previous_hash: str = "", timestamp: datetime | None = None) -> None:
        previous = self.records[kind].get(record_id)
        record = dict(body)
        record["createdAt"] = previous["createdAt"] if previous else _iso(timestamp)
        record["createdBy"] = previous["createdBy"] if previous else by
        self.records[kind][record_id] = _touched(record, by, timestamp)

    @event("RecordDeleted")
    def _deleted(self, kind: str, record_id: str, by: str, previous_hash: str = "", timestamp: datetime | None = None) -> None:
        self.records[kind].pop(record_id, None)

    @event("ToolAttached")
    def _attached(self, server_id: str, tool: str, by: str, previous_hash: str = "", timestamp: datetime | None = None) -> None:
        server = dict(self.records[SERVER][server_id])
        server["tools"] = [*server["tools"], tool]
        self.records[SERVER][server_id] = _touched(server, by, timestamp)

    @event("ToolDetached")
    def _detached(self, server_id: str, tool: str, by: str, previous_hash: str = "", timestamp: datetime | None = None) -> None:
        server = dict(self.records[SERVER][server_id])
        server["tools"] = [t for t in server["tools"] if t != tool]
        self.records[SERVER][server_id] = _touched(server, by, timestamp)


def token_digest(token: str) -> str:
    """What the registry keeps of a bearer token, and what a presented one is looked up by: its SHA-256."""
    return hashlib.sha256(token.encode()).hexdigest()


class TokenRegistry(Chained):
    """Every bearer token the admins issued: its SHA-256, role, tenant and usage profile."""

    @staticmethod
    def create_id() -> UUID:  # type: ignore[override]
        return TOKENS_ID

    @event("Started")
    def __init__(self, previous_hash: str = "") -> None:
        self.tokens: dict[str, Record] = {}
        self.by_digest: dict[str, str] = {}

    def issue(self, token_id: str, digest: str, name: str, role: str, tenant: str, usage_profile: str | None, by: str) -> None:
        self._issued(token_id=token_id, digest=digest, name=name, role=role, tenant=tenant, usage_profile=usage_profile, by=by)

    def revoke(self, token_id: str, by: str) -> None:
        self._revoked(token_id=token_id, by=by)

    @event("Issued")
    def _issued(
        self, token_id: str, digest: str, name: str, role: str, tenant: str, usage_profile: str | None, by: str,
        previous_hash: str = "", timestamp: datetime | None = None,
    ) -> None:
        self.tokens[token_id] = {
            "id": token_id, "name": name, "role": role, "tenant": tenant, "usageProfile": usage_profile,
            "digest": digest, "createdAt": _iso(timestamp), "createdBy": by,
        }
        self.by_digest[digest] = token_id

    @event("Revoked")
    def _revoked(self, token_id: str, by: str, previous_hash: str = "", timestamp: datetime | None = None) -> None:
        token = self.tokens.pop(token_id, None)
        if token is not None:
            self.by_digest.pop(token["digest"], None)


def _iso(timestamp: datetime | None) -> str | None:
    return timestamp.isoformat() if timestamp is not None else None


def _touched(record: Record, by: str, timestamp: datetime | None) -> Record:
    record["updatedAt"] = _iso(timestamp)
    record["updatedBy"] = by
    return record


# -- rules -------------------------------------------------------------------------------------


def tool_names(kind: str, record: Record) -> list[str]:
    """The tools a record names: a plan's nodes, an agent's or a profile's allowed tools, a server's."""
    if kind == PLAN:
        return [node["toolName"] for node in record["nodes"]]
    if kind == SERVER:
        return list(record["tools"])
    return list(record["allowedTools"])


def record_violations(kind: str, body: Record) -> list[Violation]:
    """R1/R3 and the limits for one record; that the tools it names exist is the toolbox's check."""
    found: list[Violation] = []
    if kind == PLAN:
        # A plan exposed as a tool is called by its id, so the id is a tool name (R1).
        found += id_violations(body["id"])
    elif not _SLUG.match(body["id"]):
        found.append(Violation("id", "R1", "must be 1–64 letters, digits, '_' or '-', starting with a letter or digit"))
    found += description_violations(body.get("description", ""), "description") if kind in (PLAN, AGENT) else []
    if kind == PLAN:
        nodes = body["nodes"]
        if not 1 <= len(nodes) <= MAX_NODES:
            found.append(Violation("nodes", "R14", f"a plan has 1 to {MAX_NODES} nodes, got {len(nodes)}"))
        for i, node in enumerate(nodes):
            if node["type"] not in NODE_TYPES:
                found.append(Violation(f"nodes[{i}].type", "R14", f"must be one of {', '.join(NODE_TYPES)}"))
            found += id_violations(node["toolName"], f"nodes[{i}].toolName")
    names_field = "tools" if kind == SERVER else ("allowedTools" if kind in (AGENT, PROFILE) else None)
    if names_field is not None:
        names = body[names_field]
        if len(names) > MAX_NAMED_TOOLS:
            found.append(Violation(names_field, "R4", f"at most {MAX_NAMED_TOOLS} tools, got {len(names)}"))
        for i, name in enumerate(names):
            found += id_violations(name, f"{names_field}[{i}]")
        if len(set(names)) != len(names):
            found.append(Violation(names_field, "R4", "names a tool twice"))
    if kind == SERVER:
        found += tool_search_violations(body)
    tags_field = "tags" if kind == PLAN else ("allowedTags" if kind in (AGENT, PROFILE) else None)
    if tags_field is not None:
        tags = body[tags_field]
        if len(tags) > MAX_TAGS:
            found.append(Violation(tags_field, "R4", f"at most {MAX_TAGS} tags, got {len(tags)}"))
        for i, tag in enumerate(tags):
            if not tag or len(tag) > MAX_TAG_LENGTH:
                found.append(Violation(f"{tags_field}[{i}]", "R4", f"a tag has 1 to {MAX_TAG_LENGTH} characters"))
    return found


def tool_search_violations(body: Record) -> list[Violation]:
    """A server's `toolSearch` (docs/mcp.md, "Tool search"): `enabled`, and `pinned` tool names,
    each once (that each is attached is the records' check, which knows a group's members)."""
    search = body.get("toolSearch")
    if search is None:
        return []
    if not isinstance(search, dict) or set(search) - {"enabled", "pinned"}:
        return [Violation("toolSearch", "R4", "must be an object with enabled and pinned")]
    found = []
    if not isinstance(search.get("enabled", False), bool):
        found.append(Violation("toolSearch.enabled", "R4", "must be true or false"))
    pinned = search.get("pinned", [])
    if not isinstance(pinned, list):
        return [*found, Violation("toolSearch.pinned", "R4", "must be a list of tool names")]
    if len(pinned) > MAX_NAMED_TOOLS:
        found.append(Violation("toolSearch.pinned", "R4", f"at most {MAX_NAMED_TOOLS} tools, got {len(pinned)}"))
    for i, name in enumerate(pinned):
        found += id_violations(name, f"toolSearch.pinned[{i}]") if isinstance(name, str) else [
            Violation(f"toolSearch.pinned[{i}]", "R4", "must be a tool name")]
    if len(set(map(str, pinned))) != len(pinned):
        found.append(Violation("toolSearch.pinned", "R4", "names a tool twice"))
    return found
