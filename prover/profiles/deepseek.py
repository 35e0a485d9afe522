"""DeepSeek-Prover-V2 (7B / 671B): CoT prompt (plan first, full file in the last lean4 block) and the
non-CoT continuation prompt (the model writes the tactics after `:= by`)."""

from __future__ import annotations

from prover.profiles.base import DeepSeekCoTPromptProfile


class DeepSeekV2CoTProfile(DeepSeekCoTPromptProfile):
    name = "deepseek-v2-cot"
    family = "deepseek-prover-v2"
    temperature = 1.0
    top_p = 0.95


class DeepSeekV2Profile(DeepSeekV2CoTProfile):
    """Non-CoT: completion of the file cut at `:= by`."""

    name = "deepseek-v2"
    noncot = True
