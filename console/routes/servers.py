"""An MCP server's page, the parts beyond its record (docs/console.md, "MCP servers"; docs/mcp.md): the tools
attached to it with their kind and state, attaching several at once and detaching one (each answered with
the attached tools' fragment and a toast; detach's toast re-attaches), the clients' configurations to
copy, and the check that lists the server's tools as a chosen token or usage profile is offered them.

What a caller is offered is never decided here: the check takes the caller's offer and pages it as
MCP's `tools/list` does (api/mcp_watch.py, api/mcp_tools.py), and only explains afterwards why an
attached tool is missing from it.
Attaching goes through `services.records.attach`, as the REST route does (api/routes/callers.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from console.routes.callers import SERVERS, add_details, render_detail
from api.mcp_watch import take_offer
from application.principals import Principal
from console.language import kind_words
from console.routes.catalog import page_of
from console.routing import ConsoleRoute
from console.security import Reader, Refused, Writer
from console.toast import Undo, toast
from domain import errors
from domain.callers import PROFILE, SERVER
from domain.catalog import Permissions, ToolEntry

router = APIRouter(prefix="/console/servers", route_class=ConsoleRoute, include_in_schema=False)

# The check reads the offer a page at a time, as a client's tools/list does (any size gives one list).
LIST_PAGE = 500


def _services(request: Request) -> Any:
    return request.app.state.services


def _page(record_id: str) -> str:
    return f"/console/servers/{quote(record_id, safe='')}"


# -- the tools: what may be attached, what is ----------------------------------------------------


def choices(services: Any, tenant: str, attached: list[str], *, as_of: int | None = None) -> list[dict[str, Any]]:
    """The tools not yet attached, one choice each: a File Search tool is one choice (its name), its
    capabilities listed under it, as attaching its name attaches them all (`Toolbox.expanded`).
    `as_of`: the catalog as of that store position at least (`Toolbox.entries`)."""
    by_name: dict[str, dict[str, Any]] = {}
    for entry in services.toolbox.entries(tenant, as_of=as_of):
        if entry.shadowed_by is not None:
            continue  # a call of the name reaches the winner of R15, which is its own choice
        name = entry.group or entry.name
        if name in attached:
            continue
        choice = by_name.setdefault(name, {"name": name, "kind": kind_words(entry.call_type), "description": "",
                                           "capabilities": []})
        if entry.group:
            choice["capabilities"].append(entry.name)
        else:
            choice["description"] = entry.description
    ordered = sorted(by_name.values(), key=lambda c: c["name"])
    # Made here, not in the template (a few microseconds a choice there): each one's place in the list
    # (its checkbox's id) and the words the list's filter matches (console/assets/servers.js).
    for n, choice in enumerate(ordered, 1):
        choice["n"] = n
        choice["search"] = f"{choice['name']} {choice['kind']} {' '.join(choice['capabilities'])}".lower()
    return ordered


def attached_rows(services: Any, tenant: str, names: list[str], *, as_of: int | None = None) -> list[dict[str, Any]]:
    """Each attached name with its kind in words, its page, its state and its capabilities."""
    toolbox = services.toolbox
    entries: dict[str, list[ToolEntry]] = {}
    for entry in toolbox.entries(tenant, as_of=as_of):
        if entry.shadowed_by is None:
            entries.setdefault(entry.group or entry.name, []).append(entry)
    rows = []
    for name in names:
        found = entries.get(name, [])
        own = next((e for e in found if e.group is None), found[0] if found else None)
        if own is None:
            # A name the catalog does not list: a kind holds it unlisted (a module never published), or nothing does.
            holder = next((k for k in toolbox.kinds if k.holds(tenant, name)), None)
            rows.append({"name": name, "kind": kind_words(holder.call_type) if holder else "tool",
                         "page": page_of(services.plugins, holder.call_type, name) if holder else None,
                         "state": ["not published"] if holder else ["no longer exists"], "live": False, "capabilities": []})
            continue
        state = ["enabled" if own.enabled else "disabled", "published"]
        if not own.expose_in_chat:
            state.append("not callable in chat")
        rows.append({
            "name": name, "kind": kind_words(own.call_type), "page": page_of(services.plugins, own.call_type, name),
            "state": state, "live": own.enabled and own.expose_in_chat,
            "capabilities": [e.name for e in found if e.group is not None],
        })
    return rows


def client_configs(url: str, server_id: str) -> list[dict[str, str]]:
    """What each common MCP client is given to reach the server: a file's name and its text, with the
    placeholder <YOUR_TOKEN> where the caller's token goes (never a real token: none is kept to show)."""
    key = f"toolsmith-{server_id}"
    bearer = "Bearer <YOUR_TOKEN>"
    claude = {"mcpServers": {key: {"command": "npx", "args": ["-y", "mcp-remote", url, "--header", "Authorization: Bearer ${TOKEN}"],
                                   "env": {"TOKEN": "<YOUR_TOKEN>"}}}}
    vscode = {"servers": {key: {"type": "http", "url": url, "headers": {"Authorization": bearer}}}}
    cursor = {"mcpServers": {key: {"url": url, "headers": {"Authorization": bearer}}}}
    inspector = (f"npx @modelcontextprotocol/inspector --cli {url} --transport http \\\n"
                 f"  --header \"Authorization: {bearer}\" --method tools/list")
    return [
        {"id": "claude", "client": "Claude Desktop", "file": "claude_desktop_config.json",
         "how": "Claude Desktop starts servers as local commands: mcp-remote (Node.js 18 or later) connects it to this "
                "URL. Add the entry under mcpServers, put your token in TOKEN, and restart Claude Desktop.",
         "text": json.dumps(claude, indent=2)},
        {"id": "vscode", "client": "VS Code", "file": ".vscode/mcp.json",
         "how": "In the workspace's .vscode/mcp.json (or the user's MCP configuration), then start the server from the file.",
         "text": json.dumps(vscode, indent=2)},
        {"id": "cursor", "client": "Cursor", "file": "~/.cursor/mcp.json",
         "how": "In ~/.cursor/mcp.json for every project, or .cursor/mcp.json in one project.",
         "text": json.dumps(cursor, indent=2)},
        {"id": "inspector", "client": "MCP Inspector", "file": "a terminal",
         "how": "Lists the tools this server offers the token. Without --cli, the Inspector opens in the browser: choose the "
                "Streamable HTTP transport, paste the URL and give the token as a bearer token.",
         "text": inspector},
    ]


