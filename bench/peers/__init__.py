"""The peers `bench.request_path` measures Toolsmith against: servers doing the same small work with
nothing of Toolsmith in them (`floor`: bare FastAPI routes; `fastmcp_peer`: a FastMCP server).
`fastmcp_peer` runs in its own virtualenv, `.venv-peers` (bench/peers/requirements.txt), so the
product's `.venv` keeps exactly the product's dependencies."""
