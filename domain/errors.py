"""The domain's errors: each one names the rule it enforces and carries what a client needs to act.

The API maps each class to a status and a problem type in one place (`api/problems.py`); nothing
here knows about HTTP.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Violation:
    """One broken rule about one field of a request."""

    field: str
    rule: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"field": self.field, "rule": self.rule, "message": self.message}


class ModuleError(Exception):
    """Base of every refusal the domain makes."""

    code = "module-error"

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class InvalidDefinition(ModuleError):
    """The request breaks one or more of the naming, limit or tool-section rules."""

    code = "invalid-module"

    def __init__(self, violations: list[Violation]) -> None:
        self.violations = violations
        super().__init__("; ".join(f"{v.field}: {v.message} ({v.rule})" for v in violations))


class UnknownModule(ModuleError):
    code = "module-not-found"

    def __init__(self, module_id: str) -> None:
        self.module_id = module_id
        super().__init__(f"no code module with id {module_id!r}")


class IdTaken(ModuleError):
    """R2: the id is already used by another module or tool."""

    code = "id-taken"

    def __init__(self, module_id: str, taken_by: str = "module") -> None:
        self.module_id = module_id
        self.taken_by = taken_by
        super().__init__(f"the id {module_id!r} is already used by a {taken_by} (R2)")


class ImportRefused(ModuleError):
    """R5: an import names a module that does not exist, is not published, or is the module itself."""

    code = "invalid-import"

    def __init__(self, violations: list[Violation], *, at_publish: bool = False) -> None:
        self.violations = violations
        self.at_publish = at_publish
        super().__init__("; ".join(v.message for v in violations))


class ImportCycle(ModuleError):
    """R5: the imports would form a cycle."""

    code = "import-cycle"

    def __init__(self, cycle: list[str], *, at_publish: bool = False) -> None:
        self.cycle = cycle
        self.at_publish = at_publish
        super().__init__("imports would form a cycle: " + " -> ".join(cycle) + " (R5)")


class NothingToPublish(ModuleError):
    """R10: publish without a draft."""

    code = "nothing-to-publish"

    def __init__(self, module_id: str) -> None:
        super().__init__(f"{module_id!r} has no draft to publish (R10)")


class CannotDiscard(ModuleError):
    """R11: discard without a draft, or of a module that was never published."""

    code = "nothing-to-discard"


class InUse(ModuleError):
    """R12: delete refused while modules, plans or agents use the module."""

    code = "in-use"

    def __init__(self, module_id: str, used_by: dict[str, list[str]]) -> None:
        self.used_by = used_by
        users = ", ".join(f"{kind[:-1]} {name}" for kind, names in used_by.items() for name in names)
        super().__init__(f"{module_id!r} is still used by {users} (R12)")


class CheckFailed(ModuleError):
    """R10: the module, or a module that imports it, would fail with the new version in place."""

    code = "check-failed"

    def __init__(self, failing_module: str, error_type: str, message: str) -> None:
        self.failing_module = failing_module
        self.error_type = error_type
        self.message = message
        super().__init__(f"publishing would break {failing_module!r}: {error_type}: {message} (R10)")


class ConcurrentChange(ModuleError):
    """Another writer changed the module at the same moment; nothing was written."""

    code = "concurrent-change"

    def __init__(self, module_id: str) -> None:
        super().__init__(f"{module_id!r} was changed by another request at the same moment; retry")


class SandboxUnavailable(ModuleError):
    """The code sandbox is switched off (empty `code-sandbox.url`), or cannot run code now."""

    code = "sandbox-not-configured"

    def __init__(self, reason: str | None = None) -> None:
        if reason is not None:
            self.code = "sandbox-unavailable"
        super().__init__(reason or "code modules cannot run because code-sandbox.url is not configured")


class SandboxBusy(ModuleError):
    """Every sandbox session is taken; the caller should retry shortly."""

    code = "sandbox-busy"

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(f"all {limit} sandbox sessions are busy; try again later")


class ToolNotCallable(ModuleError):
    """The named tool does not exist, is not published, is not a tool, or is disabled."""

    code = "tool-not-found"

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        super().__init__(f"no callable tool {name!r}: {reason}")


class InvalidInput(ModuleError):
    """V1: the tool's input breaks its declared parameters."""

    code = "invalid-input"

    def __init__(self, violations: list[Violation]) -> None:
        self.violations = violations
        super().__init__("; ".join(f"{v.field}: {v.message}" for v in violations))


