"""The tenants' quotas (docs/tenants.md), checked in one place: a change that would take a tenant past a
quota the operator set is refused with `QuotaExceeded` (409, or 413 for stored bytes) before
anything is recorded.

Every command that creates what a quota counts (a module, an API URL or File Search tool, the
documents of an upload) calls `check` inside its attempt, under the tenant's lock
(`CommandRunner.run(..., lock=tenant)`: a thread lock with SQLite, an advisory lock across every
replica with PostgreSQL), and the limit and the count are read from the store there: two creates
can never both take the last unit, whichever replicas they run in.

Whether a tenant has a quota at all is answered from what was read at most `ttl` seconds ago (a
second by default), so that a create where no quota is set (the common case) reads and counts
nothing; a change the operator makes here is seen here at once, and by the other replicas of a
PostgreSQL store within the `ttl`, as a suspension is (`application/tenants.py`).

Lowering a quota below what a tenant holds deletes nothing; only what would add to it is refused,
so a change that adds nothing (identical bytes uploaded again) always passes.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from application.tenants import Tenants
from application.usage import Usage
from domain.errors import QuotaExceeded
from domain.tenants import QUOTAS


class Quotas:
    def __init__(self, tenants: Tenants, usage: Usage, *, ttl: float = 1.0) -> None:
        self._tenants = tenants
        self._usage = usage
        self._ttl = ttl
        self._read: dict[str, tuple[float, Mapping[str, int | None]]] = {}
        tenants.on_change(self._forget)

    def limited(self, tenant: str, *quotas: str) -> bool:
        """Whether any of `quotas` is set for `tenant` (read at most `ttl` seconds ago): a command
        that holds no lock otherwise takes the tenant's lock then."""
        now = time.monotonic()
        read = self._read.get(tenant)
        if read is None or now - read[0] > self._ttl:
            read = (now, self._tenants.quotas(tenant))
            self._read[tenant] = read
        return any(read[1].get(quota) is not None for quota in quotas)

    def check(self, tenant: str, quota: str, adding: int = 1) -> None:
        """Refuses adding `adding` to what `tenant` holds of `quota` when it would go past the limit."""
        self.check_all(tenant, {quota: adding})

    def check_all(self, tenant: str, adding: Mapping[str, int]) -> None:
        """`check` of several quotas at once (an upload adds documents and their bytes), counting
        only what the quotas that are set and added to need; the first one exceeded, in the order
        of `domain.tenants.QUOTAS`, is the refusal's."""
        adding = {quota: count for quota, count in adding.items() if count > 0}
        if not self.limited(tenant, *adding):
            return
        limits = self._tenants.quotas(tenant)  # exact: under the tenant's lock, the store's answer now
        checked = {quota: count for quota, count in adding.items() if limits.get(quota) is not None}
        if not checked:
            return
        used = self._usage.count(tenant, checked)
        for quota in QUOTAS:
            if quota in checked:
                limit = limits[quota]
                assert limit is not None
                if used[quota] + checked[quota] > limit:
                    raise QuotaExceeded(quota, limit, used[quota], checked[quota])

    def _forget(self, tenant: str) -> None:
        self._read.pop(tenant, None)
