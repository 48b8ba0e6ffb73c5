"""The console's single sign-on maps what the provider says to Toolsmith (infrastructure/oidc.py):
the role map's table, the strongest role winning, claims found by dotted path, and settings that
refuse a map or a configuration that cannot work, naming what is wrong."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from infrastructure.oidc import Config, RoleGrant, claim_values, map_role, parse_role_map
from infrastructure.settings import Settings

TABLE = parse_role_map("kc-admin=admin, kc-audit=auditor, kc-call=caller:standard, kc-plain=caller")


def test_the_table_reads_each_entry() -> None:
    assert TABLE == {"kc-admin": RoleGrant("admin"), "kc-audit": RoleGrant("auditor"),
                     "kc-call": RoleGrant("caller", "standard"), "kc-plain": RoleGrant("caller")}
    assert parse_role_map("") == {}
    # A provider role may hold '=' itself (a group path, a URN): the last '=' separates.
    assert parse_role_map("urn:x=y=admin") == {"urn:x=y": RoleGrant("admin")}


@pytest.mark.parametrize(("text", "says"), [
    ("kc-admin=owner", "'kc-admin=owner' is not value=admin"),
    ("kc-admin", "'kc-admin' is not value=admin"),
    ("=admin", "'=admin' is not value=admin"),
    ("kc-admin=admin:standard", "only a caller has a usage profile"),
    ("a=admin,a=auditor", "'a' is mapped twice"),
])
def test_a_bad_entry_is_refused_by_name(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=says.replace("(", r"\(")):
        parse_role_map(text)
    with pytest.raises(ValidationError, match="TOOLSMITH_SSO_ROLE_MAP"):
        Settings(sso_role_map=text)


def test_the_strongest_mapped_role_wins_whatever_the_order() -> None:
    assert map_role(["offline_access", "kc-call", "kc-admin", "kc-audit"], TABLE) == RoleGrant("admin")
    assert map_role(["kc-call", "kc-audit"], TABLE) == RoleGrant("auditor")
    assert map_role(["kc-call"], TABLE) == RoleGrant("caller", "standard")
    # Two callers: the first the claim names.
    assert map_role(["kc-plain", "kc-call"], TABLE) == RoleGrant("caller")


def test_no_mapped_role_is_no_role() -> None:
    assert map_role([], TABLE) is None
    assert map_role(["default-roles-toolsmith", "KC-ADMIN"], TABLE) is None  # values match exactly


def test_claims_are_found_as_a_string_a_list_or_by_a_dotted_path() -> None:
    claims = {"roles": ["a", 3, "b"], "tenant": "acme", "realm_access": {"roles": ["kc-admin"]}, "x.y": "dotted"}
    assert claim_values(claims, "roles") == ["a", "b"]
    assert claim_values(claims, "tenant") == ["acme"]
    assert claim_values(claims, "realm_access.roles") == ["kc-admin"]
    assert claim_values(claims, "x.y") == ["dotted"]
    assert claim_values(claims, "realm_access.missing") == []
    assert claim_values(claims, "tenant.deeper") == []


def sso(**more: object) -> Settings:
    values = {"sso_issuer": "https://idp.example/realms/acme", "sso_client_id": "toolsmith", "sso_client_secret": "s3cr3t-value",
              "sso_role_map": "kc-admin=admin"} | more
    return Settings(**values)


def test_single_sign_on_is_off_without_an_issuer() -> None:
    assert Config.of(Settings()) is None


@pytest.mark.parametrize(("more", "says"), [
    ({"sso_client_id": ""}, "TOOLSMITH_SSO_CLIENT_ID is needed"),
    ({"sso_client_secret": None}, "TOOLSMITH_SSO_CLIENT_SECRET"),
    ({"sso_role_map": ""}, "TOOLSMITH_SSO_ROLE_MAP is needed"),
    ({"sso_issuer": "idp.example"}, "TOOLSMITH_SSO_ISSUER is the provider's issuer URL"),
])
def test_a_start_without_what_single_sign_on_needs_says_what_is_missing(more: dict, says: str) -> None:
    with pytest.raises(ValidationError, match=says):
        sso(**more)


def test_the_secret_may_come_from_a_file_and_is_never_shown(tmp_path) -> None:
    secret = tmp_path / "client-secret"
    secret.write_text("from-a-file\n")
    config = Config.of(sso(sso_client_secret=None, sso_client_secret_file=str(secret)))
    assert config.client_secret == "from-a-file"
    assert "from-a-file" not in repr(config)
    assert "s3cr3t-value" not in repr(Config.of(sso())) and "s3cr3t-value" not in repr(sso())


def test_openid_is_always_asked_for_once() -> None:
    assert Config.of(sso(sso_scopes="email openid profile")).scopes == ("openid", "email", "profile")
    assert Config.of(sso(sso_scopes="email")).scopes == ("openid", "email")
