"""The console pages every configured kind shares (docs/console.md, docs/kinds/index.md): a tool whose
configuration is live, each change an event of its own aggregate. Written once, for API URL tools,
File Search tools and any kind built the same way:

- the list (`GET ""`, `<folder>/list.html`, which extends `configured/list.html`);
- the editor: a new tool's form (`GET /new`, `POST ""`) and a tool's page (`GET /{name}`,
  `POST /{name}`), a refused save shown again with what was typed and each message next to the
  field it names (`<folder>/<editor template>`, which extends `configured/form.html`);
- enable and disable (`POST /{name}/enabled`), delete with its confirmation dialog and its refusal
  (409 while a plan, an agent or another tool names it; `POST /{name}/delete`);
- the history (`GET /{name}/history`, `configured/history.html` or the kind's own).

Each change is answered by the page it leads to with a toast saying what was done (create, save,
enable, disable, delete; the Undo of a create deletes the tool again, that of an enable or a disable
switches it back). Every change goes through the kind's commands (`save`, `set_enabled`, `delete`) with the REST API's
request model, so that the console and REST refuse the same things. A kind's `pages.py` makes one
`ConfiguredPages` with its form (`Form`: its configuration as the form's values and back), then
adds its own pages to `pages.router` (the Playground, documents, search), with `render`, `editor`,
`page` and `redirect` of this module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from api.configured import ConfiguredBody
from application.kinds.configured import ConfiguredKind
from console.routing import ConsoleRoute
from console.security import Reader, Writer
from console.toast import Undo, toast
from domain import errors
from domain import history as histories
from domain.errors import Violation

Values = dict[str, Any]


class Form(Protocol):
    """A kind's editor form, both ways: a tool's configuration as the form's values, the submitted
    form as the REST API's request body, and where each rule's message belongs. It checks no rule:
    the kind's `save` checks them all, as it does for REST."""

    def values_of(self, tool: Any | None) -> Values:
        """The form's values for a tool (a new tool's defaults for None)."""

    def form_values(self, form: Any, tool_id: str | None) -> Values:
        """The submitted form as typed, to show it again (`tool_id`: the edited tool's, None for a new one)."""

    def body_of(self, values: Values) -> tuple[dict[str, Any], list[Violation]]:
        """The REST body from the values, and what could not be read as typed, each naming its field."""

    def messages_of(self, found: list[Violation], values: Values) -> dict[str, list[str]]:
        """Messages by the id of the form field each is about, each naming that field."""

    def expected(self, kind: Any, tenant: str, name: str, values: Values, config: dict[str, Any]) -> int | None:
        """The version an edit's save expects (B7: refused when the tool changed since the form was opened)."""


def expected_version(values: Values) -> int | None:
    """The version the form was opened with (its hidden `version` field): None when it sent none,
    -1 (which no tool has, so the save is refused) when it is not a number."""
    version = values.get("version", "")
    return (int(version) if version.isdigit() else -1) if version else None


def path_of(loc: tuple[Any, ...] | list[Any]) -> str:
    """A pydantic error location as the API's field path: ('parameters', 0, 'type') → parameters[0].type."""
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else ("." if path else "") + str(part)
    return path


def refused(error: Exception, messages_of: Callable[[list[Violation]], dict[str, list[str]]]) -> tuple[dict[str, list[str]], str] | None:
    """The form's messages for a refused save and the summary above them, or None for an error that
    is not about the form."""
    if isinstance(error, ValidationError):
        return messages_of([Violation(path_of(e.get("loc", ())), "API", str(e.get("msg"))) for e in error.errors()]), \
            "Some fields need a change."
    if isinstance(error, (errors.InvalidDefinition, errors.InvalidRecord)):
        return messages_of(error.violations), "Some fields need a change."
    if isinstance(error, (errors.IdTaken, errors.RecordTaken)):
        return {"id": [f"Name: {error.detail}"]}, "That name is taken."
    if isinstance(error, errors.QuotaExceeded):  # docs/tenants.md
        return {"form": [f"Not created: {error.detail}. Your organization's operator sets its quotas."]}, "A quota is reached."
    if isinstance(error, errors.PreconditionFailed):
        return ({"form": ["Someone saved this tool after you opened it. Open it again to see their change; "
                          "what you typed is below."]}, "Not saved: the tool changed meanwhile.")
    return None


