"""MCP content in a code module's result (docs/javascript.md, "Rich results").

A module's plain return value stays its result. The sandbox's helpers (`ai.content.text`,
`.image`, `.audio`, `.resource`, `.link`, and `ai.result`) make values marked with the key `$mcp`;
a result that is one such item, an array of them, or an `ai.result(content, structured)` is MCP
content. `content_of` reads it back into MCP's wire shapes, checking each item (the helpers
check too, but a module can build the same objects by hand) and the size of what it carries.
"""

from __future__ import annotations

import re
from typing import Any

MARK = "$mcp"
RESULT = "result"
# What one result's content may carry in all (base64 data and text), in characters: about 4.5 MiB of
# binary, within the sandbox's cap on a whole result's JSON (8 MiB characters, sandbox.engine).
MAX_CONTENT_CHARS = 6 * 1024 * 1024
MAX_ITEMS = 256

_MIME = re.compile(r"[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}(;.{0,200})?\Z", re.S)
_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}\Z")
_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:\S{1,2048}\Z", re.S)
_LINK_FIELDS = ("name", "title", "description", "mimeType")


class ContentError(ValueError):
    """A result's content that MCP cannot carry, with why (a `result` error of the call)."""


def is_content(output: Any) -> bool:
    """Whether a module's result is MCP content rather than a plain value (cheap: no walk)."""
    if isinstance(output, dict):
        return MARK in output
    if isinstance(output, list) and output:
        first = output[0]
        return isinstance(first, dict) and MARK in first and first[MARK] != RESULT
    return False


def content_of(output: Any) -> tuple[list[dict[str, Any]], Any]:
    """The MCP content items and the structured value (None when there is none) of a result that
    `is_content`; `ContentError` when an item is not one MCP can carry."""
    structured = None
    if isinstance(output, dict) and output.get(MARK) == RESULT:
        items = output.get("content")
        structured = output.get("structuredContent")
        if not isinstance(items, list):
            raise ContentError("ai.result(content, structured): content must be an array of content items")
        if structured is not None and not isinstance(structured, dict):
            raise ContentError("ai.result(content, structured): structured must be an object (MCP's structuredContent)")
    elif isinstance(output, dict):
        items = [output]
    else:
        items = output
    if len(items) > MAX_ITEMS:
        raise ContentError(f"a result holds at most {MAX_ITEMS} content items, not {len(items)}")
    budget = [MAX_CONTENT_CHARS]
    return [_sorted(_item(item, i, budget)) for i, item in enumerate(items)], structured


def _sorted(item: dict[str, Any]) -> dict[str, Any]:
    """An item with its keys (and its resource's) in order, as the MCP SDK writes them: the direct
    answer (api/mcp_direct.py) is then the same bytes as the SDK's."""
    if "resource" in item:
        item["resource"] = dict(sorted(item["resource"].items()))
    return dict(sorted(item.items()))


def _item(item: Any, i: int, budget: list[int]) -> dict[str, Any]:
    at = f"content[{i}]"
    if not isinstance(item, dict) or not isinstance(item.get(MARK), str):
        raise ContentError(f"{at} is not a content item: mix ai.content items only (or return a plain value)")
    kind = item[MARK]
    if kind == "text":
        return {"type": "text", "text": _text(item.get("text"), f"{at}.text", budget)}
    if kind in ("image", "audio"):
        mime = _mime(item.get("mimeType"), f"{at}.mimeType")
        if not mime.startswith(f"{kind}/"):
            raise ContentError(f"{at}.mimeType: an {kind}'s media type is {kind}/…, not {mime!r}")
        return {"type": kind, "data": _data(item.get("data"), f"{at}.data", budget), "mimeType": mime}
    if kind == "resource":
        uri = _uri(item.get("uri"), f"{at}.uri")
        resource: dict[str, Any] = {"uri": uri}
        if item.get("mimeType") is not None:
            resource["mimeType"] = _mime(item["mimeType"], f"{at}.mimeType")
        has_text, has_blob = item.get("text") is not None, item.get("blob") is not None
        if has_text == has_blob:
            raise ContentError(f"{at}: an embedded resource has exactly one of text or blob (base64)")
        if has_text:
            resource["text"] = _text(item["text"], f"{at}.text", budget)
        else:
            resource["blob"] = _data(item["blob"], f"{at}.blob", budget)
        return {"type": "resource", "resource": resource}
    if kind == "link":
        link: dict[str, Any] = {"type": "resource_link", "uri": _uri(item.get("uri"), f"{at}.uri")}
        name = item.get("name")
        if not isinstance(name, str) or not name.strip() or len(name) > 512:
            raise ContentError(f"{at}.name: a resource link needs a name of 1 to 512 characters")
        for key in _LINK_FIELDS:
            value = item.get(key)
            if value is None:
                continue
            if key == "mimeType":
                link[key] = _mime(value, f"{at}.mimeType")
            elif not isinstance(value, str) or len(value) > 2000:
                raise ContentError(f"{at}.{key} must be a string of at most 2,000 characters")
            else:
                link[key] = value
        return link
    raise ContentError(f"{at}: {kind!r} is not a kind of content (text, image, audio, resource, link)")


def _spend(size: int, where: str, budget: list[int]) -> None:
    budget[0] -= size
    if budget[0] < 0:
        raise ContentError(f"{where}: the result's content is over {MAX_CONTENT_CHARS:,} characters in all "
                           f"(about {MAX_CONTENT_CHARS * 3 / 4 / (1024 * 1024):.1f} MiB of base64 data)")


def _text(value: Any, where: str, budget: list[int]) -> str:
    if not isinstance(value, str):
        raise ContentError(f"{where} must be a string")
    _spend(len(value), where, budget)
    return value


def _data(value: Any, where: str, budget: list[int]) -> str:
    if not isinstance(value, str) or not value:
        raise ContentError(f"{where} must be base64 data (a non-empty string)")
    _spend(len(value), where, budget)
    if len(value) % 4 or not _BASE64.match(value):
        raise ContentError(f"{where} is not base64 (A–Z, a–z, 0–9, +, /, padded with = to a multiple of 4)")
    return value


def _mime(value: Any, where: str) -> str:
    if not isinstance(value, str) or not _MIME.match(value):
        raise ContentError(f"{where} must be a media type such as image/png")
    return value


def _uri(value: Any, where: str) -> str:
    if not isinstance(value, str) or not _URI.match(value):
        raise ContentError(f"{where} must be an absolute URI (scheme:…) of at most 2,048 characters")
    return value
