"""Each profile's prompt shape, repair message and feedback rendering."""

from __future__ import annotations

import json

import pytest

from lean_server.verdict import Certificate, EnvironmentStamp, Message, Pos, Sorry, Verdict
from prover.errors import ProfileNotFound
from prover.llm import ChatMessage
from prover.profiles import get_profile, profile_names
from prover.profiles.base import Prompt, RepairState, looks_like_continuation
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


DEEPSEEK_COT_PROMPT = (
    "Complete the following Lean 4 code:\n\n```lean4\n" + STUB.strip() + "\n```\n\n"
    "Before producing the Lean 4 code to formally prove the given theorem, provide a detailed proof plan "
    "outlining the main proof steps and strategies.\n"
    "The plan should highlight key ideas, intermediate lemmas, and proof structures that will guide the "
    "construction of the final formal proof."
)


class _Hit:
    id = "m1"
    proof = "theorem other : 2 + 0 = 2 := by simp"


def test_oprover_initial_prompt_is_retrieved_proofs_then_the_deepseek_cot_prompt() -> None:
    """docs/prover.md: statement + top-k retrieved verified proofs, DeepSeek-Prover-V2 CoT prompt."""
    profile = get_profile("oprover")
    (plain,) = profile.initial_prompt(TASK).messages
    assert plain.role == "user" and plain.content == DEEPSEEK_COT_PROMPT
    (with_memory,) = profile.initial_prompt(TASK, [_Hit()]).messages
    assert with_memory.content == (
        "**Retrieved Verified Proofs:**\n\n```lean4\ntheorem other : 2 + 0 = 2 := by simp\n```\n\n"
        + DEEPSEEK_COT_PROMPT
    )
    assert profile.sampling() == {"temperature": 1.0, "top_p": 1.0}


def _noncot_state(profile_name: str, certificate: Certificate) -> RepairState:
    profile = get_profile(profile_name)
    prompt = profile.initial_prompt(TASK)
    assert prompt.continuation and prompt.text is not None
    candidate = STUB.replace("by sorry", "by\n  linarith")
    return RepairState(
        task=TASK,
        round=1,
        prompt=prompt,
        output="linarith",
        candidate=candidate,
        certificate=certificate,
        feedback=profile.format_feedback(candidate, certificate),
    )


def test_goedel_noncot_repair_is_comment_errors_then_the_correction_request() -> None:
    """docs/prover.md: non-CoT correction = errors as `--` comments, then "Please provide a corrected
    version. Wrap the proof in ```lean4 and ```."."""
    failed = cert([err(9, 2, 9, 10, "linarith failed\nextra line")])
    state = _noncot_state("goedel-v2-noncot", failed)
    assert state.feedback == "-- line 9: linarith failed\n-- extra line"
    (msg,) = get_profile("goedel-v2-noncot").repair_prompt(state).messages
    assert msg.role == "user"
    assert msg.content == (
        f"```lean4\n{state.candidate.strip() if state.candidate else ''}\n```\n\n"
        "-- line 9: linarith failed\n-- extra line\n\n"
        "Please provide a corrected version. Wrap the proof in ```lean4 and ```."
    )


def test_kimina_noncot_repair_is_an_error_fix_turn() -> None:
    """docs/prover.md: Kimina's error-fix turn is a plain user message after the model's answer,
    `# Error i:` / goal state / message / numbered snippet."""
    failed = cert([err(10, 2, 10, 10, "linarith failed\nx : ℕ\n⊢ x + 0 = x")])
    state = _noncot_state("kimina-noncot", failed)
    prompt = get_profile("kimina-noncot").repair_prompt(state)
    assert [m.role for m in prompt.messages] == ["system", "user", "assistant", "user"]
    assert prompt.messages[0].content == "You are an expert in mathematics and Lean 4."
    assert prompt.messages[1].content.startswith(
        "Think about and solve the following problem step by step in Lean 4.\n# Problem: Show that x + 0 = x."
    )
    assert prompt.messages[2].content == f"```lean4\n{(state.candidate or '').strip()}\n```"
    fix = prompt.messages[3].content
    assert fix.startswith("The proof is not correct.")
    assert "# Error 1:\nGoals state before error position:\nx : ℕ\n⊢ x + 0 = x\n\nError message:\n" in fix
    assert "008  | theorem add_zero'" in fix and "010 >|   linarith" in fix


def test_kimina_goal_state_for_every_error() -> None:
    """Each error gets its own goal: the message's own state, a sorry's goal on its line, and the
    certificate's goal at the first error for the first."""
    profile = get_profile("kimina")
    messages = [
        err(3, 0, 3, 2, "type mismatch\n  h\nhas type\n  P : Prop"),
        err(5, 0, 5, 2, "unsolved goals\nx : ℕ\n⊢ x = x"),
        err(7, 0, 7, 2, "linarith failed to find a contradiction\ncase a\nx : ℕ\n⊢ False"),
    ]
    text = profile.format_feedback(CODE, cert(messages, goal_at_first_error="⊢ first"))
    sections = text.split("# Error ")[1:]
    assert len(sections) == 3
    assert "Goals state before error position:\n⊢ first\n" in sections[0]
    assert "Goals state before error position:\nx : ℕ\n⊢ x = x\n" in sections[1]
    assert "Goals state before error position:\ncase a\nx : ℕ\n⊢ False\n" in sections[2]
    assert "(no goal state available)" not in text
    with_sorry = cert(
        [err(3, 0, 3, 2, "unsolved goals\n⊢ 1 = 1"), err(8, 2, 8, 5, "unknown identifier 'foo'")],
        sorries=[Sorry(pos=Pos(line=8, column=2), goal="y : ℕ\n⊢ y = y")],
    )
    second = profile.format_feedback(CODE, with_sorry).split("# Error ")[2]
    assert "Goals state before error position:\ny : ℕ\n⊢ y = y\n" in second
    no_goal = profile.format_feedback(CODE, cert([err(3, 0, 3, 2, "a"), err(4, 0, 4, 1, "b")]))
    assert no_goal.count("(no goal state available)") == 2


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("  nlinarith [sq_nonneg x]\n```", True),
        ("-- comment first\n  simp\n  <;> linarith\n```\n\nIn this proof we ...\n```lean4\nx\n```", True),
        ("/- plan\n``` inside -/\n", False),  # text after the first fence: it opens a block
        ("Here is the proof.\n```lean4\ntheorem t : True := by trivial\n```", False),
        ("<think>hmm</think>\n```lean4\ntheorem t : True := by trivial\n```", False),
        ("import Mathlib\ntheorem t : True := by trivial", False),
        ("The answer is 5.", False),
        ("", False),
    ],
)
def test_continuation_shape_detection(text: str, expected: bool) -> None:
    assert looks_like_continuation(text) is expected


def test_cot_profile_extracts_a_continuation_shaped_answer() -> None:
    """DeepSeek-Prover-V2 maps to its CoT profile; a continuation answer is still extracted."""
    cand = get_profile("deepseek-v2-cot").extract("simp\n```\n\nDone.", TASK)
    assert cand is not None and cand.source == "continuation"
    assert cand.code.endswith("x + 0 = x := by\n  simp\n")
    fenced = get_profile("deepseek-v2-cot").extract(lean_reply("omega"), TASK)
    assert fenced is not None and fenced.source == "block" and "omega" in fenced.code