def messages(title: str) -> dict[str, str]:
    """What a page says after each change, by the flag its redirect carries."""
    return {
        "created": "Created {}: the tool is live on every server it is attached to.",
        "saved": "Saved {}: the change is live at once.",
        "enabled": "Enabled {}: the tool is offered again.",
        "disabled": "Disabled {}: no server offers the tool now.",
        "deleted": f"Deleted the {title} {{}}.",
    }


@dataclass(frozen=True)
class Shown:
    """What the shared templates say of the kind (`configured` in their context)."""

    base: str  # "/console/api-tools"
    title: str  # "API tool"
    plural: str  # "API tools"
    form_id: str  # the editor form's HTML id (the kind's script finds it by it)


@dataclass
class ConfiguredPages:
    """One configured kind's console pages, on `router` (prefix `base`)."""

    kind: type[ConfiguredKind[Any]]  # its ToolKind class, as `toolbox.kind` finds it
    base: str  # "/console/api-tools"
    one: str  # "api_tool": the routes' names (`api_tool_list`, `new_api_tool`, …)
    noun: str  # "API URL tool": what a 404 names
    title: str  # "API tool": what the pages call one
    folder: str  # the kind's templates' folder ("api_tools")
    body: type[ConfiguredBody]  # the REST API's request model, which validates every save
    public: Callable[[Any], dict[str, Any]]  # a tool as the API shows it (and the templates read it)
    form: Form
    editor_template: str = "form.html"  # in `folder`
    history_template: str = "configured/history.html"
    said: Mapping[str, str] = field(default_factory=dict)  # the kind's own messages, over `messages(title)`
    # The kind's own context of the list and of the editor (a tool's aggregate, or None for a new one).
    list_context: Callable[[Request], dict[str, Any]] = lambda request: {}
    editor_context: Callable[[Request, Any | None], dict[str, Any]] = lambda request, tool: {}
    plural: str = ""
    form_id: str = ""
    router: APIRouter = field(init=False)
    messages: dict[str, str] = field(init=False)  # what a page says after each change, by its redirect's flag
    shown: Shown = field(init=False)

    def __post_init__(self) -> None:
        self.messages = {**messages(self.title), **self.said}
        self.shown = Shown(self.base, self.title, self.plural or self.title + "s", self.form_id or self.one.replace("_", "-") + "-form")
        self.router = APIRouter(prefix=self.base, route_class=ConsoleRoute, include_in_schema=False)
        self._routes()

    # -- what the kind's own pages use too -------------------------------------------------------

    def kind_of(self, request: Request) -> Any:
        return request.app.state.services.toolbox.kind(self.kind)

    def render(self, request: Request, template: str, status: int = 200, headers: dict[str, str] | None = None,
               **context: Any) -> Response:
        return request.app.state.console_pages.render(request, template, status=status, headers=headers,
                                                      configured=self.shown, **context)

    def message(self, request: Request) -> str:
        for key, text in self.messages.items():
            if key in request.query_params:
                return text.format(request.query_params[key])
        return ""

    def page(self, name: str, suffix: str = "") -> str:
        return f"{self.base}/{quote(name, safe='')}{suffix}"

    @staticmethod
    def redirect(url: str, **flags: str) -> RedirectResponse:
        return RedirectResponse(url + ("?" + urlencode(flags) if flags else ""), status_code=303)

    def done(self, request: Request, url: str, said: str, name: str = "", *, undo: Undo | None = None) -> Response:
        """A change's answer: the page it leads to, with a toast saying what was done (`messages[said]`)."""
        return toast(request, self.redirect(url), self.messages[said].format(name), undo=undo)

    def editor(self, request: Request, values: Values, *, tool: Any | None = None, editing: bool | None = None,
               fields: dict[str, list[str]] | None = None, summary: str = "", message: str = "", refusal: str = "",
               status: int = 200, **extra: Any) -> Response:
        """The editor: a new tool's form, or a tool's page with its form (`tool`: its aggregate)."""
        return self.render(
            request, f"{self.folder}/{self.editor_template}", status=status, values=values,
            editing=tool is not None if editing is None else editing, tool=self.public(tool) if tool is not None else None,
            fields=fields or {}, summary=summary, message=message, refusal=refusal,
            **{**self.editor_context(request, tool), **extra},
        )

    # -- the pages -----------------------------------------------------------------------------

    def _routes(self) -> None:
        one = self.one
        add = self.router.add_api_route
        # `/new` before `/{name}`, which would take it for a tool's name.
        add("", self._list, methods=["GET"], name=f"{one}_list")
        add("/new", self._new, methods=["GET"], name=f"new_{one}")
        add("/{name}", self._tool, methods=["GET"], name=f"{one}_page")
        add("", self._create, methods=["POST"], name=f"create_{one}")
        add("/{name}", self._edit, methods=["POST"], name=f"save_{one}")
        add("/{name}/enabled", self._set_enabled, methods=["POST"], name="set_enabled")
        add("/{name}/delete", self._delete, methods=["POST"], name=f"delete_{one}")
        add("/{name}/history", self._history, methods=["GET"], name=f"{one}_history")

    def _list(self, request: Request, visitor: Reader) -> Response:
        rows = [self.public(tool) for tool in self.kind_of(request).tools(visitor.principal.tenant)]
        return self.render(request, f"{self.folder}/list.html", rows=rows, message=self.message(request), **self.list_context(request))

    def _new(self, request: Request, visitor: Writer) -> Response:
        return self.editor(request, self.form.values_of(None), editing=False)

    def _tool(self, name: str, request: Request, visitor: Reader) -> Response:
        tool = self.kind_of(request).get(visitor.principal.tenant, name)
        return self.editor(request, self.form.values_of(tool), tool=tool, message=self.message(request))

    async def _save(self, request: Request, visitor: Any, name: str | None) -> Response:
        form = await request.form()
        values = self.form.form_values(form, name)
        tool_id = name if name is not None else values["id"]
        principal = visitor.principal
        kind = self.kind_of(request)
        try:
            body, unread = self.form.body_of(values)
            if not tool_id:
                unread.insert(0, Violation("id", "R1", "is required"))
            if unread:
                raise errors.InvalidDefinition(unread)
            config = self.body.model_validate(body).as_config()
            expected = None if name is None else self.form.expected(kind, principal.tenant, name, values, config)
            await run_in_threadpool(lambda: kind.save(principal.tenant, tool_id, config, by=principal.name, create=name is None,
                                                      expected=expected))
        except (ValidationError, errors.ModuleError) as error:
            found = refused(error, lambda violations: self.form.messages_of(violations, values))
            if found is None:
                raise
            fields, summary = found
            existing = kind.find(principal.tenant, name) if name is not None else None
            return self.editor(request, values, tool=existing, editing=name is not None, fields=fields, summary=summary)
        if name is not None:
            return self.done(request, self.page(tool_id), "saved", tool_id)
        # Undoing a create is cheap: the tool is deleted again (nothing can name it yet).
        return self.done(request, self.page(tool_id), "created", tool_id, undo=Undo(self.page(tool_id, "/delete")))

    async def _create(self, request: Request, visitor: Writer) -> Response:
        return await self._save(request, visitor, None)

    async def _edit(self, name: str, request: Request, visitor: Writer) -> Response:
        self.kind_of(request).get(visitor.principal.tenant, name)  # 404 before reading the form
        return await self._save(request, visitor, name)

    async def _set_enabled(self, name: str, request: Request, visitor: Writer) -> Response:
        form = await request.form()
        enabled = form.get("enabled") == "true"
        principal = visitor.principal
        await run_in_threadpool(lambda: self.kind_of(request).set_enabled(principal.tenant, name, enabled, by=principal.name))
        undo = Undo(self.page(name, "/enabled"), fields={"enabled": "false" if enabled else "true"})
        return self.done(request, self.page(name), "enabled" if enabled else "disabled", name, undo=undo)

    async def _delete(self, name: str, request: Request, visitor: Writer) -> Response:
        principal = visitor.principal
        kind = self.kind_of(request)
        try:
            await run_in_threadpool(lambda: kind.delete(principal.tenant, name, by=principal.name))
        except errors.InUse as error:
            tool = kind.get(principal.tenant, name)
            return self.editor(request, self.form.values_of(tool), tool=tool, refusal=f"Not deleted: {error.detail}", status=409)
        return self.done(request, self.base, "deleted", name)

    def _history(self, name: str, request: Request, visitor: Reader) -> Response:
        kind = self.kind_of(request)
        events = kind.events(visitor.principal.tenant, name)
        if not events:
            raise errors.UnknownRecord(self.noun, name)
        entries = [histories.entry(e) for e in events]
        live = kind.find(visitor.principal.tenant, name) is not None
        return self.render(request, self.history_template, name=name, entries=list(reversed(entries)), live=live)
