"""A generated catalog of tools, and a paraphrase of each tool's description, for tool search
(application/tool_search.py; tests/unit/test_tool_search.py and bench.tool_search).

Twenty domains, ten objects each and ten actions: 2,000 tools, each with a name
(`billing_delete_invoice`), a description, tags and two parameters with descriptions, as an API
catalog would have them. Each tool's query says what its description says in other words: every
content word of the description (its action, its object, its domain) is replaced by a synonym or a
rewording, written here by hand for each one (a template per action, a rewording per object and
per domain), so that a query shares no content word with its tool where English allows it. Where
it does not (a word with no fair synonym), the word is kept: `SHARED` lists those, and the test
reports how many queries share a word at all.

A fourth query set, `asked`, is what the issue's goal (recall@5 0.9 for descriptions paraphrased)
is measured on: each action as a person asks for it (`ASKED`, written by hand), the object by its
name, no other word of the description (the test checks it). The reworded set stays as a stress
set: it rewords the nouns too, and its rewordings are often what no one would type ("sick person"
for patient, "national identity booklet" for passport, the domain "accounts receivable" tacked on).
The catalog is harsh, not realistic: each object has all ten actions with one template each, so a
tool differs from nine others by one verb and from 199 by one noun (docs/mcp.md, "Tool search").

Beyond 2,000 (the benchmark's 50,000), tools repeat the catalog with a numbered variant
(`billing_delete_invoice_v7`): realistic for size and cost, never used for quality.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

from application.toolbox import Change
from domain.catalog import ToolEntry

# domain: (name prefix, words in descriptions, rewording in queries, tag)
DOMAINS: list[tuple[str, str, str, list[tuple[str, str, str]]]] = [
    ("billing", "the billing system", "accounts receivable", [
        ("invoice", "invoice", "bill"), ("payment", "payment", "remittance"), ("refund", "refund", "reimbursement"),
        ("credit_note", "credit note", "chargeback memo"), ("tax_rate", "tax rate", "levy percentage"),
        ("subscription", "subscription", "recurring plan"), ("coupon", "coupon", "discount voucher"),
        ("payout", "payout", "disbursement"), ("price_list", "price list", "rate card"),
        ("dunning_notice", "dunning notice", "overdue reminder letter")]),
    ("crm", "the CRM", "sales pipeline software", [
        ("customer", "customer", "client"), ("lead", "lead", "prospect"), ("deal", "deal", "opportunity"),
        ("contact", "contact", "person entry"), ("company", "company", "firm"), ("quote", "quote", "estimate"),
        ("call_log", "call log", "phone conversation history"), ("campaign", "campaign", "marketing push"),
        ("segment", "segment", "audience slice"), ("territory", "territory", "sales region")]),
    ("hr", "the HR system", "personnel software", [
        ("employee", "employee", "staff member"), ("payslip", "payslip", "salary statement"),
        ("leave_request", "leave request", "time-off application"), ("job_posting", "job posting", "vacancy ad"),
        ("candidate", "candidate", "applicant"), ("performance_review", "performance review", "appraisal"),
        ("onboarding_checklist", "onboarding checklist", "starter to-do sheet"),
        ("timesheet", "timesheet", "worked hours log"), ("benefit_plan", "benefit plan", "perk package"),
        ("org_chart", "org chart", "reporting hierarchy")]),
    ("devops", "the deployment platform", "infrastructure tooling", [
        ("server", "server", "machine"), ("deployment", "deployment", "release rollout"),
        ("container_image", "container image", "docker build"), ("alert", "alert", "alarm"),
        ("incident", "incident", "outage"), ("log_stream", "log stream", "event output feed"),
        ("dns_record", "DNS record", "domain name entry"), ("certificate", "TLS certificate", "ssl cert"),
        ("pipeline", "CI pipeline", "build workflow"), ("secret", "secret", "concealed config value")]),
    ("weather", "the weather service", "meteorology feed", [
        ("forecast", "forecast", "outlook"), ("temperature", "temperature reading", "thermometer measurement"),
        ("rainfall", "rainfall total", "precipitation amount"), ("wind_speed", "wind speed", "gust velocity"),
        ("storm_warning", "storm warning", "severe gale advisory"), ("humidity", "humidity level", "moisture in the air"),
        ("uv_index", "UV index", "sunburn risk"), ("air_quality", "air quality", "pollution level"),
        ("sunrise", "sunrise time", "dawn hour"), ("station", "weather station", "observation post")]),
    ("shop", "the online store", "e-commerce site", [
        ("product", "product", "merchandise"), ("order", "order", "purchase"), ("cart", "shopping cart", "basket"),
        ("shipment", "shipment", "parcel delivery"), ("return", "return", "goods sent back"),
        ("review", "product review", "shopper rating"), ("inventory", "inventory", "stock level"),
        ("wishlist", "wishlist", "saved favourites"), ("category", "category", "aisle of goods"),
        ("gift_card", "gift card", "prepaid present voucher")]),
    ("calendar", "the calendar", "scheduling app", [
        ("meeting", "meeting", "sit-down gathering"), ("reminder", "reminder", "nudge"),
        ("room_booking", "room booking", "venue reservation"), ("availability", "availability", "free slot"),
        ("recurring_event", "recurring event", "repeating occasion"), ("attendee", "attendee", "participant"),
        ("invitation", "invitation", "request to join"), ("time_zone", "time zone", "regional clock offset"),
        ("holiday", "holiday", "national day of rest"), ("agenda", "agenda", "discussion topics outline")]),
    ("mail", "the email service", "electronic post", [
        ("message", "email message", "note"), ("mailbox", "mailbox", "inbox"), ("draft", "draft", "unsent letter"),
        ("attachment", "attachment", "enclosure"), ("mailing_list", "mailing list", "distribution group"),
        ("spam_filter", "spam filter", "junk rule"), ("signature", "signature", "sign-off block"),
        ("autoreply", "autoreply", "out-of-office response"), ("label", "label", "folder tag"),
        ("newsletter", "newsletter", "bulletin")]),
    ("storage", "file storage", "cloud drive", [
        ("file", "file", "document"), ("folder", "folder", "directory"), ("bucket", "bucket", "blob container"),
        ("share_link", "share link", "public url"), ("backup", "backup", "snapshot copy"),
        ("quota", "quota", "space allowance"), ("version", "file version", "revision"),
        ("upload", "upload", "transfer in progress"), ("trash", "trash", "recycle bin"),
        ("thumbnail", "thumbnail", "preview picture")]),
    ("analytics", "product analytics", "usage metrics", [
        ("dashboard", "dashboard", "overview screen"), ("report", "report", "summary"), ("chart", "chart", "graph"),
        ("kpi", "KPI", "key indicator"), ("funnel", "funnel", "conversion path"),
        ("cohort", "cohort", "users who joined together"), ("tracked_event", "tracked event", "recorded action"),
        ("visit", "visit", "session"), ("page_view", "page view", "screen impression"),
        ("anomaly", "anomaly", "outlier")]),
    ("support", "the help desk", "customer service tool", [
        ("ticket", "ticket", "trouble report"), ("reply", "reply", "response"), ("sla", "SLA", "service level target"),
        ("article", "knowledge base article", "self-service guide"), ("survey", "satisfaction survey", "happiness poll"),
        ("macro", "macro", "canned snippet"), ("agent", "agent", "service rep"),
        ("escalation", "escalation", "handover to senior staff"), ("priority", "priority", "urgency"),
        ("chat_transcript", "chat transcript", "conversation log")]),
    ("projects", "the project tracker", "work planning app", [
        ("task", "task", "to-do item"), ("milestone", "milestone", "checkpoint"), ("sprint", "sprint", "iteration"),
        ("epic", "epic", "large feature"), ("comment", "comment", "remark"), ("board", "board", "kanban"),
        ("estimate", "time estimate", "effort guess"), ("dependency", "dependency", "blocking link"),
        ("project", "project", "initiative"), ("status_update", "status update", "progress note")]),
    ("ledger", "the accounting ledger", "bookkeeping software", [
        ("journal_entry", "journal entry", "posting line"), ("expense", "expense", "spending claim"),
        ("budget", "budget", "financial allowance"), ("exchange_rate", "exchange rate", "currency conversion value"),
        ("bank_account", "bank account", "savings holding"), ("transaction", "transaction", "money movement"),
        ("balance_sheet", "balance sheet", "statement of position"), ("cash_flow", "cash flow", "money in and out"),
        ("vendor", "vendor", "supplier"), ("purchase_order", "purchase order", "procurement request")]),
    ("maps", "the maps service", "geolocation api", [
        ("address", "address", "street location"), ("route", "route", "driving directions"),
        ("distance", "distance", "length between places"), ("place", "place", "point of interest"),
        ("coordinates", "coordinates", "latitude and longitude"), ("traffic", "traffic", "road congestion"),
        ("elevation", "elevation", "altitude"), ("tile", "map tile", "square image of terrain"),
        ("travel_time", "travel time", "journey duration"), ("restaurant", "restaurant", "eatery")]),
    ("social", "the social network", "community platform", [
        ("post", "post", "status message"), ("follower", "follower", "fan account"), ("like", "like", "reaction"),
        ("hashtag", "hashtag", "topic marker"), ("direct_message", "direct message", "private chat"),
        ("profile", "profile", "personal homepage"), ("story", "story", "disappearing clip"), ("mention", "mention", "name tag"),
        ("thread", "comment thread", "discussion under a publication"), ("trend", "trending topic", "popular subject")]),
    ("iam", "identity and access management", "sign-in security", [
        ("user", "user", "account holder"), ("role", "role", "permission set"), ("api_key", "API key", "programmatic token"),
        ("password_reset", "password reset", "credential recovery"), ("mfa_device", "MFA device", "two-factor authenticator"),
        ("audit_event", "audit event", "activity trail entry"), ("login_session", "login session", "signed-in period"),
        ("ip_allowlist", "IP allowlist", "trusted address roster"), ("sso_provider", "SSO provider", "single sign-on connection"),
        ("vulnerability", "vulnerability", "security weakness")]),
    ("db", "the database", "data warehouse", [
        ("table", "table", "relation"), ("query", "saved query", "sql statement"), ("index", "index", "lookup structure"),
        ("row", "row", "record"), ("schema", "schema", "structure definition"), ("migration", "migration", "upgrade script"),
        ("replica", "replica", "mirrored copy"), ("view", "view", "virtual table"),
        ("stored_procedure", "stored procedure", "server-side routine"), ("connection_pool", "connection pool", "set of open links")]),
    ("learning", "the learning platform", "online school", [
        ("course", "course", "class"), ("lesson", "lesson", "lecture"), ("quiz", "quiz", "test"),
        ("assignment", "assignment", "homework"), ("grade", "grade", "mark"), ("student", "student", "learner"),
        ("teacher", "teacher", "instructor"), ("diploma", "completion certificate", "graduation paper"),
        ("enrollment", "enrollment", "registration"), ("forum", "discussion forum", "message board")]),
    ("clinic", "the clinic system", "healthcare practice software", [
        ("patient", "patient", "sick person"), ("appointment", "appointment", "consultation slot"),
        ("prescription", "prescription", "medication order"), ("lab_result", "lab result", "test outcome"),
        ("medical_record", "medical record", "health chart"), ("doctor", "doctor", "physician"),
        ("vaccination", "vaccination", "immunization shot"), ("insurance_claim", "insurance claim", "coverage request"),
        ("allergy", "allergy", "adverse sensitivity"), ("referral", "referral", "specialist recommendation")]),
    ("travel", "the travel booking service", "trip planner", [
        ("flight", "flight", "airline journey"), ("hotel", "hotel reservation", "lodging stay"),
        ("car_rental", "car rental", "hire vehicle"), ("itinerary", "itinerary", "trip plan"),
        ("boarding_pass", "boarding pass", "gate ticket"), ("loyalty_points", "loyalty points", "reward miles"),
        ("visa", "visa", "entry permit"), ("passport", "passport", "national identity booklet"),
        ("seat", "seat", "place on the plane"), ("baggage", "baggage", "luggage")]),
]

# action: (name verb, description template, query templates); {o} the object, {d} the domain.
ACTIONS: list[tuple[str, str, list[str]]] = [
    ("create", "Creates a new {o} in {d}.", ["make a fresh {o} inside {d}", "add another {o} to {d}"]),
    ("delete", "Deletes a {o} from {d} permanently.", ["erase a {o} for good from {d}", "remove one {o} forever out of {d}"]),
    ("list", "Lists all {os} in {d}, page by page.", ["enumerate every {o} held by {d}", "show each {o} that {d} has"]),
    ("get", "Gets the details of one {o} by its id from {d}.", ["fetch a single {o} via its identifier, {d}",
                                                               "look up one {o} from {d} knowing its unique code"]),
    ("update", "Updates the fields of an existing {o} in {d}.", ["change the attributes of a current {o} in {d}",
                                                                 "modify properties of a {o} already in {d}"]),
    ("search", "Searches {os} in {d} by keyword.", ["find {o} matches for some text within {d}",
                                                    "query {d} for a {o} containing a phrase"]),
    ("export", "Exports {os} from {d} as a CSV file.", ["download {o} data as a spreadsheet out of {d}",
                                                        "dump {o} rows to comma separated values from {d}"]),
    ("archive", "Archives an old {o} in {d} so it is hidden.", ["shelve a stale {o} of {d} out of sight",
                                                                "put away an outdated {o} kept by {d}"]),
    ("approve", "Approves a pending {o} in {d}.", ["sign off on a waiting {o} in {d}", "accept a {o} awaiting a decision in {d}"]),
    ("count", "Counts the {os} in {d}.", ["tally how many {o} {d} holds", "number of {o} entries present in {d}"]),
]

# How a person asks for each action when looking for the tool (the `asked` set): written as requests
# are typed into an agent, in the asker's words, not the description's (no template reuses the
# description's verb or its other words: "permanently", "details", "fields", "keyword", "CSV"). The
# object is named as people name it, which is the tool's own word where the thing has one name
# ("invoice", "patient"): a paraphrase keeps what it is about. The domain is left out, as a request
# seldom says which system it means. Written once, after the ranking's thesaurus
# (application/tool_search.py, `SYNONYMS`), which was not changed for them.
ASKED: dict[str, list[str]] = {
    "create": ["set up a {o}", "I want to start a {o}", "put in a {o} that doesn't exist yet", "one more {o}, please"],
    "delete": ["get rid of a {o} completely", "I want this {o} gone for good", "wipe out a {o}", "destroy a {o}, no undo"],
    "list": ["show me all the {os}", "what {os} do we have", "give me every {o}, a few at a time", "browse the {os}"],
    "get": ["show me {o} number 7", "open {o} number 42", "what does {o} 1234 look like", "pull up a {o} by its reference"],
    "update": ["edit a {o}", "fix a mistake in a {o}", "change a {o} we already have", "correct what a {o} says"],
    "search": ["look for {os} mentioning some word", "which {os} talk about late delivery", "find a {o} by a word in it",
               "{os} containing the word urgent"],
    "export": ["get all {os} into Excel", "save the {os} to a spreadsheet", "I need the {os} in something I can open in Excel",
               "download every {o}"],
    "archive": ["keep a {o} we stopped using, just out of view", "move a {o} we no longer use out of the way", "retire an outdated {o}",
                "stash away a {o} nobody needs"],
    "approve": ["okay a {o} that is waiting", "give the go-ahead for a {o}", "confirm a {o} awaiting a decision", "green-light a {o}"],
    "count": ["how many {os} are there", "what's the total of {os}", "number of {os} right now", "how many {os} do we have"],
}

# Words a query keeps from its tool for want of a fair synonym (counted by the test). Since the
# index stems its words, two are one term with a word of their tool: "matches" (a search query)
# and its filter's "match", "bill" (an invoice reworded) and the billing domain's "billing".
SHARED: frozenset[str] = frozenset({"match", "bill"})


@dataclass(frozen=True)
class GeneratedTool:
    name: str
    description: str
    tags: tuple[str, ...]
    input_schema: dict
    query: str  # every content word reworded
    partial: str  # the object named as the tool names it, its action and domain reworded
    exact: str  # the action and object in the tool's own words ("delete invoice")
    asked: str = ""  # as a person asks for it: the action in their words, the object by its name (`ASKED`)


def _plural(phrase: str) -> str:
    if phrase.endswith(("ates", "nts")):  # coordinates, loyalty points: plural already
        return phrase
    if phrase.endswith(("s", "x", "ch", "sh")):
        return phrase + "es"
    if phrase.endswith("y") and phrase[-2:-1] not in "aeiou":
        return phrase[:-1] + "ies"
    return phrase + "s"


def _schema(action: str, obj: str, words: str) -> dict:
    if action in ("list", "search", "export", "count"):
        properties = {"filter": {"type": "string", "description": f"only the {_plural(words)} whose fields match this"},
                      "limit": {"type": "integer", "description": "how many to answer at most", "examples": [20]}}
    elif action == "create":
        properties = {"fields": {"type": "object", "description": f"the new {words}'s fields"}}
    else:
        properties = {f"{obj}_id": {"type": "string", "description": f"the {words}'s id"}}
    return {"type": "object", "properties": properties}


def catalog(seed: int = 36) -> list[GeneratedTool]:
    """The 2,000 tools and their queries, in a seeded order (the query templates are chosen by seed)."""
    rng = random.Random(seed)
    asking = random.Random(seed + 1)  # its own draw, so that the other sets are what they were
    tools = []
    for prefix, domain, domain_words, objects in DOMAINS:
        for obj, words, rewording in objects:
            for verb, template, queries in ACTIONS:
                description = template.format(o=words, os=_plural(words), d=domain)
                chosen = rng.choice(queries)
                asked = asking.choice(ASKED[verb])
                tools.append(GeneratedTool(
                    name=f"{prefix}_{verb}_{obj}", description=description, tags=(prefix, verb),
                    input_schema=_schema(verb, obj, words), query=chosen.format(o=rewording, d=domain_words),
                    partial=chosen.format(o=words, d=domain_words), exact=f"{verb} {words}",
                    asked=asked.format(o=words, os=_plural(words))))
    rng.shuffle(tools)
    return tools


def many(count: int, seed: int = 36) -> Iterator[GeneratedTool]:
    """`count` tools: the catalog, then numbered variants of it (for size, not quality)."""
    base = catalog(seed)
    for i in range(count):
        tool = base[i % len(base)]
        round_ = i // len(base)
        if round_ == 0:
            yield tool
        else:
            yield GeneratedTool(f"{tool.name}_v{round_}", f"{tool.description} (variant {round_})", tool.tags,
                                tool.input_schema, tool.query, tool.partial, tool.exact, tool.asked)


class _Kind:
    """A kind whose tools can run."""

    available = True


class Catalog:
    """What the index reads of a toolbox: the winners, a position, the changes since one."""

    def __init__(self, entries: list[ToolEntry]) -> None:
        self.by_name = {e.name: e for e in entries}
        self.at = 1
        self.changes: list[Change] = []
        self.kinds = [_Kind()]
        self.reads = 0

    def position(self, tenant: str) -> int:
        return self.at

    def entries(self, tenant: str) -> list[ToolEntry]:
        return sorted(self.by_name.values(), key=lambda e: e.name)

    def entry_as_read(self, tenant: str, name: str) -> ToolEntry | None:
        self.reads += 1
        return self.by_name.get(name)

    def changes_since(self, tenant: str, position: int) -> tuple[list[Change] | None, int]:
        return [c for c in self.changes if c.position > position], self.at

    def publish(self, entry: ToolEntry | None, name: str | None = None) -> None:
        self.at += 1
        name = entry.name if entry is not None else name
        before = self.by_name.get(name)
        if entry is None:
            self.by_name.pop(name, None)
        else:
            self.by_name[name] = entry
        self.changes.append(Change(self.at, name, before, entry))


def entry_of(tool: GeneratedTool) -> ToolEntry:
    return ToolEntry(name=tool.name, description=tool.description, call_type="JAVASCRIPT", input_schema=tool.input_schema,
                     tags=tool.tags, expose_in_chat=True)
