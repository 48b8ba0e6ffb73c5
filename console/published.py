"""The console pages every published kind shares (docs/console.md, docs/kinds/prompts.md): items
written as a draft and published in versions, as a code module is. Written once, for prompts and
any kind built on `application.kinds.published.ItemKind`:

- the list (`GET ""`, `published/list.html`): each item by id with its state and version;
- the editor: a new item's form (`GET /new`, `POST ""`) and an item's page (`GET /{name}`, `POST
  /{name}` saves the draft, with `If-Match`'s version from the form), a refused save shown again
  with what was typed and each message next to the field it names;
- a form's own buttons that add or remove a row (an argument, a message) answer the form again
  with the row added or removed, nothing saved (`ItemForm.edited`), so it works without JavaScript;
- publish (`POST /{name}/publish`, with a message), discard the draft (`POST /{name}/discard`),
  delete (`POST /{name}/delete`), a test of the draft (`POST /{name}/test`, the kind's `test`, with
  the kind's fields, `test_<name>` and `test_mode=fields`, or the arguments as JSON);
  the item's page says which MCP servers and usage profiles name it (used by);
- the history (`GET /{name}/history`, `published/history.html`): the published versions, each
  restorable into the draft (`POST /{name}/revert`, B1), a comparison of any version with another
  or the draft (`?a=&b=`), the item as it stood at an instant (`?at=`, B2) and every event;
- changesets (B6): the list's drafts chosen and published together (`POST /publish-selected`, with
  a message, If-Match per item), and the kind's changesets (`GET /changeset-history`, `?id=` one).
  Both sit on a path segment with a hyphen, which no item's id (R1) can be.

Every change goes through the kind's commands, so that the console and REST refuse the same things.
A kind's `pages.py` makes one `PublishedPages` with its form (`ItemForm`: a definition as the form's
values and back, and as labelled rows for a comparison) and its templates' folder (`<folder>/form.html`
extends `published/form.html`).
"""

from __future__ import annotations

import difflib
import json
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Protocol
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from application import queries
from application.context import CONSOLE
from api.published import usage_of
from application.kinds.published import ItemKind
from application.queries import call_context
from console.configured import Shown, expected_version
from console.routing import ConsoleRoute
from console.security import Reader, Writer
from console.toast import toast
from domain import errors
from domain import history as histories
from domain.errors import Violation

Values = dict[str, Any]
MODULES_OFFERED = 200  # the tool modules a module field suggests, by name


class ItemForm(Protocol):
    def values_of(self, item: Any | None) -> Values:
        """The form's values for an item's current definition (a new item's defaults for None)."""

    def form_values(self, form: Any, item_id: str | None) -> Values:
        """The submitted form as typed."""

    def given_of(self, values: Values) -> tuple[dict[str, Any], list[Violation]]:
        """The definition's fields from the values, and what could not be read as typed."""

    def anchor(self, field: str, values: Values) -> str:
        """The id of the form field a rule's field path belongs to (rows are found in `values`)."""

    def edited(self, values: Values, action: str) -> Values | None:
        """The values with a row added or removed when `action` (the `row` button pressed) asks for
        it, else None (the form is saved)."""

    def rows_of(self, definition: dict[str, Any] | None) -> dict[str, str]:
        """A definition as labelled texts, one per field, for a comparison and the as-of view."""