def detail_context(request: Request, record: dict[str, Any]) -> dict[str, Any]:
    """What the server's page shows besides its record (`callers.render_detail` shows it: `add_details`)."""
    services = _services(request)
    tenant = request.state.visitor.principal.tenant
    url = str(request.base_url).rstrip("/") + f"/mcp/{quote(record['id'], safe='')}"
    context: dict[str, Any] = {
        "url": url,
        "attachable": choices(services, tenant, record["tools"]),
        "attached_rows": attached_rows(services, tenant, record["tools"]),
        "configs": client_configs(url, record["id"]),
        "callers": check_choices(services, tenant, tokens=request.state.visitor.can_write),
        # A check asked for without htmx (no script): the page shows its answer in place.
        "result": getattr(request.state, "server_check", None),
    }
    return context


add_details(SERVERS, detail_context)


# -- attaching and detaching ---------------------------------------------------------------------


def _answer(request: Request, record_id: str, *, problem: str = "", text: str = "", undo: Undo | None = None,
            seen: int | None = None) -> Response:
    """After an attach or a detach: for htmx the attached tools' section alone (what the page swaps
    in), with a toast; for a plain form (no script) a redirect to the page, or the page with the problem.
    The section alone, not the page of which htmx would keep that section: the rest (the clients'
    configurations, the check's tokens and profiles, the shell) was most of an attach's answer.
    `seen`: the store's position before the request's own writes, which change no tool (the
    attachments are the server's record, read afresh): the tools' kinds and states are read from the
    catalog as of then, without reading back the events just written."""
    services = _services(request)
    tenant = request.state.visitor.principal.tenant
    record = services.records.get(tenant, SERVER, record_id)
    if request.headers.get("hx-request") != "true":
        if problem:
            return render_detail(request, SERVERS, record, problem=problem)
        return toast(request, RedirectResponse(_page(record_id), status_code=303), text, undo=undo)
    section = request.app.state.console_pages.render(
        request, "servers/_tools.html", r=record, problem_text=problem,
        attachable=choices(services, tenant, record["tools"], as_of=seen),
        attached_rows=attached_rows(services, tenant, record["tools"], as_of=seen))
    return section if problem else toast(request, section, text, undo=undo)


@router.post("/{record_id}/tools")
async def attach_tools(record_id: str, request: Request, visitor: Writer) -> Response:
    """Attaches every tool checked (`tool`, repeated); a name the catalog does not know is refused by
    name, the others attached."""
    form = await request.form()
    names = list(dict.fromkeys(str(v).strip() for v in form.getlist("tool") if str(v).strip()))
    principal = visitor.principal
    records = _services(request).records
    seen = _services(request).store.position()
    if not names:
        records.get(principal.tenant, SERVER, record_id)  # an unknown server is a 404, not a form problem
        return _answer(request, record_id, problem="Choose at least one tool to attach.")
    done: list[str] = []
    for name in names:
        try:
            records.attach(principal.tenant, record_id, name, by=principal.name)
        except errors.UnknownRecord as error:
            if error.record_id != name:
                raise
            refused = f"Not attached: {error.detail}."
            if done:
                refused += f" Attached {', '.join(done)}."
            return _answer(request, record_id, problem=refused, seen=seen)
        done.append(name)
    text = f"Attached {done[0]}." if len(done) == 1 else f"Attached {len(done)} tools: {', '.join(done)}."
    return _answer(request, record_id, text=text, seen=seen)


