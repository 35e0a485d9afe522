"""A scripted OpenAI-compatible server (SGLang/vLLM flavoured), for tests only.

It is a plumbing double: its "model" says exactly what the test scripted. It exists so the
LLM client, the prover and the services can be tested without a model.

Use::

    script = FakeLLMScript(replies=["theorem t : True := by trivial"])
    with serve_fake_llm(script) as base_url:      # "http://127.0.0.1:PORT/v1"
        ...                                        # settings.llm_base_url = base_url
    script.requests                                # every request, in order

Routes: ``POST /v1/chat/completions`` and ``POST /v1/completions`` (``n``, ``stop``,
``max_tokens``/``max_completion_tokens`` -> finish_reason "length" when the scripted text is
cut, ``usage`` with whitespace-token counts, ``stream`` as SSE chunks ending in
``data: [DONE]`` (``stream_options.include_usage`` adds a usage chunk), tool calls in the
OpenAI ``tool_calls`` shape), ``GET /v1/models``, ``GET /health``, ``GET /health_generate``
and ``POST /abort_request`` (SGLang's: ``{"rid": ...}`` or ``{"abort_all": true}``; it records
the rid and ends a slow or streaming response with that ``rid`` early with finish_reason
"abort"). The root routes live at the URL without ``/v1``.

Knobs (attributes of :class:`FakeLLMScript`, changeable while serving): ``replies`` (a list
of texts / :class:`ToolCall` given out one per choice in order, cycling; or a callable
``request body -> list of replies``), ``delay_s`` (before answering), ``chunk_delay_s``
(between streamed chunks), ``fail_next(count, status)`` (the next calls answer that status
with an OpenAI error body; 429 carries ``Retry-After``), ``healthy``, ``model``,
``max_choices`` (serve at most that many choices per request whatever ``n`` asks, like
llama-cpp-python which serves one), ``abort_supported`` (False: ``/abort_request`` answers 404)
and ``health_generate_supported`` (False: ``/health_generate`` answers 404).
Every request is recorded (:class:`RecordedRequest`: path, JSON body including ``rid`` and
``extra_body`` fields, headers).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
import socket
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

Json = dict[str, Any]


@dataclass
class ToolCall:
    """A scripted reply that is a function call instead of text."""

    name: str
    arguments: Json | str
    content: str | None = None

    def arguments_json(self) -> str:
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)


Reply = str | ToolCall


def _default_replies() -> list[Reply]:
    return ["ok"]


@dataclass
class RecordedRequest:
    path: str
    body: Json
    headers: dict[str, str]
    at: float


@dataclass
class FakeLLMScript:
    """What the fake model answers, and what it was asked."""

    replies: list[Reply] | Callable[[Json], list[Reply]] = field(default_factory=lambda: _default_replies())
    model: str = "fake-model"
    delay_s: float = 0.0
    chunk_delay_s: float = 0.0
    healthy: bool = True
    max_choices: int | None = None
    abort_supported: bool = True
    health_generate_supported: bool = True
    requests: list[RecordedRequest] = field(default_factory=list)
    aborted_rids: list[str] = field(default_factory=list)
    url: str | None = None
    _failures: list[int] = field(default_factory=list)
    _cursor: int = 0
    _abort_events: dict[str, asyncio.Event] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _loop: asyncio.AbstractEventLoop | None = None

    def fail_next(self, count: int, status: int = 500) -> None:
        """The next ``count`` completion calls answer ``status``."""
        with self._lock:
            self._failures.extend([status] * count)

    def bodies(self, path: str | None = None) -> list[Json]:
        return [r.body for r in self.requests if path is None or r.path == path]

    # ---- internals ------------------------------------------------------------------------
    def _take_failure(self) -> int | None:
        with self._lock:
            return self._failures.pop(0) if self._failures else None

    def _replies_for(self, body: Json, n: int) -> list[Reply]:
        if callable(self.replies):
            got = list(self.replies(body))
            if not got:
                got = [""]
            return [got[i % len(got)] for i in range(n)]
        with self._lock:
            fixed = self.replies or [""]
            out = [fixed[(self._cursor + i) % len(fixed)] for i in range(n)]
            self._cursor += n
        return out


# --------------------------------------------------------------------------------------------
# text shaping
# --------------------------------------------------------------------------------------------
_TOKEN_RE = re.compile(r"\S+\s*|\s+")


def count_tokens(text: str) -> int:
    """Whitespace tokens: what the fake calls a token."""
    return len(text.split())


def _tokens(text: str) -> list[str]:
    """Pieces that concatenate back to ``text``; each holds one whitespace token (+ spaces)."""
    return _TOKEN_RE.findall(text)


def _apply_stop_and_length(text: str, stop: list[str], max_tokens: int | None) -> tuple[str, str]:
    finish = "stop"
    cut_at = min((i for i in (text.find(s) for s in stop if s) if i >= 0), default=-1)
    if cut_at >= 0:
        text = text[:cut_at]
    if max_tokens is not None and count_tokens(text) > max_tokens:
        pieces = [p for p in _tokens(text)]
        kept: list[str] = []
        seen = 0
        for p in pieces:
            if p.strip():
                if seen == max_tokens:
                    break
                seen += 1
            kept.append(p)
        text = "".join(kept).rstrip()
        finish = "length"
    return text, finish


def _stop_list(body: Json) -> list[str]:
    stop = body.get("stop")
    if stop is None:
        return []
    return [stop] if isinstance(stop, str) else [str(s) for s in stop]


def _max_tokens(body: Json) -> int | None:
    value = body.get("max_completion_tokens", body.get("max_tokens"))
    return int(value) if value is not None else None


def _prompt_tokens(body: Json) -> int:
    if "messages" in body:
        total = 0
        for m in body["messages"]:
            content = m.get("content")
            if isinstance(content, str):
                total += count_tokens(content)
            elif isinstance(content, list):
                total += sum(count_tokens(str(p.get("text", ""))) for p in content if isinstance(p, dict))
        return total
    prompt = body.get("prompt", "")
    if isinstance(prompt, list):
        return sum(count_tokens(str(p)) for p in prompt)
    return count_tokens(str(prompt))


def _error(status: int, message: str) -> JSONResponse:
    kinds = {400: "BadRequestError", 429: "RateLimitError", 500: "InternalServerError"}
    headers = {"Retry-After": "1"} if status == 429 else None
    return JSONResponse(
        {"error": {"message": message, "type": kinds.get(status, "APIError"), "param": None, "code": status}},
        status_code=status,
        headers=headers,
    )


# --------------------------------------------------------------------------------------------
# the app
# --------------------------------------------------------------------------------------------
@dataclass
class _Choice:
    index: int
    reply: Reply
    text: str
    finish: str


def create_fake_llm(script: FakeLLMScript) -> FastAPI:
    """The fake OpenAI-compatible app answering from ``script``."""
    app = FastAPI(title="fake-llm")

    async def _record(request: Request) -> Json:
        try:
            body = await request.json()
        except ValueError:
            body = {}
        if not isinstance(body, dict):
            body = {"_raw": body}
        script.requests.append(
            RecordedRequest(path=request.url.path, body=body, headers=dict(request.headers), at=time.time())
        )
        return body

    def _choices(body: Json, chat: bool) -> list[_Choice]:
        n = int(body.get("n") or 1)
        if script.max_choices is not None:
            n = min(n, script.max_choices)
        prompts = body.get("prompt") if not chat else None
        if isinstance(prompts, list) and prompts and all(isinstance(p, str) for p in prompts):
            n *= len(prompts)
        out: list[_Choice] = []
        for i, reply in enumerate(script._replies_for(body, n)):
            if isinstance(reply, ToolCall) and chat and body.get("tools"):
                out.append(_Choice(i, reply, reply.content or "", "tool_calls"))
                continue
            raw = reply if isinstance(reply, str) else (reply.content or "")
            text, finish = _apply_stop_and_length(raw, _stop_list(body), _max_tokens(body))
            out.append(_Choice(i, raw, text, finish))
        return out

    def _abort_event(body: Json) -> tuple[str, asyncio.Event]:
        rid = body.get("rid")
        key = str(rid) if rid is not None else f"anon-{uuid.uuid4().hex}"
        event = asyncio.Event()
        script._abort_events[key] = event
        script._loop = asyncio.get_running_loop()
        return key, event

    async def _wait_delay(event: asyncio.Event) -> bool:
        """Sleep the scripted delay; True when aborted meanwhile."""
        if script.delay_s <= 0:
            return event.is_set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(event.wait(), timeout=script.delay_s)
        return event.is_set()

    def _usage(body: Json, choices: list[_Choice]) -> Json:
        prompt = _prompt_tokens(body)
        completion = sum(count_tokens(c.text) for c in choices)
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}

    def _tool_calls(reply: ToolCall, idx: int) -> list[Json]:
        return [
            {
                "index": 0,
                "id": f"call_{idx}_{uuid.uuid4().hex[:8]}",
                "type": "function",
                "function": {"name": reply.name, "arguments": reply.arguments_json()},
            }
        ]

    def _message(c: _Choice) -> Json:
        if c.finish == "tool_calls" and isinstance(c.reply, ToolCall):
            return {
                "role": "assistant",
                "content": c.reply.content,
                "tool_calls": _tool_calls(c.reply, c.index),
            }
        return {"role": "assistant", "content": c.text}

    async def _complete(request: Request, chat: bool) -> Response:
        body = await _record(request)
        status = script._take_failure()
        if status is not None:
            return _error(status, f"scripted failure {status}")
        if chat and not isinstance(body.get("messages"), list):
            return _error(400, "messages must be a list")
        if not chat and "prompt" not in body:
            return _error(400, "prompt is required")
        key, event = _abort_event(body)
        choices = _choices(body, chat)
        created = int(time.time())
        cid = f"{'chatcmpl' if chat else 'cmpl'}-{uuid.uuid4().hex[:16]}"
        if body.get("stream"):
            gen = _stream(body, chat, choices, event, cid, created, key)
            return StreamingResponse(gen, media_type="text/event-stream")
        aborted = await _wait_delay(event)
        if aborted:
            for c in choices:
                c.text, c.finish = "", "abort"
        payload: Json = {
            "id": cid,
            "object": "chat.completion" if chat else "text_completion",
            "created": created,
            "model": script.model,
            "choices": [
                (
                    {"index": c.index, "message": _message(c), "finish_reason": c.finish, "logprobs": None}
                    if chat
                    else {"index": c.index, "text": c.text, "finish_reason": c.finish, "logprobs": None}
                )
                for c in choices
            ],
            "usage": _usage(body, choices),
        }
        script._abort_events.pop(key, None)
        return JSONResponse(payload)

    async def _stream(
        body: Json, chat: bool, choices: list[_Choice], event: asyncio.Event, cid: str, created: int, key: str
    ) -> AsyncIterator[str]:
        obj = "chat.completion.chunk" if chat else "text_completion"

        def chunk(index: int, delta: Json | str, finish: str | None) -> str:
            if chat:
                choice: Json = {"index": index, "delta": delta, "finish_reason": finish, "logprobs": None}
            else:
                choice = {"index": index, "text": delta, "finish_reason": finish, "logprobs": None}
            data = {"id": cid, "object": obj, "created": created, "model": script.model, "choices": [choice]}
            return f"data: {json.dumps(data)}\n\n"

        aborted = await _wait_delay(event)
        sent: dict[int, str] = {c.index: "" for c in choices}
        if chat and not aborted:
            for c in choices:
                yield chunk(c.index, {"role": "assistant", "content": ""}, None)
        pieces = [(c, _tokens(c.text)) for c in choices]
        for step in itertools.count():
            if aborted:
                break
            progressed = False
            for c, toks in pieces:
                if step < len(toks):
                    progressed = True
                    sent[c.index] += toks[step]
                    yield chunk(c.index, {"content": toks[step]} if chat else toks[step], None)
            if not progressed:
                break
            if script.chunk_delay_s > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(event.wait(), timeout=script.chunk_delay_s)
            aborted = event.is_set()
        for c in choices:
            if aborted:
                yield chunk(c.index, {} if chat else "", "abort")
            elif c.finish == "tool_calls" and isinstance(c.reply, ToolCall):
                yield chunk(c.index, {"tool_calls": _tool_calls(c.reply, c.index)}, None)
                yield chunk(c.index, {}, "tool_calls")
            else:
                yield chunk(c.index, {} if chat else "", c.finish)
        options = body.get("stream_options") or {}
        if isinstance(options, dict) and options.get("include_usage"):
            for c in choices:
                c.text = sent[c.index]
            usage = {"id": cid, "object": obj, "created": created, "model": script.model, "choices": []}
            usage["usage"] = _usage(body, choices)
            yield f"data: {json.dumps(usage)}\n\n"
        yield "data: [DONE]\n\n"
        script._abort_events.pop(key, None)

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> Response:
        return await _complete(request, chat=True)

    @app.post("/v1/completions")
    async def completions(request: Request) -> Response:
        return await _complete(request, chat=False)

    @app.get("/v1/models")
    async def models() -> Json:
        return {
            "object": "list",
            "data": [{"id": script.model, "object": "model", "created": 0, "owned_by": "fake-llm"}],
        }

    @app.get("/health")
    async def health() -> Response:
        return Response(status_code=200 if script.healthy else 503)

    @app.get("/health_generate")
    async def health_generate() -> Response:
        if not script.health_generate_supported:
            return Response(status_code=404)
        return Response(status_code=200 if script.healthy else 503)

    @app.post("/abort_request")
    async def abort_request(request: Request) -> Response:
        body = await _record(request)
        if not script.abort_supported:
            return Response(status_code=404)
        targets = list(script._abort_events) if body.get("abort_all") else [str(body.get("rid"))]
        for rid in targets:
            script.aborted_rids.append(rid)
            event = script._abort_events.get(rid)
            if event is not None:
                event.set()
        return Response(status_code=200)

    return app


# --------------------------------------------------------------------------------------------
# serving in a background thread
# --------------------------------------------------------------------------------------------
@contextlib.contextmanager
def serve_fake_llm(script: FakeLLMScript, *, startup_timeout_s: float = 10.0) -> Iterator[str]:
    """Serve ``script`` on a free loopback port; yields the OpenAI base URL (``.../v1``)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        create_fake_llm(script),
        log_level="warning",
        lifespan="off",
        timeout_graceful_shutdown=2,
        access_log=False,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="fake-llm", daemon=True)
    thread.start()
    deadline = time.monotonic() + startup_timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("fake LLM server did not start")
        time.sleep(0.01)
    root = f"http://127.0.0.1:{port}"
    script.url = f"{root}/v1"
    try:
        yield script.url
    finally:
        loop = script._loop
        if loop is not None and not loop.is_closed():
            for event in list(script._abort_events.values()):
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(event.set)
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
