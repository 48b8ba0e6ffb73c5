"""Issue 28, finding 3, without I/O: `domain.redaction.Redactor` replaces every form a
credential can be sent in, in texts and JSON values, and leaves every other text as it was."""

from __future__ import annotations

import base64
import json
import re
from urllib.parse import quote, quote_plus, urlencode

import pytest

from domain.redaction import SHOWN, Redactor

KEY = 'k3y/with+plus & space=eq"quote\\back-slash é'
TOKEN = "eyJhbGciOiJSUzI1NiJ9.access-token-value"


def lower_hex(text: str) -> str:
    return re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), text)


FORMS = {
    "raw": KEY,
    "quote": quote(KEY, safe=""),
    "quote keeping /": quote(KEY),
    "quote, lower-case hex": lower_hex(quote(KEY, safe="")),
    "quote_plus": quote_plus(KEY, safe=""),
    "quote_plus, lower-case hex": lower_hex(quote_plus(KEY)),
    "a form body": urlencode({"client_secret": KEY}),
    "JSON": json.dumps({"k": KEY}),
    "JSON, ASCII only": json.dumps({"k": KEY}, ensure_ascii=True),
    "JSON of a JSON": json.dumps(json.dumps({"k": KEY})),
    "base64 of user:pass": base64.b64encode(f"svc:{KEY}".encode()).decode(),
    "base64 of another user's user:pass": base64.b64encode(f"someone-else:{KEY}".encode()).decode(),
    "base64 of the key at each alignment": " ".join(base64.b64encode(p.encode() + KEY.encode()).decode() for p in ("", "a", "ab")),
    "URL-safe base64": base64.urlsafe_b64encode(f"xy{KEY}".encode()).decode(),
    "the token": f"Bearer {TOKEN}",
    "the token percent-encoded": quote(TOKEN, safe=""),
}


@pytest.mark.parametrize("form", list(FORMS))
def test_every_form_is_replaced(form: str) -> None:
    redactor = Redactor([KEY, TOKEN], sent=[f"svc:{KEY}"])
    shown = redactor.text(FORMS[form])
    assert SHOWN in shown
    assert KEY not in shown and TOKEN not in shown
    assert not any(f in shown for f in (quote(KEY, safe=""), quote_plus(KEY, safe=""), base64.b64encode(f"svc:{KEY}".encode()).decode()))


def test_the_basic_pair_sent_is_replaced_whole_with_its_padding() -> None:
    encoded = base64.b64encode(f"svc:{KEY}".encode()).decode()
    assert Redactor([KEY], sent=[f"svc:{KEY}"]).text(f"Authorization: Basic {encoded}.") == f"Authorization: Basic {SHOWN}."


def test_json_values_keys_included() -> None:
    redactor = Redactor([KEY, TOKEN])
    value = {"echo": {"headers": {"authorization": f"Bearer {TOKEN}"}, "path": "/x?k=" + quote(KEY, safe="")},
             KEY: [1, 2.5, None, True, f"-{KEY}-"]}
    assert redactor.value(value) == {"echo": {"headers": {"authorization": f"Bearer {SHOWN}"}, "path": f"/x?k={SHOWN}"},
                                     SHOWN: [1, 2.5, None, True, f"-{SHOWN}-"]}


@pytest.mark.parametrize("secret", ["plain-secret-value-1234", 'with "quote"', "back\\slash\\value", "123456789"])
def test_a_value_without_the_secret_is_given_back_as_it_is(secret: str) -> None:
    value = {"a": [1, "two", {"three": 3.0}], "n": 123456789 if secret != "123456789" else 1, "text": "nothing here"}
    redactor = Redactor([secret])
    assert redactor.value(value) is value
    assert redactor.text("nothing here") == "nothing here"


def test_a_secret_that_is_also_a_number_in_the_answer() -> None:
    # the JSON text's replacement would not read back: each string is replaced instead
    assert Redactor(["123456789"]).value({"n": 123456789, "s": "id 123456789"}) == {"n": 123456789, "s": f"id {SHOWN}"}


def test_a_value_orjson_cannot_write_is_walked() -> None:
    redactor = Redactor(["secret-value-99"])
    assert redactor.value(["\ud800", "a secret-value-99", 2**70]) == ["\ud800", f"a {SHOWN}", 2**70]


def test_no_secrets_no_change() -> None:
    value = {"k": "v"}
    assert Redactor([]).value(value) is value and Redactor(["", ""]).text("text") == "text"
    assert not Redactor([])
