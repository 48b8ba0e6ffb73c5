"""Named SSRF cases (docs/kinds/api-url-tools.md, "One egress path"), for any test of an egress policy.

Every case must be refused, and refused before any connection is attempted. A case is a URL (for a
redirect case, where an allowed server's redirect points) and, where it has a name, what the
test's resolver answers for it. `api_only` marks the few that only API URL tools refuse: plain
`http` to a public address, which `http.fetch` reaches when its allow-list names the host.

Hosts are reached on their default ports, so that `http.fetch`'s allow-list can name them with
bare entries (ports 80 and 443) and what refuses them is the address rule, not the allow-list.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class SsrfCase:
    name: str
    url: str
    what: str  # what the case is, and why it must be refused
    answers: Mapping[str, list[str]] = field(default_factory=dict)  # the resolver's, by ASCII name
    redirect: bool = False  # `url` is where a redirect from an allowed server points
    api_only: bool = False  # refused by API URL tools; `http.fetch` may reach it once allow-listed

    def __str__(self) -> str:  # the pytest id
        return self.name


PUBLIC = "93.184.216.34"

CASES: tuple[SsrfCase, ...] = (
    # -- loopback, in every spelling a resolver or a URL parser accepts
    SsrfCase("loopback", "https://127.0.0.1/", "the IPv4 loopback address"),
    SsrfCase("loopback-decimal", "https://2130706433/", "127.0.0.1 as one decimal number"),
    SsrfCase("loopback-hex", "https://0x7f000001/", "127.0.0.1 as one hex number"),
    SsrfCase("loopback-hex-octets", "https://0x7f.0.0.1/", "127.0.0.1 with a hex first octet"),
    SsrfCase("loopback-octal", "https://0177.0.0.1/", "127.0.0.1 with an octal first octet"),
    SsrfCase("loopback-short", "https://127.1/", "127.0.0.1 in the two-part short form"),
    SsrfCase("zero-short", "https://0/", "0.0.0.0 as one number (reaches the local host)"),
    SsrfCase("unspecified", "https://0.0.0.0/", "the unspecified address (reaches the local host)"),
    SsrfCase("loopback-fullwidth", "https://１２７.０.０.１/", "127.0.0.1 in full-width digits"),
    SsrfCase("loopback-trailing-dot", "https://127.0.0.1./", "127.0.0.1 with a trailing dot"),
    SsrfCase("ipv6-loopback", "https://[::1]/", "the IPv6 loopback address"),
    SsrfCase("ipv6-unspecified", "https://[::]/", "the IPv6 unspecified address"),
    # -- IPv4 carried inside IPv6
    SsrfCase("ipv4-mapped", "https://[::ffff:127.0.0.1]/", "loopback as an IPv4-mapped IPv6 address"),
    SsrfCase("ipv4-mapped-hex", "https://[::ffff:7f00:1]/", "the same, its IPv4 part in hex"),
    SsrfCase("ipv4-compatible", "https://[::127.0.0.1]/", "loopback as a (deprecated) IPv4-compatible address"),
    SsrfCase("nat64", "https://[64:ff9b::7f00:1]/", "loopback through the NAT64 well-known prefix"),
    SsrfCase("6to4", "https://[2002:7f00:1::]/", "loopback as a 6to4 address"),
    SsrfCase("teredo", "https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", "a Teredo address whose client is 127.0.0.1"),
    # -- private, link-local, CGNAT and other non-public ranges
    SsrfCase("private-10", "https://10.0.0.1/", "RFC 1918 private"),
    SsrfCase("private-172", "https://172.16.0.1/", "RFC 1918 private"),
    SsrfCase("private-192", "https://192.168.1.1/", "RFC 1918 private"),
    SsrfCase("cgnat", "https://100.64.0.1/", "carrier-grade NAT shared space"),
    SsrfCase("link-local", "https://169.254.1.1/", "IPv4 link-local"),
    SsrfCase("multicast", "https://224.0.0.1/", "IPv4 multicast"),
    SsrfCase("ipv6-link-local", "https://[fe80::1]/", "IPv6 link-local"),
    SsrfCase("ipv6-zone", "https://[fe80::1%25eth0]/", "IPv6 link-local with a zone identifier"),
    SsrfCase("ipv6-unique-local", "https://[fc00::1]/", "IPv6 unique local (private)"),
    # -- cloud metadata: never, whatever the allow-list says
    SsrfCase("metadata-aws", "https://169.254.169.254/latest/meta-data/", "the AWS, GCP and Azure metadata address"),
    SsrfCase("metadata-ecs", "https://169.254.170.2/v2/credentials", "the ECS task credentials address"),
    SsrfCase("metadata-alibaba", "https://100.100.100.200/latest/meta-data/", "the Alibaba Cloud metadata address"),
    SsrfCase("metadata-aws-ipv6", "https://[fd00:ec2::254]/", "the AWS metadata address over IPv6"),
    SsrfCase("metadata-mapped", "https://[::ffff:169.254.169.254]/", "the metadata address, IPv4-mapped"),
    SsrfCase("metadata-name", "https://metadata.google.internal/computeMetadata/v1/", "the GCP metadata name"),
    SsrfCase("metadata-name-upper", "https://METADATA.Google.Internal/", "the GCP metadata name in capitals"),
    SsrfCase("metadata-name-trailing-dot", "https://metadata.google.internal./", "the GCP metadata name, fully qualified"),
    # -- URL parsing tricks
    SsrfCase("userinfo", "https://public.example@127.0.0.1/", "user info that looks like the host; the host is 127.0.0.1"),
    SsrfCase("userinfo-backslash", "https://public.example\\@127.0.0.1/", "a backslash some parsers read as a path"),
    SsrfCase("fragment", "https://127.0.0.1#@public.example/", "a fragment that looks like user info and a host"),
    # -- names: what they resolve to is judged, every answer
    SsrfCase("name-private", "https://internal.example/", "a name resolving to a private address",
             {"internal.example": ["10.0.0.5"]}),
    SsrfCase("name-loopback-upper", "https://LOCALHOST/", "localhost, in capitals", {"localhost": ["127.0.0.1"]}),
    SsrfCase("name-public-and-private", "https://mixed.example/", "a name resolving to a public and a private address",
             {"mixed.example": [PUBLIC, "10.0.0.1"]}),
    SsrfCase("name-metadata", "https://meta.example/", "a name resolving to the metadata address",
             {"meta.example": ["169.254.169.254"]}),
    SsrfCase("name-mapped", "https://mapped.example/", "a name resolving to an IPv4-mapped private address",
             {"mapped.example": ["::ffff:10.0.0.1"]}),
    SsrfCase("name-idn", "https://bücher.example/", "an internationalised name resolving to loopback",
             {"xn--bcher-kva.example": ["127.0.0.1"]}),
    # -- schemes
    SsrfCase("file", "file:///etc/passwd", "a local file"),
    SsrfCase("gopher", "gopher://127.0.0.1:70/_GET%20/", "gopher, which writes raw bytes to any port"),
    SsrfCase("dict", "dict://127.0.0.1:11211/stats", "dict, another raw-bytes scheme"),
    SsrfCase("http-public", "http://public.example/", "plain http to a public address, with no entry for it",
             {"public.example": [PUBLIC]}, api_only=True),
    # -- redirects: each hop is checked as the first URL was, before connecting to it
    SsrfCase("redirect-private", "https://10.0.0.1/", "a redirect to a private address", redirect=True),
    SsrfCase("redirect-loopback-decimal", "https://2130706433/", "a redirect to loopback as one number", redirect=True),
    SsrfCase("redirect-name-loopback", "https://rebind.example/", "a redirect to a name resolving to loopback",
             {"rebind.example": ["127.0.0.1"]}, redirect=True),
    SsrfCase("redirect-metadata", "http://169.254.169.254/latest/meta-data/", "a redirect to the metadata address",
             redirect=True),
    SsrfCase("redirect-metadata-name", "http://metadata.google.internal/", "a redirect to the metadata name",
             redirect=True),
    SsrfCase("redirect-file", "file:///etc/passwd", "a redirect to a local file", redirect=True),
    SsrfCase("redirect-to-http", "http://public.example/", "a redirect from https down to plain http",
             {"public.example": [PUBLIC]}, redirect=True, api_only=True),
)
