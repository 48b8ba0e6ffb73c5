"""The audit viewer's reading of the event store (docs/console.md, "Audit"): a page of one tenant's
events, newest first, each in words (who, what, which object, when), and one event's change as a diff.

A page is read backwards from a log position (`before`, the cursor), a batch at a time, until it
holds a page of rows: never the whole log. A filter on the kind of object narrows the read to that
kind's topics in the store's own query; the other filters (name, who, time) are applied to each
decoded event, and a read stops after `SCAN_LIMIT` events even when the page is not full, with a
cursor to read on (so a filter that matches little costs a bounded time per page, not the log).

Which events are the tenant's is decided as the audit export decides it (`infrastructure.audit`):
its kinds of tool say which of their events are whose, and its caller registry and secrets are
its own; the token registry is the store's, and only the tokens issued for this tenant are shown.
The import graph's events and the registries' `Started` are bookkeeping that each module or record
event already tells: they are in the export, not in the viewer.

A change never shows a secret's value (the events hold none) nor a token's digest or a secret's
fingerprint: a field of that sort is shown as "changed"."""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cache
from urllib.parse import quote
from typing import Any
from uuid import UUID

from eventsourcing.utils import get_topic

from domain.callers import AGENT, PLAN, PROFILE, SERVER, TOKENS_ID, CallerRegistry, TokenRegistry, registry_id
from domain.model import CodeModule
from domain.secrets import Secret
from infrastructure.audit import _TenantScope  # the export's own rule of whose an event is

PAGE_SIZE = 50
BATCH = 500
# The most events one page reads: a page of a filter that matches little stops here, with a cursor.
SCAN_LIMIT = 20_000

# The kinds of object a person filters by: (value, label, the section of the console it lives in).
KINDS = (
    ("module", "Code modules"),
    ("api-tool", "API URL tools"),
    ("search-tool", "File Search tools"),
    ("prompt", "Prompts"),
    ("resource", "Resources"),
    ("server", "MCP servers"),
    ("profile", "Usage profiles"),
    ("plan", "Plans"),
    ("agent", "Agents"),
    ("secret", "Secrets"),
    ("token", "Tokens"),
)
KIND_LABELS = dict(KINDS)
_RECORD_KINDS = {SERVER: "server", PROFILE: "profile", PLAN: "plan", AGENT: "agent"}
_RECORD_PAGES = {"server": "/console/servers/{}", "profile": "/console/profiles/{}", "plan": "/console/plans/{}",
                 "agent": "/console/agents/{}"}
# The configured kinds' aggregates: (the filter's value, what a row calls one); where each has its
# page is its kind's to say (`KindPlugin.page`).
_CONFIGURED = {"ApiTool": ("api-tool", "API URL tool"), "SearchTool": ("search-tool", "File Search tool")}
# The published kinds' aggregates (`domain.published.Versioned`: a draft and numbered versions, as a
# code module has): the filter's value, and where each has its page is its kind's to say too.
_PUBLISHED = {"Prompt": "prompt", "PublishedResource": "resource"}
# Fields whose values are never shown: what a person sees is that they changed.
_HIDDEN = {"digest", "fingerprint", "value", "secret", "password", "token"}
# Fields that are the event's bookkeeping, not the object's.
_BOOKKEEPING = {"previous_hash", "own_hash", "timestamp", "originator_topic", "originator_id", "originator_version"}


@dataclass(frozen=True)
class Filters:
    kind: str = ""
    name: str = ""
    who: str = ""
    since: datetime | None = None  # inclusive
    until: datetime | None = None  # exclusive

    def matches(self, row: Row) -> bool:
        if self.kind and row.kind != self.kind:
            return False
        if self.name and self.name.casefold() not in row.name.casefold():
            return False
        if self.who and self.who.casefold() not in row.who.casefold():
            return False
        if self.until is not None and row.at >= self.until:
            return False
        return not (self.since is not None and row.at < self.since)


@dataclass(frozen=True)
class Row:
    position: int
    kind: str  # one of KINDS' values
    name: str  # the object's name
    who: str
    at: datetime
    verb: str  # "published", "attached"
    detail: str = ""  # what follows the object in the sentence: "to MCP server s1"
    diff: bool = False  # whether the event changed fields a diff can show
    also: str = ""  # another object the event names: ("server", "s1") for an attachment, as "kind:name"

    @property
    def kind_label(self) -> str:
        return _SINGULAR.get(self.kind, self.kind)


