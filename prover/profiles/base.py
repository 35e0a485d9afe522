"""What a model family needs: its prompts, its extraction rule, its repair message and tool format."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from lean_server.verdict import Certificate
from prover.extract import Candidate, Rule, extract, normalize_newlines, split_target, strip_think
from prover.feedback import kimina_json, plain_list
from prover.lean_text import mask_comments, starts_command
from prover.llm import ChatMessage, CompletionRequest
from prover.types import ProofTask

RETRIEVED_CHARS = 4000  # per retrieved proof shown to the model


class RetrievedProof(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def proof(self) -> str: ...


@dataclass(frozen=True)
class Prompt:
    """Chat messages, or raw text for the completions endpoint (continuations)."""

    messages: tuple[ChatMessage, ...] = ()
    text: str | None = None
    continuation: bool = False

    def request(self, **fields: Any) -> CompletionRequest:
        if self.text is not None:
            return CompletionRequest(prompt=self.text, **fields)
        return CompletionRequest(messages=list(self.messages), **fields)


@dataclass
class RepairState:
    """OProver-style compact state: statement, retrieved proofs, last attempt and its feedback."""

    task: ProofTask
    round: int  # the round about to be generated (1 = first repair)
    prompt: Prompt  # the prompt that produced the last attempt
    output: str  # raw model text of the last attempt
    candidate: str | None  # the file that was checked (None: nothing could be extracted)
    certificate: Certificate | None
    feedback: str  # the profile's rendering of the certificate
    retrieved: Sequence[RetrievedProof] = field(default_factory=tuple)


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, str]
    text_before: str  # assistant text up to and including the call


# how a tactic proof starts: a lowercase tactic name, a focus dot, a combinator or a bracket
_TACTIC_START = re.compile(r"[a-z_·(⟨{\[‹]|<;>")


def looks_like_continuation(text: str) -> bool:
    """The answer continues a proof after `:= by` (the non-CoT shape) rather than answering in
    prose + a fenced file: it starts with tactics (comments aside; not with a command such as
    ``theorem`` or ``import``) and its first fence, if any, only closes that code. Models prompted
    either way (DeepSeek-Prover-V2, Kimina distills) answer in both shapes."""
    text = normalize_newlines(text)
    for body in (text, strip_think(text)):
        fence_at = body.find("```")
        head = body if fence_at < 0 else body[:fence_at]
        if fence_at >= 0 and body[fence_at + 3 :].split("\n", 1)[0].strip():
            continue  # ```lean4 opens a block: a fenced answer
        code = mask_comments(head).strip()
        if code and _TACTIC_START.match(code) and not starts_command(code):
            return True
    return False


def fence(code: str) -> str:
    return f"```lean4\n{code.strip()}\n```"


def retrieved_section(retrieved: Sequence[RetrievedProof], title: str) -> str:
    if not retrieved:
        return ""
    blocks = "\n\n".join(fence(r.proof[:RETRIEVED_CHARS]) for r in retrieved)
    return f"{title}\n\n{blocks}\n\n"


def continuation_prompt(task: ProofTask) -> str:
    """Non-CoT prompt: the file cut at the target's `:= by`, the model writes the tactics."""
    parts = split_target(task.statement, task.target)
    return f"Complete the following Lean 4 code:\n\n```lean4\n{parts.prefix}{parts.head} by\n  "


DEEPSEEK_COT_TAIL = (
    "Before producing the Lean 4 code to formally prove the given theorem, provide a detailed proof plan "
    "outlining the main proof steps and strategies.\n"
    "The plan should highlight key ideas, intermediate lemmas, and proof structures that will guide the "
    "construction of the final formal proof."
)


def deepseek_cot_prompt(stub: str) -> str:
    return f"Complete the following Lean 4 code:\n\n{fence(stub)}\n\n{DEEPSEEK_COT_TAIL}"


