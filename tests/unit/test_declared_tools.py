"""The tools file: what it declares, what it refuses (every problem at once, each named by its
path), and how a native tool's call turns out. The MCP calls themselves are in
tests/integration/test_declared_mcp_tool.py."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from toolkinds.declared.kind import LOCAL, MCP
from domain.catalog import DeclaredTool
from infrastructure.declared_tools import ToolsFileError, load_declared_tools
from infrastructure.settings import Settings

SECRET = "s3cr3t-weather-token"


def tools_file(tmp_path: Path, document: Any) -> Path:
    path = tmp_path / "tools.json"
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    return path


def load(tmp_path: Path, document: Any) -> dict[str, DeclaredTool]:
    return {tool.entry.name: tool for tool in load_declared_tools(tools_file(tmp_path, document))}


def problems(tmp_path: Path, document: Any) -> list[str]:
    with pytest.raises(ToolsFileError) as refused:
        load_declared_tools(tools_file(tmp_path, document))
    assert str(tmp_path / "tools.json") in str(refused.value)
    assert "\n" not in str(refused.value)
    return refused.value.problems


def native(name: str = "add", entrypoint: str = "tests.native_tools:add", **more: Any) -> dict[str, Any]:
    return {"name": name, "description": f"The {name} tool", "entrypoint": entrypoint, **more}


def mcp(name: str = "weather", **more: Any) -> dict[str, Any]:
    return {"name": name, "description": "Today's weather", "url": "https://weather.example/mcp",
            "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}, **more}


# -- what a good file declares ------------------------------------------------------------------------------


def test_no_tools_file_declares_nothing() -> None:
    assert load_declared_tools(None) == []


def test_a_good_file_declares_each_tool_with_its_catalog_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WEATHER_TOKEN", SECRET)
    tools = load(tmp_path, {
        "native": [native(tags=["math"], exposeInChat=True), native("greet", "tests.native_tools:greet", enabled=False)],
        "mcp": [mcp(remoteName="current_weather", tags=["weather", "external"],
                    headers={"Authorization": "Bearer ${WEATHER_TOKEN}"}, timeoutMillis=2_500)],
    })
    assert sorted(tools) == ["add", "greet", "weather"]

    add = tools["add"].entry
    assert (add.call_type, add.description, add.tags, add.expose_in_chat, add.enabled) == (LOCAL, "The add tool", ("math",), True, True)
    # derived from `def add(a: int, b: int = 2)`
    assert add.input_schema == {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer", "default": 2}},
                                "required": ["a"], "additionalProperties": False}
    greet = tools["greet"].entry
    assert (greet.expose_in_chat, greet.enabled) == (False, False)
    assert greet.input_schema["properties"]["name"] == {"type": "string", "description": "Who to greet"}
    assert greet.input_schema["required"] == ["name"]

    weather = tools["weather"]
    assert weather.entry.call_type == MCP and weather.entry.tags == ("weather", "external")
    assert weather.entry.input_schema["required"] == ["city"]
    assert (weather.remote_name, weather.timeout_millis, weather.url) == ("current_weather", 2_500, "https://weather.example/mcp")  # type: ignore[attr-defined]


def test_an_mcp_tool_is_called_by_its_own_name_and_waits_ten_seconds_unless_told(tmp_path: Path) -> None:
    weather = load(tmp_path, {"mcp": [mcp()]})["weather"]
    assert (weather.remote_name, weather.timeout_millis) == ("weather", 10_000)  # type: ignore[attr-defined]


def test_a_declared_input_schema_is_kept_as_written(tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0}}, "required": ["a"]}
    assert load(tmp_path, {"native": [native(inputSchema=schema)]})["add"].entry.input_schema == schema


def test_the_tools_file_setting_comes_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLSMITH_TOOLS_FILE", str(tmp_path / "tools.json"))
    assert Settings().tools_file == tmp_path / "tools.json"
    monkeypatch.setenv("TOOLSMITH_TOOLS_FILE", "")
    assert Settings().tools_file is None


# -- what a bad file is refused for ---------------------------------------------------------------------------


def test_every_problem_of_a_file_is_named_at_once_by_its_path(tmp_path: Path) -> None:
    found = problems(tmp_path, {
        "native": [native("1add"), native("divide", "tests.nowhere:divide"), native("add", exposeInChat="yes")],
        "mcp": [mcp(url="ftp://weather.example/mcp", inputSchema={"type": "objet"}), mcp("divide", timeoutMillis=50)],
        "natives": [],
    })
    assert "natives: unknown key (did you mean 'native'?)" in found
    assert "native[0].name: must not start with a digit (R1)" in found
    assert "native[1].entrypoint: no module named 'tests.nowhere'" in found
    assert "native[2].exposeInChat: input should be a valid boolean" in found
    assert "mcp[0].url: must be an http(s) URL" in found
    assert any(p.startswith("mcp[0].inputSchema: not a valid JSON Schema") for p in found)
    assert "mcp[1].name: 'divide' is already declared at native[1] (R2)" in found
    assert "mcp[1].timeoutMillis: input should be greater than or equal to 100" in found
    assert len(found) == 8, found


def test_a_file_that_is_not_json_is_refused_with_the_line_and_column(tmp_path: Path) -> None:
    assert problems(tmp_path, '{"native": [\n  {"name": "add",}\n]}') == ["not JSON: Expecting property name enclosed in double quotes at line 2 column 18"]


def test_a_file_that_cannot_be_read_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ToolsFileError, match="cannot be read: No such file or directory"):
        load_declared_tools(tmp_path / "missing.json")


@pytest.mark.parametrize("document, expected", [
    ([], '(file): must be a JSON object: {"native": [...], "mcp": [...]}'),
    ({"native": {}}, "native: must be a JSON array"),
    ({"mcp": ["weather"]}, "mcp[0]: must be a JSON object"),
    ({"native": [native(exposeInchat=True)]}, "native[0].exposeInchat: unknown key (did you mean 'exposeInChat'?)"),
    ({"native": [{"name": "add", "description": "Adds"}]}, "native[0].entrypoint: is required"),
    ({"native": [native(description=" ")]}, "native[0].description: is required (R3)"),
    ({"native": [native(tags=["ok", " "])]}, "native[0].tags[1]: a tag is 1 to 64 visible characters (R9)"),
    ({"native": [native(enabled=1)]}, "native[0].enabled: input should be a valid boolean"),
    ({"native": [native("add"), native("add")]}, "native[1].name: 'add' is already declared at native[0] (R2)"),
    ({"native": [native(name="ex$port")]}, "native[0].name: must not contain '$' (R1)"),
    ({"native": [native(inputSchema={"type": "array"})]},
     'native[0].inputSchema: must be a JSON Schema of an object ("type": "object"): a tool takes named arguments'),
    ({"mcp": [{k: v for k, v in mcp().items() if k != "inputSchema"}]}, "mcp[0].inputSchema: is required"),
    ({"mcp": [mcp(url="weather.example/mcp")]}, "mcp[0].url: must be an http(s) URL"),
    ({"mcp": [mcp(url="https://user:pw@weather.example/mcp")]}, "mcp[0].url: must not carry credentials: put them in headers"),
    ({"mcp": [mcp(remoteName="")]}, "mcp[0].remoteName: must not be empty"),
    ({"mcp": [mcp(headers={"Bad Header": "x"})]}, "mcp[0].headers.Bad Header: is not a valid HTTP header name"),
    ({"mcp": [mcp(headers={"X-Key": "${1KEY}"})]}, "mcp[0].headers.X-Key: ${1KEY} does not name an environment variable"),
])
def test_a_bad_declaration_is_refused_naming_its_field(tmp_path: Path, document: Any, expected: str) -> None:
    assert problems(tmp_path, document) == [expected]


@pytest.mark.parametrize("entrypoint, expected", [
    ("nowhere_at_all:add", "no module named 'nowhere_at_all'"),
    ("tests.native_tools", "must be 'package.module:function'"),
    ("tests.native_tools:subtract", "'tests.native_tools' has no attribute 'subtract'"),
    ("tests.native_tools:NOT_A_FUNCTION", "'NOT_A_FUNCTION' is not callable"),
    ("tests.native_tools:pairs", "'pairs' takes positional-only parameters (values); a tool is called with named arguments"),
    ("tests.native_tools:opaque", "no inputSchema can be derived from its signature"),
])
def test_an_entrypoint_that_cannot_be_called_is_refused_at_load(tmp_path: Path, entrypoint: str, expected: str) -> None:
    [problem] = problems(tmp_path, {"native": [native(entrypoint=entrypoint)]})
    assert problem.startswith(f"native[0].entrypoint: {expected}"), problem


def test_a_declared_schema_spares_a_signature_pydantic_cannot_describe(tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"thing": {}}, "required": ["thing"]}
    assert load(tmp_path, {"native": [native("opaque", "tests.native_tools:opaque", inputSchema=schema)]})


# -- headers: environment variables and secrets ---------------------------------------------------------------


def test_a_missing_environment_variable_is_refused_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WEATHER_TOKEN", raising=False)
    assert problems(tmp_path, {"mcp": [mcp(headers={"Authorization": "Bearer ${WEATHER_TOKEN}"})]}) == [
        "mcp[0].headers.Authorization: environment variable WEATHER_TOKEN is not set"]


def test_an_expanded_secret_is_never_in_a_repr_nor_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WEATHER_TOKEN", SECRET)
    weather = load(tmp_path, {"mcp": [mcp(headers={"Authorization": "Bearer ${WEATHER_TOKEN}"})]})["weather"]
    assert SECRET not in repr(weather) and "Authorization" in repr(weather)
    assert SECRET not in repr(weather.entry)

    # a value that breaks the header is refused without being quoted
    monkeypatch.setenv("WEATHER_TOKEN", SECRET + "\r\nX-Injected: 1")
    with pytest.raises(ToolsFileError) as refused:
        load_declared_tools(tools_file(tmp_path, {"mcp": [mcp(headers={"Authorization": "Bearer ${WEATHER_TOKEN}"})]}))
    assert refused.value.problems == ["mcp[0].headers.Authorization: must not contain a line break or NUL (after expanding variables)"]
    assert SECRET not in str(refused.value)


# -- calling a native tool ------------------------------------------------------------------------------------


def test_a_native_tool_returns_what_its_function_returns(tmp_path: Path) -> None:
    tools = load(tmp_path, {"native": [native(), native("greet", "tests.native_tools:greet"), native("today", "tests.native_tools:today")]})
    result = tools["add"].call({"a": 40}, {})
    assert (result.output, result.error) == (42, None)
    assert result.duration_millis >= 0
    assert tools["greet"].call({"name": "Ada", "excited": True}, {}).output == {"greeting": "Hello, Ada!"}
    # a date becomes its JSON form, as it would in an API response
    assert tools["today"].call({}, {}).output == "2024-05-06"


def test_a_native_tool_that_raises_gives_a_runtime_error_and_is_logged(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    divide = load(tmp_path, {"native": [native("divide", "tests.native_tools:divide")]})["divide"]
    with caplog.at_level(logging.WARNING, logger="toolsmith.tools.native"):
        result = divide.call({"a": 1, "b": 0}, {})
    assert result.output is None
    assert result.error is not None and result.error.as_dict() == {"type": "runtime", "message": "ZeroDivisionError: division by zero"}
    assert any("divide" in r.getMessage() and r.exc_info for r in caplog.records)


def test_arguments_that_miss_the_schema_are_refused_naming_them_before_the_function_runs(tmp_path: Path) -> None:
    add = load(tmp_path, {"native": [native()]})["add"]
    result = add.call({"a": "forty", "c": 1}, {})
    assert result.error is not None and result.error.type == "input"
    assert "a: 'forty' is not of type 'integer'" in result.error.message
    assert "'c' was unexpected" in result.error.message
    missing = add.call({}, {})
    assert missing.error is not None and "'a' is a required property" in missing.error.message


def test_a_result_that_is_not_json_is_a_result_error(tmp_path: Path) -> None:
    endless = load(tmp_path, {"native": [native("endless", "tests.native_tools:endless")]})["endless"]
    result = endless.call({}, {})
    assert result.error is not None and result.error.type == "result" and "object" in result.error.message
