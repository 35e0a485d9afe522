"""Goedel-Prover-V2: DeepSeek CoT prompt; self-correction turns with errors marked `<error></error>`.

Error rendering (from the released pipeline): at most 8 errors; each shows up to 4 preceding lines,
the erroneous span wrapped in `<error>…</error>` (spans over 6 lines truncated with
"--[Truncated]--"), the following line, then the message; "... [Omitted N more errors] ...".
The non-CoT variant (Goedel-Prover-SFT style) continues the file after `:= by` and gets its errors as
`--` comments.
"""

from __future__ import annotations

from lean_server.verdict import Certificate
from prover.feedback import Problem, closing_lines, problems
from prover.llm import ChatMessage
from prover.profiles.base import (
    DeepSeekCoTPromptProfile,
    Prompt,
    RepairState,
)

MAX_ERRORS = 8
PRECEDING_LINES = 4
MAX_SPAN_LINES = 6


def _marked_excerpt(lines: list[str], p: Problem) -> str:
    if p.line is None or not 1 <= p.line <= len(lines):
        return ""
    first = p.line - 1
    last = min(max(first, (p.end_line or p.line) - 1), len(lines) - 1)
    start_col = p.column or 0
    end_col = p.end_column if p.end_line is not None and p.end_column is not None else None
    span = lines[first : last + 1]
    if len(span) == 1:
        line = span[0]
        stop = len(line) if end_col is None or end_col <= start_col else end_col
        marked = [f"{line[:start_col]}<error>{line[start_col:stop]}</error>{line[stop:]}"]
    else:
        head = f"{span[0][:start_col]}<error>{span[0][start_col:]}"
        tail_line = span[-1]
        stop = len(tail_line) if end_col is None else end_col
        if len(span) > MAX_SPAN_LINES:
            marked = [head, *span[1 : MAX_SPAN_LINES - 1], "--[Truncated]--</error>"]
        else:
            marked = [head, *span[1:-1], f"{tail_line[:stop]}</error>{tail_line[stop:]}"]
    before = lines[max(0, first - PRECEDING_LINES) : first]
    after = lines[last + 1 : last + 2]
    return "\n".join([*before, *marked, *after])


def format_errors(candidate: str, cert: Certificate) -> str:
    lines = candidate.replace("\r\n", "\n").split("\n")
    items = problems(cert)
    out: list[str] = []
    for i, p in enumerate(items[:MAX_ERRORS], 1):
        excerpt = _marked_excerpt(lines, p)
        code = f"Corresponding Code:\n```lean4\n{excerpt}\n```\n" if excerpt else ""
        out.append(f"Error {i}:\n\n{code}\nError Message: {p.data.strip()}\n")
    out += closing_lines(
        cert, shown=min(MAX_ERRORS, len(items)), total=len(items), system_label="System Error"
    )
    return "\n".join(out)


def comment_errors(cert: Certificate) -> str:
    items = problems(cert)[:MAX_ERRORS]
    rendered: list[str] = []
    for p in items:
        where = f"line {p.line}: " if p.line is not None else ""
        rendered.extend(
            f"-- {where}{ln}" if k == 0 else f"-- {ln}" for k, ln in enumerate(p.data.strip().split("\n"))
        )
    return "\n".join(rendered)


class GoedelV2Profile(DeepSeekCoTPromptProfile):
    name = "goedel-v2"
    family = "goedel-prover-v2"
    temperature = 1.0
    top_p = 0.95

    def format_feedback(self, candidate: str, cert: Certificate) -> str:
        if self.noncot:
            return comment_errors(cert)
        return format_errors(candidate, cert)

    def repair_message(self, state: RepairState) -> str:
        if self.noncot:
            return (
                f"{state.feedback}\n\nPlease provide a corrected version. Wrap the proof in ```lean4 and ```."
            )
        return (
            f"The proof (Round {state.round - 1}) is not correct. Following is the compilation error message, "
            "where we use <error></error> to signal the position of the error.\n\n"
            f"{state.feedback}\n\n"
            "Before producing the Lean 4 code to formally prove the given theorem, provide a detailed analysis "
            "of the error message."
        )

    def repair_prompt(self, state: RepairState) -> Prompt:
        if state.prompt.text is None:
            return super().repair_prompt(state)
        # non-CoT: one user turn with the failed proof, errors as comments and the correction request
        last = state.candidate or state.output
        user = f"```lean4\n{last.strip()}\n```\n\n{self.repair_message(state)}"
        return Prompt(messages=(ChatMessage(role="user", content=user),))


class GoedelV2NonCoTProfile(GoedelV2Profile):
    name = "goedel-v2-noncot"
    noncot = True
