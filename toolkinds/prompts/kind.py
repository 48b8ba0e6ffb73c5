"""Prompts as a published kind (docs/kinds/prompts.md): the rules of a prompt's definition, its
rendering (`{{argument}}` placeholders, or a published code module) and its completions.

A definition, in the API's camelCase:

- `description`, `title` (optional), `tags`;
- `arguments`: each `{name, description, required, completion}`, where `completion` is
  `{"values": [...]}` (offered by prefix) or `{"module": id}` (a published tool module called
  with `{argument, value, context}` (the other arguments) that answers a list of strings), or None;
- either `messages` (each `{role: "user"|"assistant", content}`, the content MCP's text, image or
  embedded resource, its text and a resource's `uri` and `text` holding `{{argument}}`
  placeholders), or `module`: a published tool module called with the arguments, which answers a
  text, a list of messages, or `{messages: [...]}`.

A placeholder names an argument (else the save is refused, naming the field); a prompt holds at
most `MAX_PLACEHOLDERS` of them, so that rendering stays small whatever a template says.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from application.context import CallContext
from application.kinds.prompting import Listed, OffersPrompts
from application.kinds.published import ItemKind
from domain.catalog import EVERYTHING
from domain.errors import InvalidDefinition, InvalidInput, ToolNotCallable, Violation
from domain.published import Definition
from domain.rules import MAX_TAG_LENGTH, MAX_TAGS, description_violations, id_violations
from toolkinds.prompts.model import LABEL, PROMPT, Prompt

ROLES = ("user", "assistant")
CONTENT_TYPES = ("text", "image", "audio", "resource")
MAX_ARGUMENTS = 50
MAX_MESSAGES = 100
MAX_TEXT = 100_000
MAX_PLACEHOLDERS = 200
MAX_VALUES = 1_000
MAX_COMPLETIONS = 100  # what MCP's completion/complete answers at most
MAX_BINARY = 1_000_000  # base64 characters of an image, audio or blob in a template
# `{{ name }}`: an argument's name (an identifier), spaces allowed inside the braces.
PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_OPENING = re.compile(r"\{\{")
_ARGUMENT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}\Z")


def _texts(content: Mapping[str, Any], field: str) -> Iterable[tuple[str, str]]:
    """The texts of one content item that may hold placeholders, each with its field."""
    if content.get("type") == "text":
        yield f"{field}.text", content.get("text")
    elif content.get("type") == "resource" and isinstance(content.get("resource"), Mapping):
        resource = content["resource"]
        yield f"{field}.resource.uri", resource.get("uri")
        if "text" in resource:
            yield f"{field}.resource.text", resource.get("text")


def _fill(text: str, values: Mapping[str, str]) -> str:
    return PLACEHOLDER.sub(lambda m: values.get(m.group(1), ""), text)


class PromptKind(ItemKind[Prompt], OffersPrompts):
    call_type = PROMPT
    label = LABEL
    index_name = "prompts"

    # -- the definition ------------------------------------------------------------------------

    def normalise(self, given: Mapping[str, Any]) -> Definition:
        arguments = given.get("arguments") or []
        return {
            "description": given.get("description") if given.get("description") is not None else "",
            "title": given.get("title") or None,
            "tags": list(dict.fromkeys(given.get("tags") or [])),
            "arguments": [
                {"name": a.get("name"), "description": a.get("description") or "", "required": bool(a.get("required", False)),
                 "completion": a.get("completion") or None} if isinstance(a, Mapping) else a
                for a in arguments
            ] if isinstance(arguments, list) else arguments,
            "messages": given.get("messages") or None,
            "module": given.get("module") or None,
        }

    def violations(self, definition: Definition) -> list[Violation]:
        found = description_violations(definition["description"])
        title = definition["title"]
        if title is not None and (not isinstance(title, str) or len(title) > 200):
            found.append(Violation("title", "R3", "a title is a text of at most 200 characters"))
        tags = definition["tags"]
        if len(tags) > MAX_TAGS:
            found.append(Violation("tags", "R4", f"at most {MAX_TAGS} tags, got {len(tags)}"))
        for i, tag in enumerate(tags):
            if not isinstance(tag, str) or not tag.strip() or len(tag) > MAX_TAG_LENGTH:
                found.append(Violation(f"tags[{i}]", "R9", f"a tag is 1 to {MAX_TAG_LENGTH} visible characters"))
        names = self._argument_violations(definition["arguments"], found)
        messages, module = definition["messages"], definition["module"]
        if (messages is None) == (module is None):
            found.append(Violation("messages", "P1", "give either messages (a template) or module (a published module that renders them)"))
        if module is not None:
            found += id_violations(module, "module")
        if messages is not None:
            self._message_violations(messages, names, found)
        return found

    def _argument_violations(self, arguments: Any, found: list[Violation]) -> set[str]:
        names: set[str] = set()
        if not isinstance(arguments, list):
            found.append(Violation("arguments", "P2", "a list of arguments"))
            return names
        if len(arguments) > MAX_ARGUMENTS:
            found.append(Violation("arguments", "P2", f"at most {MAX_ARGUMENTS} arguments, got {len(arguments)}"))
        for i, argument in enumerate(arguments):
            field = f"arguments[{i}]"
            if not isinstance(argument, Mapping):
                found.append(Violation(field, "P2", "an argument is an object with a name"))
                continue
            name = argument["name"]
            if not isinstance(name, str) or not _ARGUMENT_NAME.match(name):
                found.append(Violation(f"{field}.name", "P2", "a letter or _ then letters, digits or _, at most 64"))
            elif name in names:
                found.append(Violation(f"{field}.name", "P2", f"{name!r} is named twice"))
            else:
                names.add(name)
            found += description_violations(argument["description"], f"{field}.description") if argument["description"] else []
            completion = argument["completion"]
            if completion is None:
                continue
            if not isinstance(completion, Mapping) or set(completion) not in ({"values"}, {"module"}):
                found.append(Violation(f"{field}.completion", "P3", "either {\"values\": [...]} or {\"module\": id}"))
            elif "values" in completion:
                values = completion["values"]
                if not isinstance(values, list) or len(values) > MAX_VALUES or not all(
                        isinstance(v, str) and len(v) <= 1_000 for v in values):
                    found.append(Violation(f"{field}.completion.values", "P3", f"at most {MAX_VALUES} texts of at most 1,000 characters"))
            else:
                found += id_violations(completion["module"], f"{field}.completion.module")
        return names

    def _message_violations(self, messages: Any, names: set[str], found: list[Violation]) -> None:
        if not isinstance(messages, list) or not messages:
            found.append(Violation("messages", "P1", "at least one message"))
            return
        if len(messages) > MAX_MESSAGES:
            found.append(Violation("messages", "P1", f"at most {MAX_MESSAGES} messages, got {len(messages)}"))
            return
        placeholders = 0
        for i, message in enumerate(messages):
            field = f"messages[{i}]"
            if not isinstance(message, Mapping) or set(message) != {"role", "content"}:
                found.append(Violation(field, "P1", "a message is {\"role\", \"content\"}"))
                continue
            if message["role"] not in ROLES:
                found.append(Violation(f"{field}.role", "P1", "user or assistant"))
            content = message["content"]
            if not isinstance(content, Mapping) or content.get("type") not in CONTENT_TYPES:
                found.append(Violation(f"{field}.content.type", "P1", "text, image, audio or resource"))
                continue
            self._content_violations(content, f"{field}.content", found)
            for where, text in _texts(content, f"{field}.content"):
                if not isinstance(text, str):
                    continue
                # Counted before anything is matched: a template of 1,000 placeholders is refused
                # by one scan, without a name looked at.
                placeholders += len(_OPENING.findall(text))
                if placeholders > MAX_PLACEHOLDERS:
                    found.append(Violation(where, "P4", f"at most {MAX_PLACEHOLDERS} placeholders in a prompt, got more"))
                    return
                for name in dict.fromkeys(PLACEHOLDER.findall(text)):
                    if name not in names:
                        found.append(Violation(where, "P4", f"{{{{{name}}}}} names no argument of the prompt"))

    @staticmethod
    def _content_violations(content: Mapping[str, Any], field: str, found: list[Violation]) -> None:
        kind = content["type"]
        if kind == "text":
            text = content.get("text")
            if set(content) != {"type", "text"} or not isinstance(text, str) or len(text) > MAX_TEXT:
                found.append(Violation(f"{field}.text", "P1", f"a text of at most {MAX_TEXT:,} characters"))
        elif kind in ("image", "audio"):
            data, media = content.get("data"), content.get("mimeType")
            if set(content) != {"type", "data", "mimeType"} or not isinstance(data, str) or len(data) > MAX_BINARY:
                found.append(Violation(f"{field}.data", "P1", f"base64 of at most {MAX_BINARY:,} characters, with mimeType"))
            if not isinstance(media, str) or not media.startswith(f"{kind}/"):
                found.append(Violation(f"{field}.mimeType", "P1", f"an {kind}/… media type"))
        else:
            resource = content.get("resource")
            if set(content) != {"type", "resource"} or not isinstance(resource, Mapping):
                found.append(Violation(f"{field}.resource", "P1", "an embedded resource: {uri, mimeType, text or blob}"))
                return
            if not isinstance(resource.get("uri"), str) or not resource["uri"]:
                found.append(Violation(f"{field}.resource.uri", "P1", "a URI"))
            if ("text" in resource) == ("blob" in resource) or not all(
                    isinstance(resource[k], str) for k in ("text", "blob") if k in resource):
                found.append(Violation(f"{field}.resource", "P1", "either text or blob (base64)"))
            if not set(resource) <= {"uri", "mimeType", "text", "blob"}:
                found.append(Violation(f"{field}.resource", "P1", "only uri, mimeType and text or blob"))

    def modules_of(self, definition: Definition) -> list[str]:
        """The code modules a definition names (its renderer, its completers)."""
        named = [definition["module"]] if definition["module"] else []
        named += [a["completion"]["module"] for a in definition["arguments"] if (a["completion"] or {}).get("module")]
        return list(dict.fromkeys(named))

    def check_publish(self, tenant: str, definition: Definition) -> None:
        """Each module the prompt names is a published, enabled tool module."""
        found = []
        for name in self.modules_of(definition):
            module = self.deps.store.find(tenant, name)
            tool = module.published["tool"] if module is not None and not module.deleted and module.published else None
            if tool is None:
                field = "module" if name == definition["module"] else "arguments"
                found.append(Violation(field, "P5", f"{name!r} is not a published tool module"))
        if found:
            raise InvalidDefinition(found)

    def users_of(self, tenant: str, name: str) -> list[str]:
        return self.users_of_module(tenant, name)

    def users_of_module(self, tenant: str, module_id: str) -> list[str]:
        """The prompts whose draft or published version names `module_id`."""
        return [p.item_id for p in self.items(tenant)
                if any(module_id in self.modules_of(d) for d in (p.draft, p.published) if d is not None)]

    # -- MCP -----------------------------------------------------------------------------------

    def _listed(self, prompt: Prompt) -> Listed | None:
        return self.listing_of(prompt.item_id, prompt.published) if prompt.published is not None else None

    def listing_of(self, name: str, published: Definition) -> Listed:
        arguments = tuple({"name": a["name"], **({"description": a["description"]} if a["description"] else {}),
                           "required": a["required"]} for a in published["arguments"])
        return Listed(name, published["description"], published["title"], arguments, tuple(published["tags"]))

    def listed(self, tenant: str) -> Sequence[Listed]:
        return [listed for prompt in self.items(tenant) if (listed := self._listed(prompt)) is not None]

    def listing(self, tenant: str, name: str) -> Listed | None:
        prompt = self.find(tenant, name)
        return self._listed(prompt) if prompt is not None else None

    def change_topics(self) -> Iterable[type]:
        return (Prompt.Published, Prompt.Deleted)

    def _published(self, tenant: str, name: str) -> Definition:
        prompt = self.find(tenant, name)
        if prompt is None or prompt.published is None:
            raise ToolNotCallable(name, "no such prompt")
        return prompt.published

    @staticmethod
    def checked_arguments(definition: Definition, given: Mapping[str, Any] | None) -> dict[str, str]:
        """The arguments of a `prompts/get`: every required one given, none unknown, each a text."""
        given = dict(given or {})
        declared = {a["name"]: a for a in definition["arguments"]}
        found = [Violation(f"arguments.{a['name']}", "P6", f"the argument {a['name']!r} is required")
                 for a in definition["arguments"] if a["required"] and a["name"] not in given]
        found += [Violation(f"arguments.{name}", "P6", f"the prompt has no argument {name!r}") for name in given if name not in declared]
        found += [Violation(f"arguments.{name}", "P6", "an argument's value is a text") for name, value in given.items()
                  if name in declared and not isinstance(value, str)]
        if found:
            raise InvalidInput(found)
        return given

    async def render(self, tenant: str, name: str, arguments: Mapping[str, Any] | None, context: CallContext,
                     tools: Any = None) -> dict[str, Any]:
        return await self._render(self._published(tenant, name), tenant, arguments, context, tools)

    def published(self, tenant: str, name: str) -> Definition | None:
        prompt = self.find(tenant, name)
        return prompt.published if prompt is not None else None

    async def render_published(self, published: Definition, tenant: str, arguments: Mapping[str, Any] | None,
                               context: CallContext, tools: Any) -> dict[str, Any]:
        return await self._render(published, tenant, arguments, context, tools)

    async def test(self, tenant: str, name: str, arguments: Mapping[str, Any] | None, context: CallContext, tools: Any,
                   *, draft: bool = True) -> dict[str, Any]:
        """The prompt's draft (or its published version) rendered as `prompts/get` would: the console's and REST's test."""
        prompt = self.get(tenant, name)
        definition = prompt.current if draft else prompt.published
        if definition is None:
            raise ToolNotCallable(name, "the prompt is not published")
        return await self._render(definition, tenant, arguments, context, tools)

    async def _render(self, definition: Definition, tenant: str, arguments: Mapping[str, Any] | None, context: CallContext,
                      tools: Any) -> dict[str, Any]:
        values = self.checked_arguments(definition, arguments)
        if definition["module"] is None:
            messages = [self._rendered(m, values) for m in definition["messages"]]
        else:
            output = await self._run(tools, tenant, definition["module"], values, context)
            messages = rendered_output(definition["module"], output)
        return {"description": definition["description"], "messages": messages}

    @staticmethod
    def _rendered(message: Mapping[str, Any], values: Mapping[str, str]) -> dict[str, Any]:
        content = dict(message["content"])
        if content["type"] == "text":
            content["text"] = _fill(content["text"], values)
        elif content["type"] == "resource":
            resource = dict(content["resource"])
            resource["uri"] = _fill(resource["uri"], values)
            if "text" in resource:
                resource["text"] = _fill(resource["text"], values)
            content["resource"] = resource
        return {"role": message["role"], "content": content}

    async def _run(self, tools: Any, tenant: str, module: str, arguments: Mapping[str, Any], context: CallContext) -> Any:
        """The published tool module `module`'s output for `arguments`; its error raised as the prompt's."""
        # The prompt runs its own module, whoever may call the prompt.
        result = await tools.acall(tenant, module, dict(arguments), permissions=EVERYTHING, context=context)
        if result.error is not None:
            raise ToolNotCallable(module, f"the prompt's module failed: {result.error.message}")
        return result.output

    async def complete(self, tenant: str, name: str, argument: str, value: str, given: Mapping[str, str],
                       context: CallContext, tools: Any = None) -> list[str]:
        definition = self._published(tenant, name)
        declared = next((a for a in definition["arguments"] if a["name"] == argument), None)
        if declared is None:
            raise InvalidInput([Violation("argument.name", "P6", f"the prompt has no argument {argument!r}")])
        completion = declared["completion"] or {}
        value = value if isinstance(value, str) else ""
        if "module" in completion:
            output = await self._run(tools, tenant, completion["module"],
                                     {"argument": argument, "value": value, "context": dict(given or {})}, context)
            if not isinstance(output, list) or not all(isinstance(v, str) for v in output):
                raise ToolNotCallable(completion["module"], "a completion module answers a list of texts")
            return output[:MAX_COMPLETIONS]
        wanted = value.casefold()
        return [v for v in completion.get("values", ()) if v.casefold().startswith(wanted)][:MAX_COMPLETIONS]


