"""`--budget` text -> the per-sample :class:`Budget`.

Forms: ``8`` (max attempts per sample) or ``attempts=8,repairs=2,tokens=200000,compile=64,wall=600``.
Unset keys keep :class:`Budget`'s defaults (with ``attempts`` defaulting to the settings' value).
"""

from __future__ import annotations

from prover.types import Budget

_KEYS = {
    "attempts": "max_attempts",
    "repairs": "max_repair_rounds",
    "tokens": "max_tokens",
    "compile": "max_compile_calls",
    "compile_calls": "max_compile_calls",
    "wall": "max_wall_s",
    "wall_s": "max_wall_s",
}


def parse_budget(text: str | None, *, default_attempts: int) -> Budget:
    values: dict[str, float | int] = {"max_attempts": default_attempts}
    if text is None or not text.strip():
        return Budget.model_validate(values)
    spec = text.strip()
    if spec.isdigit():
        values["max_attempts"] = int(spec)
        return Budget.model_validate(values)
    for part in spec.split(","):
        key, sep, raw = part.partition("=")
        field = _KEYS.get(key.strip())
        if not sep or field is None:
            raise ValueError(
                f"bad --budget item {part!r}: use N or key=value with keys {', '.join(sorted(set(_KEYS)))}"
            )
        try:
            values[field] = float(raw) if field == "max_wall_s" else int(raw)
        except ValueError as exc:
            raise ValueError(f"bad --budget value in {part!r}") from exc
    return Budget.model_validate(values)
