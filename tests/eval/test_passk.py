"""Unbiased pass@k against hand-computed values and its edge cases."""

from __future__ import annotations

import math

import pytest

from prover.eval.errors import InsufficientSamples
from prover.eval.passk import mean_pass_at_k, parse_ks, pass_at_k


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (5, 2, 1, 2 / 5),  # pass@1 = c/n
        (5, 2, 2, 1 - 3 / 10),  # 1 - C(3,2)/C(5,2)
        (10, 3, 5, 1 - 21 / 252),  # 1 - C(7,5)/C(10,5)
        (4, 1, 3, 1 - 1 / 4),  # 1 - C(3,3)/C(4,3)
        (32, 1, 8, 8 / 32),  # one success: k/n
    ],
)
def test_pass_at_k_matches_hand_computed_values(n: int, c: int, k: int, expected: float) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(expected, rel=1e-12)


def test_no_success_gives_zero_and_all_successes_give_one() -> None:
    assert pass_at_k(8, 0, 1) == 0.0
    assert pass_at_k(8, 0, 8) == 0.0
    assert pass_at_k(8, 8, 1) == 1.0
    assert pass_at_k(8, 8, 8) == 1.0


def test_fewer_failures_than_k_is_certain_success() -> None:
    assert pass_at_k(10, 8, 3) == 1.0  # only 2 failures: any 3 draws include a success


def test_n_below_k_is_rejected_with_a_clear_error() -> None:
    with pytest.raises(InsufficientSamples, match=r"pass@8 needs at least 8 samples.*n=4.*--n 8"):
        pass_at_k(4, 1, 8)
    with pytest.raises(ValueError):  # InsufficientSamples is a ValueError too
        pass_at_k(1, 0, 2)


def test_invalid_counts_are_rejected() -> None:
    with pytest.raises(ValueError, match="0 <= c <= n"):
        pass_at_k(3, 4, 1)
    with pytest.raises(ValueError, match="k must be"):
        pass_at_k(3, 1, 0)


def test_product_form_is_stable_where_binomials_are_huge() -> None:
    n, c, k = 3000, 1500, 200
    exact = 1 - math.comb(n - c, k) / math.comb(n, k)
    assert pass_at_k(n, c, k) == pytest.approx(exact, rel=1e-9)
    assert 0.0 <= pass_at_k(20000, 3, 1000) <= 1.0
    assert pass_at_k(20000, 3, 1000) == pytest.approx(
        1 - math.comb(19997, 1000) / math.comb(20000, 1000), rel=1e-9
    )


def test_mean_over_problems() -> None:
    assert mean_pass_at_k([(4, 0), (4, 4), (4, 2)], 1) == pytest.approx((0 + 1 + 0.5) / 3)
    assert mean_pass_at_k([], 1) == 0.0
    with pytest.raises(InsufficientSamples):
        mean_pass_at_k([(4, 0), (2, 1)], 3)


def test_parse_ks() -> None:
    assert parse_ks("32, 1,8,8") == [1, 8, 32]
    with pytest.raises(ValueError):
        parse_ks("1,x")
    with pytest.raises(ValueError):
        parse_ks("0")
