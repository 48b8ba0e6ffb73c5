"""The tests' Keycloak (scripts/keycloak.sh): found through `KEYCLOAK_URL` (`make test` launches
it and exports it) or started here, waited for, and described: its realm, its clients and its
people (tests/fixtures/keycloak/toolsmith-realm.json), with the few admin calls the tests need.

It lives in `testing/`, beside the process launcher, so that tests and benchmarks may share it.
`find()` raises `KeycloakMissing` saying why when there is none; the pytest fixture
(`tests/conftest.py`, `keycloak`) turns that into a skip, or a failure in CI.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

PROJECT = Path(__file__).resolve().parents[1]
SCRIPT = PROJECT / "scripts" / "keycloak.sh"
REALM_FILE = PROJECT / "tests" / "fixtures" / "keycloak" / "toolsmith-realm.json"
REALM = "toolsmith"
HOW_TO_START = "start one with `make keycloak` (Java 21 or newer and Maven are needed), or set KEYCLOAK_URL"
# Keycloak's first start builds its configuration too: 40 s here on two shared cores.
READY_SECONDS = 240


class KeycloakMissing(RuntimeError):
    """No Keycloak answers, and none could be started: the message says why."""


@dataclass(frozen=True)
class Client:
    client_id: str
    secret: str


@dataclass(frozen=True)
class Person:
    username: str
    password: str
    email: str
    name: str
    tenant: str
    roles: tuple[str, ...]


@dataclass(frozen=True)
class Keycloak:
    """A Keycloak that answers, with the realm of tests/fixtures/keycloak imported."""

    url: str
    realm: str = REALM
    admin_user: str = "admin"
    admin_password: str = "admin"
    clients: dict[str, Client] = field(default_factory=dict)
    people: dict[str, Person] = field(default_factory=dict)

    @property
    def issuer(self) -> str:
        return f"{self.url}/realms/{self.realm}"

    @property
    def console(self) -> Client:
        """The console's client (confidential, PKCE S256 required, redirects to 127.0.0.1 on any port)."""
        return self.clients["toolsmith-console"]

    @property
    def token_endpoint(self) -> str:
        return f"{self.issuer}/protocol/openid-connect/token"

    def sso_env(self, client: str = "toolsmith-console") -> dict[str, str]:
        """The settings of a Toolsmith whose console signs in through this realm."""
        chosen = self.clients[client]
        return {"TOOLSMITH_SSO_ISSUER": self.issuer, "TOOLSMITH_SSO_NAME": "Keycloak",
                "TOOLSMITH_SSO_CLIENT_ID": chosen.client_id, "TOOLSMITH_SSO_CLIENT_SECRET": chosen.secret,
                "TOOLSMITH_SSO_ROLE_MAP": "toolsmith-admin=admin,toolsmith-auditor=auditor,toolsmith-caller=caller"}

    def tokens(self, username: str, password: str, *, client: str = "toolsmith-console", scope: str = "openid") -> dict:
        """Keycloak's token answer for one of the realm's people (the password grant: the tests
        that need no browser; the console itself signs in with the authorization code flow)."""
        chosen = self.clients[client]
        answer = httpx.post(self.token_endpoint, data={
            "grant_type": "password", "client_id": chosen.client_id, "client_secret": chosen.secret,
            "username": username, "password": password, "scope": scope}, timeout=30, trust_env=False)
        answer.raise_for_status()
        return answer.json()

    def access_token(self, username: str, password: str, *, audience: str | None = None,
                     client: str = "toolsmith-mcp") -> str:
        """An access token for a person; with `audience`, one whose `aud` names it (a resource's URL,
        RFC 8707's audience): a client scope with an audience mapper, made on first use."""
        scope = "openid"
        if audience is not None:
            scope += " " + self.audience_scope(audience, client=client)
        return self.tokens(username, password, client=client, scope=scope)["access_token"]

    def admin_headers(self) -> dict[str, str]:
        answer = httpx.post(f"{self.url}/realms/master/protocol/openid-connect/token", data={
            "grant_type": "password", "client_id": "admin-cli", "username": self.admin_user,
            "password": self.admin_password}, timeout=30, trust_env=False)
        answer.raise_for_status()
        return {"Authorization": f"Bearer {answer.json()['access_token']}"}

    def audience_scope(self, audience: str, *, client: str = "toolsmith-mcp") -> str:
        """The name of an optional client scope of `client` whose access tokens carry `audience`
        in `aud`; made through the admin API when missing (several workers may ask at once)."""
        name = "aud-" + hashlib.sha256(audience.encode()).hexdigest()[:16]
        admin = f"{self.url}/admin/realms/{self.realm}"
        headers = self.admin_headers()
        with httpx.Client(headers=headers, timeout=30, trust_env=False) as http:
            scopes = http.get(f"{admin}/client-scopes").raise_for_status().json()
            found = next((s for s in scopes if s["name"] == name), None)
            if found is None:
                made = http.post(f"{admin}/client-scopes", json={
                    "name": name, "protocol": "openid-connect",
                    "attributes": {"include.in.token.scope": "true", "display.on.consent.screen": "false"},
                    "protocolMappers": [{"name": "audience", "protocol": "openid-connect",
                                         "protocolMapper": "oidc-audience-mapper",
                                         "config": {"included.custom.audience": audience,
                                                    "access.token.claim": "true", "id.token.claim": "false",
                                                    "introspection.token.claim": "true"}}]})
                if made.status_code != 409:  # 409: another worker made it first
                    made.raise_for_status()
                scopes = http.get(f"{admin}/client-scopes").raise_for_status().json()
                found = next(s for s in scopes if s["name"] == name)
            clients = http.get(f"{admin}/clients", params={"clientId": client}).raise_for_status().json()
            http.put(f"{admin}/clients/{clients[0]['id']}/optional-client-scopes/{found['id']}").raise_for_status()
        return name

    def add_person(self, username: str, password: str, *, tenant: str, roles: tuple[str, ...], name: str = "Test Person") -> Person:
        """A person of the realm of a test's own (give each a unique username): the committed
        people are shared by every test, so a test that changes one makes its own."""
        first, _, last = name.partition(" ")
        email = f"{username}@example.com"
        admin = f"{self.url}/admin/realms/{self.realm}"
        with httpx.Client(headers=self.admin_headers(), timeout=30, trust_env=False) as http:
            http.post(f"{admin}/users", json={
                "username": username, "email": email, "firstName": first, "lastName": last or "Person",
                "enabled": True, "emailVerified": True, "attributes": {"tenant": [tenant]},
                "credentials": [{"type": "password", "value": password, "temporary": False}]}).raise_for_status()
        self.set_roles(username, roles)
        return Person(username=username, password=password, email=email, name=name, tenant=tenant, roles=roles)

    def set_roles(self, username: str, roles: tuple[str, ...]) -> None:
        """Gives a person exactly these of the realm's `toolsmith-*` roles."""
        admin = f"{self.url}/admin/realms/{self.realm}"
        with httpx.Client(headers=self.admin_headers(), timeout=30, trust_env=False) as http:
            user = http.get(f"{admin}/users", params={"username": username, "exact": "true"}).raise_for_status().json()[0]
            mapped = f"{admin}/users/{user['id']}/role-mappings/realm"
            held = [r for r in http.get(mapped).raise_for_status().json() if r["name"].startswith("toolsmith-")]
            if held:
                http.request("DELETE", mapped, json=held).raise_for_status()
            wanted = [http.get(f"{admin}/roles/{name}").raise_for_status().json() for name in roles]
            if wanted:
                http.post(mapped, json=wanted).raise_for_status()


