"""``parse_json_lines``: ``lean --json`` output (lines as Lean 4.35.0 prints them) to REPL-shaped messages."""

from __future__ import annotations

from lean_server.oneshot import parse_json_lines
from lean_server.protocol import message_from_raw

# Verbatim from `lean --json` (Lean 4.35.0) on a prelude file, plus the noise around them.
LEAN_JSON_OUTPUT = "\n".join(
    [
        '{"caption":"","data":"Unknown identifier `cheat2`","endPos":{"column":25,"line":6},'
        '"fileName":"k.lean","isSilent":false,"keepFullRange":false,'
        '"kind":"lean.unknownIdentifier._namedError","pos":{"column":19,"line":6},"severity":"error"}',
        '{"caption":"","data":"\'ok\' does not depend on any axioms","endPos":{"column":6,"line":7},'
        '"fileName":"k.lean","isSilent":false,"keepFullRange":false,"kind":"[anonymous]",'
        '"pos":{"column":0,"line":7},"severity":"information"}',
        '{"caption":"","data":"declaration uses `sorry`","endPos":null,"fileName":"k.lean",'
        '"isSilent":false,"keepFullRange":false,"pos":{"column":8,"line":9},"severity":"warning"}',
        "",
        "some stray text from lake",
        '{"not": "a message"}',
        '{"severity": "error", "data": "broken json',
    ]
)


def test_parse_json_lines_keeps_severity_positions_data_and_kind() -> None:
    messages = parse_json_lines(LEAN_JSON_OUTPUT)
    assert messages == [
        {
            "severity": "error",
            "pos": {"column": 19, "line": 6},
            "endPos": {"column": 25, "line": 6},
            "data": "Unknown identifier `cheat2`",
            "kind": "lean.unknownIdentifier._namedError",
        },
        {
            "severity": "info",  # `information` becomes the REPL's `info`
            "pos": {"column": 0, "line": 7},
            "endPos": {"column": 6, "line": 7},
            "data": "'ok' does not depend on any axioms",
            "kind": "[anonymous]",
        },
        {
            "severity": "warning",
            "pos": {"column": 8, "line": 9},
            "endPos": None,
            "data": "declaration uses `sorry`",
        },
    ]


def test_kind_reaches_the_typed_message() -> None:
    first, _, third = (message_from_raw(m) for m in parse_json_lines(LEAN_JSON_OUTPUT))
    assert first.kind == "lean.unknownIdentifier._namedError"
    assert first.pos is not None and (first.pos.line, first.pos.column) == (6, 19)
    assert third.kind is None and third.end_pos is None
