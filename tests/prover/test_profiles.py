"""Each profile's prompt shape, repair message and feedback rendering."""

from __future__ import annotations

import json

import pytest

from lean_server.verdict import Certificate, EnvironmentStamp, Message, Pos, Verdict
from prover.errors import ProfileNotFound
from prover.llm import ChatMessage
from prover.profiles import get_profile, profile_names
from prover.profiles.base import Prompt, RepairState
from prover.types import ProofTask
from tests.prover.conftest import STUB, lean_reply

TASK = ProofTask(id="t1", statement=STUB, informal="Show that x + 0 = x.")
CODE = "\n".join(f"line{i}" for i in range(1, 31))


def cert(messages: list[Message], verdict: Verdict = Verdict.LEAN_ERROR, **kw: object) -> Certificate:
    return Certificate(
        id="c",
        verdict=verdict,
        proof_hash="h",
        environment=EnvironmentStamp(backend="x"),
        messages=messages,
        **kw,
    )


def err(line: int, col: int, end_line: int, end_col: int, data: str) -> Message:
    return Message(
        severity="error",
        data=data,
        pos=Pos(line=line, column=col),
        end_pos=Pos(line=end_line, column=end_col),
    )


def test_registry_and_unknown_profile() -> None:
    for name in ("generic", "deepseek-v2-cot", "deepseek-v2", "goedel-v2", "kimina", "longcat", "oprover"):
        assert get_profile(name).name in profile_names()
    with pytest.raises(ProfileNotFound):
        get_profile("gpt-17")


def test_deepseek_cot_and_noncot_prompts() -> None:
    cot = get_profile("deepseek-v2-cot").initial_prompt(TASK)
    assert cot.text is None and len(cot.messages) == 1
    content = cot.messages[0].content
    assert (
        content.startswith("Complete the following Lean 4 code:\n\n```lean4\n")
        and "detailed proof plan" in content
    )
    assert "x + 0 = x := by sorry" in content
    noncot = get_profile("deepseek-v2").initial_prompt(TASK)
    assert noncot.continuation and noncot.text is not None
    assert noncot.text.endswith("x + 0 = x := by\n  ") and "sorry" not in noncot.text


def test_goedel_error_marking_truncation_and_omission() -> None:
    profile = get_profile("goedel-v2")
    messages = [err(10, 2, 10, 5, "unknown identifier 'foo'"), err(12, 0, 20, 3, "unsolved goals")]
    messages += [err(25, 0, 25, 1, f"e{i}") for i in range(8)]
    text = profile.format_feedback(CODE, cert(messages))
    assert text.count("Error Message:") == 8
    assert "... [Omitted 2 more errors] ..." in text
    first = text.split("Error 2:")[0]
    assert "line6\nline7\nline8\nline9\nli<error>ne1</error>0\nline11" in first  # 4 before, span, 1 after
    second = text.split("Error 2:")[1].split("Error 3:")[0]
    assert "--[Truncated]--" in second and "line19" not in second and "<error>line12" in second
    state = RepairState(
        task=TASK,
        round=1,
        prompt=profile.initial_prompt(TASK),
        output="out",
        candidate=CODE,
        certificate=cert(messages),
        feedback=text,
    )
    repaired = profile.repair_prompt(state)
    assert [m.role for m in repaired.messages] == ["user", "assistant", "user"]
    assert repaired.messages[2].content.startswith("The proof (Round 0) is not correct.")
    assert "<error></error>" in repaired.messages[2].content and text in repaired.messages[2].content


def test_kimina_prompt_and_error_fix_turn() -> None:
    profile = get_profile("kimina")
    prompt = profile.initial_prompt(TASK)
    assert prompt.messages[0] == ChatMessage(
        role="system", content="You are an expert in mathematics and Lean 4."
    )
    assert "# Problem: Show that x + 0 = x." in prompt.messages[1].content
    assert "# Formal statement:\n```lean4\n" in prompt.messages[1].content
    messages = [err(5, 0, 5, 2, f"boom{i}") for i in range(5)]
    text = profile.format_feedback(CODE, cert(messages, goal_at_first_error="x : ℕ\n⊢ x + 0 = x"))
    assert text.count("# Error ") == 3
    assert "Goals state before error position:\nx : ℕ\n⊢ x + 0 = x" in text
    assert "003  | line3\n004  | line4\n005 >| line5\n006  | line6\n007  | line7" in text
    crashed = profile.format_feedback(CODE, cert([], Verdict.INFRA_ERROR, reasons=["REPL crashed"]))
    assert "# System Error:\nREPL crashed" in crashed
    assert get_profile("kimina").extract(lean_reply("simp"), TASK) is not None