def describe(url: str) -> Keycloak:
    """The Keycloak at `url`, with the clients and people of the committed realm file."""
    realm = json.loads(REALM_FILE.read_text())
    clients = {c["clientId"]: Client(c["clientId"], c["secret"]) for c in realm["clients"]}
    people = {}
    for user in realm["users"]:
        people[user["username"]] = Person(
            username=user["username"], password=user["credentials"][0]["value"], email=user["email"],
            name=f"{user['firstName']} {user['lastName']}", tenant=user["attributes"]["tenant"][0],
            roles=tuple(r for r in user["realmRoles"] if r.startswith("toolsmith-")))
    return Keycloak(url=url.rstrip("/"), clients=clients, people=people)


def _answers(url: str) -> bool:
    try:
        answer = httpx.get(f"{url}/realms/{REALM}/.well-known/openid-configuration", timeout=2, trust_env=False)
    except httpx.TransportError:
        return False
    return answer.status_code == 200


def _script(command: str) -> str:
    """Runs scripts/keycloak.sh; its last line of output, or KeycloakMissing with its messages."""
    done = subprocess.run([str(SCRIPT), command], capture_output=True, text=True, timeout=READY_SECONDS + 300)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise KeycloakMissing(f"scripts/keycloak.sh {command} failed: {done.stderr.strip()[-1500:]}")
    return lines[-1]


def find() -> Keycloak:
    """Once per process: the Keycloak that `KEYCLOAK_URL` names (waited for: `make test` launches it
    without waiting), else the project's own, started. A failure is kept too: the next test that
    asks is told at once, not after another wait."""
    found = _found()
    if isinstance(found, KeycloakMissing):
        raise found
    return found


@functools.cache
def _found() -> Keycloak | KeycloakMissing:
    try:
        return _find()
    except KeycloakMissing as missing:
        return missing


def _find() -> Keycloak:
    given = os.environ.get("KEYCLOAK_URL", "").strip().rstrip("/")
    if given:
        if given == _launched_url():
            _script("wait")  # ours: waits, and says why when it exited
        else:
            deadline = time.monotonic() + READY_SECONDS
            while not _answers(given):
                if time.monotonic() > deadline:
                    raise KeycloakMissing(f"no realm {REALM!r} answers at KEYCLOAK_URL={given}; {HOW_TO_START}")
                time.sleep(1)
        return describe(given)
    return describe(_script("start"))


def _launched_url() -> str:
    try:
        return (PROJECT / ".engines" / "keycloak" / "node" / "url").read_text().strip()
    except OSError:
        return ""
