"""Where the REST API lives: its version prefix, written once here and used by every router, path
rule and link (docs/rest-api.md). A new version of the API is a new constant, not a search."""

from __future__ import annotations

# Every REST route is under this prefix; the console (/console) and MCP (/mcp) are not.
API_V1 = "/api/v1"
# What a tenant's admins and auditors reach; what the operator reaches (docs/tenants.md).
ADMIN_API = f"{API_V1}/admin"
OPERATOR_API = f"{API_V1}/operator"
