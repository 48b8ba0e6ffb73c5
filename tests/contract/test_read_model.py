"""One contract for every `ModuleReadModel`: the answers the list page and used-by lists rely on.

The read model is fed the way production feeds it: application commands record events, and the
projection runner applies them. New implementations join the `read_model` fixture's parameters.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from eventsourcing.persistence import IntegrityError, Tracking

from application.store import Store
from entrypoints.compose import build_application
from projections.interface import ListQuery, ModuleReadModel
from projections.memory import InMemoryModuleReadModel
from projections.opensearch import OpenSearchModuleReadModel
from projections.modules import ModuleSummaries
from projections.runner import PullingProjectionRunner
from sandbox.embedded import EmbeddedSandbox

TENANT = "contract"
OTHER_TENANT = "elsewhere"


@pytest.fixture(params=["in-memory", "opensearch"])
def read_model(request: pytest.FixtureRequest) -> Iterator[ModuleReadModel]:
    if request.param == "in-memory":
        yield InMemoryModuleReadModel()
        return
    client = request.getfixturevalue("opensearch")
    view = OpenSearchModuleReadModel(client, index=request.getfixturevalue("opensearch_index"), replicas=0)
    yield view


class World:
    """Commands on one side, the read model on the other, kept in step after each command."""

    def __init__(self, read_model: ModuleReadModel) -> None:
        sandbox = EmbeddedSandbox(workers=1)
        self.app = build_application(Store({"PERSISTENCE_MODULE": "eventsourcing.popo"}), sandbox=lambda: sandbox)
        self.view = read_model
        self.runner = PullingProjectionRunner(self.app.store, ModuleSummaries(view=read_model))
        self.sync()  # as the runner's start does: prepares the view's storage

    def sync(self) -> None:
        self.runner.catch_up()

    def module(self, module_id: str, description: str = "", *, tags: list[str] | None = None, imports: list[str] = (),
               publish: bool = False, tenant: str = TENANT) -> None:
        tool = {"tags": tags} if tags is not None else None
        source = "exports.run = function () { return 1; }; exports.x = 1;"
        self.app.modules.create(tenant, module_id, description=description or f"{module_id} module", content=source,
                        imports=list(imports), tool=tool, by="tester")
        if publish:
            self.app.modules.publish(tenant, module_id, by="tester")
        self.sync()

    def ids(self, **query: object) -> list[str]:
        return [m["id"] for m in self.view.list(TENANT, ListQuery(**query)).collection]


@pytest.fixture
def world(read_model: ModuleReadModel) -> Iterator[World]:
    yield World(read_model)


def test_an_empty_tenant_lists_nothing_with_zero_facets(world: World) -> None:
    page = world.view.list(TENANT, ListQuery())
    assert page.total == 0 and page.collection == []
    assert page.facets["state"] == {"PUBLISHED": 0, "DRAFT": 0, "UNPUBLISHED": 0}
    assert page.facets["role"] == {"tool": 0, "library": 0}


def test_summaries_follow_every_event(world: World) -> None:
    world.module("dates", "Date helpers", publish=True)
    summary = world.view.summary(TENANT, "dates")
    assert summary["state"] == "PUBLISHED" and summary["publishedVersion"] == 1 and summary["role"] == "library"
    world.app.modules.update(TENANT, "dates", description="Better date helpers", tool={"tags": ["time"]}, by="tester")
    world.sync()
    summary = world.view.summary(TENANT, "dates")
    assert summary["state"] == "DRAFT" and summary["description"] == "Better date helpers"
    # the role is what callers see: the published version's, until the draft is published
    assert summary["role"] == "library" and summary["tags"] == ["time"] and summary["updatedBy"] == "tester"
    assert world.view.list(TENANT, ListQuery(tool=False)).total == 1 and world.view.list(TENANT, ListQuery(tool=True)).total == 0
    world.app.modules.publish(TENANT, "dates", by="tester")
    world.sync()
    assert world.view.summary(TENANT, "dates")["role"] == "tool"
    world.app.modules.update(TENANT, "dates", description="Better date helpers", tool=None, by="tester")
    world.sync()
    assert world.view.summary(TENANT, "dates")["role"] == "tool"
    world.app.modules.discard_draft(TENANT, "dates", by="tester")
    world.sync()
    summary = world.view.summary(TENANT, "dates")
    assert summary["state"] == "PUBLISHED" and summary["description"] == "Better date helpers" and summary["role"] == "tool"
    world.app.modules.delete(TENANT, "dates", by="tester")
    world.sync()
    assert world.view.summary(TENANT, "dates") is None and not world.view.is_taken(TENANT, "dates")
    world.module("dates", "Second life")
    assert world.view.summary(TENANT, "dates")["state"] == "UNPUBLISHED"


def test_search_filters_and_their_facets(world: World) -> None:
    world.module("dates", "Date helpers", publish=True)
    world.module("report", "Yearly report", tags=["text", "report"], imports=["dates"], publish=True)
    world.module("counter", "Counts the lines of a text", tags=["text"])
    world.module("stranger", "In another tenant", tenant=OTHER_TENANT)

    assert world.ids() == ["counter", "dates", "report"]
    assert world.ids(search="text") == ["counter"]
    assert world.ids(search="REPORT yearly") == ["report"]
    assert world.ids(state="UNPUBLISHED") == ["counter"]
    assert world.ids(tool=True) == ["counter", "report"]
    assert world.ids(tool=False) == ["dates"]
    assert world.ids(tags=("text",)) == ["counter", "report"]
    assert world.ids(tags=("text", "report")) == ["report"]
    assert world.ids(used_by="report") == ["dates"]
    assert world.ids(used_by="nobody") == []
    # a plan or an agent named `report` also uses `counter`: both lists together
    assert world.ids(used_by="report", also_used=("counter",)) == ["counter", "dates"]
    assert world.ids(used_by="aPlan", also_used=("counter", "stranger")) == ["counter"]

    page = world.view.list(TENANT, ListQuery(tool=True))
    assert page.total == 2
    assert page.facets == {
        "state": {"PUBLISHED": 1, "DRAFT": 0, "UNPUBLISHED": 1},
        "role": {"tool": 2, "library": 0},
        "tags": {"text": 2, "report": 1},
    }


def test_paging_and_ordering(world: World) -> None:
    for name, description in (("b", "Zeta"), ("a", "Beta"), ("c", "alpha")):
        world.module(name, description)
    world.app.modules.publish(TENANT, "c", by="tester")
    world.sync()
    assert world.ids(order_by="id") == ["a", "b", "c"]
    assert world.ids(order_by="id", ascending=False) == ["c", "b", "a"]
    assert world.ids(order_by="description") == ["c", "a", "b"]  # case-insensitive
    assert world.ids(order_by="state") == ["c", "a", "b"]  # PUBLISHED before UNPUBLISHED, then by id
    page = world.view.list(TENANT, ListQuery(offset=1, limit=1))
    assert page.total == 3 and [m["id"] for m in page.collection] == ["b"]
    assert world.view.list(TENANT, ListQuery(offset=5)).collection == []


def test_used_by_counts_draft_and_published_imports(world: World) -> None:
    world.module("lib", publish=True)
    world.module("published_user", imports=["lib"], publish=True)
    world.module("draft_user")
    world.app.modules.update(TENANT, "draft_user", imports=["lib"], by="tester")
    world.sync()
    assert world.view.used_by(TENANT, "lib") == ["draft_user", "published_user"]
    assert world.view.used_by(OTHER_TENANT, "lib") == []


def test_used_by_counts_of_a_page_agree_with_the_used_by_lists(world: World) -> None:
    world.module("lib", publish=True)
    world.module("other_lib", publish=True)
    world.module("lonely")
    world.module("published_user", imports=["lib", "other_lib"], publish=True)
    world.module("draft_user")
    world.app.modules.update(TENANT, "draft_user", imports=["lib"], by="tester")
    world.module("gone_user", imports=["lib"])
    world.app.modules.delete(TENANT, "gone_user", by="tester")
    world.module("lib", tenant=OTHER_TENANT, publish=True)
    world.module("elsewhere_user", imports=["lib"], tenant=OTHER_TENANT)
    world.sync()
    ids = ["lib", "other_lib", "lonely", "published_user", "no_such_module"]
    counts = world.view.used_by_counts(TENANT, ids)
    assert counts == {"lib": 2, "other_lib": 1, "lonely": 0, "published_user": 0, "no_such_module": 0}
    assert counts == {i: len(world.view.used_by(TENANT, i)) for i in ids}
    assert world.view.used_by_counts(OTHER_TENANT, ["lib", "other_lib"]) == {"lib": 1, "other_lib": 0}
    assert world.view.used_by_counts(TENANT, []) == {}


def test_availability_is_per_tenant(world: World) -> None:
    world.module("taken")
    assert world.view.is_taken(TENANT, "taken")
    assert not world.view.is_taken(OTHER_TENANT, "taken")


def test_an_event_is_applied_once_and_tracking_resumes(world: World) -> None:
    world.module("once", publish=True)
    position = world.view.max_tracking_id(world.app.store.name)
    assert position == world.app.store.position()
    # applying an already-applied notification again is refused, and the document is unchanged
    document = world.view.document(TENANT, "once")
    with pytest.raises(IntegrityError):
        world.view.put(document, Tracking(world.app.store.name, position))
    assert world.runner.catch_up() == 0
    assert world.view.summary(TENANT, "once")["publishedVersion"] == 1
