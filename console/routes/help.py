"""The console's page of the rules (`GET /console/rules`): every rule the service enforces, in the admin's
words, grouped as docs/rules.md groups them and each at the anchor that page gives it (`#r10`), so that a
refusal's "Learn more" link (console.language.rule_refs, fragments/rules.html) lands on the rule it broke.
The codes stay out of the page, as out of every console page (console/language.py)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from console.language import EXPLAINED, RULES, RULES_PAGE
from console.routing import ConsoleRoute
from console.security import Reader

router = APIRouter(route_class=ConsoleRoute, include_in_schema=False)

# docs/rules.md's sections, with the rules each holds.
SECTIONS = (
    ("Names and limits", ("R1", "R2", "R3", "R4", "R5", "R6")),
    ("Draft and published version", ("R7", "R8", "R9")),
    ("Publish, discard, delete", ("R10", "R11", "R12", "R13")),
    ("Callers", ("R14", "R15", "R16")),
    ("The JavaScript environment", ("V1", "V2", "V3", "V4", "V5")),
    ("Beyond draft and publish", ("B1", "B2", "B3", "B4", "B5", "B6", "B7")),
)
assert {code for _, codes in SECTIONS for code in codes} == set(RULES)


@router.get(RULES_PAGE)
def rules_page(request: Request, visitor: Reader) -> Response:
    sections = [{"title": title, "rules": [{"anchor": code.lower(), "words": RULES[code], "text": EXPLAINED[code]}
                                           for code in codes]} for title, codes in SECTIONS]
    return request.app.state.console_pages.render(request, "help/rules.html", sections=sections)
