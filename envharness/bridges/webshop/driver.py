"""The process's browser: one Chromium per process, driven by Playwright's sync API.

Playwright's sync API is bound to the thread that started it: its objects must not be touched
from any other thread. So that envs can still be built and stepped from any thread (the rigger
rigs tasks in a thread pool; executors may use threads), the browser lives on one daemon thread of
its own, :class:`BrowserThread`, and every Playwright call is shipped to it with
:meth:`BrowserThread.call` and waited for. Calls from several threads run one at a time, in order.
The browser is launched on first use and closed at interpreter exit; a forked child starts its
own (Playwright objects never cross a fork).

Chromium is Debian's (``apt-get install -y chromium``), never a browser Playwright downloads: its
path is the ``chromium`` option, else ``$ENVHARNESS_CHROMIUM``, else ``/usr/bin/chromium``, else
``chromium`` or ``chromium-browser`` on the ``PATH``.

Example:
    >>> browser_thread().call(lambda: threading.current_thread().name)
    'envharness-browser'
"""

from __future__ import annotations

import atexit
import os
import queue
import shutil
import threading
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from types import ModuleType
from typing import Any, TypeVar

from envharness.errors import BridgeError, DependencyNotInstalled

__all__ = [
    "CHROMIUM_ARGS",
    "CHROMIUM_ENV",
    "DEFAULT_CHROMIUM",
    "BrowserThread",
    "browser_thread",
    "chromium_path",
    "playwright_api",
]

CHROMIUM_ENV = "ENVHARNESS_CHROMIUM"
"""The environment variable naming the Chromium executable."""

DEFAULT_CHROMIUM = "/usr/bin/chromium"
"""Where Debian's ``chromium`` package installs the browser."""

CHROMIUM_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)
"""The command-line flags Chromium is launched with."""

_EXTRA = "web"  # the pip extra that installs playwright
_BRIDGE = "webshop"
_INSTALL = "install it with: apt-get install -y chromium"
_CALL_TIMEOUT = 300.0
_T = TypeVar("_T")


def playwright_api() -> ModuleType:
    """``playwright.sync_api``, or DependencyNotInstalled naming the extra."""
    try:
        from playwright import sync_api
    except ImportError as e:
        raise DependencyNotInstalled(
            "playwright", _EXTRA, purpose="the browser bridges (webshop)"
        ) from e
    return sync_api


def chromium_path(option: str | os.PathLike[str] | None = None) -> str:
    """The Chromium executable to launch.

    Args:
        option: An explicit path (the bridges' ``chromium`` option); wins over the rest.

    Returns:
        The path of an executable file.

    Raises:
        BridgeError: If the chosen path is not an executable file, or none is found; the message
            says how to install Chromium.
    """
    if option is not None:
        source, path = "the chromium option", os.fspath(option)
    elif os.environ.get(CHROMIUM_ENV):
        source, path = f"${CHROMIUM_ENV}", os.environ[CHROMIUM_ENV]
    else:
        found = [DEFAULT_CHROMIUM] if os.access(DEFAULT_CHROMIUM, os.X_OK) else []
        found += [p for p in (shutil.which("chromium"), shutil.which("chromium-browser")) if p]
        if not found:
            raise BridgeError(
                f"Chromium is not installed (looked for {DEFAULT_CHROMIUM} and 'chromium' / "
                f"'chromium-browser' on the PATH); {_INSTALL}, or name the executable with "
                f"${CHROMIUM_ENV} or the chromium option",
                bridge=_BRIDGE,
            )
        return found[0]
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise BridgeError(
            f"Chromium was not found at {path!r} (from {source}); {_INSTALL}, or point "
            f"${CHROMIUM_ENV} or the chromium option at the executable",
            bridge=_BRIDGE,
        )
    return path