_SINGULAR = {"module": "code module", "api-tool": "API URL tool", "search-tool": "File Search tool", "prompt": "prompt",
             "resource": "resource",
             "server": "MCP server", "profile": "usage profile", "plan": "plan", "agent": "agent", "secret": "secret",
             "token": "token"}


@dataclass
class Page:
    rows: list[Row]
    older: int | None  # the cursor of the next (older) page; None at the log's start
    scanned_to: int  # the oldest position read (a page cut short by SCAN_LIMIT says where it stopped)
    cut_short: bool = False


@dataclass
class Change:
    """What one event changed: each field with its value before and after; a text field's line diff."""

    row: Row
    fields: list[dict[str, Any]] = field(default_factory=list)  # {"name", "before", "after", "lines"?}
    note: str = ""  # what to say when there is nothing to compare ("the first version")


# -- topics ------------------------------------------------------------------------------------------

def _topics_of(cls: type) -> tuple[str, ...]:
    return tuple(sorted(get_topic(kind) for kind in vars(cls).values()
                        if isinstance(kind, type) and issubclass(kind, cls.Event) and kind is not cls.Event))


@cache
def _kind_topics(kinds: tuple[type, ...]) -> dict[str, tuple[str, ...]]:
    """Each filterable kind's event topics, which the store's query selects by."""
    found = {"module": _topics_of(CodeModule), "secret": _topics_of(Secret), "token": _topics_of(TokenRegistry)}
    registry = _topics_of(CallerRegistry)
    for kind in ("server", "profile", "plan", "agent"):
        found[kind] = registry
    for aggregate in kinds:
        entry = _CONFIGURED.get(aggregate.__name__)
        if entry is not None:
            found[entry[0]] = _topics_of(aggregate)
        published = _PUBLISHED.get(aggregate.__name__)
        if published is not None:
            found[published] = _topics_of(aggregate)
    return found


def _configured_aggregates(services: Any) -> tuple[type, ...]:
    return tuple(a for a in (getattr(k, "aggregate", None) for k in services.toolbox.kinds)
                 if isinstance(a, type) and (a.__name__ in _CONFIGURED or a.__name__ in _PUBLISHED))


# -- reading -----------------------------------------------------------------------------------------

