"""The projection of module events into a `ModuleReadModel`, one branch per event type.

Every branch, the default included, records the event's tracking record with its write, so the
runner can resume exactly where the read model stopped, whichever implementation holds it.
"""

from __future__ import annotations

from typing import Any

from eventsourcing.dispatch import singledispatchmethod
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

    @singledispatchmethod
    def process_event(self, domain_event: Any, tracking: Tracking) -> None:
        # Events of other aggregates (the import graph) change no summary.
        self.view.insert_tracking(tracking)

    @process_event.register
    def _(self, domain_event: CodeModule.Created, tracking: Tracking) -> None:
        document = new_document(domain_event.tenant, domain_event.module_id)
        document["draft"] = part(domain_event.definition)
        self.view.put(touched(document, domain_event.by, domain_event.timestamp), tracking)

    @process_event.register
    def _(self, domain_event: CodeModule.Recreated, tracking: Tracking) -> None:
        document = self._document(domain_event)
        document.update(draft=part(domain_event.definition), published=None, publishedVersion=None)
        self.view.put(touched(document, domain_event.by, domain_event.timestamp), tracking)

    @process_event.register
    def _(self, domain_event: CodeModule.DraftChanged, tracking: Tracking) -> None:
        document = self._document(domain_event)
        document["draft"] = part(domain_event.definition)
        self.view.put(touched(document, domain_event.by, domain_event.timestamp), tracking)

    @process_event.register
    def _(self, domain_event: CodeModule.Published, tracking: Tracking) -> None:
        document = self._document(domain_event)
        document.update(draft=None, published=part(domain_event.definition), publishedVersion=domain_event.version)
        self.view.put(touched(document, domain_event.by, domain_event.timestamp), tracking)

    @process_event.register
    def _(self, domain_event: CodeModule.DraftDiscarded, tracking: Tracking) -> None:
        document = self._document(domain_event)
        document["draft"] = None
        self.view.put(touched(document, domain_event.by, domain_event.timestamp), tracking)

    @process_event.register
    def _(self, domain_event: CodeModule.Deleted, tracking: Tracking) -> None:
        tenant, module_id = self._key(domain_event)
        self.view.remove(tenant, module_id, tracking)

    def _key(self, domain_event: Any) -> tuple[str, str]:
        return domain_event.tenant, domain_event.module_id

    def _document(self, domain_event: Any) -> dict[str, Any]:
        tenant, module_id = self._key(domain_event)
        document = self.view.document(tenant, module_id)
        return document if document is not None else new_document(tenant, module_id)
