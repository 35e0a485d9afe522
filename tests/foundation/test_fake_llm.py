"""The fake OpenAI-compatible server answers like SGLang/vLLM would, from a script."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.fakes.fake_llm import FakeLLMScript, ToolCall, count_tokens, serve_fake_llm


@pytest.fixture
def script() -> FakeLLMScript:
    return FakeLLMScript(replies=["alpha beta gamma delta", "one two"])


@pytest.fixture
def base_url(script: FakeLLMScript) -> Iterator[str]:
    with serve_fake_llm(script) as url:
        yield url


def _chat(base_url: str, **body: Any) -> httpx.Response:
    payload = {"model": "fake-model", "messages": [{"role": "user", "content": "prove it please"}], **body}
    return httpx.post(f"{base_url}/chat/completions", json=payload, timeout=10)


def _sse_events(text: str) -> list[str]:
    return [line[len("data: ") :] for line in text.splitlines() if line.startswith("data: ")]


def test_url_is_the_openai_base_and_models_lists_the_model(base_url: str, script: FakeLLMScript) -> None:
    assert base_url.endswith("/v1")
    assert script.url == base_url
    models = httpx.get(f"{base_url}/models", timeout=5).json()
    assert [m["id"] for m in models["data"]] == ["fake-model"]


def test_health_routes_at_the_root(base_url: str, script: FakeLLMScript) -> None:
    root = base_url.removesuffix("/v1")
    assert httpx.get(f"{root}/health", timeout=5).status_code == 200
    assert httpx.get(f"{root}/health_generate", timeout=5).status_code == 200
    script.healthy = False
    assert httpx.get(f"{root}/health", timeout=5).status_code == 503


def test_chat_n_choices_take_replies_in_order_with_usage(base_url: str) -> None:
    resp = _chat(base_url, n=3)
    assert resp.status_code == 200
    data = resp.json()
    assert data["object"] == "chat.completion"
    assert [c["message"]["content"] for c in data["choices"]] == [
        "alpha beta gamma delta",
        "one two",
        "alpha beta gamma delta",
    ]
    assert [c["index"] for c in data["choices"]] == [0, 1, 2]
    assert all(c["finish_reason"] == "stop" for c in data["choices"])
    assert data["usage"] == {"prompt_tokens": 3, "completion_tokens": 10, "total_tokens": 13}


def test_max_tokens_cuts_and_reports_length(base_url: str) -> None:
    data = _chat(base_url, max_tokens=2).json()
    assert data["choices"][0]["message"]["content"] == "alpha beta"
    assert data["choices"][0]["finish_reason"] == "length"
    assert data["usage"]["completion_tokens"] == 2


def test_stop_strings_cut_the_text(base_url: str) -> None:
    data = _chat(base_url, stop=[" gamma"]).json()
    assert data["choices"][0]["message"]["content"] == "alpha beta"
    assert data["choices"][0]["finish_reason"] == "stop"


def test_completions_endpoint(base_url: str) -> None:
    data = httpx.post(
        f"{base_url}/completions", json={"model": "m", "prompt": "theorem x", "max_tokens": 3}, timeout=10
    ).json()
    assert data["object"] == "text_completion"
    assert data["choices"][0]["text"] == "alpha beta gamma"
    assert data["choices"][0]["finish_reason"] == "length"
    assert data["usage"]["prompt_tokens"] == 2


def test_callable_replies_see_the_request() -> None:
    def answer(body: dict[str, Any]) -> list[str | ToolCall]:
        return [f"echo {body['messages'][-1]['content']}"]

    script = FakeLLMScript(replies=answer)
    with serve_fake_llm(script) as url:
        data = _chat(url, n=2).json()
    assert [c["message"]["content"] for c in data["choices"]] == ["echo prove it please"] * 2


def test_streaming_chat_chunks_end_with_done_and_usage(base_url: str) -> None:
    resp = _chat(base_url, stream=True, stream_options={"include_usage": True})
    assert resp.headers["content-type"].startswith("text/event-stream")
    events = _sse_events(resp.text)
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    assert text == "alpha beta gamma delta"
    finishes = [
        c["choices"][0]["finish_reason"] for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]
    ]
    assert finishes == ["stop"]
    assert chunks[-1]["usage"]["completion_tokens"] == 4


def test_streaming_completions(base_url: str) -> None:
    resp = httpx.post(
        f"{base_url}/completions", json={"prompt": "p", "stream": True, "max_tokens": 1}, timeout=10
    )
    events = _sse_events(resp.text)
    chunks = [json.loads(e) for e in events[:-1]]
    assert "".join(c["choices"][0]["text"] for c in chunks) == "alpha"
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"


def test_tool_calls_in_openai_shape() -> None:
    script = FakeLLMScript(
        replies=[ToolCall(name="lean_check", arguments={"code": "theorem t : True := trivial"})]
    )
    tools = [{"type": "function", "function": {"name": "lean_check", "parameters": {"type": "object"}}}]
    with serve_fake_llm(script) as url:
        data = _chat(url, tools=tools).json()
        streamed = _sse_events(_chat(url, tools=tools, stream=True).text)
    choice = data["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    call = choice["message"]["tool_calls"][0]
    assert call["type"] == "function"
    assert call["function"]["name"] == "lean_check"
    assert json.loads(call["function"]["arguments"]) == {"code": "theorem t : True := trivial"}
    chunks = [json.loads(e) for e in streamed[:-1]]
    deltas = [c["choices"][0]["delta"] for c in chunks]
    assert any("tool_calls" in d for d in deltas)
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


@pytest.mark.parametrize("status", [429, 500, 400])
def test_fail_next_n_calls(script: FakeLLMScript, base_url: str, status: int) -> None:
    script.fail_next(2, status)
    first, second, third = (_chat(base_url) for _ in range(3))
    assert first.status_code == status
    assert second.status_code == status
    assert "error" in first.json()
    assert third.status_code == 200
    if status == 429:
        assert first.headers["retry-after"] == "1"


def test_every_request_is_recorded_with_extra_fields(script: FakeLLMScript, base_url: str) -> None:
    _chat(base_url, rid="job-1-attempt-0", extra_body_field={"x": 1}, temperature=0.3)
    body = script.bodies("/v1/chat/completions")[0]
    assert body["rid"] == "job-1-attempt-0"
    assert body["extra_body_field"] == {"x": 1}
    assert body["temperature"] == 0.3
    assert script.requests[0].headers["content-type"] == "application/json"


def test_delay_is_applied(script: FakeLLMScript, base_url: str) -> None:
    script.delay_s = 0.3
    t0 = time.monotonic()
    assert _chat(base_url).status_code == 200
    assert time.monotonic() - t0 >= 0.3


async def test_abort_request_ends_a_slow_response_early(script: FakeLLMScript, base_url: str) -> None:
    script.delay_s = 30
    root = base_url.removesuffix("/v1")
    async with httpx.AsyncClient(timeout=10) as client:
        pending = asyncio.create_task(
            client.post(f"{base_url}/chat/completions", json={"messages": [], "rid": "r-slow"})
        )
        while not script.requests:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        t0 = time.monotonic()
        assert (await client.post(f"{root}/abort_request", json={"rid": "r-slow"})).status_code == 200
        resp = await pending
    assert time.monotonic() - t0 < 5
    assert resp.json()["choices"][0]["finish_reason"] == "abort"
    assert script.aborted_rids == ["r-slow"]


async def test_abort_request_ends_a_stream_in_progress(base_url: str) -> None:
    script = FakeLLMScript(replies=[" ".join(f"w{i}" for i in range(200))], chunk_delay_s=0.05)
    with serve_fake_llm(script) as url:
        root = url.removesuffix("/v1")
        async with httpx.AsyncClient(timeout=20) as client:
            body = {"messages": [{"role": "user", "content": "x"}], "stream": True, "rid": "r-stream"}
            async with client.stream("POST", f"{url}/chat/completions", json=body) as resp:
                events: list[str] = []
                aborted = False
                async for line in resp.aiter_lines():
                    if not line.startswith("data: "):
                        continue
                    events.append(line[6:])
                    if len(events) == 5 and not aborted:
                        aborted = True
                        await client.post(f"{root}/abort_request", json={"rid": "r-stream"})
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert chunks[-1]["choices"][0]["finish_reason"] == "abort"
    assert len(chunks) < 100
    assert script.aborted_rids == ["r-stream"]


def test_count_tokens_is_whitespace_tokens() -> None:
    assert count_tokens("a  b\nc") == 3
    assert count_tokens("") == 0
