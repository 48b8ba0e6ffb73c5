"""The one way out (docs/kinds/api-url-tools.md, "One egress path"): every outbound request of the product goes
through this package, and `tests/unit/test_egress_only.py` fails when another module opens one.

- `policy`: what may be reached (the allow-list and the blocked address ranges of `http.fetch`, the
  declared origin of an external MCP tool, the public `https` hosts and `TOOLSMITH_EGRESS_ALLOW`
  entries of an API URL tool).
- `resolve`: a name resolved once, within the request's time, every answer judged.
- `connect`: sockets to those judged addresses only, pinned for the exchange (no second DNS lookup,
  so no rebinding window), each step bounded by one deadline.
- `exchange`: a synchronous request with its redirects, each hop checked again, no proxies, caps on
  bytes and time (`http.fetch`, API URL tools).
- `transport`: the same for the MCP SDK's asynchronous `httpx2` client, to one declared origin.
- `mcp_client`: the MCP SDK's client over that transport (external MCP tools).

Submodules are imported where used: a sandbox worker needs no `httpx2`, and the API no `httpcore`
until something fetches.
"""