class BrowserThread:
    """A daemon thread that owns Playwright and the browsers it launched.

    Every Playwright object must be used only through :meth:`call`, which runs a function on
    this thread and returns its result (or raises its exception) in the caller's thread.
    """

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Future[Any], Callable[..., Any], tuple] | None] = (
            queue.SimpleQueue()
        )
        self._playwright: Any = None
        self._browsers: dict[str, Any] = {}
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name="envharness-browser", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            future, fn, args = job
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn(*args))
            except BaseException as e:  # handed to the caller, who re-raises it
                future.set_exception(e)
            del job, future, fn, args  # hold no env alive while waiting for the next job

    @property
    def alive(self) -> bool:
        """Whether the thread still runs jobs."""
        return self._thread.is_alive() and not self._closed

    def on_thread(self) -> bool:
        """Whether the caller is this thread."""
        return threading.current_thread() is self._thread

    def call(self, fn: Callable[..., _T], *args: Any, timeout: float = _CALL_TIMEOUT) -> _T:
        """Runs ``fn(*args)`` on the browser thread and returns its result.

        Raises:
            BridgeError: If the thread was shut down, or the call takes longer than ``timeout``.
            Exception: Whatever ``fn`` raised.
        """
        if self.on_thread():
            return fn(*args)
        if not self.alive:
            raise BridgeError("the browser thread was shut down (the interpreter is exiting)")
        future: Future[_T] = Future()
        self._jobs.put((future, fn, args))
        try:
            return future.result(timeout)
        except FutureTimeout as e:
            future.cancel()
            raise BridgeError(
                f"the browser did not answer within {timeout:.0f} s; it may be hung", bridge=_BRIDGE
            ) from e

    def post(self, fn: Callable[..., Any], *args: Any) -> None:
        """Queues ``fn(*args)`` to run on the browser thread, without waiting (errors dropped).

        Safe from any thread, the browser thread and garbage-collection finalizers included.
        """
        if self.alive:
            self._jobs.put((Future(), fn, args))

    def browser(self, executable: str) -> Any:
        """The browser launched from ``executable`` (launched on first use; on this thread only).

        Raises:
            BridgeError: If called from another thread, or Chromium fails to launch.
            DependencyNotInstalled: If playwright is missing.
        """
        if not self.on_thread():
            raise BridgeError(
                "Playwright's sync API is bound to one thread: use BrowserThread.call(...) to "
                "reach the browser from another thread"
            )
        browser = self._browsers.get(executable)
        if browser is not None and browser.is_connected():
            return browser
        api = playwright_api()
        if self._playwright is None:
            self._playwright = api.sync_playwright().start()
        try:
            browser = self._playwright.chromium.launch(
                executable_path=executable, headless=True, args=list(CHROMIUM_ARGS)
            )
        except api.Error as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise BridgeError(
                f"Chromium at {executable!r} failed to launch: {first}; {_INSTALL} (Debian's "
                "package, not a Playwright download)",
                bridge=_BRIDGE,
            ) from e
        self._browsers[executable] = browser
        return browser

    def launched(self) -> list[str]:
        """The executables of the browsers running now."""
        return self.call(lambda: [k for k, b in self._browsers.items() if b.is_connected()])

    def _close_all(self) -> None:
        for browser in self._browsers.values():
            try:
                browser.close()
            except Exception:  # noqa: S110 - best effort at exit: the browser may be gone
                pass
        self._browsers.clear()
        if self._playwright is not None:
            try:
                self._playwright.stop()
            except Exception:  # noqa: S110 - best effort at exit
                pass
            self._playwright = None

    def shutdown(self, timeout: float = 10.0) -> None:
        """Closes the browsers and stops the thread. Idempotent."""
        if self._closed:
            return
        if self._thread.is_alive():
            try:
                self.call(self._close_all, timeout=timeout)
            except BaseException:  # noqa: S110 - at exit nothing more can be done
                pass
        self._closed = True
        self._jobs.put(None)
        self._thread.join(timeout)


_THREADS: dict[int, BrowserThread] = {}
_THREADS_LOCK = threading.Lock()


def browser_thread() -> BrowserThread:
    """This process's browser thread, started on first use (a fresh one after a fork)."""
    with _THREADS_LOCK:
        current = _THREADS.get(os.getpid())
        if current is None or not current.alive:
            current = _THREADS[os.getpid()] = BrowserThread()
        return current


@atexit.register
def _shutdown() -> None:
    current = _THREADS.get(os.getpid())
    if current is not None:
        current.shutdown()
