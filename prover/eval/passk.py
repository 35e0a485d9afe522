"""Unbiased pass@k (Chen et al. 2021, "Evaluating Large Language Models Trained on Code").

With n samples of which c pass, the probability that at least one of k samples drawn without
replacement passes is ``1 - C(n-c, k) / C(n, k)``. The ratio of binomials is computed as the
product ``prod_{i=n-c+1}^{n} (1 - k/i)``, which never forms a large binomial coefficient.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from prover.eval.errors import InsufficientSamples


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one problem with n samples, c of them correct."""
    if k < 1:
        raise ValueError(f"k must be >= 1 (got {k})")
    if c < 0 or c > n:
        raise ValueError(f"need 0 <= c <= n (got n={n}, c={c})")
    if n < k:
        raise InsufficientSamples(
            f"pass@{k} needs at least {k} samples per problem, this problem has n={n}; "
            f"run with --n {k} or more, or drop k={k}"
        )
    if n - c < k:
        return 1.0
    ratio = 1.0
    for i in range(n - c + 1, n + 1):
        ratio *= 1.0 - k / i
    return 1.0 - ratio


def mean_pass_at_k(counts: Iterable[tuple[int, int]], k: int) -> float:
    """pass@k averaged over problems, given (n, c) per problem; 0.0 for no problems."""
    values = [pass_at_k(n, c, k) for n, c in counts]
    return sum(values) / len(values) if values else 0.0


def parse_ks(text: str | Sequence[int]) -> list[int]:
    """`"1,8,32"` -> [1, 8, 32] (sorted, unique, each >= 1)."""
    if isinstance(text, str):
        parts = [p.strip() for p in text.split(",") if p.strip()]
        try:
            ks = [int(p) for p in parts]
        except ValueError as exc:
            raise ValueError(f"--k must be a comma-separated list of integers (got {text!r})") from exc
    else:
        ks = list(text)
    if not ks or any(k < 1 for k in ks):
        raise ValueError(f"--k needs integers >= 1 (got {text!r})")
    return sorted(set(ks))