def test_oprover_compact_repair_state() -> None:
    profile = get_profile("oprover")

    class Hit:
        id = "m1"
        proof = "theorem other : 2 + 0 = 2 := by simp"

    state = RepairState(
        task=TASK,
        round=2,
        prompt=Prompt(),
        output="raw",
        candidate="theorem bad := by linarith",
        certificate=None,
        feedback="- line 3, column 2: error: linarith failed",
        retrieved=[Hit()],
    )
    (msg,) = profile.repair_prompt(state).messages
    c = msg.content
    assert c.index("**Retrieved Verified Proofs:**") < c.index("**Previous Failed Attempt:**")
    assert (
        c.index("**Previous Failed Attempt:**")
        < c.index("**Error Messages:**")
        < c.index("**Current Task:**")
    )
    assert "theorem bad := by linarith" in c and "linarith failed" in c and "theorem other" in c
    assert c.endswith(
        "Please learn from the previous failed attempt and error messages to avoid similar mistakes."
    )


def test_longcat_tool_declaration_call_parsing_and_result() -> None:
    profile = get_profile("longcat")
    prompt = profile.initial_prompt(TASK)
    system = prompt.messages[0].content
    assert "### Tool name: lean4_compiler" in system and "<longcat_tool_call>{function-name}" in system
    text = (
        "<longcat_think>try it</longcat_think><longcat_tool_call>lean4_compiler\n"
        "<longcat_arg_key>lean4_code</longcat_arg_key>\n<longcat_arg_value>```lean4\nimport Mathlib\n"
        "theorem t : 1 = 1 := by rfl\n```</longcat_arg_value>\n</longcat_tool_call>"
    )
    call = profile.parse_tool_call(text)
    assert call is not None and call.name == "lean4_compiler"
    assert call.arguments["lean4_code"] == "import Mathlib\ntheorem t : 1 = 1 := by rfl"
    assert profile.parse_tool_call(text + "\nFinal:\n```lean4\ntheorem t : 1 = 1 := by rfl\n```") is None
    json_call = profile.parse_tool_call(
        '<longcat_tool_call>{"name": "lean4_compiler", "arguments": {"lean4_code": "x"}}</longcat_tool_call>'
    )
    assert json_call is not None and json_call.arguments == {"lean4_code": "x"}
    result = profile.tool_result(call, cert([err(2, 0, 2, 3, "type mismatch")]))
    payload = json.loads(result.content)
    assert result.role == "tool"
    assert payload["info"]["pass"] is False
    assert payload["info"]["errors"][0] == {
        "severity": "error",
        "data": "type mismatch",
        "pos": {"line": 2, "column": 0},
        "endPos": {"line": 2, "column": 3},
    }


def test_generic_prompt_and_repair() -> None:
    profile = get_profile("generic")
    prompt = profile.initial_prompt(TASK)
    assert [m.role for m in prompt.messages] == ["system", "user"]
    assert (
        "```lean4" in prompt.messages[1].content
        and "Informal statement: Show that" in prompt.messages[1].content
    )
    feedback = profile.format_feedback(CODE, cert([err(3, 1, 3, 2, "oops")]))
    assert feedback == "- line 3, column 1: error: oops"
    state = RepairState(
        task=TASK, round=1, prompt=prompt, output="prev", candidate=CODE, certificate=None, feedback=feedback
    )
    rep = profile.repair_prompt(state)
    assert rep.messages[-2] == ChatMessage(role="assistant", content="prev")
    assert "oops" in rep.messages[-1].content
