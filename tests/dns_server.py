"""A tiny DNS server on 127.0.0.1 for tests: what a name resolves to is the test's to say.

A server started with `TOOLSMITH_EGRESS_NAMESERVER=<DnsServer.address>` resolves every outbound
request's names here (infrastructure/egress/resolve.py), so a test makes `evil.test` resolve to
loopback without touching `/etc/hosts`. Each name has one or more answer sets, served in turn: each
A question takes the next set (round and round), and the AAAA question that follows it gets the
same set's IPv6 addresses. A name whose sets are a public address and then loopback "rebinds" on
every second lookup. Answers have a TTL of 0 (`ttl` says another); any other name is NXDOMAIN. Every question is kept
in `asked`.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Iterator, Mapping, Sequence

import dns.exception
import dns.flags
import dns.message
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rrset


class DnsServer:
    """Answers A and AAAA questions over UDP from `names`: each name's answer sets, in turn."""

    def __init__(self, names: Mapping[str, Sequence[Sequence[str]]], *, ttl: int = 0) -> None:
        self.ttl = ttl
        self.names = {name.lower().rstrip("."): [list(answers) for answers in sets] for name, sets in names.items()}
        self.asked: list[tuple[str, str]] = []  # (name, "A" or "AAAA"), in order
        self._turns: dict[str, int] = {}
        self._lock = threading.Lock()
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._socket.bind(("127.0.0.1", 0))
        self.port = self._socket.getsockname()[1]
        threading.Thread(target=self._serve, name="test-dns", daemon=True).start()

    @property
    def address(self) -> str:
        """The value of `TOOLSMITH_EGRESS_NAMESERVER` that points at this server."""
        return f"127.0.0.1:{self.port}"

    def lookups(self, name: str) -> int:
        """How many times `name` was looked up (its A questions)."""
        return sum(1 for asked, kind in self.asked if asked == name and kind == "A")

    def _answers(self, name: str, kind: str) -> list[str] | None:
        sets = self.names.get(name)
        if sets is None:
            return None
        with self._lock:
            self.asked.append((name, kind))
            if kind == "A":
                self._turns[name] = self._turns.get(name, -1) + 1
            chosen = sets[max(self._turns.get(name, 0), 0) % len(sets)]
        version = 4 if kind == "A" else 6
        return [a for a in chosen if ipaddress.ip_address(a).version == version]

    def _serve(self) -> None:
        while True:
            try:
                data, peer = self._socket.recvfrom(4096)
            except OSError:
                return
            try:
                query = dns.message.from_wire(data)
            except dns.exception.DNSException:
                continue
            response = dns.message.make_response(query)
            response.flags |= dns.flags.AA
            for question in query.question:
                name = question.name.to_text().lower().rstrip(".")
                kind = dns.rdatatype.to_text(question.rdtype)
                answers = self._answers(name, kind) if kind in ("A", "AAAA") else []
                if answers is None:
                    response.set_rcode(dns.rcode.NXDOMAIN)
                elif answers:
                    response.answer.append(dns.rrset.from_text_list(question.name, self.ttl, dns.rdataclass.IN, kind, answers))
            try:
                self._socket.sendto(response.to_wire(), peer)
            except OSError:
                return

    def close(self) -> None:
        self._socket.close()


def running(names: Mapping[str, Sequence[Sequence[str]]]) -> Iterator[DnsServer]:
    """A fixture's body: the server for the test's duration."""
    server = DnsServer(names)
    try:
        yield server
    finally:
        server.close()
