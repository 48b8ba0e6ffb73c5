"""The projection of module events into a `ModuleReadModel`, one branch per event type.

Every branch, the default included, records the event's tracking record with its write, so the
runner can resume exactly where the read model stopped, whichever implementation holds it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from eventsourcing.persistence import Tracking
from eventsourcing.projection import Projection

from domain.model import CodeModule
from projections.documents import new_document, part, touched
from projections.interface import ModuleReadModel


class ModuleSummaries(Projection[ModuleReadModel]):
    name = "module_summaries"

    def prepare(self, domain_events: list[Any]) -> None:
        """Lets the view load, in one go, every document the coming events change."""
        self.view.prefetch({self._key(e) for e in domain_events if isinstance(e, CodeModule.Event)})

    def process_event(self, domain_event: Any, tracking: Tracking) -> None:
        # A plain table by type: `singledispatchmethod` rebuilds a wrapper on every call, which
        # was a tenth of a rebuild's time. Events of other aggregates (the import graph) change
        # no summary, and only record their tracking.
        handler = _HANDLERS.get(type(domain_event))
        if handler is None:
            self.view.insert_tracking(tracking)
        else:
            handler(self, domain_event, tracking)

    def _created(self, domain_event: CodeModule.Created, tracking: Tracking) -> None:
        document = new_document(domain_event.tenant, domain_event.module_id)
        document["draft"] = part(domain_event.definition)
        self.view.put(touched(document, domain_event.by, domain_event.timestamp), tracking)

    def _recreated(self, domain_event: CodeModule.Recreated, tracking: Tracking) -> None:
        document = self._document(domain_event)
        document.update(draft=part(domain_event.definition), published=None, publishedVersion=None)
        self.view.put(touched(document, domain_event.by, domain_event.timestamp), tracking)

    def _draft_changed(self, domain_event: CodeModule.DraftChanged, tracking: Tracking) -> None:
        document = self._document(domain_event)
        document["draft"] = part(domain_event.definition)
        self.view.put(touched(document, domain_event.by, domain_event.timestamp), tracking)

    def _published(self, domain_event: CodeModule.Published, tracking: Tracking) -> None:
        document = self._document(domain_event)
        document.update(draft=None, published=part(domain_event.definition), publishedVersion=domain_event.version)
        self.view.put(touched(document, domain_event.by, domain_event.timestamp), tracking)

    def _draft_discarded(self, domain_event: CodeModule.DraftDiscarded, tracking: Tracking) -> None:
        document = self._document(domain_event)
        document["draft"] = None
        self.view.put(touched(document, domain_event.by, domain_event.timestamp), tracking)

    def _deleted(self, domain_event: CodeModule.Deleted, tracking: Tracking) -> None:
        tenant, module_id = self._key(domain_event)
        self.view.remove(tenant, module_id, tracking)

    def _key(self, domain_event: Any) -> tuple[str, str]:
        return domain_event.tenant, domain_event.module_id

    def _document(self, domain_event: Any) -> dict[str, Any]:
        tenant, module_id = self._key(domain_event)
        document = self.view.document(tenant, module_id)
        return document if document is not None else new_document(tenant, module_id)


_HANDLERS: dict[type, Callable[[ModuleSummaries, Any, Tracking], None]] = {
    CodeModule.Created: ModuleSummaries._created,
    CodeModule.Recreated: ModuleSummaries._recreated,
    CodeModule.DraftChanged: ModuleSummaries._draft_changed,
    CodeModule.Reverted: ModuleSummaries._draft_changed,
    CodeModule.Published: ModuleSummaries._published,
    CodeModule.DraftDiscarded: ModuleSummaries._draft_discarded,
    CodeModule.Deleted: ModuleSummaries._deleted,
}
