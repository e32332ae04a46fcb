"""The Python client behind a company proxy: HTTPS_PROXY (a CONNECT tunnel, here a real one of a few lines on
loopback), NO_PROXY, and TLS verified against a custom CA bundle (AWS_CA_BUNDLE or SSL_CERT_FILE; a CA made here,
with `cryptography`), on an https stub server; its retry policy unchanged through the tunnel
(docs/reference/clients.md#proxies-and-ca-bundles)."""

from __future__ import annotations

import datetime
import ipaddress
import os
import select
import socket
import socketserver
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from local_support import StubServer, json_reply
from tickets_client.client import TicketsClient
from tickets_client.errors import TicketsError

PROXY_VARIABLES = ("HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "ALL_PROXY", "AWS_CA_BUNDLE", "SSL_CERT_FILE")


def _certificate(
    subject: str, key: ec.EllipticCurvePrivateKey, issuer: tuple[str, ec.EllipticCurvePrivateKey], *, ca: bool
):
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
        .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer[0])]))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if not ca:
        names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return builder.sign(issuer[1], hashes.SHA256())


@pytest.fixture(scope="module")
def tls(tmp_path_factory) -> tuple[Path, ssl.SSLContext]:
    """A CA of this test's own (its bundle's path) and a server context whose certificate it signed."""
    where = tmp_path_factory.mktemp("tls")
    ca_key, server_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = _certificate("Tickets test CA", ca_key, ("Tickets test CA", ca_key), ca=True)
    server = _certificate("localhost", server_key, ("Tickets test CA", ca_key), ca=False)
    (where / "ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    (where / "server.pem").write_bytes(server.public_bytes(serialization.Encoding.PEM))
    (where / "server.key").write_bytes(
        server_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(where / "server.pem", where / "server.key")
    return where / "ca.pem", context


class _Tunnel(socketserver.StreamRequestHandler):
    """CONNECT host:port, then bytes both ways until either side closes; anything else 405."""

    def handle(self) -> None:
        method, target, _ = self.rfile.readline().decode("latin-1").split()
        while self.rfile.readline() not in (b"\r\n", b""):
            pass
        self.server.seen.append(f"{method} {target}")  # type: ignore[attr-defined]
        if method != "CONNECT":
            self.wfile.write(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return
        host, port = target.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=5) as upstream:
            self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            ends = {self.connection: upstream, upstream: self.connection}
            while True:
                readable, _, _ = select.select(list(ends), [], [], 5)
                chunks = [(sock, sock.recv(65536)) for sock in readable]
                if not readable or any(not data for _, data in chunks):
                    return
                for sock, data in chunks:
                    ends[sock].sendall(data)


@pytest.fixture
def proxy(monkeypatch) -> Iterator[list[str]]:
    """A CONNECT proxy on loopback, named by HTTPS_PROXY (no other proxy or CA variable set): what it was asked."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Tunnel)
    server.daemon_threads = True
    server.seen = []  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{server.server_address[1]}")
    yield server.seen  # type: ignore[attr-defined]
    server.shutdown()
    server.server_close()


TICKETS = [json_reply(503, {"error": "unavailable", "message": "throttled"}, **{"Retry-After": "0"})] + [
    json_reply(200, {"key": "orders", "ticket": n}) for n in (7, 8)
]


@pytest.mark.parametrize("bundle", ["AWS_CA_BUNDLE", "SSL_CERT_FILE"])
def test_through_the_proxys_tunnel_verified_by_the_ca_bundle_with_the_retry_policy(proxy, tls, monkeypatch, bundle):
    ca, context = tls
    monkeypatch.setenv(bundle, str(ca))
    delays: list[float] = []
    with StubServer(TICKETS, tls=context) as stub:
        client = TicketsClient(stub.url, sleep=delays.append)
        assert client.next("orders") == [7]  # a 503 first, retried as ever
        assert client.next("orders") == [8]
        port = stub.url.rsplit(":", 1)[1]
    assert proxy == [f"CONNECT localhost:{port}"]  # one tunnel, kept alive for all three requests
    assert len(stub.requests) == 3 and stub.connections == 1 and len(delays) == 1
    assert stub.requests[0].headers["idempotency-key"] == stub.requests[1].headers["idempotency-key"]


def test_no_proxy_goes_direct_and_without_the_ca_tls_is_refused(proxy, tls, monkeypatch):
    ca, context = tls
    monkeypatch.setenv("NO_PROXY", "example.com,localhost")
    monkeypatch.setenv("AWS_CA_BUNDLE", str(ca))
    with StubServer(TICKETS[1:], tls=context) as stub:
        assert TicketsClient(stub.url).next("orders") == [7]
        monkeypatch.delenv("AWS_CA_BUNDLE")  # the system's CAs: they never signed this server's certificate
        with pytest.raises(TicketsError) as refused:
            TicketsClient(stub.url, max_attempts=1).next("orders")
    assert proxy == []
    assert (refused.value.status, refused.value.code) == (None, "unreachable")
    assert "CERTIFICATE_VERIFY_FAILED" in refused.value.message


def test_a_proxy_named_without_a_scheme_is_an_http_proxy_as_botocore_takes_it(proxy, tls, monkeypatch):
    """HTTPS_PROXY=host:port (curl and botocore read it as http://host:port), not a host of "" on port 80."""
    ca, context = tls
    monkeypatch.setenv("HTTPS_PROXY", os.environ["HTTPS_PROXY"].removeprefix("http://"))
    monkeypatch.setenv("AWS_CA_BUNDLE", str(ca))
    with StubServer(TICKETS[1:], tls=context) as stub:
        assert TicketsClient(stub.url, max_attempts=1).next("orders") == [7]
    assert len(proxy) == 1 and proxy[0].startswith("CONNECT localhost:")


def test_an_https_proxy_is_refused_at_once_naming_it(monkeypatch):
    """TLS to the proxy itself would be TLS inside TLS, which the client's http.client cannot do: a clear refusal
    when the client is made, rather than every attempt failing on a plain-text connection to a TLS port."""
    monkeypatch.setenv("HTTPS_PROXY", "https://proxy.example:3129")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    with pytest.raises(ValueError, match=r"proxy 'https://proxy.example:3129': only an http:// proxy is supported"):
        TicketsClient("https://abc.lambda-url.us-east-1.on.aws", sign=False)