class Reader:
    """One request's reading of one tenant's events (the scope caches whose each aggregate is)."""

    def __init__(self, services: Any, tenant: str) -> None:
        self.services = services
        self.tenant = tenant
        self.store = services.store
        self.recorder = services.store.recorder
        self.scope = _TenantScope(tenant, self.recorder, services.toolbox.kinds)
        self.registry = registry_id(tenant)
        self._read = 0  # the aggregate's earlier events one change read (bounded by SCAN_LIMIT)

    def head(self) -> int:
        return self.recorder.max_notification_id() or 0

    def page(self, filters: Filters, before: int | None = None, size: int | None = None) -> Page:
        """Up to `size` rows (a page) older than position `before` (the newest when None), newest first."""
        size = size or PAGE_SIZE
        topics = _kind_topics(_configured_aggregates(self.services)).get(filters.kind, ()) if filters.kind else ()
        stop = (before - 1) if before is not None else self.head()
        rows: list[Row] = []
        scanned = 0
        oldest = stop + 1
        while stop >= 1 and len(rows) < size and scanned < SCAN_LIMIT:
            start = max(1, stop - BATCH + 1)
            batch = self.recorder.select_notifications(start, stop - start + 1, stop=stop, topics=topics)
            scanned += stop - start + 1
            for stored in reversed(batch):
                row = self.row(stored)
                if row is None:
                    continue
                if filters.since is not None and row.at < filters.since:
                    # the log is in time order: nothing older can match
                    return Page(rows, None, stored.id)
                if not filters.matches(row):
                    continue
                rows.append(row)
                if len(rows) == size:
                    return Page(rows, row.position if row.position > 1 else None, row.position)
            oldest = start
            stop = start - 1
        cut = len(rows) < size and stop >= 1
        return Page(rows, oldest if stop >= 1 else None, oldest, cut_short=cut)

    def stored(self, position: int) -> Any | None:
        found = self.recorder.select_notifications(position, 1, stop=position)
        return found[0] if found else None

    def decode(self, stored: Any) -> Any | None:
        try:
            return self.store.mapper.to_domain_event(stored)
        except Exception:  # noqa: BLE001 - an altered or unknown event: the export and verify report it, the viewer skips it
            return None

    def holds(self, stored: Any, event: Any) -> bool:
        if stored.originator_id == TOKENS_ID:
            return isinstance(event, TokenRegistry.Event) and _token_tenant(self, event) == self.tenant
        return self.scope.holds(stored)

    def row(self, stored: Any) -> Row | None:
        """The event in words, when it is the tenant's and tells something a person did."""
        event = self.decode(stored)
        if event is None or not self.holds(stored, event):
            return None
        return describe(stored.id, event)

    # -- one event's change ----------------------------------------------------------------------

    def change(self, position: int) -> Change | None:
        """What the event at `position` changed; None when there is no such event of this tenant."""
        stored = self.stored(position)
        if stored is None:
            return None
        event = self.decode(stored)
        if event is None or not self.holds(stored, event):
            return None
        row = describe(stored.id, event)
        if row is None:
            return None
        after = _shown(event)
        if after is None:
            return Change(row, note="Nothing to compare: this event changes no field.")
        self._read = 0
        before = self._before(stored, event)
        if before is None:
            note = "The first version: every field is new." if self._read < SCAN_LIMIT else \
                "The version before is too far back in the log to compare: every field is shown as it became."
            return Change(row, fields=_fields({}, after), note=note)
        return Change(row, fields=_fields(before, after), note="")

    def _before(self, stored: Any, event: Any) -> dict[str, Any] | None:
        """The same object's fields before this event, from the aggregate's earlier events."""
        for earlier in self._earlier(stored.originator_id, stored.originator_version):
            if isinstance(event, CodeModule.Published) or _is_published_version(event):
                if type(earlier) is type(event):
                    return _shown(earlier)
                continue
            if isinstance(event, CallerRegistry.RecordSaved):
                if isinstance(earlier, CallerRegistry.RecordSaved) and earlier.kind == event.kind \
                        and earlier.record_id == event.record_id:
                    return _shown(earlier)
                if isinstance(earlier, CallerRegistry.RecordDeleted) and earlier.kind == event.kind \
                        and earlier.record_id == event.record_id:
                    return None
                continue
            if isinstance(event, TokenRegistry.Event):
                return None
            shown = _shown(earlier)
            if shown is not None:
                return shown
        return None

    def _earlier(self, aggregate_id: UUID, version: int) -> Iterator[Any]:
        """The aggregate's events before `version`, newest first, read a batch at a time."""
        lte = version - 1
        while lte >= 1 and self._read < SCAN_LIMIT:
            batch = self.recorder.select_events(aggregate_id, lte=lte, desc=True, limit=min(200, SCAN_LIMIT - self._read))
            if not batch:
                return
            self._read += len(batch)
            for stored in batch:
                event = self.decode(stored)
                if event is not None:
                    yield event
            lte = batch[-1].originator_version - 1


def _is_published_version(event: Any) -> bool:
    """A published kind's `Published` (a prompt's version 2), compared with its version before."""
    return type(event).__name__ == "Published" and type(event).__qualname__.split(".")[0] in _PUBLISHED


_TOKEN_TENANTS: dict[str, str] = {}


def _token_tenant(reader: Reader, event: Any) -> str | None:
    """Whose token an event of the store-wide token registry is about. An issue names its tenant; a
    revocation only its token, whose issue is found once and remembered (an issue never changes)."""
    if isinstance(event, TokenRegistry.Issued):
        _TOKEN_TENANTS[event.token_id] = event.tenant
        return event.tenant
    token_id = getattr(event, "token_id", None)
    if not isinstance(token_id, str):
        return None
    if token_id not in _TOKEN_TENANTS:
        for stored in reader.recorder.select_events(TOKENS_ID, desc=True):
            if stored.topic.endswith(".Issued"):
                issued = reader.decode(stored)
                if isinstance(issued, TokenRegistry.Issued):
                    _TOKEN_TENANTS[issued.token_id] = issued.tenant
            if token_id in _TOKEN_TENANTS:
                break
    return _TOKEN_TENANTS.get(token_id)


# -- events in words ---------------------------------------------------------------------------------

def _when(event: Any) -> datetime:
    at = getattr(event, "timestamp", None)
    if not isinstance(at, datetime):
        return datetime.fromtimestamp(0, timezone.utc)
    return at if at.tzinfo is not None else at.replace(tzinfo=timezone.utc)


