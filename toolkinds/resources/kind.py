"""Resources an admin publishes (docs/kinds/resources.md): a published kind (`ItemKind`), whose
published items are MCP resources (`application.resources.ResourceSource`).

A definition, in the API's camelCase:

- `description`, `title` (optional), `tags`;
- either `uri` (one resource) or `uriTemplate` (RFC 6570, level 1: `{name}` expressions only, each
  matching one or more characters a URI may hold unescaped, but `/`, `?` and `#`);
- `mimeType`, the media type a read answers;
- one of `text` (its `{{name}}` placeholders take the template's variables), `blob` (base64) or
  `module`: a published tool module called with the template's variables (and `uri`, if it declares
  that parameter), which answers
  a text, or `{"text": …}` or `{"blob": base64}` (either with an optional `mimeType`).

A caller is offered a resource as it is a tool: by its id or its tags in its usage profile, and on
a named server when the server names it. The server's own scheme, `toolsmith:`, is not an admin's.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import anyio.to_thread

from application.kinds.published import ItemKind
from application.resources import NOT_KEPT, NotKept, ResourceItem, ResourceMatch, ResourceTemplateItem, ResourceText
from domain.catalog import EVERYTHING
from domain.errors import InvalidDefinition, InvalidInput, Violation
from domain.published import Definition
from domain.rules import MAX_TAG_LENGTH, MAX_TAGS, description_violations, id_violations
from toolkinds.resources.model import LABEL, RESOURCE, PublishedResource

MAX_URI = 2_048
MAX_TEXT = 1_000_000
MAX_BLOB = 1_400_000  # base64 characters: about 1 MB
MAX_PLACEHOLDERS = 200
MAX_VARIABLES = 20
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_URI_CHARS = re.compile(r"[^\s\"<>\\^`{|}]+\Z")
_MIME = re.compile(r"[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}(;[^\r\n]{0,200})?\Z")
_EXPRESSION = re.compile(r"\{([^{}]*)\}")
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}\Z")
PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_OPENING = re.compile(r"\{\{")
# What one template variable matches: unreserved, percent-encoded and sub-delimiter characters, `:`
# and `@` (a URI's own characters but `/`, `?` and `#`): never a quote or a backslash.
_VALUE = r"[A-Za-z0-9._~%!$&'()*+,;=:@-]+"


def variables_of(template: str) -> list[str]:
    return _EXPRESSION.findall(template)


@lru_cache(maxsize=1_024)
def template_pattern(template: str) -> re.Pattern[str]:
    """The URIs a (valid) level-1 template matches, each variable a named group."""
    parts, at = [], 0
    for found in _EXPRESSION.finditer(template):
        parts.append(re.escape(template[at:found.start()]))
        parts.append(f"(?P<{found.group(1)}>{_VALUE})")
        at = found.end()
    parts.append(re.escape(template[at:]))
    return re.compile("".join(parts))


def _fill(text: str, values: Mapping[str, str]) -> str:
    return PLACEHOLDER.sub(lambda m: values.get(m.group(1), ""), text)


class ResourceKind(ItemKind[PublishedResource]):
    call_type = RESOURCE
    label = LABEL
    index_name = "resources"

    def __init__(self, deps: Any) -> None:
        super().__init__(deps)
        self._kept: dict[str, tuple[int, list[tuple[PublishedResource, Definition]]]] = {}

    # -- the definition ------------------------------------------------------------------------

    def normalise(self, given: Mapping[str, Any]) -> Definition:
        return {
            "description": given.get("description") if given.get("description") is not None else "",
            "title": given.get("title") or None,
            "tags": list(dict.fromkeys(given.get("tags") or [])),
            "uri": given.get("uri") or None,
            "uriTemplate": given.get("uriTemplate") or None,
            "mimeType": given.get("mimeType") or None,
            "text": given.get("text"),
            "blob": given.get("blob") or None,
            "module": given.get("module") or None,
        }

    def violations(self, definition: Definition) -> list[Violation]:
        found = description_violations(definition["description"]) if definition["description"] else []
        title = definition["title"]
        if title is not None and (not isinstance(title, str) or len(title) > 200):
            found.append(Violation("title", "R3", "a title is a text of at most 200 characters"))
        tags = definition["tags"]
        if len(tags) > MAX_TAGS:
            found.append(Violation("tags", "R4", f"at most {MAX_TAGS} tags, got {len(tags)}"))
        for i, tag in enumerate(tags):
            if not isinstance(tag, str) or not tag.strip() or len(tag) > MAX_TAG_LENGTH:
                found.append(Violation(f"tags[{i}]", "R9", f"a tag is 1 to {MAX_TAG_LENGTH} visible characters"))
        uri, template = definition["uri"], definition["uriTemplate"]
        names: set[str] = set()
        if (uri is None) == (template is None):
            found.append(Violation("uri", "RS1", "give either uri (one resource) or uriTemplate (RFC 6570)"))
        elif uri is not None:
            found += _uri_violations(uri, "uri")
        else:
            found += _uri_violations(_EXPRESSION.sub("x", template), "uriTemplate") if isinstance(template, str) else [
                Violation("uriTemplate", "RS1", "a text")]
            if isinstance(template, str):
                names = self._template_violations(template, found)
        media = definition["mimeType"]
        if not isinstance(media, str) or not _MIME.match(media):
            found.append(Violation("mimeType", "RS2", "a media type (type/subtype), such as text/plain"))
        given = [k for k in ("text", "blob", "module") if definition[k] is not None]
        if len(given) != 1:
            found.append(Violation("text", "RS3", "give one of text, blob (base64) or module (a published module that renders it)"))
        text, blob, module = definition["text"], definition["blob"], definition["module"]
        if text is not None:
            if not isinstance(text, str) or len(text) > MAX_TEXT:
                found.append(Violation("text", "RS3", f"a text of at most {MAX_TEXT:,} characters"))
            elif len(_OPENING.findall(text)) > MAX_PLACEHOLDERS:
                found.append(Violation("text", "RS4", f"at most {MAX_PLACEHOLDERS} placeholders"))
            else:
                for name in dict.fromkeys(PLACEHOLDER.findall(text)):
                    if name not in names:
                        found.append(Violation("text", "RS4", f"{{{{{name}}}}} names no variable of the uriTemplate"))
        if blob is not None and not _is_base64(blob):
            found.append(Violation("blob", "RS3", f"base64 of at most {MAX_BLOB:,} characters"))
        if module is not None:
            found += id_violations(module, "module")
        return found

    @staticmethod
    def _template_violations(template: str, found: list[Violation]) -> set[str]:
        if template.count("{") != template.count("}") or _EXPRESSION.sub("", template).count("{"):
            found.append(Violation("uriTemplate", "RS1", "every { is closed by a } (no nesting)"))
            return set()
        names = variables_of(template)
        if not names:
            found.append(Violation("uriTemplate", "RS1", "a template has at least one {variable} (else give uri)"))
        if len(names) > MAX_VARIABLES:
            found.append(Violation("uriTemplate", "RS1", f"at most {MAX_VARIABLES} variables"))
        for name in names:
            if not _VARIABLE.match(name):
                found.append(Violation("uriTemplate", "RS1", f"{{{name}}}: level 1 only, a variable is a name (no operator, "
                                                             "no modifier, no list)"))
        if len(set(names)) != len(names):
            found.append(Violation("uriTemplate", "RS1", "a variable is named once"))
        if re.search(r"\}\{", template):
            found.append(Violation("uriTemplate", "RS1", "two variables side by side cannot be told apart: put a character between"))
        return set(names)

    def check_publish(self, tenant: str, definition: Definition) -> None:
        """The module it names is a published tool module. (Two published resources of one URI: the
        first by id answers; two templates that match one URI: the first by id too.)"""
        module = definition["module"]
        if module is not None:
            record = self.deps.store.find(tenant, module)
            if record is None or record.deleted or not record.published or record.published.get("tool") is None:
                raise InvalidDefinition([Violation("module", "RS5", f"{module!r} is not a published tool module")])

    def users_of(self, tenant: str, name: str) -> list[str]:
        """R12: the resources whose draft or published version is rendered by the module `name` (its
        delete is refused while one is, as a prompt's module's is)."""
        return [item.item_id for item in self.items(tenant)
                if any(d is not None and d["module"] == name for d in (item.draft, item.published))]

    # -- MCP resources (`application.resources.ResourceSource`) --------------------------------

    def resource_stamp(self, tenant: str) -> Any:
        return tuple((item.item_id, item.published_version) for item in self.items(tenant))

    def _published(self, tenant: str) -> list[tuple[PublishedResource, Definition]]:
        """The tenant's published resources, kept while the store has not moved (a read asks twice:
        which resource a URI is, then its content)."""
        position = self.deps.store.position()
        kept = self._kept.get(tenant)
        if kept is not None and kept[0] == position:
            return kept[1]
        found = [(item, item.published) for item in self.items(tenant) if item.published is not None]
        if len(self._kept) >= 1_024:
            self._kept.pop(next(iter(self._kept)), None)
        self._kept[tenant] = (position, found)
        return found

    @staticmethod
    def _item(item: PublishedResource, definition: Definition, uri: str) -> ResourceItem:
        at = item.published_at.isoformat() if item.published_at is not None else None
        return ResourceItem(uri=uri, name=item.item_id, title=definition["title"], description=definition["description"] or None,
                            mime_type=definition["mimeType"], updated_at=at, stamp=item.published_version, shown_by=(),
                            key=item.item_id, tags=tuple(definition["tags"]))

    def resource_items(self, tenant: str) -> list[ResourceItem]:
        return [self._item(item, d, d["uri"]) for item, d in self._published(tenant) if d["uri"] is not None]

    def _match(self, tenant: str, uri: str) -> tuple[PublishedResource, Definition, dict[str, str]] | None:
        return self._match_in(self._published(tenant), uri)

    @staticmethod
    def _match_in(published: list[tuple[PublishedResource, Definition]], uri: str) -> tuple[PublishedResource, Definition, dict[str, str]] | None:
        for item, definition in published:
            if definition["uri"] == uri:
                return item, definition, {}
        for item, definition in published:
            template = definition["uriTemplate"]
            if template is not None:
                found = template_pattern(template).fullmatch(uri)
                if found is not None:
                    return item, definition, found.groupdict()
        return None

    def resource_item(self, tenant: str, uri: str) -> ResourceItem | None:
        found = self._match(tenant, uri)
        return self._item(found[0], found[1], uri) if found is not None else None

    def resource_text(self, tenant: str, uri: str, limit: int, context: Any = None, tools: Any = None) -> ResourceText | None:
        found = self._match(tenant, uri)
        if found is None:
            return None
        return self.read(tenant, found[1], uri, found[2], context, tools, limit)

    def resource_match_as_read(self, tenant: str, uri: str) -> ResourceMatch | None | NotKept:
        """`resource_item` from what `_published` keeps, when it is at the store's position (a
        store that owns its writes knows that position without a read); else `NOT_KEPT`."""
        store = self.deps.store
        kept = self._kept.get(tenant)
        if kept is None or not store.owns_its_writes or kept[0] != store.position():
            return NOT_KEPT
        found = self._match_in(kept[1], uri)
        if found is None:
            return None
        item, definition, values = found
        return ResourceMatch(self._item(item, definition, uri), (definition, values))

    async def aresource_text(self, tenant: str, match: ResourceMatch, limit: int, context: Any, tools: Any) -> ResourceText:
        """`resource_text` of a match, its module's call awaited (`Toolbox.acall`: on the loop when
        the tenant's catalog is in memory, else in a worker thread)."""
        definition, values = match.detail
        uri = match.item.uri
        module = definition["module"]
        if module is None:
            return self.read(tenant, definition, uri, values, context, tools, limit)
        # `entry_as_read`: the catalog as the caller's offer brought it up (at the store's position).
        arguments = self._module_arguments(tools.entry_as_read(tenant, module), values, uri)
        result = await tools.acall(tenant, module, arguments, permissions=EVERYTHING, context=context)
        return self._rendered(module, definition, uri, result, limit)

    def resource_templates(self, tenant: str) -> list[ResourceTemplateItem]:
        return [ResourceTemplateItem(uri_template=d["uriTemplate"], name=item.item_id, title=d["title"],
                                     description=d["description"] or None, mime_type=d["mimeType"], key=item.item_id,
                                     tags=tuple(d["tags"]))
                for item, d in self._published(tenant) if d["uriTemplate"] is not None]

    # -- reading -------------------------------------------------------------------------------

    def read(self, tenant: str, definition: Definition, uri: str, values: Mapping[str, str], context: Any, tools: Any,
             limit: int = MAX_TEXT) -> ResourceText:
        """What a read of `uri` answers (its `values`: the template's variables). Raises ValueError
        with why when the module fails or answers what is not a resource's content."""
        media = definition["mimeType"]
        if definition["text"] is not None:
            text = _fill(definition["text"], values)
            return ResourceText(uri=uri, mime_type=media, text=text[:limit], offset=0, total=len(text), next_uri=None)
        if definition["blob"] is not None:
            return ResourceText(uri=uri, mime_type=media, text="", offset=0, total=len(definition["blob"]), next_uri=None,
                                blob=definition["blob"])
        module = definition["module"]
        # The resource runs its own module, whoever may read the resource; `uri` is given to a module
        # that declares it (a tool's arguments are closed: one it does not declare would be refused).
        result = tools.call(tenant, module, self._module_arguments(tools.entry(tenant, module), values, uri),
                            permissions=EVERYTHING, context=context)
        return self._rendered(module, definition, uri, result, limit)

    @staticmethod
    def _module_arguments(entry: Any, values: Mapping[str, str], uri: str) -> dict[str, str]:
        declared = ((entry.input_schema or {}).get("properties") or {}) if entry is not None else {}
        return {**values, **({"uri": uri} if "uri" in declared else {})}

    @staticmethod
    def _rendered(module: str, definition: Definition, uri: str, result: Any, limit: int) -> ResourceText:
        """What the module's call `result` makes of the read (ValueError with why it is not a resource's content)."""
        media = definition["mimeType"]
        if result.error is not None:
            raise ValueError(f"the resource's module {module!r} failed: {result.error.message}")
        output = result.output
        if isinstance(output, str):
            output = {"text": output}
        if not isinstance(output, Mapping) or ("text" in output) == ("blob" in output):
            raise ValueError(f"the resource's module {module!r} answers a text, {{text}} or {{blob}} (base64)")
        media = output.get("mimeType") or media
        if not isinstance(media, str) or not _MIME.match(media):
            raise ValueError(f"the resource's module {module!r} answered a mimeType that is not a media type")
        if "blob" in output:
            if not _is_base64(output["blob"]):
                raise ValueError(f"the resource's module {module!r} answered a blob that is not base64 of at most {MAX_BLOB:,} characters")
            return ResourceText(uri=uri, mime_type=media, text="", offset=0, total=len(output["blob"]), next_uri=None,
                                blob=output["blob"])
        text = output["text"]
        if not isinstance(text, str) or len(text) > MAX_TEXT:
            raise ValueError(f"the resource's module {module!r} answered a text that is not one of at most {MAX_TEXT:,} characters")
        return ResourceText(uri=uri, mime_type=media, text=text[:limit], offset=0, total=len(text), next_uri=None)

    async def test(self, tenant: str, name: str, arguments: Mapping[str, Any] | None, context: Any, tools: Any, *,
                   draft: bool = True) -> dict[str, Any]:
        """The console's and REST's test: `arguments` is `{"uri": …}` (none: the resource's own URI)."""
        uri = (arguments or {}).get("uri")
        if uri is not None and not isinstance(uri, str):
            raise InvalidInput([Violation("uri", "RS7", "a URI, as a text")])
        return await anyio.to_thread.run_sync(lambda: self.read_test(tenant, name, uri, context, tools, draft=draft))

    def read_test(self, tenant: str, name: str, uri: str | None, context: Any, tools: Any, *, draft: bool = True) -> dict[str, Any]:
        """The resource's draft (or published version) read at `uri` as `resources/read` would (blocking)."""
        item = self.get(tenant, name)
        definition = item.current if draft else item.published
        if definition is None:
            raise InvalidInput([Violation("draft", "RS7", "the resource is not published")])
        given = uri or definition["uri"]
        values: dict[str, str] = {}
        if definition["uriTemplate"] is not None:
            found = template_pattern(definition["uriTemplate"]).fullmatch(given or "")
            if found is None:
                raise InvalidInput([Violation("uri", "RS7", f"give a URI the template {definition['uriTemplate']!r} matches")])
            values = found.groupdict()
        elif given != definition["uri"]:
            raise InvalidInput([Violation("uri", "RS7", f"the resource's URI is {definition['uri']!r}")])
        try:
            page = self.read(tenant, definition, given, values, context, tools)
        except ValueError as error:
            raise InvalidInput([Violation("module", "RS5", str(error))]) from None
        content: dict[str, Any] = {"uri": given, "mimeType": page.mime_type}
        content.update({"blob": page.blob} if page.blob is not None else {"text": page.text})
        return {"contents": [content]}


def _is_base64(value: Any) -> bool:
    if not isinstance(value, str) or len(value) > MAX_BLOB:
        return False
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _uri_violations(uri: Any, field: str) -> list[Violation]:
    if not isinstance(uri, str) or not uri or len(uri) > MAX_URI:
        return [Violation(field, "RS1", f"a URI of 1 to {MAX_URI:,} characters")]
    scheme = _SCHEME.match(uri)
    if scheme is None or not _URI_CHARS.match(uri):
        return [Violation(field, "RS1", "a URI: a scheme (such as https: or a name of yours) then no spaces, quotes or braces")]
    if scheme.group(0).lower() == "toolsmith:":
        return [Violation(field, "RS1", "toolsmith: is this server's own scheme (its File Search documents): choose another")]
    return []
