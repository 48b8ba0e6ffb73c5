"""The standing adversarial suite of issue 12: the outside probe's families, held as tests.

- `test_hostile_js`: hostile JavaScript through a real server (the host function called directly,
  prototype pollution before Intl and http.fetch, getters and Symbol.toPrimitive on options,
  Proxies, deep and huge values both ways, lone surrogates and NUL; over REST and MCP), the
  worker's memory bound and environment, the `minimal` profile;
- `test_ssrf`: address forms and redirects through `http.fetch`, against a recording listener;
- `test_fetch_egress`: every named SSRF case (tests/ssrf_cases.py) through a published module's
  `http.fetch`; `test_dns_rebinding`: names resolving to loopback, metadata and private addresses,
  and rebinding names, by a test DNS server (`TOOLSMITH_EGRESS_NAMESERVER`), for `http.fetch` and
  API URL tools; `test_tls_upstreams`: https upstreams with a throwaway CA, bad certificates,
  downgrades and redirects to loopback; `test_mcp_tool_egress`: external MCP tools pointed at
  metadata, rebinding, redirecting, and quoting their secret header back;
- `test_auth_matrix`: every route of the OpenAPI document with every principal (docs/security.md);
- `test_bodies`: malformed and extreme bodies on every route that takes one, keep-alive kept;
- `test_kill9`: `kill -9` during a burst of writes (SQLite, PostgreSQL) and during a publish with
  24 importers (SQLite, PostgreSQL, OpenSearch), then `audit verify` and consistency checks;
- `test_schemathesis`: the whole OpenAPI document with surrogates, NUL and deep JSON.

Each module shares one `toolsmith serve` (conftest.py's `Probe`), given secrets that must never
appear in an answer, a log line or the event store's export; the whole suite takes about 4 minutes
on two cores.
"""
