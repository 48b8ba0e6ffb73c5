"""Only the egress module opens outbound connections (issue 13, docs/kinds/api-url-tools.md "One egress path").

An AST walk over the product packages finds every use of a primitive that connects out (sockets,
resolvers, HTTP clients and transports, the MCP SDK's client transports, database and search
clients) and every import of a library that exists to connect out. Any found outside
`infrastructure/egress/` fails the test, except the few connections to the service's own engines
listed in `OWN_ENGINES`, each with its reason. A deferred import or an aliased name counts the same.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.unit.test_layers import ROOT, product_modules

EGRESS = "infrastructure.egress"

# Libraries whose only purpose is to talk to the network: importing one is already a finding.
CONNECTING_MODULES = frozenset({
    "requests", "aiohttp", "urllib3", "urllib.request", "http.client", "httpcore", "httpcore2", "pycurl",
    "websocket", "websockets", "socks", "smtplib", "ftplib", "poplib", "imaplib", "telnetlib", "xmlrpc.client",
    "paramiko", "grpc", "dns.resolver", "dns.query", "dns.asyncresolver", "dns.asyncquery",
})  # fmt: skip

# Names that open a connection (or build the client or transport that will), wherever used.
_HTTP_CLIENTS = ("Client", "AsyncClient", "HTTPTransport", "AsyncHTTPTransport",
                 "get", "post", "put", "patch", "delete", "head", "options", "request", "stream")
CONNECTING_NAMES = frozenset({
    *(f"{library}.{name}" for library in ("httpx", "httpx2") for name in _HTTP_CLIENTS),
    "mcp.client.streamable_http.streamable_http_client", "mcp.client.streamable_http.streamablehttp_client",
    "mcp.client.sse.sse_client", "mcp.client.websocket.websocket_client",
    "mcp.shared._httpx_utils.create_mcp_http_client",
    # The SDK's high-level client opens its own HTTP client when given a URL.
    "mcp.Client", "mcp.client.Client", "mcp.client.client.Client",
    "asyncio.open_connection", "anyio.connect_tcp", "trio.open_tcp_stream",
    "opensearchpy.OpenSearch", "opensearchpy.AsyncOpenSearch",
    "psycopg.connect", "psycopg.Connection.connect", "psycopg.AsyncConnection.connect",
    "psycopg_pool.ConnectionPool", "psycopg_pool.AsyncConnectionPool",
    "socket.create_connection", "socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyname_ex",
})  # fmt: skip
# Methods that connect whatever they are called on (an event loop's).
CONNECTING_METHODS = frozenset({"create_connection", "sock_connect", "open_connection"})

# The connections to the service's own engines, configured by the operator and not reachable by a
# tool, its arguments or a remote server: (module, primitive) -> why it is not egress.
OWN_ENGINES: dict[tuple[str, str], str] = {
    # The read model's OpenSearch (OPENSEARCH_URL), built once in the composition root.
    ("entrypoints.compose", "opensearchpy.OpenSearch"): "the read model's own search engine",
    # The event store's PostgreSQL (POSTGRES_*): the graph lock holds an advisory lock on its own pool.
    # (The event store's connections themselves are made inside eventsourcing, not in this tree.)
    ("infrastructure.locks", "psycopg_pool.ConnectionPool"): "the event store's own database",
    # Its LISTEN/NOTIFY: the projections runner hears the writes, the API the runner's positions.
    ("infrastructure.notifications", "psycopg.connect"): "the event store's own database",
    # The sandbox service the API is configured to run code on (CODESANDBOX_URL, shared secret).
    ("sandbox.remote", "httpx.Client"): "the service's own sandbox service",
    # The external OAuth authorization server of MCP (TOOLSMITH_OAUTH_ISSUER): its metadata and JWKS.
    ("api.oauth.resource", "httpx.Client"): "the MCP endpoint's external authorization server, named by the operator",
    # The console's OpenID provider (TOOLSMITH_SSO_ISSUER): its discovery document and keys (the code
    # exchange is Authlib's AsyncOAuth2Client, an httpx client of its own, to the same provider).
    ("infrastructure.oidc", "httpx.AsyncClient"): "the console's single sign-on provider, named by the operator",
    # `toolsmith examples load` (docs/examples.md): an admin's command, run outside the service, that
    # loads the gallery through the REST API of the Toolsmith it is told (--url, TOOLSMITH_URL).
    ("entrypoints.examples_cli", "httpx.Client"): "the Toolsmith service the operator names, through its own REST API",
}


def _aliases(tree: ast.AST) -> dict[str, str]:
    """Each local name an import binds, anywhere in the module, to the dotted name it stands for."""
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:
                    head = alias.name.split(".")[0]
                    bound[head] = head
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return bound


def _dotted(node: ast.AST, bound: dict[str, str]) -> str | None:
    if isinstance(node, ast.Name):
        return bound.get(node.id)
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value, bound)
        return f"{base}.{node.attr}" if base else None
    return None


def _imported(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level or not node.module:
        return []
    return [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]


def _annotations(tree: ast.AST) -> set[int]:
    """The ids of every node inside a type annotation: a type named is no connection made."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        roots: list[ast.AST | None] = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            roots = [node.returns] + [a.annotation for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg) if a]
        elif isinstance(node, ast.AnnAssign):
            roots = [node.annotation]
        for root in roots:
            if root is not None:
                inside.update(id(child) for child in ast.walk(root))
    return inside


