"""Local `https` upstreams for tests, with certificates from a throwaway CA made in the test (trustme).

A server under test is told to trust the CA through `SSL_CERT_FILE` (the egress module's TLS
contexts, and the sandbox's workers, read it): `trusted_bundle` writes the CA's certificate to a
file for it. `https_upstream` is tests/upstream.py's recording API behind TLS, with whatever
certificate the test chose: one the CA issued for the right names, for other names, already
expired, or one from a CA nobody trusts.
"""

from __future__ import annotations

import datetime
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import trustme

from tests.upstream import Upstream


def trusted_bundle(ca: trustme.CA, folder: Path) -> Path:
    """The CA's certificate as a PEM file, for `SSL_CERT_FILE`."""
    path = folder / "trusted-ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return path


def expired(ca: trustme.CA, *names: str) -> trustme.LeafCert:
    """A certificate for `names` whose validity ended yesterday."""
    now = datetime.datetime.now(datetime.timezone.utc)
    return ca.issue_cert(*names, not_before=now - datetime.timedelta(days=30), not_after=now - datetime.timedelta(days=1))


@contextmanager
def https_upstream(certificate: trustme.LeafCert) -> Iterator[Upstream]:
    """tests/upstream.py's API on 127.0.0.1 over TLS with `certificate`; its `url` is `https://`."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    certificate.configure_cert(context)
    server = Upstream()
    # The handshake is made on accept: a client that refuses the certificate only ends its own.
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.url = f"https://127.0.0.1:{server.port}"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
