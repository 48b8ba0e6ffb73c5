"""`http.fetch` against a real HTTP server on 127.0.0.1 (docs/javascript.md): requests, redirects, caps and
time, then the same through QuickJS.

The server is allow-listed as `127.0.0.1:<port>`, the exact host and port, which is what lets a
loopback address through.
"""

from __future__ import annotations

import gzip
import json
import shutil
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import _quickjs
import pytest

from sandbox.net import FETCH_JS, AllowList, Fetcher


# How long /slow takes to answer and /trickle to send its body: a fetch bounded by less ends
# before either, the bound a test asserts, whatever the machine's speed (issue 28, finding 10).
SLOW_SECONDS = 3
TRICKLE_SECONDS = 3


class Handler(BaseHTTPRequestHandler):
    server: Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.server.seen.append(self.path)
        path, query = urlsplit(self.path).path, parse_qs(urlsplit(self.path).query)
        if path == "/hello":
            self.reply(200, "hello ✓".encode(), [("Content-Type", "text/plain; charset=utf-8"), ("X-Test", "yes"), ("X-Test", "again")])
        elif path == "/latin1":
            self.reply(200, "café".encode("latin-1"), [("Content-Type", "text/plain; charset=ISO-8859-1")])
        elif path == "/redirect":
            self.reply(int(query.get("code", ["302"])[0]), b"", [("Location", query["to"][0])])
        elif path == "/loop":
            self.reply(302, b"", [("Location", "/loop")])
        elif path == "/big":
            self.reply(200, b"x" * int(query["size"][0]))
        elif path == "/bomb":
            self.reply(200, gzip.compress(b"\0" * 10_000_000), [("Content-Encoding", "gzip")])
        elif path == "/gzip":
            self.reply(200, gzip.compress(b"small and compressed"), [("Content-Encoding", "gzip")])
        elif path == "/slow":
            time.sleep(SLOW_SECONDS)
            self.reply(200, b"late")
        elif path == "/trickle":
            self.send_response(200)
            self.send_header("Content-Length", "30")
            self.end_headers()
            for _ in range(30):
                self.wfile.write(b"x")
                self.wfile.flush()
                time.sleep(TRICKLE_SECONDS / 30)
        else:
            self.reply(404, b"no such path")

    def do_POST(self) -> None:
        self.server.seen.append(self.path)
        path, query = urlsplit(self.path).path, parse_qs(urlsplit(self.path).query)
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if path == "/redirect":
            self.reply(int(query["code"][0]), b"", [("Location", query["to"][0])])
            return
        echo = {"method": self.command, "body": body.decode(), "contentType": self.headers.get("Content-Type"), "xTest": self.headers.get("X-Test")}
        self.reply(201, json.dumps(echo).encode(), [("Content-Type", "application/json")])

    do_PUT = do_POST

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "5")
        self.end_headers()

    def reply(self, status: int, body: bytes, headers: Sequence[tuple[str, str]] = ()) -> None:
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.seen: list[str] = []
        self.port = self.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"


def serving(server: Server) -> Iterator[Server]:
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def server() -> Iterator[Server]:
    yield from serving(Server())


@pytest.fixture
def other_server() -> Iterator[Server]:
    """A second server the allow-list does not name."""
    yield from serving(Server())


def fetcher_for(server: Server, **caps: Any) -> Fetcher:
    return Fetcher(AllowList.parse(f"127.0.0.1:{server.port}"), **caps)


def fetch(f: Fetcher, url: str, remaining: float = 5.0, **request: Any) -> dict[str, Any]:
    return json.loads(f.fetch(json.dumps({"url": url, **request}), remaining))


# -- requests ---------------------------------------------------------------------------------------


def test_get_gives_status_headers_and_text(server: Server) -> None:
    answer = fetch(fetcher_for(server), f"{server.url}/hello")
    assert answer["status"] == 200
    assert answer["text"] == "hello ✓"
    assert answer["headers"]["x-test"] == "yes, again"
    assert answer["headers"]["content-type"] == "text/plain; charset=utf-8"
    assert answer["url"] == f"{server.url}/hello"


def test_text_decoded_with_the_charset_the_server_names(server: Server) -> None:
    assert fetch(fetcher_for(server), f"{server.url}/latin1")["text"] == "café"


def test_gzip_body_decoded(server: Server) -> None:
    assert fetch(fetcher_for(server), f"{server.url}/gzip")["text"] == "small and compressed"


def test_post_body_and_headers_reach_the_server(server: Server) -> None:
    answer = fetch(fetcher_for(server), f"{server.url}/echo", method="post", headers={"Content-Type": "application/json", "X-Test": "1"}, body='{"a": "é"}')
    assert answer["status"] == 201
    assert json.loads(answer["text"]) == {"method": "POST", "body": '{"a": "é"}', "contentType": "application/json", "xTest": "1"}


