"""Async client for OpenAI-compatible LLM servers (SGLang first, vLLM too).

One :class:`OpenAICompatibleLLM` per backend holds one ``httpx.AsyncClient`` with explicit
timeouts and limits, a concurrency semaphore, and retries (connection errors, 429, 5xx; never
other 4xx). Every call carries a request id (``rid`` in the body and, when it is a UUID as the ids this
client generates are, the ``X-Request-Id`` header); retries and refills get fresh ids; when a
call is cancelled or times out, the client asks SGLang to drop it (``POST /abort_request``).
Servers that ignore ``n > 1`` (llama-cpp-python serves one choice) are handled by re-requesting
the missing samples, concurrently, each request under the backend semaphore.
``settings.llm_request_deadline_s`` is ONE overall deadline per ``complete`` call: semaphore
waits, retries, backoff and refills included.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from typing import Any, Literal, Protocol, runtime_checkable

import httpx
from pydantic import BaseModel, Field
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_random_exponential

from prover.errors import LLMBadRequest, LLMError, LLMProtocolError, LLMTimeout, LLMUnavailable
from prover.tasks import gather_or_cancel
from sorryless.config import Settings
from sorryless.logging import get_logger

_log = get_logger(__name__)

Role = Literal["system", "user", "assistant", "tool"]
_REFILL_SEED_STEP = 7919  # refills shift the seed so they do not repeat the first samples


class ChatMessage(BaseModel):
    role: Role
    content: str
    name: str | None = None
    tool_call_id: str | None = None

    def wire(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


class CompletionRequest(BaseModel):
    """One generation request: chat (``messages``) or raw completion (``prompt``)."""

    messages: list[ChatMessage] | None = None
    prompt: str | None = None
    n: int = Field(default=1, ge=1)
    max_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    stop: list[str] | None = None
    presence_penalty: float | None = None
    stream: bool = False
    model: str | None = None
    rid: str | None = Field(default=None, description="Request id (generated when unset).")
    extra: dict[str, Any] = Field(default_factory=dict, description="Engine extras merged into the body.")


class Completion(BaseModel):
    """One returned choice."""

    text: str
    finish_reason: str | None = None
    index: int = 0
    rid: str = ""
    model: str | None = None
    prompt_tokens: int = Field(default=0, description="Share of the request's prompt tokens (first choice).")
    completion_tokens: int = 0
    seconds: float = 0.0

    @property
    def truncated(self) -> bool:
        """Cut by max_tokens: a truncated attempt, not a Lean failure."""
        return self.finish_reason == "length"


@runtime_checkable
class LLM(Protocol):
    """What strategies need from a model server."""

    @property
    def model(self) -> str | None: ...

    async def complete(self, request: CompletionRequest) -> list[Completion]: ...

    async def aclose(self) -> None: ...


def _retryable(exc: BaseException) -> bool:
    return isinstance(exc, LLMUnavailable)


def _server_root(base_url: str) -> str:
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


class OpenAICompatibleLLM:
    """OpenAI-compatible HTTP backend (chat + completions, streaming, n, abort)."""

    def __init__(
        self,
        settings: Settings,
        *,
        base_url: str | None = None,
        model: str | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        retry_wait_max_s: float = 4.0,
    ) -> None:
        url = base_url or settings.llm_base_url
        if not url:
            raise LLMUnavailable("no LLM base URL configured (SORRYLESS_LLM_BASE_URL)")
        self._settings = settings
        self._base_url = url.rstrip("/")
        self._root = _server_root(self._base_url)
        self._model = model or settings.llm_model
        self._context_len: int | None = None  # `max_model_len` from /models, learned once
        self._context_probed = False
        self._semaphore = asyncio.Semaphore(max(1, settings.llm_max_concurrency))
        self._retry_wait_max_s = retry_wait_max_s
        headers = {"Authorization": f"Bearer {settings.llm_api_key}"} if settings.llm_api_key else {}
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(
                connect=settings.llm_connect_timeout_s,
                read=settings.llm_request_deadline_s,
                write=30.0,
                pool=settings.llm_request_deadline_s,
            ),
            limits=httpx.Limits(
                max_connections=settings.llm_max_concurrency + 4,
                max_keepalive_connections=settings.llm_max_concurrency,
            ),
            headers=headers,
            transport=transport,
        )

    @property
    def model(self) -> str | None:
        return self._model

    @property
    def base_url(self) -> str:
        return self._base_url

    async def aclose(self) -> None:
        await self._client.aclose()

    # ---- readiness ---------------------------------------------------------------------
    async def ready(self) -> bool:
        """SGLang's `/health_generate` (runs a tiny generation), else `/v1/models`."""
        try:
            resp = await self._client.get(f"{self._root}/health_generate", timeout=30.0)
            if resp.status_code == 200:
                return True
            resp = await self._client.get(f"{self._base_url}/models", timeout=10.0)
            return resp.status_code == 200
        except httpx.HTTPError:
            return False

    async def models(self) -> list[str]:
        resp = await self._client.get(f"{self._base_url}/models")
        resp.raise_for_status()
        return [str(m.get("id")) for m in resp.json().get("data", [])]

    async def _learn_context_len(self) -> None:
        """`max_model_len` of the served model (vLLM and SGLang list it in `/models`), once.

        vLLM answers 400 when ``max_tokens`` exceeds it, so requests are clamped to it."""
        if self._context_probed:
            return
        self._context_probed = True
        try:
            resp = await self._client.get(f"{self._base_url}/models", timeout=10.0)
            cards = resp.json().get("data", []) if resp.status_code == 200 else []
        except (httpx.HTTPError, ValueError, AttributeError):
            return
        for card in cards if isinstance(cards, list) else []:
            if not isinstance(card, dict):
                continue
            limit = card.get("max_model_len")
            if (
                isinstance(limit, int)
                and limit > 0
                and (self._model is None or card.get("id") == self._model)
            ):
                self._context_len = limit
                return

    # ---- generation --------------------------------------------------------------------
    async def complete(self, request: CompletionRequest) -> list[Completion]:
        """All ``request.n`` choices, under one overall deadline (``llm_request_deadline_s``).

        When a server returns fewer choices than asked (it ignores or caps ``n``), the missing
        ones are re-requested concurrently, ``n`` = what it served per request, until all arrived;
        it stops with LLMProtocolError when a refill round brings nothing, or after ``2 n + 1``
        requests."""
        base_rid = request.rid or uuid.uuid4().hex
        deadline = self._settings.llm_request_deadline_s
        try:
            async with asyncio.timeout(deadline):
                return await self._collect(request, base_rid)
        except TimeoutError as exc:
            raise LLMTimeout(f"LLM call {base_rid} passed its overall deadline of {deadline}s") from exc

    async def _collect(self, request: CompletionRequest, base_rid: str) -> list[Completion]:
        wanted = request.n
        first = await self._call(request.model_copy(update={"rid": base_rid}))
        out = list(first[:wanted])
        per_request = max(1, len(first))  # what this server serves per request
        received, sent, max_requests = len(first), 1, 2 * wanted + 1
        while len(out) < wanted:
            missing = wanted - len(out)
            sizes = [min(per_request, missing - i) for i in range(0, missing, per_request)]
            sizes = sizes[: max(0, max_requests - sent)]
            if received == 0 or not sizes:  # the last round brought nothing, or too many requests
                raise LLMProtocolError(
                    f"server returned {len(out)} of {wanted} choices after {sent} requests"
                )
            subs = [self._refill(request, size, sent + i) for i, size in enumerate(sizes)]
            sent += len(subs)
            rounds = await gather_or_cancel([self._call(sub) for sub in subs])
            got = [c for batch in rounds for c in batch]
            received = len(got)
            out.extend(got[:missing])
        return [c.model_copy(update={"index": i}) for i, c in enumerate(out)]

    @staticmethod
    def _refill(request: CompletionRequest, n: int, part: int) -> CompletionRequest:
        update: dict[str, Any] = {"n": n, "rid": uuid.uuid4().hex}
        if request.seed is not None:  # a refill with the same seed would repeat samples
            update["seed"] = request.seed + _REFILL_SEED_STEP * part
        return request.model_copy(update=update)

    async def abort(self, rid: str, n: int = 1) -> None:
        """Ask the server to drop a request (SGLang `/abort_request`; others just drop the socket).

        SGLang expands a string rid with ``n > 1`` into ``{rid}_{i}`` per sample, and its
        tokenizer manager ignores rids it does not hold, so every sub-rid is aborted too."""
        rids = [rid] + ([f"{rid}_{i}" for i in range(n)] if n > 1 else [])
        await asyncio.gather(*(self._abort_one(r) for r in rids))

    async def _abort_one(self, rid: str) -> None:
        try:
            await self._client.post(f"{self._root}/abort_request", json={"rid": rid}, timeout=5.0)
        except (httpx.HTTPError, RuntimeError) as exc:  # RuntimeError: the client was closed meanwhile
            _log.debug("abort_request failed", rid=rid, error=str(exc))

    async def _call(self, request: CompletionRequest) -> list[Completion]:
        """One request with retries; the semaphore is held per try, not during backoff."""
        rid = request.rid or uuid.uuid4().hex
        try:
            async for attempt in AsyncRetrying(
                retry=retry_if_exception(_retryable),
                stop=stop_after_attempt(self._settings.llm_max_retries + 1),
                wait=wait_random_exponential(multiplier=0.05, max=self._retry_wait_max_s),
                reraise=True,
            ):
                with attempt:
                    if attempt.retry_state.attempt_number > 1:
                        rid = uuid.uuid4().hex  # a server may still hold the failed one
                    async with self._semaphore:
                        return await self._once(request, rid)
        except (asyncio.CancelledError, LLMTimeout):
            await asyncio.shield(self.abort(rid, request.n))
            raise
        raise LLMError("unreachable")  # pragma: no cover

    def _body(self, request: CompletionRequest, rid: str) -> tuple[str, dict[str, Any]]:
        body: dict[str, Any] = {"n": request.n, "rid": rid}
        model = request.model or self._model
        if model:
            body["model"] = model
        if request.messages is not None:
            path = "/chat/completions"
            body["messages"] = [m.wire() for m in request.messages]
        elif request.prompt is not None:
            path = "/completions"
            body["prompt"] = request.prompt
        else:
            raise LLMBadRequest("a request needs messages or a prompt")
        max_tokens = request.max_tokens or self._settings.llm_max_tokens
        if self._context_len is not None:
            # prompt + completion must fit the context; ~3 characters a token errs on the short side
            prompt_chars = len(request.prompt or "") + sum(len(m.content) for m in request.messages or [])
            room = self._context_len - prompt_chars // 3 - 16
            max_tokens = max(1, min(max_tokens, room))
        body["max_tokens"] = max_tokens
        for key in ("temperature", "top_p", "seed", "stop", "presence_penalty"):
            value = getattr(request, key)
            if value is not None:
                body[key] = value
        if request.stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        body.update(request.extra)
        return path, body

    async def _once(self, request: CompletionRequest, rid: str) -> list[Completion]:
        await self._learn_context_len()
        path, body = self._body(request, rid)
        url = f"{self._base_url}{path}"
        # some servers (llama-cpp-python) answer 400 to an X-Request-Id that is not a UUID
        headers = {"X-Request-Id": rid} if _is_uuid(rid) else {}
        started = time.monotonic()
        try:
            if request.stream:
                return await self._streamed(url, body, headers, rid, started)
            resp = await self._client.post(url, json=body, headers=headers)
            _raise_for_status(resp)
            try:
                payload = resp.json()
            except ValueError as exc:
                raise LLMProtocolError(f"non-JSON answer from the LLM server: {resp.text[:200]!r}") from exc
            return _parse_response(payload, rid, time.monotonic() - started)
        except httpx.ConnectTimeout as exc:  # a connection error: retried like a refused connection
            raise LLMUnavailable(f"LLM server unreachable: {exc!r}") from exc
        except httpx.TimeoutException as exc:
            raise LLMTimeout(f"LLM request {rid} timed out: {exc!r}") from exc
        except httpx.TransportError as exc:
            raise LLMUnavailable(f"LLM server unreachable: {exc!r}") from exc

    async def _streamed(
        self, url: str, body: dict[str, Any], headers: dict[str, str], rid: str, started: float
    ) -> list[Completion]:
        texts: dict[int, list[str]] = {}
        thinking: dict[int, list[str]] = {}
        finish: dict[int, str | None] = {}
        usage: dict[str, Any] = {}
        model: str | None = None
        idle = self._settings.llm_idle_timeout_s
        async with self._client.stream("POST", url, json=body, headers=headers) as resp:
            if resp.status_code >= 400:
                await resp.aread()
                _raise_for_status(resp)
            lines = resp.aiter_lines()
            while True:
                try:
                    async with asyncio.timeout(idle):
                        line = await anext(lines)
                except StopAsyncIteration:
                    break
                except TimeoutError as exc:
                    raise LLMTimeout(f"LLM stream {rid} idle for more than {idle}s") from exc
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    break
                try:
                    chunk = json.loads(data)
                except json.JSONDecodeError as exc:
                    raise LLMProtocolError(f"bad stream chunk: {data[:200]!r}") from exc
                if "error" in chunk and "choices" not in chunk:
                    raise stream_error(chunk["error"])
                model = chunk.get("model", model)
                if chunk.get("usage"):
                    usage = chunk["usage"]
                for choice in chunk.get("choices") or []:
                    idx = int(choice.get("index", 0))
                    delta = choice.get("delta") or {}
                    piece = delta.get("content") if "delta" in choice else choice.get("text")
                    thought = delta.get("reasoning_content") or delta.get("reasoning")
                    if thought:
                        thinking.setdefault(idx, []).append(thought)
                    if piece:
                        texts.setdefault(idx, []).append(piece)
                    else:
                        texts.setdefault(idx, [])
                    if choice.get("finish_reason"):
                        finish[idx] = choice["finish_reason"]
        choices = [
            {
                "index": i,
                "message": {"content": "".join(texts[i]), "reasoning_content": "".join(thinking.get(i, []))},
                "finish_reason": finish.get(i),
            }
            for i in sorted(texts)
        ]
        return _parse_response(
            {"choices": choices, "usage": usage, "model": model}, rid, time.monotonic() - started
        )


