from __future__ import annotations

import pytest

from lean_server.feedback import (
    TRUNCATION_MARKER,
    categorize,
    goal_at_first_error,
    render_feedback,
    shape_messages,
)
from lean_server.verdict import Message, Pos


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("unexpected token 'at'; expected term", "syntax"),
        ("unknown identifier 'foo'", "unknown_identifier"),
        ("Unknown constant `N.add`", "unknown_identifier"),
        ("type mismatch\n  h\nhas type\n  P : Prop", "type_mismatch"),
        ("Type mismatch\n  MyEq.refl\nhas type", "type_mismatch"),
        ("unsolved goals\nx : Nat\n⊢ x = x", "unsolved_goals"),
        (
            "(deterministic) timeout at `whnf`, maximum number of heartbeats (200000) has been reached",
            "timeout",
        ),
        ("linarith failed to find a contradiction", "unsolved_goals"),
        ("something odd", "other"),
    ],
)
def test_categories_are_stable(text: str, category: str) -> None:
    assert categorize(text) == category


def test_duplicates_merged_long_text_truncated_errors_categorised() -> None:
    pos = Pos(line=3, column=2)
    dup = Message(severity="error", data="unknown identifier 'x'", pos=pos)
    long = Message(severity="warning", data="w" * 5000, pos=Pos(line=4, column=0))
    shaped = shape_messages(
        [dup, dup, long, Message(severity="error", data="unknown identifier 'x'", pos=Pos(line=5, column=0))]
    )
    assert len(shaped) == 3
    assert shaped[0].category == "unknown_identifier"
    assert shaped[1].category is None
    assert len(shaped[1].data) < 2100
    assert shaped[1].data.endswith(TRUNCATION_MARKER.format(n=3000))


def test_goal_at_first_error_and_rendering() -> None:
    msgs = shape_messages(
        [
            Message(
                severity="error", data="unsolved goals\nx : Nat\n⊢ x + 0 = x", pos=Pos(line=2, column=40)
            ),
            Message(severity="error", data="unknown identifier 'y'", pos=Pos(line=3, column=1)),
        ]
    )
    goal = goal_at_first_error(msgs, [])
    assert goal == "x : Nat\n⊢ x + 0 = x"
    text = render_feedback(msgs, ["error at line 2"], goal, verdict="LEAN_ERROR")
    assert text is not None
    assert "line 2, col 40: error [unsolved_goals]" in text
    assert "line 3, col 1: error [unknown_identifier]" in text
    assert text.endswith("⊢ x + 0 = x")
    assert render_feedback([], [], None, verdict="PASS") is None