# Toolsmith's own events (a document's extraction) have no `by`: the service did them.
SYSTEM = "Toolsmith"

_MODULE_VERBS = {"Created": "created", "DraftChanged": "saved a draft of", "DraftDiscarded": "discarded the draft of",
                 "Deleted": "deleted", "Recreated": "created again", "Reverted": "restored"}
_CONFIGURED_VERBS = {"Created": "created", "Changed": "changed", "Deleted": "deleted", "Recreated": "created again",
                     "DocumentAdded": "added a document to", "DocumentReady": "finished reading a document of",
                     "DocumentFailed": "could not read a document of", "DocumentRemoved": "removed a document from",
                     "DocumentMetadataSet": "set the metadata of a document of",
                     "DocumentEmbedded": "embedded a document of"}
_SECRET_VERBS = {"Created": "created", "Rotated": "changed the value of", "DescriptionChanged": "changed the description of",
                 "Deleted": "deleted", "Recreated": "created again"}


def describe(position: int, event: Any) -> Row | None:
    """One event as a sentence's parts, or None for the bookkeeping the viewer leaves out."""
    name = type(event).__name__
    who = getattr(event, "by", None) or SYSTEM
    at = _when(event)
    base = {"position": position, "who": who, "at": at}
    if isinstance(event, CodeModule.Event):
        module = event.module_id
        if isinstance(event, CodeModule.Published):
            return Row(**base, kind="module", name=module, verb="published", detail=f"as version {event.version}", diff=True)
        if isinstance(event, CodeModule.EnabledChanged):
            return Row(**base, kind="module", name=module, verb="turned on" if event.enabled else "turned off", diff=True)
        if name == "Reverted":
            return Row(**base, kind="module", name=module, verb="restored", detail=f"version {event.version} as the draft of", diff=True)
        verb = _MODULE_VERBS.get(name)
        if verb is None:
            return None
        return Row(**base, kind="module", name=module, verb=verb, diff=name in ("Created", "DraftChanged", "Recreated"))
    if isinstance(event, CallerRegistry.Event):
        if isinstance(event, CallerRegistry.RecordSaved):
            kind = _RECORD_KINDS.get(event.kind)
            return Row(**base, kind=kind, name=event.record_id, verb="saved", diff=True) if kind else None
        if isinstance(event, CallerRegistry.RecordDeleted):
            kind = _RECORD_KINDS.get(event.kind)
            return Row(**base, kind=kind, name=event.record_id, verb="deleted") if kind else None
        if name == "ToolAttached":
            return Row(**base, kind="server", name=event.server_id, verb="attached", detail=f"tool {event.tool} to",
                       also=f"tool:{event.tool}")
        if name == "ToolDetached":
            return Row(**base, kind="server", name=event.server_id, verb="detached", detail=f"tool {event.tool} from",
                       also=f"tool:{event.tool}")
        return None
    if isinstance(event, Secret.Event):
        verb = _SECRET_VERBS.get(name)
        return Row(**base, kind="secret", name=event.secret_id, verb=verb, diff=name != "Deleted") if verb else None
    if isinstance(event, TokenRegistry.Event):
        if isinstance(event, TokenRegistry.Issued):
            return Row(**base, kind="token", name=event.name, verb="issued", diff=True)
        if name == "Revoked":
            return Row(**base, kind="token", name=event.token_id, verb="revoked")
        return None
    owner = type(event).__qualname__.split(".")[0]
    published = _PUBLISHED.get(owner)
    if published is not None and hasattr(event, "item_id"):
        if name == "Published":
            return Row(**base, kind=published, name=event.item_id, verb="published", detail=f"as version {event.version}", diff=True)
        if name == "Reverted":
            return Row(**base, kind=published, name=event.item_id, verb="restored", detail=f"version {event.version} as the draft of",
                       diff=True)
        verb = _MODULE_VERBS.get(name)
        if verb is None:
            return None
        return Row(**base, kind=published, name=event.item_id, verb=verb, diff=name in ("Created", "DraftChanged", "Recreated"))
    configured = _CONFIGURED.get(owner)
    if configured is not None and hasattr(event, "tool_id"):
        verb = _CONFIGURED_VERBS.get(name)
        if verb is None:
            return None
        detail = ""
        if name.startswith("Document"):
            document = getattr(event, "name", None) or getattr(event, "document_id", "")
            model = getattr(event, "model", None)  # DocumentEmbedded's: the embedding model its vectors are of
            detail = f"({document}{f', model {model}' if model else ''})" if document else ""
        return Row(**base, kind=configured[0], name=event.tool_id, verb=verb, detail=detail,
                   diff=name in ("Created", "Changed", "Recreated"))
    return None


