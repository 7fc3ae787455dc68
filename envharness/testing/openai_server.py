"""``OpenAIServer``: a scripted OpenAI-compatible chat completions API on 127.0.0.1, for tests.

It lets a test drive a **real** model client (``langchain-openai``'s ``ChatOpenAI``, the
``openai`` SDK, or anything else that speaks the API) without a network or a key. The server
listens on an ephemeral loopback port in a background thread, answers
``POST /v1/chat/completions`` (streamed or not) and ``GET /v1/models``, and records every request
in :attr:`OpenAIServer.requests`.

Each reply comes from a script: a list, consumed one entry per request, or a callable given the
:class:`ChatRequest` (its messages and tools), so a reply can depend on what the model was shown.
An entry is any of:

- a str: an assistant message with that text and no tool call;
- a dict ``{"tool": NAME, "args": {...}}`` (``"id"`` optional): one tool call, its arguments sent
  as a JSON string as the API does; ``{"tool": NAME, "arguments": "RAW"}`` sends ``RAW`` as the
  arguments verbatim (e.g. malformed JSON);
- a list of such dicts: one message with several tool calls;
- a :class:`Reply`: full control (text and tool calls together, usage, status, headers, a raw
  body, a delay); :func:`rate_limited`, :func:`error`, :func:`malformed` and :func:`delayed`
  build the common failures;
- a callable ``f(request) -> entry`` (in a list too).

A reply's ``usage`` is, unless given, ``prompt_tokens`` = the characters of the request's messages
and tools // 4, and ``completion_tokens`` = the characters of the reply's text and arguments // 4
(at least 1); what was sent is kept on the request (:attr:`ChatRequest.usage`). When a list
script runs out, the server answers HTTP 400 (which clients do not retry) saying so.

Point a client at :attr:`OpenAIServer.base_url`, or set the environment variables the OpenAI
clients read (:meth:`OpenAIServer.env`): ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``. Then a model
string such as ``openai:any-name`` goes to this server; EnvHarness's ``--policy`` and
``--designer`` options take such strings. This module needs only the standard library.

Example:
    >>> import json, urllib.request
    >>> with OpenAIServer([{"tool": "say", "args": {"text": "hi"}}]) as server:
    ...     body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "go"}]})
    ...     request = urllib.request.Request(
    ...         server.base_url + "/chat/completions", body.encode(),
    ...         {"Content-Type": "application/json"})
    ...     reply = json.load(urllib.request.urlopen(request))
    >>> reply["choices"][0]["message"]["tool_calls"][0]["function"]
    {'name': 'say', 'arguments': '{"text": "hi"}'}
    >>> server.requests[0].messages, server.requests[0].usage["prompt_tokens"]
    ([{'role': 'user', 'content': 'go'}], 8)
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from envharness.tokens import estimate_tokens

__all__ = [
    "ChatRequest",
    "OpenAIServer",
    "Reply",
    "delayed",
    "error",
    "malformed",
    "rate_limited",
]

_HOST = "127.0.0.1"
_COUNTER_LOCK = threading.Lock()
_NUMBERS = itertools.count(1)  # completion ids and tool-call ids, unique in the process


@dataclass(frozen=True)
class Reply:
    """One scripted answer: an assistant message, or an HTTP failure.

    Attributes:
        content: The assistant's text (``None`` for none).
        tool_calls: Tool calls, each ``{"tool": NAME, "args": {...}}`` or ``{"tool": NAME,
            "arguments": "RAW"}``, optionally with an ``"id"``.
        usage: ``prompt_tokens`` / ``completion_tokens`` to report (the rest are computed).
        finish_reason: Defaults to ``"tool_calls"`` with tool calls, else ``"stop"``.
        status: The HTTP status; other than 200, the body is an OpenAI-style error.
        message: The error message (with a status other than 200).
        headers: Extra response headers (e.g. ``Retry-After``).
        body: A raw body sent verbatim instead of a completion (str, bytes, or a JSON object).
        delay: Seconds to wait before answering (to exercise client timeouts).
    """

    content: str | None = None
    tool_calls: Sequence[Mapping[str, Any]] = ()
    usage: Mapping[str, int] | None = None
    finish_reason: str | None = None
    status: int = 200
    message: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    body: str | bytes | Mapping[str, Any] | None = None
    delay: float = 0.0


def rate_limited(retry_after: float = 0.05, message: str = "Rate limit reached") -> Reply:
    """An HTTP 429 with ``Retry-After`` (seconds), which OpenAI clients wait for and retry."""
    return Reply(status=429, message=message, headers={"Retry-After": f"{retry_after:g}"})


def error(status: int, message: str = "scripted error") -> Reply:
    """An HTTP error with an OpenAI-style JSON error body (4xx other than 408/409/429: no retry)."""
    return Reply(status=status, message=message)


def malformed(body: str = '{"id": "chatcmpl-broken", "choices": [') -> Reply:
    """An HTTP 200 whose body is not a valid completion (cut-off JSON by default)."""
    return Reply(body=body)


def delayed(seconds: float, reply: Any = "(late reply)") -> Reply:
    """``reply`` (any script entry but a callable) sent after ``seconds``."""
    return dataclasses.replace(_as_reply(reply), delay=float(seconds))


@dataclass
class ChatRequest:
    """One request the server received, and what it answered.

    Attributes:
        method: ``"GET"`` or ``"POST"``.
        path: The request path, e.g. ``/v1/chat/completions``.
        headers: The request headers (names lower-cased).
        body: The parsed JSON body (``{}`` when there was none or it was not JSON).
        received: ``time.monotonic()`` when it arrived.
        status: The HTTP status answered (``None`` until answered).
        usage: The ``usage`` object sent (``None`` when none was).
        reply: The ``chat.completion`` object answered (also when it was streamed), else
            ``None``.
    """

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    received: float
    status: int | None = None
    usage: dict[str, int] | None = None
    reply: dict[str, Any] | None = None

    @property
    def model(self) -> str:
        """The model name the client asked for."""
        return str(self.body.get("model", ""))

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The conversation sent, in OpenAI form (``role``, ``content``, ``tool_calls`` ...)."""
        return list(self.body.get("messages") or [])

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The tools offered, in OpenAI form."""
        return list(self.body.get("tools") or [])

    @property
    def tool_names(self) -> list[str]:
        """The names of the tools offered."""
        return [str((tool.get("function") or {}).get("name", "")) for tool in self.tools]

    @property
    def stream(self) -> bool:
        """Whether the client asked for a streamed (server-sent events) answer."""
        return bool(self.body.get("stream"))

    def tool_results(self) -> list[tuple[str, str]]:
        """``(tool name, content)`` of each ``tool`` message, named from the calls they answer."""
        names: dict[str, str] = {}
        results = []
        for message in self.messages:
            for call in message.get("tool_calls") or ():
                names[str(call.get("id"))] = str((call.get("function") or {}).get("name", ""))
            if message.get("role") == "tool":
                name = names.get(str(message.get("tool_call_id")), "")
                results.append((name, _text(message.get("content"))))
        return results

    def last_text(self) -> str:
        """The text of the last message sent (what the model is answering)."""
        return _text(self.messages[-1].get("content")) if self.messages else ""


Script = Sequence[Any] | Callable[[ChatRequest], Any]
"""A list of replies (one per request) or a callable ``f(request) -> reply``."""


class OpenAIServer:
    """A scripted OpenAI-compatible chat completions API on an ephemeral 127.0.0.1 port.

    Use it as a context manager (or call :meth:`start` and :meth:`close`). Only loopback is
    served. Requests are answered concurrently; a delayed reply is dropped (the connection
    closed unanswered) when the server closes first.

    Args:
        script: The replies: a list (one entry per chat completion request) or a callable
            given each :class:`ChatRequest` (entry forms in the module docstring).
        api_key: When given, requests whose ``Authorization`` is not ``Bearer API_KEY`` get
            HTTP 401.
        models: The names ``GET /v1/models`` lists.

    Attributes:
        requests: Every request received, in order (``GET /v1/models`` included).
    """

    def __init__(
        self,
        script: Script,
        *,
        api_key: str | None = None,
        models: Sequence[str] = ("scripted",),
    ) -> None:
        if not callable(script) and (
            isinstance(script, str | bytes) or not isinstance(script, Sequence)
        ):
            raise TypeError(f"script: expected a list or a callable, got {type(script).__name__}")
        self.script = script
        self.api_key = api_key
        self.models = list(models)
        self.requests: list[ChatRequest] = []
        self._next = 0
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle --------------------------------------------------------------------------------

    def start(self) -> OpenAIServer:
        """Starts serving on a free loopback port (idempotent); returns the server."""
        if self._httpd is not None:
            return self
        handler = type("_BoundHandler", (_Handler,), {"server_state": self})
        httpd = ThreadingHTTPServer((_HOST, 0), handler)
        httpd.daemon_threads = True
        self._httpd = httpd
        self._closing.clear()
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            daemon=True,
            name="openai-loopback",
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stops serving, releasing any delayed reply."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._closing.set()
        httpd.shutdown()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- where it is ------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The port served (the server must be started)."""
        if self._httpd is None:
            raise RuntimeError("the server is not started; use it as a context manager")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """The API base URL, ``http://127.0.0.1:PORT/v1`` (what ``OPENAI_BASE_URL`` takes)."""
        return f"http://{_HOST}:{self.port}/v1"

    def env(self) -> dict[str, str]:
        """The environment variables that point OpenAI clients here.

        ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY`` (the server's key, or a placeholder: the
        clients refuse to start without one).
        """
        return {"OPENAI_BASE_URL": self.base_url, "OPENAI_API_KEY": self.api_key or "sk-loopback"}

    # -- what it saw ------------------------------------------------------------------------------

    @property
    def chat_requests(self) -> list[ChatRequest]:
        """The chat completion requests received, in order."""
        with self._lock:
            return [r for r in self.requests if r.path.endswith("/chat/completions")]

    # -- answering --------------------------------------------------------------------------------

    def _record(self, request: ChatRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _reply_for(self, request: ChatRequest) -> Reply:
        """The script's entry for ``request`` (a 400 when a list script is exhausted)."""
        entry: Any
        if callable(self.script):
            entry = self.script
        else:
            with self._lock:
                index = self._next
                self._next += 1
            if index >= len(self.script):
                return error(
                    400,
                    f"the scripted server has no reply left: request {index + 1}, but the "
                    f"script holds {len(self.script)}",
                )
            entry = self.script[index]
        try:
            while callable(entry) and not isinstance(entry, Reply):
                entry = entry(request)
            return _as_reply(entry)
        except Exception as e:  # a broken script answers 500 and keeps the server up
            return error(500, f"the reply script raised {type(e).__name__}: {e}")

    def _wait(self, seconds: float) -> None:
        if seconds > 0:
            self._closing.wait(seconds)


class _Handler(BaseHTTPRequestHandler):
    """Serves one connection for the :class:`OpenAIServer` in :attr:`server_state`."""

    server_state: OpenAIServer
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        """Silent: tests read :attr:`OpenAIServer.requests` instead."""

    def do_GET(self) -> None:  # noqa: N802 - the http.server name
        """``GET /v1/models``; anything else is a 404."""
        request = self._read_request()
        if not self._authorized(request):
            return
        if request.path.rstrip("/").endswith("/models"):
            models = [
                {"id": name, "object": "model", "created": 0, "owned_by": "envharness"}
                for name in self.server_state.models
            ]
            self._send_json(request, 200, {"object": "list", "data": models})
        else:
            self._send_error(request, error(404, f"no route for GET {request.path}"))

    def do_POST(self) -> None:  # noqa: N802 - the http.server name
        """``POST /v1/chat/completions``; anything else is a 404."""
        request = self._read_request()
        if not self._authorized(request):
            return
        if not request.path.rstrip("/").endswith("/chat/completions"):
            self._send_error(request, error(404, f"no route for POST {request.path}"))
            return
        reply = self.server_state._reply_for(request)
        self.server_state._wait(reply.delay)
        if self.server_state._closing.is_set():
            return
        if reply.status != 200:
            self._send_error(request, reply)
        elif reply.body is not None:
            body = reply.body
            if isinstance(body, Mapping):
                self._send_json(request, 200, dict(body), reply.headers)
            else:
                raw = body.encode() if isinstance(body, str) else bytes(body)
                self._send(request, 200, raw, "application/json", reply.headers)
        else:
            completion = _completion(request, reply)
            if request.stream:
                self._send_stream(request, completion, reply.headers)
            else:
                self._send_json(request, 200, completion, reply.headers)

    # -- internals --------------------------------------------------------------------------------

    def _read_request(self) -> ChatRequest:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {}
        request = ChatRequest(
            method=self.command,
            path=self.path.split("?", 1)[0],
            headers={name.lower(): value for name, value in self.headers.items()},
            body=body if isinstance(body, dict) else {},
            received=time.monotonic(),
        )
        self.server_state._record(request)
        return request

    def _authorized(self, request: ChatRequest) -> bool:
        key = self.server_state.api_key
        if key is None or request.headers.get("authorization") == f"Bearer {key}":
            return True
        self._send_error(request, error(401, "Incorrect API key provided"))
        return False

    def _send_error(self, request: ChatRequest, reply: Reply) -> None:
        kind = "rate_limit_error" if reply.status == 429 else "invalid_request_error"
        payload = {"error": {"message": reply.message, "type": kind, "param": None, "code": None}}
        self._send_json(request, reply.status, payload, reply.headers)

    def _send_json(
        self,
        request: ChatRequest,
        status: int,
        payload: dict[str, Any],
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self._send(request, status, json.dumps(payload).encode(), "application/json", headers)

    def _send(
        self,
        request: ChatRequest,
        status: int,
        raw: bytes,
        content_type: str,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        request.status = status
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(raw)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(raw)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (e.g. a timeout)
            pass

    def _send_stream(
        self, request: ChatRequest, completion: dict[str, Any], headers: Mapping[str, str]
    ) -> None:
        request.status = 200
        include_usage = bool((request.body.get("stream_options") or {}).get("include_usage"))
        if not include_usage:
            request.usage = None
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            for chunk in _chunks(completion, include_usage):
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass


def _text(content: Any) -> str:
    """The text of an OpenAI message ``content`` (a str or a list of parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text", "")) if isinstance(part, Mapping) else str(part)
            for part in content
        )
    return "" if content is None else str(content)


def _as_reply(entry: Any) -> Reply:
    """A :class:`Reply` from a script entry (str, tool-call dict, list of them, or a Reply)."""
    if isinstance(entry, Reply):
        return entry
    if isinstance(entry, str):
        return Reply(content=entry)
    if isinstance(entry, Mapping):
        return Reply(tool_calls=(entry,))
    if isinstance(entry, Sequence) and all(isinstance(call, Mapping) for call in entry):
        return Reply(tool_calls=tuple(entry))
    raise TypeError(
        "a script entry must be a str, a tool-call dict {'tool': NAME, 'args': {...}}, a list "
        f"of them, a Reply or a callable; got {type(entry).__name__}"
    )


def _tool_call(call: Mapping[str, Any], number: int) -> dict[str, Any]:
    name = call.get("tool", call.get("name"))
    if not isinstance(name, str) or not name:
        raise TypeError(f"a tool call needs a 'tool' name, got {dict(call)!r}")
    if "arguments" in call:
        arguments = str(call["arguments"])
    else:
        arguments = json.dumps(dict(call.get("args") or {}))
    call_id = str(call.get("id") or f"call_{number}")
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _completion(request: ChatRequest, reply: Reply) -> dict[str, Any]:
    """The ``chat.completion`` object for ``reply``; its usage is recorded on ``request``."""
    with _COUNTER_LOCK:
        number = next(_NUMBERS)
    calls = [_tool_call(call, number * 100 + k) for k, call in enumerate(reply.tool_calls)]
    message: dict[str, Any] = {"role": "assistant", "content": reply.content, "refusal": None}
    if calls:
        message["tool_calls"] = calls
    shown = json.dumps(request.messages) + (json.dumps(request.tools) if request.tools else "")
    written = (reply.content or "") + "".join(c["function"]["arguments"] for c in calls)
    usage = {
        "prompt_tokens": estimate_tokens(shown),
        "completion_tokens": max(1, estimate_tokens(written)),
    }
    usage.update({k: int(v) for k, v in dict(reply.usage or {}).items()})
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    request.usage = dict(usage)
    request.reply = {
        "id": f"chatcmpl-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.model or "scripted",
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": reply.finish_reason or ("tool_calls" if calls else "stop"),
            }
        ],
        "usage": usage,
    }
    return request.reply


def _chunks(completion: dict[str, Any], include_usage: bool) -> Iterator[dict[str, Any]]:
    """The ``chat.completion.chunk`` objects that stream ``completion``."""
    head = {key: completion[key] for key in ("id", "created", "model")}
    head["object"] = "chat.completion.chunk"
    choice = completion["choices"][0]
    message = choice["message"]

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}

    yield chunk({"role": "assistant", "content": message["content"] or ""})
    for index, call in enumerate(message.get("tool_calls") or ()):
        yield chunk({"tool_calls": [{"index": index, **call}]})
    yield chunk({}, choice["finish_reason"])
    if include_usage:
        yield {**head, "choices": [], "usage": completion["usage"]}