_ERROR_TYPES = {
    "ratelimiterror": 429,
    "internalservererror": 500,
    "serviceunavailableerror": 503,
    "badrequesterror": 400,
    "notfounderror": 404,
}


def stream_error(error: object) -> LLMError:
    """The exception for an in-stream ``{"error": ...}`` chunk: retryable (LLMUnavailable) for
    429 and 5xx, LLMBadRequest for other 4xx, a plain (not retried) LLMError when no status is
    given; the status comes from ``code`` / ``status``, else from the OpenAI error ``type``."""
    status: int | None = None
    if isinstance(error, dict):
        for key in ("code", "status", "status_code"):
            value = error.get(key)
            if isinstance(value, int) or (isinstance(value, str) and value.isdigit()):
                status = int(value)
                break
        if status is None:
            status = _ERROR_TYPES.get(str(error.get("type", "")).lower())
        message = str(error.get("message") or error)
    else:
        message = str(error)
    text = f"server error in stream ({status}): {message[:500]}"
    if status is None or status < 400:
        return LLMError(text)
    if _retryable_status(status):
        return LLMUnavailable(text, status=status)
    return LLMBadRequest(text, status=status)


def _retryable_status(status: int) -> bool:
    """429 and 5xx are the server's trouble (retried); any other 4xx is the request's fault."""
    return status == 429 or status >= 500


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def _raise_for_status(resp: httpx.Response) -> None:
    status = resp.status_code
    if status < 400:
        return
    detail = resp.text[:500]
    if _retryable_status(status):
        raise LLMUnavailable(f"LLM server answered {status}: {detail}", status=status)
    raise LLMBadRequest(f"LLM server rejected the request ({status}): {detail}", status=status)