class UnknownRecord(ModuleError):
    """No plan, agent, MCP server, usage profile or token with that id in the caller's tenant."""

    code = "not-found"

    def __init__(self, kind: str, record_id: str) -> None:
        self.kind = kind
        self.record_id = record_id
        super().__init__(f"no {kind} with id {record_id!r}")


class InvalidRecord(ModuleError):
    """A plan, agent, MCP server, usage profile or token request breaks a rule."""

    code = "invalid-record"

    def __init__(self, violations: list[Violation]) -> None:
        self.violations = violations
        super().__init__("; ".join(f"{v.field}: {v.message} ({v.rule})" for v in violations))


class RecordTaken(ModuleError):
    """The id is already held by a record of that kind, or (R2) by a tool of another kind."""

    code = "id-taken"

    def __init__(self, kind: str, record_id: str, taken_by: str | None = None) -> None:
        self.kind = kind
        self.record_id = record_id
        holder = taken_by or kind
        super().__init__(f"the id {record_id!r} is already used by a {holder}" + (" (R2)" if taken_by else ""))


class PreconditionFailed(ModuleError):
    """B7: the client's `If-Match` names a version of the module that is no longer the current one."""

    code = "precondition-failed"

    def __init__(self, module_id: str, expected: int, current: int | None) -> None:
        """`current` is None when the module moved on while the command ran (its number unknown)."""
        self.module_id = module_id
        self.expected = expected
        self.current = current
        now = f"version {current}" if current is not None else "a newer version"
        super().__init__(f"{module_id!r} is at {now}, not version {expected}; read it again and retry")


class UnknownVersion(ModuleError):
    """B1, B2: the module has no published version with that number."""

    code = "version-not-found"

    def __init__(self, module_id: str, version: object) -> None:
        self.module_id = module_id
        super().__init__(f"{module_id!r} has no published version {version!r}")


class SecretInUse(ModuleError):
    """A secret is referenced by tools (by id): it cannot be deleted until none does (docs/kinds/index.md)."""

    code = "secret-in-use"

    def __init__(self, secret_id: str, tools: list[str]) -> None:
        self.secret_id = secret_id
        self.tools = tools
        super().__init__(f"the secret {secret_id!r} is still used by {', '.join(tools)}")


class SecretUnreadable(ModuleError):
    """A secret's stored value cannot be read back: its ciphertext was made with a key this service
    does not hold, or no value matching its record is stored. The message names the secret only."""

    code = "secret-unreadable"

    def __init__(self, secret_id: str, reason: str) -> None:
        self.secret_id = secret_id
        super().__init__(f"the secret {secret_id!r} {reason}")


class UploadTooLarge(ModuleError):
    """An uploaded file is over the service's cap (`TOOLSMITH_MAX_UPLOAD_MB`, docs/kinds/file-search-tools.md)."""

    code = "upload-too-large"


class DocumentsUnavailable(ModuleError):
    """Documents cannot be kept or searched now: not configured here, or the chunk index is down."""

    code = "documents-unavailable"


class ChangesetRefused(ModuleError):
    """B6: a changeset whose checks fail; every failing module named, with why (nothing recorded)."""

    code = "changeset-refused"

    def __init__(self, failures: list[tuple[str, str, str]]) -> None:
        self.failures = failures  # (module, error type, message)
        names = ", ".join(dict.fromkeys(module for module, _, _ in failures))
        super().__init__(f"the changeset would break {names}: " + "; ".join(f"{m}: {t}: {msg}" for m, t, msg in failures[:5]))


class QuotaExceeded(ModuleError):
    """docs/tenants.md: the change would take the tenant past a quota the operator set (409; 413 for
    stored bytes). Nothing is recorded."""

    code = "quota-exceeded"

    def __init__(self, quota: str, limit: int, used: int, adding: int = 1) -> None:
        self.quota = quota
        self.limit = limit
        self.used = used
        super().__init__(f"the tenant's quota {quota!r} is {limit}: {used} in use, and this would add {adding}")


class TenantBusy(ModuleError):
    """docs/tenants.md: every sandbox session of the caller's tenant is taken (its fair share); retry shortly."""

    code = "tenant-busy"

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(f"all {limit} sandbox sessions of this tenant are busy (TOOLSMITH_TENANT_MAX_SESSIONS); try again later")


class TenantNotEmpty(ModuleError):
    """docs/tenants.md: a tenant is deleted only once it holds nothing."""

    code = "tenant-not-empty"

    def __init__(self, tenant_id: str, holds: list[str], reason: str | None = None) -> None:
        self.tenant_id = tenant_id
        self.holds = holds
        super().__init__(reason or f"tenant {tenant_id!r} still holds {', '.join(holds)}; delete them first")