@router.post("/{record_id}/tools/{name}/detach")
def detach_tool(record_id: str, name: str, request: Request, visitor: Writer) -> Response:
    principal = visitor.principal
    seen = _services(request).store.position()
    try:
        _services(request).records.detach(principal.tenant, record_id, name, by=principal.name)
    except errors.UnknownRecord as error:
        if error.record_id != name:
            raise
        return _answer(request, record_id, problem=f"Not detached: {name} is not attached to {record_id} (any more).", seen=seen)
    undo = Undo(f"{_page(record_id)}/tools", label="Undo", fields={"tool": name})
    return _answer(request, record_id, text=f"Detached {name}.", undo=undo, seen=seen)


# -- the check: the server's tools as a caller sees them -----------------------------------------


@dataclass(frozen=True)
class Caller:
    """Whom the check looks as: a token (by its name; its secret is never kept) or a usage profile."""

    value: str  # token:<id> or profile:<id>
    label: str
    role: str
    usage_profile: str | None


def check_choices(services: Any, tenant: str, *, tokens: bool) -> dict[str, list[Caller]]:
    """The tokens (for admins only, as the tokens page is) and the usage profiles to check as, by name."""
    issued = [Caller(f"token:{t['id']}", f"{t['name']} ({_role_words(t['role'], t.get('usageProfile'))})", t["role"], t.get("usageProfile"))
              for t in services.tokens.tokens(tenant)] if tokens else []
    profiles = [Caller(f"profile:{p['id']}", p["id"], "caller", p["id"]) for p in services.records.list(tenant, PROFILE)]
    return {"Tokens": issued, "Usage profiles": profiles}


def _role_words(role: str, profile: str | None) -> str:
    if role == "caller":
        return f"caller with the usage profile {profile}" if profile else "caller without a usage profile"
    return {"admin": "admin", "auditor": "auditor"}.get(role, role)


def _why_missing(services: Any, tenant: str, entry: ToolEntry, permissions: Permissions, caller: Caller) -> str:
    """Why `Toolbox.offers` left out an attached tool, in words: said after the fact, never deciding it."""
    if not entry.enabled:
        return "it is disabled"
    if not entry.configured:
        return "it is not set up yet (its code is empty)"
    if not entry.expose_in_chat:
        return "it is not callable in chat"
    if not services.toolbox.kind_of(entry).available:
        return f"{kind_words(entry.call_type)}s cannot run on this service now"
    if not permissions.allow(entry):
        if caller.role == "caller" and caller.usage_profile:
            return f"the usage profile {caller.usage_profile} does not allow it"
        return {"auditor": "an auditor token is offered no tool"}.get(caller.role, "a caller without a usage profile is offered no tool")
    return "it is not offered"


def listed(services: Any, tenant: str, server_id: str, caller: Caller) -> tuple[list[ToolEntry], Permissions]:
    """Every tool MCP's tools/list answers `caller` on the server: the offer its HTTP gate takes
    (`take_offer`) paged as `list_tools` pages it (api/mcp_tools.py), every page."""
    offer = take_offer(services, Principal(caller.label, caller.role, tenant, caller.usage_profile), server_id)
    entries: list[ToolEntry] = []
    start: str | None = None
    while True:
        page, more = offer.page(start, LIST_PAGE)
        entries.extend(page)
        if not more or not page:
            return entries, offer.permissions
        start = page[-1].name


def check(services: Any, tenant: str, record: dict[str, Any], caller: Caller) -> dict[str, Any]:
    toolbox = services.toolbox
    offered, permissions = listed(services, tenant, record["id"], caller)
    offered_names = {e.name for e in offered}
    entries = {e.name: e for e in toolbox.entries(tenant) if e.shadowed_by is None}
    missing = []
    for name in record["tools"]:
        for member in toolbox.expanded(tenant, [name]):
            if member in offered_names:
                continue
            entry = entries.get(member)
            if entry is None:
                if member != name:
                    continue  # a File Search tool's own name stands for its capabilities, not a tool
                held = any(k.holds(tenant, name) for k in toolbox.kinds)
                why = "it is not published" if held else "no tool has this name now"
            else:
                why = _why_missing(services, tenant, entry, permissions, caller)
            missing.append({"name": member, "why": why})
    return {"caller": caller, "offered": [{"name": e.name, "kind": kind_words(e.call_type), "description": e.description} for e in offered],
            "missing": missing}


@router.get("/{record_id}/check")
def check_as(record_id: str, request: Request, visitor: Reader, caller: str = "") -> Response:
    """The server's tools as the chosen caller's `tools/list` would list them (a fragment for htmx)."""
    services = _services(request)
    tenant = visitor.principal.tenant
    record = services.records.get(tenant, SERVER, record_id)
    chosen = next((c for group in check_choices(services, tenant, tokens=visitor.can_write).values() for c in group if c.value == caller), None)
    if chosen is None:
        raise Refused(400, "Choose a token or a usage profile to check the server as.")
    result = check(services, tenant, record, chosen)
    if request.headers.get("hx-request") != "true":
        request.state.server_check = result
        return render_detail(request, SERVERS, record)
    return request.app.state.console_pages.render(request, "servers/_check.html", r=record, result=result)