def sentence(row: Row) -> str:
    """The row's "what": "published code module addOne as version 2", "attached tool x to MCP server s1"."""
    if row.detail and row.also:
        return f"{row.verb} {row.detail} {row.kind_label} {row.name}"
    if row.detail and row.detail.endswith((" of", " to", " from")):
        return f"{row.verb} {row.detail} {row.kind_label} {row.name}"
    tail = f" {row.detail}" if row.detail else ""
    return f"{row.verb} {row.kind_label} {row.name}{tail}"


# -- changes -----------------------------------------------------------------------------------------

def _shown(event: Any) -> dict[str, Any] | None:
    """The object's fields an event records (a definition, a configuration, a record's body), or None
    for an event that records none."""
    if isinstance(event, CodeModule.EnabledChanged):
        return {"enabled": "on" if event.enabled else "off"}
    for attribute in ("definition", "config", "body"):
        value = getattr(event, attribute, None)
        if value is not None:
            return _plain(value)
    if isinstance(event, Secret.Event):
        shown: dict[str, Any] = {}
        if hasattr(event, "description"):
            shown["description"] = event.description
        if hasattr(event, "fingerprint"):
            shown["value"] = event.fingerprint  # compared, never shown (_HIDDEN)
        return shown or None
    if isinstance(event, TokenRegistry.Issued):
        return {"name": event.name, "role": event.role, "usage profile": event.usage_profile or ""}
    return None


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    """A nested value as dotted fields; a list of plain values is one field, a list of objects one per item."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key in _BOOKKEEPING:
                continue
            out.update(_flat(item, f"{prefix}.{key}" if prefix else key))
        return out
    if isinstance(value, list) and any(isinstance(item, (dict, list)) for item in value):
        out = {}
        for index, item in enumerate(value, start=1):
            label = item.get("name") if isinstance(item, dict) and isinstance(item.get("name"), str) else str(index)
            out.update(_flat(item, f"{prefix}[{label}]"))
        return out
    return {prefix: value}


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(_text(v) for v in value)
    return str(value)


def _hidden(name: str) -> bool:
    return name.rsplit(".", 1)[-1].casefold() in _HIDDEN


def _fields(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    """The fields that differ, in the order the object lists them; a text of several lines gets a line diff."""
    old, new = _flat(before), _flat(after)
    changed = []
    for name in [*new, *(k for k in old if k not in new)]:
        was, now = old.get(name), new.get(name)
        if was == now or (not _hidden(name) and _text(was) == _text(now)):  # [] and None read the same: "(none)"
            continue
        entry: dict[str, Any] = {"name": field_words(name), "hidden": False, "lines": None}
        if _hidden(name):
            entry.update(before="", after="changed" if name in old else "set", hidden=True)
        else:
            entry.update(before=_text(was), after=_text(now))
            if "\n" in entry["before"] or "\n" in entry["after"]:
                entry["lines"] = line_diff(entry["before"], entry["after"])
        changed.append(entry)
    return changed


# What the fields are called on the pages where they are edited.
_FIELD_WORDS = {"id": "Name", "content": "Source", "description": "Description", "imports": "Imports", "exposeInChat": "Callable in chat",
                "enabled": "Enabled", "timeoutMillis": "Timeout (ms)", "memoryLimitMb": "Memory limit (MB)",
                "inputParameters": "Parameter", "allowedTools": "Allowed tools", "allowedTags": "Allowed tags",
                "tools": "Tools", "tags": "Tags", "style": "Style", "value": "Value", "usage profile": "Usage profile"}
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def field_words(name: str) -> str:
    """A dotted field as words: "tool.inputParameters[amount].type" → "Tool › Parameter amount › type"."""
    parts = []
    for part in name.split("."):
        item = ""
        if "[" in part and part.endswith("]"):
            part, item = part[:-1].split("[", 1)
        words = _FIELD_WORDS.get(part) or _CAMEL.sub(" ", part).replace("_", " ").lower()
        if not parts:
            words = words[:1].upper() + words[1:]
        parts.append(f"{words} {item}" if item else words)
    return " › ".join(parts)


def line_diff(before: str, after: str) -> list[dict[str, Any]]:
    """A unified line diff with three lines of context: each line `{"sign": "+"|"-"|" "|"@", "text", "old", "new"}`."""
    old_lines, new_lines = before.splitlines(), after.splitlines()
    out: list[dict[str, Any]] = []
    matcher = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
    for group in matcher.get_grouped_opcodes(3):
        first, last = group[0], group[-1]
        out.append({"sign": "@", "text": f"{_span(first[1], last[2])} before, {_span(first[3], last[4])} after",
                    "old": None, "new": None})
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out.extend({"sign": " ", "text": old_lines[i], "old": i + 1, "new": j1 + i - i1 + 1} for i in range(i1, i2))
                continue
            if tag in ("replace", "delete"):
                out.extend({"sign": "-", "text": old_lines[i], "old": i + 1, "new": None} for i in range(i1, i2))
            if tag in ("replace", "insert"):
                out.extend({"sign": "+", "text": new_lines[j], "old": None, "new": j + 1} for j in range(j1, j2))
    return out


# -- where an object is ------------------------------------------------------------------------------

def annotated(services: Any, tenant: str, rows: list[Row]) -> tuple[list[Row], dict[tuple[str, str], str]]:
    """The rows, a record's first save told as "created" (the registry keeps when a record was made:
    its `createdAt` is that save's time), and where each row's object has its page while it exists."""
    links: dict[tuple[str, str], str] = {}
    made: dict[tuple[str, str], str | None] = {}
    out = []
    for row in rows:
        key = (row.kind, row.name)
        if key not in links:
            url = object_url(services, tenant, row.kind, row.name)
            if url:
                links[key] = url
        if row.verb == "saved" and row.kind in _RECORD_PAGES:
            if key not in made:
                made[key] = _created_at(services, tenant, row.kind, row.name)
            if made[key] is not None and made[key] == row.at.isoformat():
                row = dataclasses.replace(row, verb="created")
        out.append(row)
    return out, links


def _created_at(services: Any, tenant: str, kind: str, name: str) -> str | None:
    record_kind = next((k for k, v in _RECORD_KINDS.items() if v == kind), None)
    try:
        record = services.records.get(tenant, record_kind, name)
    except Exception:  # noqa: BLE001 - gone: its saves stay "saved"
        return None
    created = record.get("createdAt") if isinstance(record, dict) else None
    return created if isinstance(created, str) else None


def object_url(services: Any, tenant: str, kind: str, name: str) -> str | None:
    """The console page of the object a row names, when it still exists; None otherwise."""
    quoted = quote(name, safe="")
    if kind == "module":
        return f"/console/modules/{quoted}" if services.read_model.summary(tenant, name) is not None else None
    if kind in ("api-tool", "search-tool"):
        for tool_kind in services.toolbox.kinds:
            entry = _CONFIGURED.get(getattr(getattr(tool_kind, "aggregate", None), "__name__", ""))
            if entry is not None and entry[0] == kind:
                page = next((p.page for p in services.plugins if p.call_type == tool_kind.call_type), None)
                return page.format(quoted) if page and tool_kind.find(tenant, name) is not None else None
        return None
    if kind in _PUBLISHED.values():
        for item_kind in services.toolbox.kinds:
            if _PUBLISHED.get(getattr(getattr(item_kind, "aggregate", None), "__name__", "")) == kind:
                page = next((p.page for p in services.plugins if p.call_type == item_kind.call_type), None)
                return page.format(quoted) if page and item_kind.find(tenant, name) is not None else None
        return None
    record_kind = next((k for k, v in _RECORD_KINDS.items() if v == kind), None)
    if record_kind is not None:
        try:
            services.records.get(tenant, record_kind, name)
        except Exception:  # noqa: BLE001 - gone (deleted): the row names it without a link
            return None
        return _RECORD_PAGES[kind].format(quoted)
    if kind == "secret":
        try:
            services.secrets.get(tenant, name)
        except Exception:  # noqa: BLE001 - deleted
            return None
        return "/console/secrets"
    return None


def _span(start: int, stop: int) -> str:
    if stop <= start:
        return "no lines"
    return f"line {start + 1}" if stop == start + 1 else f"lines {start + 1}–{stop}"
