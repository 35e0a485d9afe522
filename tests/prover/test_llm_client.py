"""The OpenAI-compatible client against the fake server (and httpx.MockTransport for odd servers)."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest

from prover.errors import LLMBadRequest, LLMError, LLMProtocolError, LLMTimeout, LLMUnavailable
from prover.llm import ChatMessage, Completion, CompletionRequest, OpenAICompatibleLLM, stream_error
from sorryless.config import Settings
from tests.fakes.fake_llm import FakeLLMScript

HELLO = [ChatMessage(role="user", content="hello")]
RID = "0b904fdc696241568e79e8bb4d5f6f40"


async def test_chat_sends_sampling_fields_rid_and_counts_tokens(
    llm: OpenAICompatibleLLM, script: FakeLLMScript
) -> None:
    script.replies = ["alpha beta gamma", "delta"]
    out = await llm.complete(
        CompletionRequest(messages=HELLO, n=2, temperature=0.7, top_p=0.9, seed=7, max_tokens=50, rid=RID)
    )
    assert [c.text for c in out] == ["alpha beta gamma", "delta"]
    body = script.bodies("/v1/chat/completions")[0]
    assert body["n"] == 2 and body["temperature"] == 0.7 and body["top_p"] == 0.9 and body["seed"] == 7
    assert body["max_tokens"] == 50 and body["rid"] == RID and body["model"] == "fake-model"
    assert script.requests[0].headers.get("x-request-id") == RID
    assert sum(c.completion_tokens for c in out) == 4
    assert out[0].prompt_tokens == 1 and out[1].prompt_tokens == 0
    assert all(c.rid == RID and not c.truncated for c in out)


async def test_completions_endpoint_and_stop(llm: OpenAICompatibleLLM, script: FakeLLMScript) -> None:
    script.replies = ["  simp\n```\nmore prose"]
    (c,) = await llm.complete(CompletionRequest(prompt="theorem t : True := by\n", stop=["```"]))
    assert c.text == "  simp\n"
    assert script.bodies("/v1/completions")[0]["stop"] == ["```"]


async def test_finish_reason_length_is_truncation(llm: OpenAICompatibleLLM, script: FakeLLMScript) -> None:
    script.replies = ["one two three four five six"]
    (c,) = await llm.complete(CompletionRequest(messages=HELLO, max_tokens=3))
    assert c.truncated and c.finish_reason == "length" and c.text == "one two three"


async def test_retries_429_and_500_then_succeeds(llm: OpenAICompatibleLLM, script: FakeLLMScript) -> None:
    script.replies = ["fine"]
    script.fail_next(1, 429)
    script.fail_next(1, 500)
    (c,) = await llm.complete(CompletionRequest(messages=HELLO))
    assert c.text == "fine"
    rids = [b["rid"] for b in script.bodies("/v1/chat/completions")]
    assert len(rids) == 3 and len(set(rids)) == 3  # each retry is a new request for the server


async def test_400_is_not_retried(llm: OpenAICompatibleLLM, script: FakeLLMScript) -> None:
    script.fail_next(1, 400)
    with pytest.raises(LLMBadRequest) as info:
        await llm.complete(CompletionRequest(messages=HELLO))
    assert info.value.status == 400
    assert len(script.bodies("/v1/chat/completions")) == 1


async def test_persistent_5xx_gives_up_as_unavailable(llm_settings: Settings, script: FakeLLMScript) -> None:
    client = OpenAICompatibleLLM(
        llm_settings.model_copy(update={"llm_max_retries": 2}), retry_wait_max_s=0.01
    )
    script.fail_next(5, 503)
    try:
        with pytest.raises(LLMUnavailable):
            await client.complete(CompletionRequest(messages=HELLO))
    finally:
        await client.aclose()
    assert len(script.bodies("/v1/chat/completions")) == 3


async def _cancel_once_sent(script: FakeLLMScript, task: asyncio.Task[list[Completion]]) -> None:
    """Cancel ``task`` once the fake server has received its request; it must raise CancelledError."""
    for _ in range(200):
        if script.bodies("/v1/chat/completions"):
            break
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_cancel_sends_abort_request_with_rid(llm: OpenAICompatibleLLM, script: FakeLLMScript) -> None:
    script.delay_s = 5.0
    task = asyncio.create_task(llm.complete(CompletionRequest(messages=HELLO, rid="cancel-me")))
    await _cancel_once_sent(script, task)
    assert "cancel-me" in script.aborted_rids
    assert script.bodies("/abort_request")[0] == {"rid": "cancel-me"}


async def test_streaming_collects_text_and_usage(llm: OpenAICompatibleLLM, script: FakeLLMScript) -> None:
    script.replies = ["a b c d", "e f"]
    out = await llm.complete(CompletionRequest(messages=HELLO, n=2, stream=True))
    assert [c.text for c in out] == ["a b c d", "e f"]
    assert sum(c.completion_tokens for c in out) == 6
    assert script.bodies()[0]["stream"] is True


async def test_streaming_idle_timeout_aborts(llm_settings: Settings, script: FakeLLMScript) -> None:
    client = OpenAICompatibleLLM(llm_settings.model_copy(update={"llm_idle_timeout_s": 0.2}))
    script.replies = ["a b c d e f g h"]
    script.chunk_delay_s = 1.0
    try:
        with pytest.raises(LLMTimeout):
            await client.complete(CompletionRequest(messages=HELLO, stream=True, rid="slow-stream"))
    finally:
        await client.aclose()
    assert "slow-stream" in script.aborted_rids


async def test_readiness(llm: OpenAICompatibleLLM, script: FakeLLMScript) -> None:
    assert await llm.ready()
    script.healthy = False
    assert await llm.ready()  # /health_generate fails, /v1/models still answers
    assert llm.model == "fake-model"


def _mock_server(seen: list[dict[str, object]], per_call: int) -> httpx.MockTransport:
    """A server that ignores n: answers at most ``per_call`` choices."""

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append(body)
        k = min(int(body["n"]), per_call)
        choices = [
            {
                "index": i,
                "message": {"role": "assistant", "content": f"c{len(seen)}-{i}"},
                "finish_reason": "stop",
            }
            for i in range(k)
        ]
        return httpx.Response(
            200, json={"choices": choices, "usage": {"prompt_tokens": 3, "completion_tokens": k}}
        )

    return httpx.MockTransport(handler)


async def test_missing_choices_are_re_requested(settings: Settings) -> None:
    seen: list[dict[str, object]] = []
    client = OpenAICompatibleLLM(
        settings.model_copy(update={"llm_base_url": "http://mock/v1"}),
        transport=_mock_server(seen, per_call=1),
    )
    try:
        out = await client.complete(CompletionRequest(messages=HELLO, n=3, rid="r", seed=5))
    finally:
        await client.aclose()
    assert len(out) == 3 and [c.index for c in out] == [0, 1, 2]
    assert [b["n"] for b in seen] == [3, 1, 1]  # the server served one: the two missing ones, one each
    assert len({b["seed"] for b in seen}) == 3 and seen[0]["seed"] == 5  # refills must not repeat samples
    rids = [b["rid"] for b in seen]
    assert rids[0] == "r" and len(set(rids)) == 3  # refills get fresh ids
    assert sum(c.prompt_tokens for c in out) == 9


async def test_cancel_with_n_aborts_sglang_sub_rids(llm: OpenAICompatibleLLM, script: FakeLLMScript) -> None:
    script.delay_s = 5.0
    task = asyncio.create_task(llm.complete(CompletionRequest(messages=HELLO, n=2, rid="multi")))
    await _cancel_once_sent(script, task)
    assert {"multi", "multi_0", "multi_1"} <= set(script.aborted_rids)


async def test_max_tokens_is_clamped_to_the_served_context(settings: Settings) -> None:
    """vLLM answers 400 when prompt + max_tokens exceed max_model_len: the client learns it from /models."""
    sent: list[dict[str, object]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/models"):
            return httpx.Response(200, json={"data": [{"id": "small", "max_model_len": 2048}]})
        body = json.loads(request.content)
        sent.append(body)
        choice = {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
        return httpx.Response(
            200, json={"choices": [choice], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}
        )

    client = OpenAICompatibleLLM(
        settings.model_copy(
            update={"llm_base_url": "http://mock/v1", "llm_model": "small", "llm_max_tokens": 16384}
        ),
        transport=httpx.MockTransport(handler),
    )
    try:
        await client.complete(CompletionRequest(messages=HELLO, rid="ctx"))
        long_prompt = [ChatMessage(role="user", content="x" * 3000)]
        await client.complete(CompletionRequest(messages=long_prompt, rid="ctx2", max_tokens=4000))
    finally:
        await client.aclose()
    first, second = (int(str(b["max_tokens"])) for b in sent)
    assert first <= 2048
    assert second <= 2048 - 1000  # the ~1000-token prompt leaves less room


async def test_connect_timeout_is_a_connection_error_and_retried(settings: Settings) -> None:
    seen: list[dict[str, object]] = []
    answer = _mock_server(seen, per_call=1)
    failures = [0]

    async def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/chat/completions") and failures[0] < 2:
            failures[0] += 1
            raise httpx.ConnectTimeout("connect timed out", request=request)
        return await answer.handle_async_request(request)

    client = OpenAICompatibleLLM(
        settings.model_copy(update={"llm_base_url": "http://mock/v1", "llm_max_retries": 3}),
        transport=httpx.MockTransport(handler),
        retry_wait_max_s=0.01,
    )
    try:
        out = await client.complete(CompletionRequest(messages=HELLO, rid="r"))
    finally:
        await client.aclose()
    assert failures[0] == 2 and len(seen) == 1 and out[0].text == "c1-0"


async def test_n8_against_a_server_serving_one_choice_refills_concurrently(
    llm: OpenAICompatibleLLM, script: FakeLLMScript
) -> None:
    """llama-cpp-python ignores n: 8 samples take 8 requests, the 7 refills sent together."""
    script.max_choices = 1
    script.replies = [f"sample {i}" for i in range(8)]
    script.delay_s = 0.3
    started = time.monotonic()
    out = await llm.complete(CompletionRequest(messages=HELLO, n=8, seed=11, rid=RID))
    elapsed = time.monotonic() - started
    assert [c.text for c in out] == [f"sample {i}" for i in range(8)]
    assert [c.index for c in out] == list(range(8))
    bodies = script.bodies("/v1/chat/completions")
    assert [b["n"] for b in bodies] == [8, 1, 1, 1, 1, 1, 1, 1]
    assert len({b["seed"] for b in bodies}) == 8 and len({b["rid"] for b in bodies}) == 8
    assert elapsed < 1.5  # one request, then 7 at once: ~0.6 s; one after the other: 2.4 s
    starts = sorted(r.at for r in script.requests[1:])
    assert starts[-1] - starts[0] < 0.25  # the refills overlapped


async def test_n32_against_a_one_choice_server(settings: Settings) -> None:
    seen: list[dict[str, object]] = []
    client = OpenAICompatibleLLM(
        settings.model_copy(update={"llm_base_url": "http://mock/v1", "llm_max_concurrency": 4}),
        transport=_mock_server(seen, per_call=1),
    )
    try:
        out = await client.complete(CompletionRequest(messages=HELLO, n=32, rid="r32"))
    finally:
        await client.aclose()
    assert len(out) == 32 and len(seen) == 32
    assert len({c.text for c in out}) == 32


async def test_a_server_capping_n_gets_refills_of_its_size(settings: Settings) -> None:
    seen: list[dict[str, object]] = []
    client = OpenAICompatibleLLM(
        settings.model_copy(update={"llm_base_url": "http://mock/v1"}),
        transport=_mock_server(seen, per_call=4),
    )
    try:
        out = await client.complete(CompletionRequest(messages=HELLO, n=10, rid="cap"))
    finally:
        await client.aclose()
    assert len(out) == 10
    assert sorted(int(str(b["n"])) for b in seen) == [2, 4, 10]


async def test_a_refill_bringing_nothing_is_a_protocol_error(settings: Settings) -> None:
    calls = [0]

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/models"):
            return httpx.Response(404)
        calls[0] += 1
        k = 1 if calls[0] == 1 else 0
        choices = [{"index": 0, "message": {"content": "x"}, "finish_reason": "stop"}][:k]
        return httpx.Response(200, json={"choices": choices, "usage": {}})

    client = OpenAICompatibleLLM(
        settings.model_copy(update={"llm_base_url": "http://mock/v1"}), transport=httpx.MockTransport(handler)
    )
    try:
        with pytest.raises(LLMProtocolError, match="1 of 3"):
            await client.complete(CompletionRequest(messages=HELLO, n=3))
    finally:
        await client.aclose()
    assert calls[0] == 3  # the first, then one round of two refills that brought nothing


async def test_overall_deadline_covers_retries_and_backoff(settings: Settings) -> None:
    """Each try is quicker than the deadline; the retries together are not: one deadline per call."""
    paths: list[str] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        paths.append(request.url.path)
        if request.url.path.endswith("/chat/completions"):
            await asyncio.sleep(0.3)
            return httpx.Response(503, text="warming up")
        return httpx.Response(200, json={"data": []})

    client = OpenAICompatibleLLM(
        settings.model_copy(
            update={"llm_base_url": "http://mock/v1", "llm_max_retries": 10, "llm_request_deadline_s": 0.8}
        ),
        transport=httpx.MockTransport(handler),
        retry_wait_max_s=0.05,
    )
    started = time.monotonic()
    try:
        with pytest.raises(LLMTimeout, match="overall deadline"):
            await client.complete(CompletionRequest(messages=HELLO, rid="late"))
    finally:
        await client.aclose()
    assert time.monotonic() - started < 1.5  # per-try deadlines would allow 11 x 0.3 s
    assert 2 <= paths.count("/v1/chat/completions") <= 4
    assert "/abort_request" in paths  # the request in flight at the deadline is aborted


async def test_overall_deadline_includes_the_semaphore_wait(
    llm_settings: Settings, script: FakeLLMScript
) -> None:
    client = OpenAICompatibleLLM(
        llm_settings.model_copy(update={"llm_max_concurrency": 1, "llm_request_deadline_s": 0.6})
    )
    script.delay_s = 0.4
    try:
        first = asyncio.create_task(client.complete(CompletionRequest(messages=HELLO, rid="first")))
        await asyncio.sleep(0.05)
        with pytest.raises(LLMTimeout):  # waits 0.35 s for the slot, then needs 0.4 s more
            await client.complete(CompletionRequest(messages=HELLO, rid="second"))
        assert (await first)[0].text == "ok"
    finally:
        await client.aclose()


def _sse_server(seen: list[str], error: dict[str, object]) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        if request.url.path.endswith("/abort_request"):
            return httpx.Response(200)
        first = {"choices": [{"index": 0, "delta": {"content": "par"}, "finish_reason": None}]}
        text = f"data: {json.dumps(first)}\n\ndata: {json.dumps({'error': error})}\n\n"
        return httpx.Response(200, text=text, headers={"content-type": "text/event-stream"})

    return httpx.MockTransport(handler)


@pytest.mark.parametrize(
    ("error", "expected", "tries"),
    [
        ({"message": "overloaded", "type": "ServiceUnavailableError", "code": 503}, LLMUnavailable, 3),
        ({"message": "slow down", "code": "429"}, LLMUnavailable, 3),
        ({"message": "context too long", "type": "BadRequestError", "code": 400}, LLMBadRequest, 1),
        ({"message": "engine died", "type": "InternalServerError"}, LLMUnavailable, 3),
        ({"message": "something odd"}, LLMError, 1),
    ],
)
async def test_in_stream_error_chunks_are_retried_only_for_429_and_5xx(
    settings: Settings, error: dict[str, object], expected: type[LLMError], tries: int
) -> None:
    seen: list[str] = []
    client = OpenAICompatibleLLM(
        settings.model_copy(update={"llm_base_url": "http://mock/v1", "llm_max_retries": 2}),
        transport=_sse_server(seen, error),
        retry_wait_max_s=0.01,
    )
    try:
        with pytest.raises(LLMError) as info:
            await client.complete(CompletionRequest(messages=HELLO, stream=True))
    finally:
        await client.aclose()
    assert type(info.value) is expected
    assert seen.count("/v1/chat/completions") == tries


def test_stream_error_classification() -> None:
    assert isinstance(stream_error("plain text"), LLMError)
    assert not isinstance(stream_error("plain text"), (LLMUnavailable, LLMBadRequest))
    err = stream_error({"code": 502, "message": "bad gateway"})
    assert isinstance(err, LLMUnavailable) and err.status == 502 and "bad gateway" in str(err)
    assert isinstance(stream_error({"type": "RateLimitError"}), LLMUnavailable)
    assert isinstance(stream_error({"code": 404}), LLMBadRequest)


async def test_readiness_false_when_nothing_answers(settings: Settings) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(503)

    down = OpenAICompatibleLLM(
        settings.model_copy(update={"llm_base_url": "http://mock/v1"}), transport=httpx.MockTransport(handler)
    )
    unreachable = OpenAICompatibleLLM(
        settings.model_copy(update={"llm_base_url": "http://127.0.0.1:9/v1", "llm_connect_timeout_s": 1.0})
    )
    try:
        assert not await down.ready()
        assert not await unreachable.ready()
    finally:
        await down.aclose()
        await unreachable.aclose()


async def test_llama_cpp_like_server_ready_and_abort_404_tolerated(
    llm: OpenAICompatibleLLM, script: FakeLLMScript
) -> None:
    """No /health_generate (404) and no /abort_request (404), like llama-cpp-python."""
    script.health_generate_supported = False
    script.abort_supported = False
    assert await llm.ready()  # falls back to /v1/models
    script.delay_s = 5.0
    task = asyncio.create_task(llm.complete(CompletionRequest(messages=HELLO, rid="no-abort")))
    await _cancel_once_sent(script, task)
    assert script.bodies("/abort_request") == [{"rid": "no-abort"}] and not script.aborted_rids
    script.delay_s = 0.0
    (again,) = await llm.complete(CompletionRequest(messages=HELLO))
    assert again.text == "ok"