class Profile:
    """Base profile: a generic instruct model answering with one fenced lean4 block."""

    name = "generic"
    family = "generic"
    rule: Rule = "last_block"
    noncot = False
    temperature: float | None = None
    top_p: float | None = None
    presence_penalty: float | None = None
    max_tool_calls = 0
    system_prompt = "You are an expert in Lean 4 and Mathlib. You write complete, compiling proofs."

    # ---- prompts -----------------------------------------------------------------------
    def initial_prompt(self, task: ProofTask, retrieved: Sequence[RetrievedProof] = ()) -> Prompt:
        if self.noncot:
            return Prompt(text=continuation_prompt(task), continuation=True)
        return Prompt(messages=self._initial_messages(task, retrieved))

    def _initial_messages(
        self, task: ProofTask, retrieved: Sequence[RetrievedProof]
    ) -> tuple[ChatMessage, ...]:
        informal = f"Informal statement: {task.informal}\n\n" if task.informal else ""
        user = (
            f"{retrieved_section(retrieved, 'Verified proofs of related statements, for reference:')}"
            f"{informal}Complete the following Lean 4 proof. Keep the theorem statement exactly as given and do "
            "not use `sorry`, `admit` or new axioms. Reply with the complete Lean 4 file in a single "
            f"```lean4 code block.\n\n{fence(task.statement)}"
        )
        return (
            ChatMessage(role="system", content=self.system_prompt),
            ChatMessage(role="user", content=user),
        )

    def repair_prompt(self, state: RepairState) -> Prompt:
        """Default: multi-turn, the previous answer then a user message with the feedback."""
        if state.prompt.text is not None:  # continuation prompts cannot hold a dialogue
            return self._compact_repair(state)
        return Prompt(
            messages=(
                *state.prompt.messages,
                ChatMessage(role="assistant", content=state.output),
                ChatMessage(role="user", content=self.repair_message(state)),
            )
        )

    def _compact_repair(self, state: RepairState) -> Prompt:
        last = state.candidate or state.output
        user = (
            f"{retrieved_section(state.retrieved, 'Verified proofs of related statements:')}"
            f"Previous failed attempt:\n{fence(last)}\n\nLean errors:\n{state.feedback}\n\n"
            f"{deepseek_cot_prompt(state.task.statement)}"
        )
        return Prompt(messages=(ChatMessage(role="user", content=user),))

    def repair_message(self, state: RepairState) -> str:
        return (
            f"Lean rejected this proof:\n\n{state.feedback}\n\nFix the proof and reply with the complete "
            "corrected Lean 4 file in a single ```lean4 code block."
        )

    def format_feedback(self, candidate: str, cert: Certificate) -> str:
        return plain_list(cert)

    # ---- sampling ----------------------------------------------------------------------
    def sampling(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in ("temperature", "top_p", "presence_penalty"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out

    # ---- extraction --------------------------------------------------------------------
    def extract(
        self, text: str, task: ProofTask | str, *, continuation: bool | None = None
    ) -> Candidate | None:
        stub = task if isinstance(task, str) else task.statement
        target = None if isinstance(task, str) else task.target
        cont = self.noncot if continuation is None else continuation
        if not cont and looks_like_continuation(text):
            cont = True
        return extract(text, stub, rule=self.rule, continuation=cont, target=target)

    # ---- tools (TIR) -------------------------------------------------------------------
    def parse_tool_call(self, text: str) -> ToolCall | None:
        return None

    def tool_result(self, call: ToolCall, cert: Certificate) -> ChatMessage:
        return ChatMessage(
            role="tool", name=call.name, content=json.dumps(kimina_json(cert), ensure_ascii=False)
        )


class DeepSeekCoTPromptProfile(Profile):
    """One user turn: the retrieved proofs under ``retrieved_title``, then the DeepSeek-Prover-V2 CoT
    prompt (DeepSeek-Prover-V2, Goedel-Prover-V2 and OProver all start this way)."""

    retrieved_title = "Verified proofs of related statements, for reference:"

    def _initial_messages(
        self, task: ProofTask, retrieved: Sequence[RetrievedProof]
    ) -> tuple[ChatMessage, ...]:
        ref = retrieved_section(retrieved, self.retrieved_title)
        return (ChatMessage(role="user", content=f"{ref}{deepseek_cot_prompt(task.statement)}"),)


class StepByStepPromptProfile(Profile):
    """System prompt, then "solve step by step in Lean 4" with the informal problem, the retrieved
    proofs under ``retrieved_title`` and the fenced statement (Kimina-Prover, LongCat-Flash-Prover)."""

    retrieved_title = "# Related verified proofs:"
    user_suffix = ""

    def _initial_messages(
        self, task: ProofTask, retrieved: Sequence[RetrievedProof]
    ) -> tuple[ChatMessage, ...]:
        problem = task.informal or "(see the formal statement)"
        ref = retrieved_section(retrieved, self.retrieved_title)
        user = (
            "Think about and solve the following problem step by step in Lean 4.\n"
            f"# Problem: {problem}\n{ref}# Formal statement:\n{fence(task.statement)}{self.user_suffix}"
        )
        return (
            ChatMessage(role="system", content=self.system_prompt),
            ChatMessage(role="user", content=user),
        )
