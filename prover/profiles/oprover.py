"""OProver: bounded refinement with a compact state (statement + retrieved proofs + last attempt +
its Lean feedback); only the most recent attempt is kept."""

from __future__ import annotations

from collections.abc import Sequence

from prover.llm import ChatMessage
from prover.profiles.base import (
    Profile,
    Prompt,
    RepairState,
    RetrievedProof,
    deepseek_cot_prompt,
    fence,
    retrieved_section,
)
from prover.types import ProofTask

RETRIEVED_TITLE = "**Retrieved Verified Proofs:**"


class OProverProfile(Profile):
    name = "oprover"
    family = "oprover"
    temperature = 1.0
    top_p = 1.0

    def _initial_messages(
        self, task: ProofTask, retrieved: Sequence[RetrievedProof]
    ) -> tuple[ChatMessage, ...]:
        ref = retrieved_section(retrieved, RETRIEVED_TITLE)
        return (ChatMessage(role="user", content=f"{ref}{deepseek_cot_prompt(task.statement)}"),)

    def repair_prompt(self, state: RepairState) -> Prompt:
        last = state.candidate or state.output
        user = (
            f"{retrieved_section(state.retrieved, RETRIEVED_TITLE)}"
            f"**Previous Failed Attempt:**\n{fence(last)}\n\n"
            f"**Error Messages:**\n{state.feedback}\n\n"
            f"**Current Task:**\n{deepseek_cot_prompt(state.task.statement)}\n"
            "Please learn from the previous failed attempt and error messages to avoid similar mistakes."
        )
        return Prompt(messages=(ChatMessage(role="user", content=user),))
