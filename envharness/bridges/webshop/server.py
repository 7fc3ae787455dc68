"""The shop's web server: the pages of :mod:`~envharness.bridges.webshop.pages` over HTTP.

A ``ThreadingHTTPServer`` on ``127.0.0.1`` and an ephemeral port, run by a daemon thread. The site
is stateless (all state is in the URL), so one server per process serves every env;
:func:`shared_server` starts it on first use.

Example:
    >>> from urllib.request import urlopen
    >>> server = shared_server()
    >>> with urlopen(server.url + "/search?q=french+press") as answer:
    ...     answer.status, b"Brewhaus" in answer.read()
    (200, True)
"""

from __future__ import annotations

import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from envharness.bridges.webshop.catalogue import Catalogue, load_catalogue
from envharness.bridges.webshop.pages import render

__all__ = ["ShopServer", "shared_server"]


class _Handler(BaseHTTPRequestHandler):
    """Answers GET and HEAD with a rendered page; other methods with 405."""

    server: _HTTPServer
    server_version = "EnvHarnessShop/1.0"

    def do_GET(self) -> None:  # noqa: N802 - the name http.server dispatches to
        self._answer(with_body=True)

    def do_HEAD(self) -> None:  # noqa: N802
        self._answer(with_body=False)

    def _answer(self, *, with_body: bool) -> None:
        if self.path.split("?", 1)[0] == "/favicon.ico":
            self.send_response(204)
            self.end_headers()
            return
        page = render(self.server.catalogue, self.path)
        body = page.html.encode("utf-8")
        self.send_response(page.status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if with_body:
            self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base's name
        """Silent: requests are not logged."""


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, catalogue: Catalogue) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.catalogue = catalogue


class ShopServer:
    """The shop served on ``127.0.0.1`` from a daemon thread.

    Args:
        catalogue: The products to sell (the package's catalogue by default).

    Attributes:
        url: The base URL, e.g. ``http://127.0.0.1:41233`` (no trailing slash).
    """

    def __init__(self, catalogue: Catalogue | None = None) -> None:
        self._httpd = _HTTPServer(catalogue or load_catalogue())
        host, port = self._httpd.server_address[:2]
        self.url = f"http://{host}:{port}"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name="envharness-webshop-server", daemon=True
        )
        self._thread.start()

    @property
    def running(self) -> bool:
        """Whether the serving thread is alive."""
        return self._thread.is_alive()

    def close(self) -> None:
        """Stops serving and frees the port. Idempotent."""
        if self._thread.is_alive():
            self._httpd.shutdown()
            self._thread.join(timeout=5)
        self._httpd.server_close()

    def __repr__(self) -> str:
        return f"<ShopServer {self.url}>"


_SHARED: dict[int, ShopServer] = {}
_SHARED_LOCK = threading.Lock()


def shared_server() -> ShopServer:
    """This process's shop server, started on first use (a fresh one in a forked child)."""
    with _SHARED_LOCK:
        server = _SHARED.get(os.getpid())
        if server is None or not server.running:
            server = _SHARED[os.getpid()] = ShopServer()
        return server
