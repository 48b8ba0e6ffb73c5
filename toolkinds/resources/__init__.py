"""Resources an admin publishes (docs/kinds/resources.md): a published kind, served as MCP resources."""
