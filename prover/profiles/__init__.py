"""Model profiles: prompt template, extraction rule, repair format and tool format per family."""

from __future__ import annotations

from prover.errors import ProfileNotFound
from prover.profiles.base import Profile, Prompt, RepairState, ToolCall
from prover.profiles.deepseek import DeepSeekV2CoTProfile, DeepSeekV2Profile
from prover.profiles.generic import GenericProfile
from prover.profiles.goedel import GoedelV2NonCoTProfile, GoedelV2Profile
from prover.profiles.kimina import KiminaNonCoTProfile, KiminaProfile
from prover.profiles.longcat import LongCatProfile
from prover.profiles.oprover import OProverProfile

_PROFILES: dict[str, type[Profile]] = {
    cls.name: cls
    for cls in (
        GenericProfile,
        DeepSeekV2CoTProfile,
        DeepSeekV2Profile,
        GoedelV2Profile,
        GoedelV2NonCoTProfile,
        KiminaProfile,
        KiminaNonCoTProfile,
        LongCatProfile,
        OProverProfile,
    )
}
_ALIASES = {
    "goedel-sft": "goedel-v2-noncot",
    "deepseek-v2-noncot": "deepseek-v2",
    "longcat-flash-prover": "longcat",
}
# Hugging Face model ids -> profile (non-CoT where the model is normally prompted by continuation).
# The CoT profiles also recognise a continuation-shaped answer (see `looks_like_continuation`), so
# DeepSeek-Prover-V2 and the Kimina distills are extracted right whichever way they were prompted.
MODEL_PROFILES: dict[str, str] = {
    "deepseek-ai/DeepSeek-Prover-V2-7B": "deepseek-v2-cot",
    "deepseek-ai/DeepSeek-Prover-V2-671B": "deepseek-v2-cot",
    "Goedel-LM/Goedel-Prover-V2-8B": "goedel-v2",
    "Goedel-LM/Goedel-Prover-V2-32B": "goedel-v2",
    "Goedel-LM/Goedel-Prover-SFT": "goedel-sft",
    "AI-MO/Kimina-Prover-Preview-Distill-7B": "kimina",
    "AI-MO/Kimina-Prover-72B": "kimina",
    "AI-MO/Kimina-Prover-Distill-8B": "kimina",
    "AI-MO/Kimina-Prover-Distill-1.7B": "kimina",
    "meituan-longcat/LongCat-Flash-Prover": "longcat",
    "m-a-p/OProver-8B": "oprover",
    "m-a-p/OProver-32B": "oprover",
}


def profile_names() -> list[str]:
    return sorted([*_PROFILES, *_ALIASES])


def get_profile(name: str | None) -> Profile:
    """The profile called ``name`` (default ``generic``); raises ProfileNotFound."""
    key = (name or "generic").strip().lower()
    key = _ALIASES.get(key, key)
    cls = _PROFILES.get(key)
    if cls is None:
        raise ProfileNotFound(f"unknown profile {name!r}; choose one of {', '.join(profile_names())}")
    return cls()


def profile_for_model(model: str) -> Profile:
    return get_profile(MODEL_PROFILES.get(model, "generic"))


__all__ = [
    "MODEL_PROFILES",
    "Profile",
    "Prompt",
    "RepairState",
    "ToolCall",
    "get_profile",
    "profile_for_model",
    "profile_names",
]
