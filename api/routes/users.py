"""The people of a tenant (docs/users.md): `/api/v1/admin/users`. Admins create (with a password, or
by invitation: a one-time code answered once), change, disable, enable and delete them; auditors
read. A person of another tenant is a 404, as one that never was. Every answer is a person's
public record: never a password, its hash or an invitation's secret (the code is answered once,
by the request that made it)."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Header, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from api.deps import Admin, Reader, ServicesDep
from api.paths import ADMIN_API
from api.problems import documented, etag, if_match_version
from application.queries import after_cursor, cursor_after
from domain.errors import InvalidInput, Violation
from domain.users import MAX_NAME, MIN_PASSWORD, USER_ROLES

router = APIRouter(prefix=f"{ADMIN_API}/users", tags=["people"])

DEFAULT_LIMIT = 50
MAX_LIMIT = 200
IfMatch = Annotated[str | None, Header(alias="If-Match", description="the person's ETag as read (B7)")]
INVITATION_PAGE = "/console/invitation?code="


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class UserIn(_Body):
    email: str = Field(description="unique in the organization; compared without case", max_length=320)
    name: str = Field(description="the display name", max_length=MAX_NAME * 2)
    role: str = Field(description="admin, auditor or caller", json_schema_extra={"enum": list(USER_ROLES)})
    usageProfile: str | None = Field(None, description="a caller's usage profile (R14)")
    locale: str = Field("en", description="a BCP 47 language tag: en, fr, de-CH")
    password: str | None = Field(None, description=f"at least {MIN_PASSWORD} characters; without one, the person is invited")


class UserChange(_Body):
    name: str | None = None
    role: str | None = Field(None, json_schema_extra={"enum": list(USER_ROLES)})
    usageProfile: str | None = None
    locale: str | None = None


class UserOut(BaseModel):
    id: str
    email: str
    name: str
    role: str
    usageProfile: str | None
    locale: str
    status: str = Field(description="active, invited (no password yet) or disabled")
    disabled: bool
    hasPassword: bool
    singleSignOn: bool
    invitedUntil: str | None
    lastSignInAt: str | None
    version: int
    createdAt: str | None
    createdBy: str
    updatedAt: str | None
    updatedBy: str


class Invitation(BaseModel):
    code: str = Field(description="shown once: the person sets their password with it, once, before it expires")
    url: str = Field(description="the console's invitation page for this code, relative to the service's URL")
    expiresAt: str


class UserCreated(UserOut):
    invitation: Invitation | None = None


def _not_yourself(principal: Any, user_id: str, verb: str) -> None:
    """An admin never locks themselves out: another admin does it."""
    if principal.user is not None and principal.user.id == user_id:
        raise InvalidInput([Violation("id", "docs/users.md", f"you cannot {verb} your own account; another admin can")])


def _invitation(invitation: dict[str, Any]) -> dict[str, Any]:
    return {**invitation, "url": INVITATION_PAGE + quote(invitation["code"], safe="")}


@router.get("", response_model=list[UserOut], responses=documented(400))
def list_users(
    request: Request, response: Response, services: ServicesDep, principal: Reader,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT, description="how many people a page holds at most")] = DEFAULT_LIMIT,
    cursor: Annotated[str | None, Query(description="where the page starts: the `next` link's cursor of the previous page")] = None,
) -> list[dict[str, Any]]:
    """A page of the organization's people, by email; while more follow, a `Link` header
    (`rel="next"`) gives the next page's URL."""
    try:
        after = after_cursor(cursor)
    except ValueError as error:
        raise InvalidInput([Violation("cursor", "page", str(error))]) from None
    people, last = services.users.page(principal.tenant, after=after, limit=limit)
    if last is not None:
        response.headers["Link"] = f'<{request.url.include_query_params(cursor=cursor_after(last))}>; rel="next"'
    return people


@router.post("", status_code=201, response_model=UserCreated, response_model_exclude_none=False, responses=documented(400, 409))
def create_user(body: UserIn, response: Response, services: ServicesDep, principal: Admin) -> dict[str, Any]:
    """A person: with a `password`, they sign in at once; without one, the answer's `invitation`
    (shown once) lets them choose it."""
    if body.password is not None:
        user = services.users.create(principal.tenant, body.email, body.name, body.role, password=body.password,
                                     usage_profile=body.usageProfile, locale=body.locale, by=principal.name)
        answer = {**user, "invitation": None}
    else:
        user, invitation = services.users.invite(principal.tenant, body.email, body.name, body.role,
                                                 usage_profile=body.usageProfile, locale=body.locale, by=principal.name)
        answer = {**user, "invitation": _invitation(invitation)}
    response.headers["ETag"] = etag(user["version"])
    response.headers["Location"] = f"{ADMIN_API}/users/{user['id']}"
    return answer


@router.get("/{id}", response_model=UserOut, responses=documented(404))
def get_user(id: str, response: Response, services: ServicesDep, principal: Reader) -> dict[str, Any]:
    user = services.users.get(principal.tenant, id)
    response.headers["ETag"] = etag(user["version"])
    return user


@router.patch("/{id}", response_model=UserOut, responses=documented(400, 404, 412))
def change_user(id: str, body: UserChange, response: Response, services: ServicesDep, principal: Admin,
                if_match: IfMatch = None) -> dict[str, Any]:
    """Changes the name, role, usage profile or locale (what the body names); `If-Match` refuses a
    change over one made since the person was read (412)."""
    changes = body.model_dump(exclude_unset=True)
    for field in ("name", "role", "locale"):
        if field in changes and changes[field] is None:
            raise InvalidInput([Violation(field, "docs/users.md", "cannot be null")])
    user = services.users.update(principal.tenant, id, changes, expected=if_match_version(if_match), by=principal.name)
    response.headers["ETag"] = etag(user["version"])
    return user


@router.post("/{id}/disable", response_model=UserOut, responses=documented(404))
def disable_user(id: str, services: ServicesDep, principal: Admin) -> dict[str, Any]:
    """The person can no longer sign in; their sessions and tokens stop working at once."""
    _not_yourself(principal, id, "disable")
    return services.users.disable(principal.tenant, id, by=principal.name)


@router.post("/{id}/enable", response_model=UserOut, responses=documented(404))
def enable_user(id: str, services: ServicesDep, principal: Admin) -> dict[str, Any]:
    return services.users.enable(principal.tenant, id, by=principal.name)


@router.post("/{id}/invitation", status_code=201, response_model=Invitation, responses=documented(404))
def invite_again(id: str, services: ServicesDep, principal: Admin) -> dict[str, Any]:
    """A new invitation (the one before stops working): to set a first password, or a new one."""
    _, invitation = services.users.reinvite(principal.tenant, id, by=principal.name)
    return _invitation(invitation)


@router.delete("/{id}", status_code=204, response_class=Response, responses=documented(404))
def delete_user(id: str, services: ServicesDep, principal: Admin) -> Response:
    """The person is gone: their sessions and tokens stop working, their password is forgotten."""
    _not_yourself(principal, id, "delete")
    services.users.delete(principal.tenant, id, by=principal.name)
    return Response(status_code=204)
