"""Fixtures of the prover tests: a stub statement, the fake OpenAI server, the real LeanService
over the fake REPL, and a tiny scripted Checker for unit speed."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path

import pytest

from lean_server.checker import Priority, Snippet
from lean_server.service import LeanService
from lean_server.verdict import Certificate, EnvironmentStamp, Message, Pos, Verdict, content_hash
from prover.llm import OpenAICompatibleLLM
from sorryless.config import Settings
from tests.fakes.fake_llm import FakeLLMScript, serve_fake_llm

HEADER = "import Mathlib\nimport Aesop\n\nset_option maxHeartbeats 400000\n\nopen BigOperators Real Nat Topology Rat\n\n"
STUB = HEADER + "theorem add_zero' (x : ℕ) (h₀ : 0 < x) :\n    x + 0 = x := by sorry\n"


def lean_reply(body: str) -> str:
    """A CoT-style model answer whose final lean4 block proves STUB with ``body``."""
    return (
        "<think>Let me think. ```lean4\ntheorem wrong : False := by sorry\n```</think>\n"
        "Here is the proof.\n```lean4\n"
        f"{HEADER}theorem add_zero' (x : ℕ) (h₀ : 0 < x) :\n    x + 0 = x := by\n  {body}\n```\n"
    )


@pytest.fixture
def stub() -> str:
    return STUB


@pytest.fixture
def script() -> FakeLLMScript:
    return FakeLLMScript(replies=["ok"])


@pytest.fixture
def llm_url(script: FakeLLMScript) -> Iterator[str]:
    with serve_fake_llm(script) as url:
        yield url


@pytest.fixture
def llm_settings(settings: Settings, llm_url: str) -> Settings:
    return settings.model_copy(
        update={
            "llm_base_url": llm_url,
            "llm_model": "fake-model",
            "llm_max_retries": 3,
            "llm_max_tokens": 4096,
        }
    )


@pytest.fixture
async def llm(llm_settings: Settings) -> AsyncIterator[OpenAICompatibleLLM]:
    client = OpenAICompatibleLLM(llm_settings, retry_wait_max_s=0.01)
    yield client
    await client.aclose()


@pytest.fixture
async def service(settings: Settings) -> AsyncIterator[LeanService]:
    svc = LeanService(settings)
    yield svc
    await svc.aclose()


@pytest.fixture
def repl_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[list[dict[str, object]]], None]:
    """Script the fake REPL with FAKE_REPL_RULES (set before the service starts its REPLs)."""

    def write(rules: list[dict[str, object]]) -> None:
        path = tmp_path / "repl_rules.json"
        path.write_text(json.dumps(rules))
        monkeypatch.setenv("FAKE_REPL_RULES", str(path))

    return write


class ScriptedChecker:
    """A tiny in-test Checker: PASS unless the code contains an `ERR:<text>` marker or `sorry`."""

    def __init__(self) -> None:
        self.checked: list[Snippet] = []
        self.closed = False

    async def check(
        self, snippets: Sequence[Snippet], *, priority: Priority = Priority.INTERACTIVE
    ) -> AsyncIterator[Certificate]:
        for snippet in snippets:
            self.checked.append(snippet)
            yield scripted_certificate(snippet)

    async def aclose(self) -> None:
        self.closed = True


def scripted_certificate(snippet: Snippet) -> Certificate:
    messages: list[Message] = []
    for n, line in enumerate(snippet.code.split("\n"), 1):
        if "ERR:" in line:
            col = line.index("ERR:")
            messages.append(
                Message(
                    severity="error",
                    data=line[col + 4 :].strip(),
                    pos=Pos(line=n, column=col),
                    end_pos=Pos(line=n, column=len(line)),
                )
            )
    verdict = Verdict.LEAN_ERROR if messages else (Verdict.SORRY if "sorry" in snippet.code else Verdict.PASS)
    return Certificate(
        id=snippet.id,
        verdict=verdict,
        proof_hash=content_hash(snippet.code),
        environment=EnvironmentStamp(backend="scripted"),
        messages=messages,
    )