def test_head_has_no_text(server: Server) -> None:
    answer = fetch(fetcher_for(server), f"{server.url}/hello", method="HEAD")
    assert (answer["status"], answer["headers"]["content-length"], answer["text"]) == (200, "5", "")


def test_localhost_not_allowed_when_only_the_address_is_listed(server: Server) -> None:
    assert fetch(fetcher_for(server), f"http://localhost:{server.port}/hello") == {"error": f"domain not allowed: localhost:{server.port}"}
    assert server.seen == []


def test_other_port_of_the_same_address_not_allowed(server: Server, other_server: Server) -> None:
    assert fetch(fetcher_for(server), f"{other_server.url}/hello") == {"error": f"domain not allowed: 127.0.0.1:{other_server.port}"}
    assert other_server.seen == []


def test_proxies_from_the_environment_never_used(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    assert fetch(fetcher_for(server), f"{server.url}/hello")["text"] == "hello ✓"


# -- redirects ---------------------------------------------------------------------------------------


def test_redirect_to_the_same_allowed_server_followed(server: Server) -> None:
    answer = fetch(fetcher_for(server), f"{server.url}/redirect?to=/hello")
    assert (answer["status"], answer["text"], answer["url"]) == (200, "hello ✓", f"{server.url}/hello")
    assert server.seen == ["/redirect?to=/hello", "/hello"]


def test_redirect_to_a_host_not_allowed_refused(server: Server, other_server: Server) -> None:
    answer = fetch(fetcher_for(server), f"{server.url}/redirect?to={other_server.url}/hello")
    assert answer == {"error": f"domain not allowed: 127.0.0.1:{other_server.port}"}
    assert other_server.seen == []


def test_redirect_to_metadata_refused(server: Server) -> None:
    answer = fetch(fetcher_for(server), f"{server.url}/redirect?to=http://169.254.169.254/latest/meta-data/")
    assert answer == {"error": "metadata address refused: 169.254.169.254"}


def test_redirect_to_another_scheme_refused(server: Server) -> None:
    assert fetch(fetcher_for(server), f"{server.url}/redirect?to=file:///etc/passwd") == {"error": "only http and https URLs are allowed"}


def test_redirect_loop_capped(server: Server) -> None:
    assert fetch(fetcher_for(server, max_redirects=3), f"{server.url}/loop") == {"error": "too many redirects (more than 3)"}
    assert server.seen == ["/loop"] * 4  # the request and three redirects


def test_303_after_post_becomes_get_without_body(server: Server) -> None:
    answer = fetch(fetcher_for(server), f"{server.url}/redirect?code=303&to=/hello", method="POST", body="gone")
    assert (answer["status"], answer["text"]) == (200, "hello ✓")


def test_307_keeps_method_and_body(server: Server) -> None:
    answer = fetch(fetcher_for(server), f"{server.url}/redirect?code=307&to=/echo", method="POST", body="kept")
    assert json.loads(answer["text"])["method"] == "POST"
    assert json.loads(answer["text"])["body"] == "kept"


# -- caps ----------------------------------------------------------------------------------------------


def test_big_body_capped(server: Server) -> None:
    f = fetcher_for(server, max_response_bytes=1000)
    assert fetch(f, f"{server.url}/big?size=1000")["text"] == "x" * 1000
    assert fetch(f, f"{server.url}/big?size=1001") == {"error": "response body larger than 1000 bytes"}


def test_compressed_body_capped_after_decoding(server: Server) -> None:
    assert fetch(fetcher_for(server), f"{server.url}/bomb") == {"error": "response body larger than 1048576 bytes"}


def test_slow_server_times_out_within_the_remaining_time(server: Server) -> None:
    started = time.monotonic()
    assert fetch(fetcher_for(server), f"{server.url}/slow", remaining=0.5) == {"error": "timed out after 0.5 s"}
    assert time.monotonic() - started < SLOW_SECONDS  # ended by its own bound, not by the server's answer


def test_time_bounds_the_whole_request_not_each_read(server: Server) -> None:
    # one byte every 0.1 s: every read is quick, the whole body takes 3 s
    started = time.monotonic()
    assert fetch(fetcher_for(server), f"{server.url}/trickle", remaining=0.6) == {"error": "timed out after 0.6 s"}
    assert time.monotonic() - started < TRICKLE_SECONDS  # not at the body's end


def test_service_cap_applies_when_more_time_remains(server: Server) -> None:
    started = time.monotonic()
    assert fetch(fetcher_for(server, max_seconds=0.4), f"{server.url}/slow", remaining=30) == {"error": "timed out after 0.4 s"}
    assert time.monotonic() - started < SLOW_SECONDS


# -- TLS: the certificate is checked against the name, while the socket goes to the address ------------


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[tuple[Server, Path, list[str]]]:
    assert shutil.which("openssl"), "this test makes its certificate with the openssl command: install openssl"
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=secure.test",
         "-addext", "subjectAltName=DNS:secure.test", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    names: list[str] = []
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    context.sni_callback = lambda sock, name, ctx: names.append(name)
    server = Server()
    server.socket = context.wrap_socket(server.socket, server_side=True)
    for running in serving(server):
        yield running, cert, names


def test_https_verifies_the_certificate_against_the_name(tls_server: tuple[Server, Path, list[str]]) -> None:
    server, cert, sni = tls_server
    trusted = ssl.create_default_context(cafile=str(cert))
    both_local = {"secure.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]}
    f = Fetcher(
        AllowList.parse(f"secure.test:{server.port}, other.test:{server.port}"),
        resolve=lambda host, port: both_local[host],
        ssl_context=trusted,
    )
    assert fetch(f, f"https://secure.test:{server.port}/hello")["text"] == "hello ✓"
    assert sni == ["secure.test"]
    # the same address under a name the certificate does not carry
    answer = fetch(f, f"https://other.test:{server.port}/hello")
    assert answer["error"].startswith("could not connect: [SSL: CERTIFICATE_VERIFY_FAILED]")
    assert "other.test" in answer["error"]


# -- through JavaScript ----------------------------------------------------------------------------------


def js_context(f: Fetcher, seconds: float = 5.0) -> _quickjs.Context:
    context = _quickjs.Context()
    context.add_callable("$fetch", f.host_function(time.monotonic() + seconds))
    context.eval("var http = (" + FETCH_JS + ")($fetch); delete globalThis.$fetch;")
    return context


def run_async(context: _quickjs.Context, body: str) -> Any:
    """Runs `body` in an async function, drains the jobs, and gives what it put in `out`."""
    context.eval("var out; (async function () {" + body + "})().catch(function (e) { out = 'uncaught: ' + e; });")
    while context.execute_pending_job():
        pass
    return json.loads(context.get("out"))


def test_js_fetch_resolves_with_status_headers_and_text(server: Server) -> None:
    context = js_context(fetcher_for(server))
    out = run_async(
        context,
        f"""var r = await http.fetch("{server.url}/hello");
        out = JSON.stringify({{status: r.status, ok: r.ok, text: r.text, test: r.headers["x-test"], frozen: Object.isFrozen(r)}});""",
    )
    assert out == {"status": 200, "ok": True, "text": "hello ✓", "test": "yes, again", "frozen": True}


def test_js_fetch_posts_and_parses_json(server: Server) -> None:
    context = js_context(fetcher_for(server))
    out = run_async(
        context,
        f"""var r = await http.fetch("{server.url}/echo", {{method: "POST", headers: {{"X-Test": 7}}, body: JSON.stringify({{n: 1}})}});
        out = JSON.stringify(r.json());""",
    )
    assert out == {"method": "POST", "body": '{"n":1}', "contentType": "text/plain;charset=UTF-8", "xTest": "7"}


def test_js_refused_fetch_is_a_catchable_error_and_the_context_lives_on(server: Server) -> None:
    context = js_context(fetcher_for(server))
    out = run_async(
        context,
        """try { await http.fetch("http://169.254.169.254/latest/meta-data/"); out = '"resolved"'; }
        catch (e) { out = JSON.stringify({isError: e instanceof Error, message: e.message}); }""",
    )
    assert out == {"isError": True, "message": "metadata address refused: 169.254.169.254"}
    out = run_async(
        context,
        f"""try {{ await http.fetch("http://localhost:{server.port}/hello"); }}
        catch (e) {{ out = JSON.stringify(e.message); }}""",
    )
    assert out == f"domain not allowed: localhost:{server.port}"
    assert context.eval("1+1") == 2


def test_js_options_must_be_an_object(server: Server) -> None:
    context = js_context(fetcher_for(server))
    out = run_async(context, f"""try {{ await http.fetch("{server.url}/hello", 5); }} catch (e) {{ out = JSON.stringify([e.name, e.message]); }}""")
    assert out == ["TypeError", "http.fetch: options must be an object"]
    assert server.seen == []


def test_js_sees_no_host_function_and_cannot_replace_fetch(server: Server) -> None:
    context = js_context(fetcher_for(server))
    assert context.eval("typeof $fetch") == "undefined"
    context.eval("try { http.fetch = function () { return 'mine'; }; } catch (e) {}")
    assert context.eval("Object.isFrozen(http) && http.fetch('x') instanceof Promise")


def test_js_fetch_bounded_by_the_call_deadline(server: Server) -> None:
    context = js_context(fetcher_for(server), seconds=0.5)
    started = time.monotonic()
    out = run_async(context, f"""try {{ await http.fetch("{server.url}/slow"); }} catch (e) {{ out = JSON.stringify(e.message); }}""")
    assert out.startswith("timed out after 0.")
    assert time.monotonic() - started < SLOW_SECONDS
