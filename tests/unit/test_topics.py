"""Events recorded before the kinds moved into packages of their own still load, and whatever selects
notifications by topic finds them (`domain/topics.py`)."""

from __future__ import annotations

from eventsourcing.utils import get_topic, resolve_topic

from domain.topics import stored_topics
from toolkinds.api_tools.model import ApiTool
from toolkinds.search_tools.model import SearchTool


def test_an_event_recorded_under_the_kinds_former_module_resolves_to_its_class_now() -> None:
    assert resolve_topic("domain.api_tools:ApiTool.Created") is ApiTool.Created
    assert resolve_topic("domain.search_tools:SearchTool.DocumentReady") is SearchTool.DocumentReady
    assert resolve_topic("domain.search_tools:SearchTool") is SearchTool


def test_a_class_is_stored_under_its_topic_now_first_then_its_former_ones() -> None:
    assert stored_topics(ApiTool.Created) == [get_topic(ApiTool.Created), "domain.api_tools:ApiTool.Created"]
    assert get_topic(ApiTool.Created) == "toolkinds.api_tools.model:ApiTool.Created"
    assert stored_topics(SearchTool.Deleted)[1] == "domain.search_tools:SearchTool.Deleted"


def test_a_class_that_never_moved_has_one_topic() -> None:
    from domain.model import CodeModule

    assert stored_topics(CodeModule.Created) == ["domain.model:CodeModule.Created"]
