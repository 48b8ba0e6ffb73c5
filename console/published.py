"""The console pages every published kind shares (docs/console.md, docs/kinds/prompts.md): items
written as a draft and published in versions, as a code module is. Written once, for prompts and
any kind built on `application.kinds.published.ItemKind`:

- the list (`GET ""`, `published/list.html`): each item by id with its state and version;
- the editor: a new item's form (`GET /new`, `POST ""`) and an item's page (`GET /{name}`, `POST
  /{name}` saves the draft, with `If-Match`'s version from the form), a refused save shown again
  with what was typed and each message next to the field it names;
- publish (`POST /{name}/publish`, with a message), discard the draft (`POST /{name}/discard`),
  delete (`POST /{name}/delete`), a test of the draft (`POST /{name}/test`, the kind's `test`);
- the history (`GET /{name}/history`).

Every change goes through the kind's commands, so that the console and REST refuse the same things.
A kind's `pages.py` makes one `PublishedPages` with its form (`ItemForm`: a definition as the form's
values and back) and its templates' folder (`<folder>/form.html` extends `published/form.html`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from application.context import CONSOLE
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


class ItemForm(Protocol):
    def values_of(self, item: Any | None) -> Values:
        """The form's values for an item's current definition (a new item's defaults for None)."""

    def form_values(self, form: Any, item_id: str | None) -> Values:
        """The submitted form as typed."""

    def given_of(self, values: Values) -> tuple[dict[str, Any], list[Violation]]:
        """The definition's fields from the values, and what could not be read as typed."""

    def anchor(self, field: str) -> str:
        """The id of the form field a rule's field path belongs to."""


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
        add("/{name}", self._page, methods=["GET"], name=f"{one}_page")
        add("", self._create, methods=["POST"], name=f"create_{one}")
        add("/{name}", self._save, methods=["POST"], name=f"save_{one}")
        add("/{name}/publish", self._publish, methods=["POST"], name=f"publish_{one}")
        add("/{name}/discard", self._discard, methods=["POST"], name=f"discard_{one}")
        add("/{name}/delete", self._delete, methods=["POST"], name=f"delete_{one}")
        add("/{name}/test", self._test, methods=["POST"], name=f"test_{one}")
        add("/{name}/history", self._history, methods=["GET"], name=f"{one}_history")

    def kind_of(self, request: Request) -> Any:
        return request.app.state.services.toolbox.kind(self.kind)

    def render(self, request: Request, template: str, status: int = 200, **context: Any) -> Response:
        return request.app.state.console_pages.render(request, template, status=status, configured=self.shown, **context)

    def page(self, name: str, suffix: str = "") -> str:
        return f"{self.base}/{quote(name, safe='')}{suffix}"

    def editor(self, request: Request, values: Values, *, item: Any | None, fields: dict[str, list[str]] | None = None,
               summary: str = "", refusal: str = "", status: int = 200, **extra: Any) -> Response:
        return self.render(request, f"{self.folder}/form.html", status=status, values=values, editing=item is not None,
                           item=self.public(item) if item is not None else None, fields=fields or {}, summary=summary,
                           refusal=refusal, **{"test_arguments": "", "test_result": None, "test_error": "", **extra})

    def _messages(self, found: list[Violation]) -> dict[str, list[str]]:
        fields: dict[str, list[str]] = {}
        for v in found:
            fields.setdefault(self.form.anchor(v.field), []).append(f"{v.field}: {v.message}")
        return fields

    # -- the pages -----------------------------------------------------------------------------

    def _list(self, request: Request, visitor: Reader) -> Response:
        rows = [self.public(item) for item in self.kind_of(request).items(visitor.principal.tenant)]
        return self.render(request, "published/list.html", rows=rows)

    def _new(self, request: Request, visitor: Writer) -> Response:
        return self.editor(request, self.form.values_of(None), item=None)

    def _page(self, name: str, request: Request, visitor: Reader) -> Response:
        item = self.kind_of(request).get(visitor.principal.tenant, name)
        return self.editor(request, self.form.values_of(item), item=item)

    async def _write(self, request: Request, visitor: Any, name: str | None) -> Response:
        values = self.form.form_values(await request.form(), name)
        item_id = name if name is not None else values["id"]
        principal, kind = visitor.principal, self.kind_of(request)
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
                fields = self._messages(error.violations)
            elif isinstance(error, errors.IdTaken):
                fields = {"id": [f"Name: {error.detail}"]}
            else:
                fields = {"form": [f"Someone saved this {self.title} after you opened it: open it again to see their change."]}
            existing = kind.find(principal.tenant, name) if name is not None else None
            return self.editor(request, values, item=existing, fields=fields, summary="Some fields need a change.")
        said = f"Saved the draft of {item_id}: publish it to offer it." if name is not None else f"Created {item_id}: publish it to offer it."
        return toast(request, self._redirect(self.page(item_id)), said)

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
        text = str((await request.form()).get("arguments", "")).strip()
        context: dict[str, Any] = {"test_arguments": text}
        try:
            arguments = json.loads(text) if text else {}
            if not isinstance(arguments, dict):
                raise ValueError("the arguments are a JSON object")
            context["test_result"] = await kind.test(principal.tenant, name, arguments, call_context(principal, CONSOLE),
                                                     request.app.state.services.toolbox)
        except ValueError as error:
            context["test_error"] = f"The arguments are not a JSON object: {error}"
        except (errors.InvalidInput, errors.ToolNotCallable) as error:
            context["test_error"] = error.detail
        return self.editor(request, self.form.values_of(item), item=item, **context)

    def _history(self, name: str, request: Request, visitor: Reader) -> Response:
        kind = self.kind_of(request)
        events = kind.events(visitor.principal.tenant, name)
        if not events:
            raise errors.UnknownRecord(self.title, name)
        entries = [histories.entry(e) for e in events]
        return self.render(request, "configured/history.html", name=name, entries=list(reversed(entries)),
                           live=kind.find(visitor.principal.tenant, name) is not None)
