"""Hostile registry answers and addresses: each is one reason (a failed check, or one line for a bad option),
never a traceback or a hang. The answers come from a real HTTP server on loopback that misbehaves on purpose
(the real registry the other tests start never sends them)."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import pytest

from infx.diagnostics import InfxError
from infx.preflight.cli import _mirrors
from infx.preflight.images import RegistryError, resolve_digest, verify_image

DEEP = b"[" * 100_000 + b"]" * 100_000


class _Hostile(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def _answer(self) -> None:
        if self.path.startswith("/token"):  # the token endpoint answers 100,000 levels of nesting
            self.send_response(200)
            self.send_header("Content-Length", str(len(DEEP)))
            self.end_headers()
            if self.command == "GET":
                self.wfile.write(DEEP)
            return
        host, port = self.server.server_address[:2]
        self.send_response(401)
        self.send_header("WWW-Authenticate", f'Bearer realm="http://{host}:{port}/token",service="x",scope="y"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = _answer
    do_HEAD = _answer


@pytest.fixture
def hostile_registry() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hostile)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.timeout(30)
def test_a_100000_deep_token_answer_is_a_failed_check_not_a_recursion_error(hostile_registry: str) -> None:
    with pytest.raises(RegistryError, match="401"):
        resolve_digest(f"{hostile_registry}/team/model:v1", timeout=5)
    check = verify_image(f"{hostile_registry}/team/model:v1", None, timeout=5)
    assert check.status == "fail" and "cannot verify" in check.message and "401" in check.message


@pytest.mark.timeout(5)
@pytest.mark.parametrize("image", ["[::1:5000/team/model:v1", "localhost:abc/team/model:v1"])
def test_a_registry_address_that_is_no_url_is_a_reason(image: str) -> None:
    check = verify_image(image, None, timeout=1)
    assert check.status == "fail" and "bad registry URL" in check.message


@pytest.mark.timeout(5)
@pytest.mark.parametrize(("mirror", "says"), [
    ("docker.io=not-a-url", "not an http(s) URL with a host"),
    ("docker.io=http://[::1", "Invalid IPv6 URL"),
    ("docker.io=ftp://mirror.example", "not an http(s) URL with a host"),
])
def test_a_mirror_that_is_no_url_is_one_line_naming_the_option(mirror: str, says: str) -> None:
    with pytest.raises(InfxError) as info:
        _mirrors([mirror])
    (diag,) = info.value.diagnostics
    assert str(diag).startswith("error: --registry-mirror docker.io: bad registry URL") and says in str(diag)
