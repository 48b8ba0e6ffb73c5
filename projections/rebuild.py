"""`toolsmith projections rebuild`: a fresh OpenSearch index from the whole event log, then an
atomic alias swap, so that queries never see a half-built read model.

The new index is built without refreshes or replicas (the fastest way OpenSearch indexes), in
large batches, and is given its real settings before the swap. A projection runner still writing
through the alias meanwhile is harmless: after the swap it reads the new index's own tracking
position and applies what the rebuild had not, and external versions make any overlap a no-op.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

from eventsourcing.application import Application
from opensearchpy import OpenSearch

from projections.modules import ModuleSummaries
from projections.opensearch import MAPPINGS, OpenSearchModuleReadModel, index_settings, new_index_name
from projections.runner import PullingProjectionRunner
from projections.store_identity import store_identity

REBUILD_BATCH = 2_000


@dataclass(frozen=True)
class Rebuilt:
    index: str
    replaced: list[str]
    events: int
    position: int


def rebuild(
    app: Application,
    client: OpenSearch,
    alias: str,
    *,
    replicas: int,
    progress: Callable[[int, int], None] | None = None,
    keep_old: bool = False,
    store: str | None = None,
) -> Rebuilt:
    """`store` is the identity of `app`'s event store, recorded with every document (found in
    the store when not given)."""
    if store is None:
        store = store_identity(app)
    index = new_index_name(alias)
    client.indices.create(index=index, body={"settings": index_settings(replicas, rebuilding=True), "mappings": MAPPINGS})
    try:
        view = OpenSearchModuleReadModel(client, index=index, refresh=False, fresh=True, store=store)
        runner = PullingProjectionRunner(app, ModuleSummaries(view=view), batch=REBUILD_BATCH)
        events = runner.catch_up(progress, pipelined=True)
        client.indices.put_settings(index=index, body={"index": {"refresh_interval": None, "number_of_replicas": replicas}})
        client.indices.refresh(index=index)
        # What was written while the index was built, now with refreshes on.
        view.refresh = True
        events += runner.catch_up(progress)
    except BaseException:
        with contextlib.suppress(Exception):  # best effort: OpenSearch may be what failed
            client.indices.delete(index=index, ignore_unavailable=True)
        raise
    replaced = sorted(client.indices.get_alias(name=alias).keys()) if client.indices.exists_alias(name=alias) else []
    actions = [{"remove": {"index": old, "alias": alias}} for old in replaced] + [{"add": {"index": index, "alias": alias}}]
    client.indices.update_aliases(body={"actions": actions})
    if not keep_old:
        for old in replaced:
            client.indices.delete(index=old, ignore_unavailable=True)
    return Rebuilt(index=index, replaced=replaced, events=events, position=runner.position())