def rendered_output(module: str, output: Any) -> list[dict[str, Any]]:
    """What a rendering module answered, as MCP messages: a text is one user message; a list of
    messages (or `{messages}`) is taken as it is, a message's content given as a text or MCP content."""
    if isinstance(output, str):
        return [{"role": "user", "content": {"type": "text", "text": output}}]
    if isinstance(output, Mapping) and "messages" in output:
        output = output["messages"]
    if not isinstance(output, list) or not output or len(output) > MAX_MESSAGES:
        raise ToolNotCallable(module, "a prompt's module answers a text, or a list of 1 to 100 {role, content} messages")
    messages = []
    for i, message in enumerate(output):
        if not isinstance(message, Mapping) or message.get("role") not in ROLES:
            raise ToolNotCallable(module, f"message {i} of the module's answer has no role user or assistant")
        content = message.get("content")
        if isinstance(content, str):
            content = {"type": "text", "text": content}
        if not isinstance(content, Mapping) or content.get("type") not in CONTENT_TYPES:
            raise ToolNotCallable(module, f"message {i} of the module's answer has no text, image, audio or resource content")
        found: list[Violation] = []
        PromptKind._content_violations(content, f"messages[{i}].content", found)
        if found:
            raise ToolNotCallable(module, f"message {i} of the module's answer: {found[0].field}: {found[0].message}")
        messages.append({"role": message["role"], "content": dict(content)})
    return messages
