"""A prompt's REST bodies and how the API shows one (docs/kinds/prompts.md)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from api.schemas import DESCRIPTION, IDENTIFIER, TAGS, documents


class Completion(BaseModel):
    model_config = ConfigDict(extra="forbid")
    values: list[str] | None = Field(None, max_length=1_000, description="offered by prefix")
    module: str | None = Field(None, max_length=200, description="a published tool module answering a list of texts")


class Argument(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(max_length=64)
    description: str = Field("", max_length=4_000)
    required: bool = False
    completion: Completion | None = None


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid")
    role: Literal["user", "assistant"]
    content: dict[str, Any] = Field(description="MCP content: text, image, audio or an embedded resource; "
                                                "a text, a resource's uri and text hold {{argument}} placeholders")


class PromptUpdate(BaseModel):
    """PUT: the fields given replace the draft's."""

    model_config = ConfigDict(extra="forbid")
    description: str | None = Field(None, max_length=4_000, **documents(**DESCRIPTION))
    title: str | None = Field(None, max_length=200)
    tags: list[str] | None = Field(None, max_length=100, **documents(**TAGS))
    arguments: list[Argument] | None = Field(None, max_length=100)
    messages: list[Message] | None = Field(None, max_length=200, description="the template; or give `module`")
    module: str | None = Field(None, max_length=200, description="a published tool module that renders the messages")

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:  # a completion's unset half is left out
        dumped = super().model_dump(**kwargs)
        for argument in dumped.get("arguments") or []:
            if argument.get("completion"):
                argument["completion"] = {k: v for k, v in argument["completion"].items() if v is not None}
        return dumped


class PromptCreate(PromptUpdate):
    id: str = Field(max_length=200, description="the prompt's name (R1), unique among the tenant's tools and prompts (R2)",
                    **documents(**IDENTIFIER))
    description: str = Field(max_length=4_000, **documents(**DESCRIPTION))


class RenderRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    arguments: dict[str, Any] = Field({}, description="the prompt's arguments, each a text")
    draft: bool = Field(True, description="render the draft (true) or the published version")


def public(prompt: Any) -> dict[str, Any]:
    return {
        "id": prompt.item_id,
        "state": prompt.state,
        "draft": prompt.draft,
        "published": None if prompt.published is None else {
            **prompt.published, "version": prompt.published_version, "publishedAt": prompt.published_at,
            "publishedBy": prompt.published_by, "changeset": prompt.published_changeset, "message": prompt.published_message},
        "version": prompt.version,
        "createdBy": prompt.created_by,
        "createdAt": prompt.created_on,
        "updatedBy": prompt.updated_by,
        "updatedAt": prompt.modified_on,
    }
