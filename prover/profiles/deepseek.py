"""DeepSeek-Prover-V2 (7B / 671B): CoT prompt (plan first, full file in the last lean4 block) and the
non-CoT continuation prompt (the model writes the tactics after `:= by`)."""

from __future__ import annotations

from collections.abc import Sequence

from prover.llm import ChatMessage
from prover.profiles.base import Profile, RetrievedProof, deepseek_cot_prompt, retrieved_section
from prover.types import ProofTask


class DeepSeekV2CoTProfile(Profile):
    name = "deepseek-v2-cot"
    family = "deepseek-prover-v2"
    temperature = 1.0
    top_p = 0.95

    def _initial_messages(
        self, task: ProofTask, retrieved: Sequence[RetrievedProof]
    ) -> tuple[ChatMessage, ...]:
        ref = retrieved_section(retrieved, "Verified proofs of related statements, for reference:")
        return (ChatMessage(role="user", content=f"{ref}{deepseek_cot_prompt(task.statement)}"),)


class DeepSeekV2Profile(DeepSeekV2CoTProfile):
    """Non-CoT: completion of the file cut at `:= by`."""

    name = "deepseek-v2"
    noncot = True
