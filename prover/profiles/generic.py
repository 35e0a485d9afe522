"""Generic instruct model: one lean4 block in, one lean4 block out, plain error list for repairs."""

from __future__ import annotations

from prover.profiles.base import Profile


class GenericProfile(Profile):
    name = "generic"
    family = "generic"
