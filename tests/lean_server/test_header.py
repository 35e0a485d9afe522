from __future__ import annotations

from typing import Any

from lean_server.header import shift_response, split_header


def test_exact_imports_are_the_key_and_body_lines_map_back() -> None:
    code = "-- a comment\nimport Mathlib.Data.Real.Basic\n/- block\n comment -/\nimport Aesop\n\ntheorem t : True := trivial\n"
    split = split_header(code)
    assert split.header == "import Mathlib.Data.Real.Basic\nimport Aesop"
    assert split.imports == ("Mathlib.Data.Real.Basic", "Aesop")
    assert split.line_offset == 5
    body_lines = split.body.split("\n")
    # body line 2 is original line 7
    assert body_lines[1] == "theorem t : True := trivial"
    assert code.split("\n")[1 + split.line_offset] == body_lines[1]


def test_never_collapses_to_import_mathlib() -> None:
    assert split_header("import Mathlib.Tactic\nexample : True := trivial").header == "import Mathlib.Tactic"
    assert split_header("import Mathlib\nexample : True := trivial").header == "import Mathlib"


def test_headerless_code_is_whole_body() -> None:
    code = "theorem importance : True := trivial\n-- import Foo"
    split = split_header(code)
    assert (split.header, split.body, split.line_offset) == ("", code, 0)


def test_import_with_trailing_comment_and_multiple_modules() -> None:
    split = split_header("import A B -- two\nimport C\ndef x := 1")
    assert split.imports == ("A", "B", "C")
    assert split.body == "def x := 1"
    assert split.line_offset == 2


def test_block_comment_followed_by_code_stops_header() -> None:
    split = split_header("import A\n/- c -/ def x := 1\n")
    assert split.imports == ("A",)
    assert split.body.startswith("/- c -/ def x")


def test_shift_response_moves_messages_and_sorries_not_line_zero() -> None:
    resp: dict[str, Any] = {
        "messages": [
            {
                "severity": "error",
                "pos": {"line": 2, "column": 1},
                "endPos": {"line": 3, "column": 0},
                "data": "x",
            },
            {"severity": "error", "pos": {"line": 0, "column": 0}, "endPos": None, "data": "y"},
        ],
        "sorries": [{"pos": {"line": 1, "column": 4}, "goal": "⊢ True"}],
        "env": 3,
    }
    out = shift_response(resp, 4)
    assert out["messages"][0]["pos"] == {"line": 6, "column": 1}
    assert out["messages"][0]["endPos"] == {"line": 7, "column": 0}
    assert out["messages"][1]["pos"] == {"line": 0, "column": 0}
    assert out["sorries"][0]["pos"] == {"line": 5, "column": 4}
    assert resp["messages"][0]["pos"]["line"] == 2  # the input is not mutated
    assert out["env"] == 3


def test_shift_response_maps_infotree_ranges() -> None:
    node = {
        "node": {
            "stx": {
                "range": {
                    "synthetic": False,
                    "start": {"line": 1, "column": 28},
                    "finish": {"line": 2, "column": 3},
                }
            }
        },
        "kind": "TacticInfo",
        "children": [
            {
                "node": {
                    "stx": {"range": {"start": {"line": 2, "column": 0}, "finish": {"line": 2, "column": 5}}}
                }
            }
        ],
    }
    out = shift_response({"infotree": [node], "env": 0}, 3)
    top = out["infotree"][0]["node"]["stx"]["range"]
    assert top["start"] == {"line": 4, "column": 28} and top["finish"] == {"line": 5, "column": 3}
    assert top["synthetic"] is False
    child = out["infotree"][0]["children"][0]["node"]["stx"]["range"]
    assert child["start"]["line"] == 5
