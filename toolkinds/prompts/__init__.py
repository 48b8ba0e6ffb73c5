"""Prompts (docs/kinds/prompts.md): a published kind, served as MCP prompts."""
