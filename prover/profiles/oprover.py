"""OProver: bounded refinement with a compact state (statement + retrieved proofs + last attempt +
its Lean feedback); only the most recent attempt is kept."""

from __future__ import annotations

from prover.llm import ChatMessage
from prover.profiles.base import (
    DeepSeekCoTPromptProfile,
    Prompt,
    RepairState,
    deepseek_cot_prompt,
    fence,
    retrieved_section,
)

RETRIEVED_TITLE = "**Retrieved Verified Proofs:**"


class OProverProfile(DeepSeekCoTPromptProfile):
    name = "oprover"
    family = "oprover"
    temperature = 1.0
    top_p = 1.0
    retrieved_title = RETRIEVED_TITLE

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
