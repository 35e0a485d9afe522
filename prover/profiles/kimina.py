"""Kimina-Prover: `<think>` reasoning, last lean4 block with theorem/by/:=/import; error-fix turn.

Error-fix turn: at most 3 errors, each with the goal state before the error (per error: the state
the message carries, or a `sorry`'s goal on that line; the certificate's goal at the first error
for the first), the message and a
numbered snippet (2 lines before and after, `NNN >|` marks the error line, `NNN  |` the others);
a "# System Error:" section when Lean crashed or timed out.
"""

from __future__ import annotations

from lean_server.verdict import Certificate
from prover.feedback import problems, system_error
from prover.llm import ChatMessage
from prover.profiles.base import Prompt, RepairState, StepByStepPromptProfile, fence

MAX_ERRORS = 3
CONTEXT_LINES = 2


def numbered_snippet(lines: list[str], line_no: int) -> str:
    first = max(1, line_no - CONTEXT_LINES)
    last = min(len(lines), line_no + CONTEXT_LINES)
    out = []
    for n in range(first, last + 1):
        mark = ">|" if n == line_no else " |"
        out.append(f"{n:03d} {mark} {lines[n - 1]}")
    return "\n".join(out)


def format_errors(candidate: str, cert: Certificate) -> str:
    lines = candidate.replace("\r\n", "\n").split("\n")
    out: list[str] = []
    for i, p in enumerate(problems(cert)[:MAX_ERRORS], 1):
        goal = p.goal or "(no goal state available)"
        snippet = numbered_snippet(lines, p.line) if p.line is not None and 1 <= p.line <= len(lines) else ""
        out.append(
            f"# Error {i}:\n"
            f"Goals state before error position:\n{goal}\n\n"
            f"Error message:\n{p.data.strip()}\n\n"
            f"Lean 4 code snippet with error:\n{snippet}\n"
        )
    sys_err = system_error(cert)
    if sys_err:
        out.append(f"# System Error:\n{sys_err}\n")
    return "\n".join(out)


class KiminaProfile(StepByStepPromptProfile):
    name = "kimina"
    family = "kimina-prover"
    rule = "kimina_block"
    temperature = 0.8
    top_p = 0.95
    presence_penalty = 0.2
    system_prompt = "You are an expert in mathematics and Lean 4."
    retrieved_title = "# Proved lemmas and related proofs:"
    user_suffix = "\n"

    def format_feedback(self, candidate: str, cert: Certificate) -> str:
        return format_errors(candidate, cert)

    def repair_message(self, state: RepairState) -> str:
        return (
            "The proof is not correct. Here are the Lean 4 compiler errors.\n\n"
            f"{state.feedback}\n"
            "Fix the proof: think about the errors step by step, then give the complete corrected Lean 4 code "
            "in a ```lean4 block."
        )

    def repair_prompt(self, state: RepairState) -> Prompt:
        if state.prompt.text is None:
            return super().repair_prompt(state)
        # a continuation prompt holds no dialogue: the error-fix turn follows the chat prompt, with
        # the failed file as the model's previous answer
        last = state.candidate or state.output
        return Prompt(
            messages=(
                *self._initial_messages(state.task, state.retrieved),
                ChatMessage(role="assistant", content=fence(last)),
                ChatMessage(role="user", content=self.repair_message(state)),
            )
        )


class KiminaNonCoTProfile(KiminaProfile):
    name = "kimina-noncot"
    noncot = True