def _choice_text(choice: dict[str, Any]) -> str:
    message = choice.get("message")
    if isinstance(message, dict):
        content = message.get("content") or ""
        reasoning = message.get("reasoning_content") or message.get("reasoning")
        if reasoning:  # servers with a reasoning parser split the thinking off; keep it visible
            return f"<think>{reasoning}</think>{content}"
        return str(content)
    return str(choice.get("text") or "")


def _parse_response(payload: dict[str, Any], rid: str, seconds: float) -> list[Completion]:
    choices = payload.get("choices")
    if not isinstance(choices, list):
        raise LLMProtocolError(f"response without choices: {str(payload)[:200]}")
    usage = payload.get("usage") or {}
    prompt_tokens = int(usage.get("prompt_tokens") or 0)
    completion_total = int(usage.get("completion_tokens") or 0)
    count = max(1, len(choices))
    share, rest = divmod(completion_total, count)
    out: list[Completion] = []
    for i, choice in enumerate(sorted(choices, key=lambda c: int(c.get("index", 0)))):
        out.append(
            Completion(
                text=_choice_text(choice),
                finish_reason=choice.get("finish_reason"),
                index=i,
                rid=rid,
                model=payload.get("model"),
                prompt_tokens=prompt_tokens if i == 0 else 0,
                completion_tokens=share + (1 if i < rest else 0),
                seconds=seconds,
            )
        )
    return out