@dataclass
class PublishedPages:
    kind: type[ItemKind[Any]]
    base: str  # "/console/prompts"
    one: str  # "prompt"
    title: str  # "prompt"
    folder: str  # "prompts"
    public: Any  # an item as the API shows it
    form: ItemForm
    router: APIRouter = field(init=False)
    shown: Shown = field(init=False)

    def __post_init__(self) -> None:
        self.shown = Shown(self.base, self.title, self.title + "s", f"{self.one}-form")
        self.router = APIRouter(prefix=self.base, route_class=ConsoleRoute, include_in_schema=False)
        add, one = self.router.add_api_route, self.one
        add("", self._list, methods=["GET"], name=f"{one}_list")
        add("/new", self._new, methods=["GET"], name=f"new_{one}")
        add("/changeset-history", self._changesets, methods=["GET"], name=f"{one}_changesets")
        add("/publish-selected", self._publish_selected, methods=["POST"], name=f"publish_selected_{one}s")
        add("/{name}", self._page, methods=["GET"], name=f"{one}_page")
        add("", self._create, methods=["POST"], name=f"create_{one}")
        add("/{name}", self._save, methods=["POST"], name=f"save_{one}")
        add("/{name}/publish", self._publish, methods=["POST"], name=f"publish_{one}")
        add("/{name}/discard", self._discard, methods=["POST"], name=f"discard_{one}")
        add("/{name}/delete", self._delete, methods=["POST"], name=f"delete_{one}")
        add("/{name}/test", self._test, methods=["POST"], name=f"test_{one}")
        add("/{name}/history", self._history, methods=["GET"], name=f"{one}_history")
        add("/{name}/revert", self._revert, methods=["POST"], name=f"revert_{one}")

    def kind_of(self, request: Request) -> Any:
        return request.app.state.services.toolbox.kind(self.kind)

    def render(self, request: Request, template: str, status: int = 200, **context: Any) -> Response:
        return request.app.state.console_pages.render(request, template, status=status, configured=self.shown, **context)

    def page(self, name: str, suffix: str = "") -> str:
        return f"{self.base}/{quote(name, safe='')}{suffix}"

    def editor(self, request: Request, values: Values, *, item: Any | None, fields: dict[str, list[str]] | None = None,
               summary: str = "", refusal: str = "", status: int = 200, **extra: Any) -> Response:
        services, tenant = request.app.state.services, request.state.visitor.principal.tenant
        used_by = usage_of(services, tenant, item.item_id) if item is not None else None
        # what a module field offers as it is typed: the tenant's tool modules (the kind checks the one named)
        tool_modules = [m["id"] for m in queries.list_modules(services, tenant, tool=True, limit=MODULES_OFFERED).collection]
        return self.render(request, f"{self.folder}/form.html", status=status, values=values, editing=item is not None,
                           item=self.public(item) if item is not None else None, fields=fields or {}, summary=summary,
                           refusal=refusal, used_by=used_by, tool_modules=tool_modules, json_view=values.get("json") if values.get("editor") == "json" else
                           (json.dumps(item.current, indent=2, ensure_ascii=False) if item is not None else ""),
                           **{"test_arguments": "", "test_values": {}, "test_result": None, "test_error": "", **extra})

    def _messages(self, found: list[Violation], values: Values) -> dict[str, list[str]]:
        fields: dict[str, list[str]] = {}
        for v in found:
            fields.setdefault(self.form.anchor(v.field, values), []).append(f"{v.field}: {v.message}")
        return fields

    # -- the pages -----------------------------------------------------------------------------

    def _list(self, request: Request, visitor: Reader) -> Response:
        return self._list_page(request, visitor)

    def _list_page(self, request: Request, visitor: Any, *, status: int = 200, refusal: str = "", chosen: list[str] | None = None,
                   message: str = "") -> Response:
        """The list; each draft can be chosen to publish with others as one changeset."""
        rows = [self.public(item) for item in self.kind_of(request).items(visitor.principal.tenant)]
        return self.render(request, "published/list.html", status=status, rows=rows, refusal=refusal, chosen=chosen or [],
                           message=message)

    def _new(self, request: Request, visitor: Writer) -> Response:
        return self.editor(request, self.form.values_of(None), item=None)

    def _page(self, name: str, request: Request, visitor: Reader) -> Response:
        item = self.kind_of(request).get(visitor.principal.tenant, name)
        return self.editor(request, self.form.values_of(item), item=item)

    async def _write(self, request: Request, visitor: Any, name: str | None) -> Response:
        form = await request.form()
        values = self.form.form_values(form, name)
        item_id = name if name is not None else values["id"]
        principal, kind = visitor.principal, self.kind_of(request)
        if name is not None and str(form.get("editor", "")) == "json":
            return await self._write_json(request, visitor, name, str(form.get("json", "")), values.get("version", ""))
        edited = self.form.edited(values, str(form.get("row", "")))
        if edited is not None:  # a row added or removed: the form again, nothing saved
            existing = kind.find(principal.tenant, name) if name is not None else None
            return self.editor(request, edited, item=existing)
        try:
            given, unread = self.form.given_of(values)
            if unread:
                raise errors.InvalidDefinition(unread)
            if name is None:
                await run_in_threadpool(lambda: kind.create(principal.tenant, item_id, given, by=principal.name))
            else:
                await run_in_threadpool(lambda: kind.update(principal.tenant, name, given, by=principal.name,
                                                            expected=expected_version(values)))
        except (errors.InvalidDefinition, errors.IdTaken, errors.PreconditionFailed) as error:
            if isinstance(error, errors.InvalidDefinition):
                fields = self._messages(error.violations, values)
            elif isinstance(error, errors.IdTaken):
                fields = {"id": [f"Name: {error.detail}"]}
            else:
                fields = {"form": [f"Someone saved this {self.title} after you opened it: open it again to see their change."]}
            existing = kind.find(principal.tenant, name) if name is not None else None
            return self.editor(request, values, item=existing, fields=fields, summary="Some fields need a change.")
        said = f"Saved the draft of {item_id}: publish it to offer it." if name is not None else f"Created {item_id}: publish it to offer it."
        return toast(request, self._redirect(self.page(item_id)), said)

    async def _write_json(self, request: Request, visitor: Any, name: str, text: str, version: str) -> Response:
        """The JSON view's save: the draft's whole definition as one JSON object, for power users;
        a refusal is shown at the JSON, with what was typed kept."""
        principal, kind = visitor.principal, self.kind_of(request)
        item = kind.get(principal.tenant, name)
        try:
            given = json.loads(text)
            if not isinstance(given, dict):
                raise errors.InvalidDefinition([Violation("json", "JSON", "the definition is a JSON object")])
            unknown = sorted(set(given) - set(item.current))
            if unknown:
                raise errors.InvalidDefinition([Violation(f"json.{k}", "JSON", f"not a field of a {self.title}") for k in unknown])
            await run_in_threadpool(lambda: kind.update(principal.tenant, name, given, by=principal.name,
                                                        expected=expected_version({"version": version})))
        except json.JSONDecodeError as error:
            fields = {"json": [f"json: not JSON: {error.msg} (line {error.lineno}, column {error.colno})"]}
        except errors.InvalidDefinition as error:
            fields = {"json": [f"{v.field}: {v.message}" for v in error.violations]}
        except errors.PreconditionFailed:
            fields = {"form": [f"Someone saved this {self.title} after you opened it: open it again to see their change."]}
        else:
            return toast(request, self._redirect(self.page(name)), f"Saved the draft of {name}: publish it to offer it.")
        values = {**self.form.values_of(item), "json": text, "version": version, "editor": "json"}
        return self.editor(request, values, item=item, fields=fields, summary="Some fields need a change.")

    @staticmethod
    def _redirect(url: str) -> Response:
        return Response(status_code=303, headers={"Location": url})

    async def _create(self, request: Request, visitor: Writer) -> Response:
        return await self._write(request, visitor, None)

    async def _save(self, name: str, request: Request, visitor: Writer) -> Response:
        self.kind_of(request).get(visitor.principal.tenant, name)  # 404 before reading the form
        return await self._write(request, visitor, name)

    async def _publish(self, name: str, request: Request, visitor: Writer) -> Response:
        message = str((await request.form()).get("message", "")).strip() or None
        principal, kind = visitor.principal, self.kind_of(request)
        try:
            item, _ = await run_in_threadpool(lambda: kind.publish(principal.tenant, name, by=principal.name, message=message))
        except (errors.InvalidDefinition, errors.NothingToPublish) as error:
            item = kind.get(principal.tenant, name)
            return self.editor(request, self.form.values_of(item), item=item, refusal=f"Not published: {error.detail}", status=409)
        return toast(request, self._redirect(self.page(name)), f"Published {name} as version {item.published_version}.")

    async def _discard(self, name: str, request: Request, visitor: Writer) -> Response:
        principal, kind = visitor.principal, self.kind_of(request)
        try:
            await run_in_threadpool(lambda: kind.discard_draft(principal.tenant, name, by=principal.name))
        except errors.CannotDiscard as error:
            item = kind.get(principal.tenant, name)
            return self.editor(request, self.form.values_of(item), item=item, refusal=f"Not discarded: {error.detail}", status=409)
        return toast(request, self._redirect(self.page(name)), f"Discarded the draft of {name}.")

    async def _delete(self, name: str, request: Request, visitor: Writer) -> Response:
        principal = visitor.principal
        await run_in_threadpool(lambda: self.kind_of(request).delete(principal.tenant, name, by=principal.name))
        return toast(request, self._redirect(self.base), f"Deleted the {self.title} {name}; its history stays.")

    async def _test(self, name: str, request: Request, visitor: Writer) -> Response:
        principal, kind = visitor.principal, self.kind_of(request)
        item = kind.get(principal.tenant, name)
        form = await request.form()
        text = str(form.get("arguments", "")).strip()
        # the kind's test fields (`test_<name>`, one per argument), those left empty not given; or the JSON
        named = {k[5:]: str(v) for k, v in form.multi_items() if k.startswith("test_") and k != "test_mode" and str(v) != ""}
        fields = form.get("test_mode") == "fields"
        context: dict[str, Any] = {"test_arguments": text if not fields else json.dumps(named, ensure_ascii=False),
                                   "test_values": named if fields else {}}
        try:
            arguments = named if fields else json.loads(text) if text else {}
            if not isinstance(arguments, dict):
                raise ValueError("the arguments are a JSON object")
            context["test_result"] = await kind.test(principal.tenant, name, arguments, call_context(principal, CONSOLE),
                                                     request.app.state.services.toolbox)
        except ValueError as error:
            context["test_error"] = f"The arguments are not a JSON object: {error}"
        except (errors.InvalidInput, errors.ToolNotCallable) as error:
            context["test_error"] = error.detail
        return self.editor(request, self.form.values_of(item), item=item, **context)

    def _history(self, name: str, request: Request, visitor: Reader, a: str = "", b: str = "", at: str = "") -> Response:
        """The published versions (each restorable into the draft), a comparison of two versions
        or a version and the draft, the item as of an instant, and every event, newest first; the
        query string holds the comparison and the instant, so that a link reproduces the view."""
        kind, tenant = self.kind_of(request), visitor.principal.tenant
        events = kind.events(tenant, name)
        if not events:
            raise errors.UnknownRecord(self.title, name)
        item = kind.find(tenant, name)
        versions = kind.versions(tenant, name)
        by_number = {v["version"]: v for v in versions}
        has_draft = item is not None and item.draft is not None
        problems: dict[str, str] = {}
        defaults = _default_pair([v["version"] for v in versions], has_draft)
        chosen = {"a": a or defaults[0], "b": b or defaults[1], "at": at}
        compare = self._comparison(a, b, by_number, item, problems) if a or b else None
        return self.render(request, "published/history.html", name=name, item=self.public(item) if item is not None else None,
                           version=item.version if item is not None else None, versions=versions, has_draft=has_draft,
                           compare=compare, as_of=self._as_of(events, at, problems), errors=problems, chosen=chosen,
                           timeline=[_event_row(e) for e in reversed(events)])

    def _comparison(self, a: str, b: str, by_number: dict[int, dict[str, Any]], item: Any | None,
                    problems: dict[str, str]) -> dict[str, Any] | None:
        sides = []
        for which, value in (("a", a), ("b", b)):
            if value == DRAFT and item is not None and item.draft is not None:
                sides.append((item.draft, "the draft"))
            elif value.isdigit() and int(value) in by_number:
                sides.append((by_number[int(value)], f"version {int(value)}"))
            else:
                drafted = which == "b" and item is not None and item.draft is not None
                problems[which] = "Choose a published version" + (" or the draft." if drafted else ".")
        if len(sides) != 2:
            return None
        return self.diff(sides[0][0], sides[1][0], sides[0][1], sides[1][1])

    def diff(self, before: dict[str, Any] | None, after: dict[str, Any] | None, before_label: str, after_label: str) -> dict[str, Any]:
        """Two definitions for a person: each field as the kind labels it, before and after, and
        the whole definition's JSON as a unified diff."""
        old, new = self.form.rows_of(before), self.form.rows_of(after)
        rows = [{"field": label, "before": old.get(label, "—"), "after": new.get(label, "—"), "changed": old.get(label) != new.get(label)}
                for label in dict.fromkeys([*old, *new])]
        unified = "\n".join(difflib.unified_diff(_definition_text(before).splitlines(), _definition_text(after).splitlines(),
                                                 fromfile=before_label, tofile=after_label, lineterm=""))
        return {"before_label": before_label, "after_label": after_label, "rows": rows,
                "changed": any(row["changed"] for row in rows), "unified": unified}

    def _as_of(self, events: list[Any], at: str, problems: dict[str, str]) -> dict[str, Any] | None:
        """The item as it stood at `at` (a `datetime-local` value, read as UTC)."""
        if not at:
            return None
        try:
            instant = datetime.fromisoformat(at)
        except ValueError:
            problems["at"] = "Give a date and time, for example 2026-11-30T20:31."
            return None
        if instant.tzinfo is None:
            instant = instant.replace(tzinfo=timezone.utc)
        past = histories.replay(events, instant)
        if past is None or past.deleted:
            return {"at": instant, "item": None}
        return {"at": instant, "item": self.public(past),
                "draft": self.form.rows_of(past.draft) if past.draft is not None else None,
                "published": self.form.rows_of(past.published) if past.published is not None else None}

    async def _revert(self, name: str, request: Request, visitor: Writer) -> Response:
        """B1: a published version's definition becomes the draft again; publish it to offer it."""
        form = await request.form()
        chosen, principal, kind = str(form.get("revert", "")), visitor.principal, self.kind_of(request)
        try:
            await run_in_threadpool(lambda: kind.revert(principal.tenant, name, int(chosen) if chosen.isdigit() else chosen,
                                                        by=principal.name, expected=expected_version({"version": str(form.get("version", ""))})))
        except errors.PreconditionFailed:
            return toast(request, self._redirect(self.page(name, "/history")),
                         f"Someone changed {name} after you opened its history: look again before restoring.", kind="warning")
        return toast(request, self._redirect(self.page(name)),
                     f"Version {chosen} of {name} is restored into the draft; publish it to offer it.")

    # -- changesets (B6) -------------------------------------------------------------------------

    async def _publish_selected(self, request: Request, visitor: Writer) -> Response:
        """The drafts chosen in the list, each at the version the list showed (If-Match, B7),
        published in one transaction with one message: all of them or none."""
        form = await request.form()
        ids = [value for value in form.getlist("ids") if isinstance(value, str)]
        expected = {i: int(v) for i in ids if isinstance(v := form.get(f"version_{i}"), str) and v.isdigit()}
        message = str(form.get("message", "")).strip() or None
        principal, kind = visitor.principal, self.kind_of(request)
        try:
            changeset, items, _ = await run_in_threadpool(lambda: kind.publish_changeset(
                principal.tenant, ids, by=principal.name, message=message, expected=expected))
        except errors.ModuleError as error:  # none chosen, no draft (R10), a stale list (B7), a check refused
            found = getattr(error, "violations", None)
            detail = "; ".join(f"{v.field}: {v.message}" for v in found) if found else error.detail
            if not ids:
                detail = f"choose the drafts to publish together"
            return self._list_page(request, visitor, status=409, refusal=f"Nothing published: {detail}.", chosen=ids,
                                   message=message or "")
        said = f"Published {len(items)} {self.title}{'s' if len(items) != 1 else ''} together."
        return toast(request, self._redirect(f"{self.base}/changeset-history?{urlencode({'id': changeset})}"), said)

    def _changesets(self, request: Request, visitor: Reader, id: str = "") -> Response:
        """The kind's changesets, newest first: each with its message, who, when and each item with
        the version it made; `?id=` shows one (where an item's history links)."""
        kind, tenant = self.kind_of(request), visitor.principal.tenant
        found: dict[str, dict[str, Any]] = {}
        for item in kind.items(tenant):
            for v in kind.versions(tenant, item.item_id):
                if v["changeset"]:
                    entry = found.setdefault(v["changeset"], {"id": v["changeset"], "message": v["message"], "by": v["publishedBy"],
                                                              "at": v["publishedAt"], "items": []})
                    entry["items"].append({"id": item.item_id, "version": v["version"]})
        changesets = sorted(found.values(), key=lambda c: c["at"], reverse=True)
        chosen = id.strip()[:64]
        if chosen:
            changesets = [c for c in changesets if c["id"] == chosen]
        return self.render(request, "published/changesets.html", status=404 if chosen and not changesets else 200,
                           changesets=changesets, chosen=chosen)


