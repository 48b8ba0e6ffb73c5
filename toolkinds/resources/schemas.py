"""An admin's resource's REST bodies and how the API shows one (docs/kinds/resources.md)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from api.schemas import DESCRIPTION, IDENTIFIER, TAGS, documents


class ResourceUpdate(BaseModel):
    """PUT: the fields given replace the draft's."""

    model_config = ConfigDict(extra="forbid")
    description: str | None = Field(None, max_length=4_000, **documents(**DESCRIPTION))
    title: str | None = Field(None, max_length=200)
    tags: list[str] | None = Field(None, max_length=100, **documents(**TAGS))
    uri: str | None = Field(None, max_length=2_048, description="the resource's URI; or give uriTemplate")
    uriTemplate: str | None = Field(None, max_length=2_048, description="an RFC 6570 URI template (level 1: {name})")
    mimeType: str | None = Field(None, max_length=255, description="the media type of what a read answers")
    text: str | None = Field(None, description="fixed text; {{variable}} placeholders take the template's variables")
    blob: str | None = Field(None, description="fixed bytes, base64")
    module: str | None = Field(None, max_length=200, description="a published tool module that renders the content")


class ResourceCreate(ResourceUpdate):
    id: str = Field(max_length=200, description="the resource's name (R1), unique among the tenant's tools, prompts and resources (R2)",
                    **documents(**IDENTIFIER))
    description: str = Field("", max_length=4_000, **documents(**DESCRIPTION))


class ReadRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    uri: str | None = Field(None, max_length=2_048, description="the URI to read (a template's: one it matches); default the resource's own")
    draft: bool = Field(True, description="read the draft (true) or the published version")


def public(item: Any) -> dict[str, Any]:
    return {
        "id": item.item_id,
        "state": item.state,
        "draft": item.draft,
        "published": None if item.published is None else {
            **item.published, "version": item.published_version, "publishedAt": item.published_at,
            "publishedBy": item.published_by, "changeset": item.published_changeset, "message": item.published_message},
        "version": item.version,
        "createdBy": item.created_by,
        "createdAt": item.created_on,
        "updatedBy": item.updated_by,
        "updatedAt": item.modified_on,
    }
