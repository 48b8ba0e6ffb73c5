"""The examples gallery (docs/examples.md): named sets of things to load into a running Toolsmith
through its public REST API, as an admin would, with `toolsmith examples load <set>`.

Each set is one JSON file beside this module, `<set>.json`:

    {"description": "one line `toolsmith examples list` prints",
     "items": [{"collection": "/api/v1/admin/code-modules", "body": {... the create body ...},
                "publish": true}, ...]}

An item is created by `POST <collection>` with its `body` (whose `id` names it), then, with
`publish`, published by `POST <collection>/<id>/publish`. Any kind whose REST API has that shape
(code modules, prompts, resources, ...) fits; items load in the order listed, so a module another
imports comes first. Loading is idempotent: an item whose `GET <collection>/<id>` answers 200 is
left as it is (published if it never was), and reported as already there.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from importlib import resources
from typing import Any, TextIO

import httpx


@dataclass(frozen=True)
class Item:
    collection: str
    body: dict[str, Any]
    publish: bool

    @property
    def id(self) -> str:
        return str(self.body["id"])

    @property
    def path(self) -> str:
        return f"{self.collection.rstrip('/')}/{self.id}"


@dataclass(frozen=True)
class ExampleSet:
    name: str
    description: str
    items: tuple[Item, ...]


def names() -> list[str]:
    """Every set of the gallery, by name."""
    return sorted(entry.name.removesuffix(".json") for entry in resources.files(__package__).iterdir()
                  if entry.name.endswith(".json"))


def load_set(name: str) -> ExampleSet:
    """The set `name` (KeyError naming the sets there are, when there is none by that name)."""
    if name not in names():
        raise KeyError(f"no example set {name!r}; the sets are: {', '.join(names())}")
    data = json.loads(resources.files(__package__).joinpath(f"{name}.json").read_text(encoding="utf-8"))
    items = tuple(Item(collection=i["collection"], body=i["body"], publish=bool(i.get("publish", False)))
                  for i in data["items"])
    return ExampleSet(name=name, description=data["description"], items=items)


class LoadFailed(Exception):
    """The service refused an item: the message names it and quotes the answer."""


def _refused(item: Item, step: str, answer: httpx.Response) -> LoadFailed:
    try:
        detail = answer.json()
        said = detail.get("detail") or detail.get("title") or answer.text
    except ValueError:
        said = answer.text
    return LoadFailed(f"{item.id}: {step} answered {answer.status_code}: {str(said)[:500]}")


def load(example: ExampleSet, client: httpx.Client, out: TextIO = sys.stdout) -> tuple[int, int]:
    """Load every item of `example` through `client` (its base URL and admin token set). Prints one
    line per item; answers (created, already there). Raises LoadFailed at the first refusal."""
    created = existing = 0
    for item in example.items:
        current = client.get(item.path)
        if current.status_code == 200:
            existing += 1
            state = current.json().get("state")
            if item.publish and state == "UNPUBLISHED":
                _publish(item, client)
                print(f"exists     {item.id} (published now)", file=out)
            else:
                print(f"exists     {item.id} (left as it is)", file=out)
            continue
        if current.status_code != 404:
            raise _refused(item, f"GET {item.path}", current)
        answer = client.post(item.collection, json=item.body)
        if answer.status_code not in (200, 201):
            raise _refused(item, f"POST {item.collection}", answer)
        if item.publish:
            _publish(item, client)
        created += 1
        print(f"{'published' if item.publish else 'created':<10} {item.id}", file=out)
    return created, existing


def _publish(item: Item, client: httpx.Client) -> None:
    answer = client.post(f"{item.path}/publish")
    if answer.status_code != 200:
        raise _refused(item, f"POST {item.path}/publish", answer)