def connections_in(path: Path) -> list[tuple[int, str]]:
    """(line, primitive) for each outbound-connection primitive `path` uses."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    bound, skip = _aliases(tree), _annotations(tree)
    found: set[tuple[int, str]] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for name in _imported(node):
                if any(name == m or name.startswith(m + ".") for m in CONNECTING_MODULES):
                    found.add((node.lineno, f"import {name}"))
        elif isinstance(node, ast.Call):
            name = _dotted(node.func, bound)
            # A socket made from an inherited descriptor (`fileno=`) or a socketpair is IPC, not egress.
            if name == "socket.socket" and not any(k.arg == "fileno" for k in node.keywords):
                found.add((node.lineno, name))
            elif isinstance(node.func, ast.Attribute) and node.func.attr in CONNECTING_METHODS and name not in CONNECTING_NAMES:
                found.add((node.lineno, f".{node.func.attr}()"))
        elif isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load):
            name = _dotted(node, bound)
            if name in CONNECTING_NAMES:
                found.add((node.lineno, name))
    return sorted(found)


def outbound_outside_egress(root: Path = ROOT) -> tuple[list[str], set[tuple[str, str]]]:
    """The findings outside the egress module that `OWN_ENGINES` does not excuse, and the
    `OWN_ENGINES` entries that were used."""
    wrong, used = [], set()
    for module, path in product_modules(root).items():
        if module == EGRESS or module.startswith(EGRESS + "."):
            continue
        for line, primitive in connections_in(path):
            if (module, primitive) in OWN_ENGINES:
                used.add((module, primitive))
            else:
                wrong.append(f"{path.relative_to(root)}:{line}: {primitive}")
    return wrong, used


def test_no_module_but_egress_opens_an_outbound_connection() -> None:
    wrong, _ = outbound_outside_egress()
    assert wrong == [], "outbound connections go through infrastructure/egress (docs/kinds/api-url-tools.md):\n" + "\n".join(wrong)


def test_every_own_engine_exception_is_still_needed() -> None:
    # A stale entry would silently excuse the next connection made with that primitive there.
    _, used = outbound_outside_egress()
    assert set(OWN_ENGINES) - used == set()


def test_the_egress_module_is_where_connections_are_made() -> None:
    # The walk sees the egress module's own connections (it is skipped, not blind).
    found = {primitive for path in (ROOT / "infrastructure" / "egress").glob("*.py") for _, primitive in connections_in(path)}
    assert {"import httpcore", "import httpcore2", "socket.getaddrinfo", "httpx2.AsyncClient", "mcp.Client",
            "mcp.client.streamable_http.streamable_http_client", "import dns.resolver"} <= found


def test_the_walk_finds_each_kind_of_connection_in_a_scratch_tree(tmp_path: Path) -> None:
    (tmp_path / "sandbox").mkdir()
    (tmp_path / "infrastructure" / "egress").mkdir(parents=True)
    (tmp_path / "sandbox" / "leaky.py").write_text(
        "import socket\n"
        "import httpx\n"
        "import httpx2 as h\n"
        "from urllib.request import urlopen\n"
        "def f(loop):\n"
        "    from mcp.client.streamable_http import streamable_http_client as open_mcp\n"
        "    httpx.get('http://example.com')\n"
        "    h.AsyncClient()\n"
        "    open_mcp('http://example.com/mcp')\n"
        "    socket.create_connection(('example.com', 80))\n"
        "    s = socket.socket()\n"
        "    loop.create_connection(None, 'example.com', 80)\n"
        "    factory = httpx.Client\n"
    )
    (tmp_path / "sandbox" / "clean.py").write_text(
        "import socket\n"
        "import httpx2\n"
        "from urllib.parse import urlsplit\n"
        "def f(sock: socket.socket, fd: int) -> httpx2.Response:\n"
        "    a, b = socket.socketpair()\n"
        "    c = socket.socket(fileno=fd)\n"
        "    try:\n"
        "        pass\n"
        "    except httpx2.TimeoutException:\n"
        "        pass\n"
    )
    (tmp_path / "infrastructure" / "egress" / "exchange.py").write_text("import httpx\nhttpx.get('http://example.com')\n")
    wrong, used = outbound_outside_egress(tmp_path)
    assert used == set()
    assert sorted(wrong) == sorted([
        "sandbox/leaky.py:4: import urllib.request",
        "sandbox/leaky.py:4: import urllib.request.urlopen",
        "sandbox/leaky.py:7: httpx.get",
        "sandbox/leaky.py:8: httpx2.AsyncClient",
        "sandbox/leaky.py:9: mcp.client.streamable_http.streamable_http_client",
        "sandbox/leaky.py:10: socket.create_connection",
        "sandbox/leaky.py:11: socket.socket",
        "sandbox/leaky.py:12: .create_connection()",
        "sandbox/leaky.py:13: httpx.Client",
    ])