DRAFT = "draft"


def new_key() -> str:
    """A row's key in the form's field names (`arg_<key>_name`): unique within a page."""
    return uuid.uuid4().hex[:8]


def row_keys(form: Any, name: str) -> list[str]:
    """The keys of a form's rows, in order, each once (its hidden `<name>` inputs)."""
    keys = [str(k) for k in form.getlist(name)] if hasattr(form, "getlist") else []
    return [k for k in dict.fromkeys(keys) if k.isalnum() and len(k) <= 16]


def edit_rows(values: Values, action: str, tables: dict[str, Any]) -> Values | None:
    """A form's row buttons: `add-<table>` appends a blank row (`tables[table]()`), `remove-<table>:<key>`
    drops that row; None for any other action (the form is saved)."""
    verb, _, rest = action.partition("-")
    table, _, key = rest.partition(":")
    if table not in tables or verb not in ("add", "remove"):
        return None
    rows = list(values[table])
    rows = [*rows, tables[table]()] if verb == "add" else [r for r in rows if r["key"] != key]
    return {**values, table: rows, "focus": rows[-1]["key"] if verb == "add" and rows else ""}


def _default_pair(numbers: list[int], has_draft: bool) -> tuple[str, str]:
    """What the compare form starts at: the last version against the draft, else the last two."""
    if not numbers:
        return "", ""
    if has_draft:
        return str(numbers[-1]), DRAFT
    return str(numbers[-2] if len(numbers) > 1 else numbers[-1]), str(numbers[-1])


def _definition_text(definition: dict[str, Any] | None) -> str:
    if definition is None:
        return ""
    kept = {k: v for k, v in definition.items() if k not in ("version", "publishedAt", "publishedBy", "changeset", "message")}
    return json.dumps(kept, indent=2, ensure_ascii=False, sort_keys=True, default=str)


EVENT_WHAT = {"Created": "Created", "Recreated": "Created again", "DraftChanged": "Draft saved", "DraftDiscarded": "Draft discarded",
              "Deleted": "Deleted"}


def _event_row(event: Any) -> dict[str, Any]:
    """One timeline entry: the REST history's entry (B2), named for a person."""
    entry = histories.entry(event)
    data = entry["data"]
    what = EVENT_WHAT.get(entry["type"], entry["type"])
    if entry["type"] == "Published":
        what = f"Published version {data.get('version')}"
    elif entry["type"] == "Reverted":
        what = f"Version {data.get('version')} restored into the draft"
    return {**entry, "what": what, "changeset": data.get("changeset"), "message": data.get("message"),
            "recorded": json.dumps(data, indent=2, ensure_ascii=False, default=str)}
