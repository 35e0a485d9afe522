"""The fake REPL speaks the real REPL's protocol and obeys the control surface its docstring lists.

The fake is a plumbing double (scripted answers, no verification); these tests pin its
protocol against the REPL's own recorded test suite and pin every misbehaviour knob.
"""

from __future__ import annotations

import json
import os
import resource
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.fake_repl import split_blocks

FAKE = Path(__file__).resolve().parents[1] / "fakes" / "fake_repl.py"


def _transcripts(test_data_dir: Path) -> list[dict[str, Any]]:
    path = test_data_dir / "lean_repl_transcripts.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _parse_output(stdout: str) -> list[Any]:
    """Responses are JSON objects each followed by a blank line (possibly spread over lines)."""
    return [json.loads(block) for block in stdout.split("\n\n") if block.strip()]


def _run_raw(
    raw: str, env: dict[str, str] | None = None, timeout: float = 20
) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, str(FAKE)], input=raw, capture_output=True, text=True, env=full_env, timeout=timeout
    )


class Session:
    """One interactive fake REPL process."""

    def __init__(self, env: dict[str, str] | None = None, preexec: Any = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(FAKE)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})},
            preexec_fn=preexec,
        )
        self._buf = b""

    def send(self, request: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(request) + "\n\n").encode())
        self.proc.stdin.flush()

    def read_block(self, timeout: float = 10.0) -> str | None:
        """Lines up to the next blank line; None when nothing arrives in time or on EOF."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            self._buf += chunk
            if self._buf.startswith(b"\n"):  # an empty response: just the blank line
                self._buf = self._buf[1:]
                return ""
        block, self._buf = self._buf.split(b"\n\n", 1)
        return block.decode()

    def ask(self, request: dict[str, Any], timeout: float = 10.0) -> dict[str, Any]:
        self.send(request)
        block = self.read_block(timeout)
        assert block is not None, f"no answer to {request}"
        answer: dict[str, Any] = json.loads(block)
        return answer

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture
def session() -> Iterator[Session]:
    s = Session()
    yield s
    s.close()


# --------------------------------------------------------------------------------------------
# transcripts of the REPL's own test suite
# --------------------------------------------------------------------------------------------
def test_transcript_set_is_the_documented_one(test_data_dir: Path) -> None:
    rows = _transcripts(test_data_dir)
    assert len(rows) == 71
    assert sum(1 for r in rows if not r["needs_mathlib"]) == 55
    assert sum(1 for r in rows if r["requests"] is None) == 3


def test_every_non_mathlib_transcript_is_reproduced_exactly(test_data_dir: Path) -> None:
    path = test_data_dir / "lean_repl_transcripts.jsonl"
    rows = [r for r in _transcripts(test_data_dir) if not r["needs_mathlib"]]
    failures: list[str] = []
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(
            pool.map(lambda row: _run_raw(row["raw_input"], {"FAKE_REPL_TRANSCRIPTS": str(path)}), rows)
        )
    for row, result in zip(rows, results, strict=True):
        expected = (
            row["responses"] if row["responses"] is not None else _parse_output(row["raw_expected_output"])
        )
        got = _parse_output(result.stdout)
        if result.returncode != 0 or got != expected:
            failures.append(f"{row['id']}: rc={result.returncode} got={got!r} expected={expected!r}")
    assert not failures, "\n".join(failures)
    assert len(rows) == 55


# Transcripts a double without an elaborator can reproduce from its default semantics alone
# (numbering, sorries and their goals/positions, warnings, unknown ids, pickling):
_DEFAULT_EXACT = {
    "test_assumption_proof",
    "test_dup_sorries",
    "test_import_lean",
    "test_pickle_environment",
    "test_pickle_environment_with_imports",
    "test_pickle_open",
    "test_pickle_open_2",
    "test_pickle_open_scoped",
    "test_pickle_open_scoped_2",
    "test_proof_transitivity",
    "test_tactic_sorry",
    "test_term_sorry",
    "test_unknown_environment",
    "test_unknown_proof_state",
}
_DEFAULT_FIRST_RESPONSE = {"test_readme", "test_sorry_hypotheses", "test_tactic_mode_sorry", "test_variables"}


def test_default_semantics_match_the_real_repl_where_no_elaboration_is_needed(
    test_data_dir: Path, tmp_path: Path
) -> None:
    (tmp_path / "test").mkdir()  # the transcripts pickle to test/*.olean, in file order
    exact: set[str] = set()
    first: set[str] = set()
    for row in _transcripts(test_data_dir):
        if row["needs_mathlib"]:
            continue
        result = subprocess.run(
            [sys.executable, str(FAKE)],
            input=row["raw_input"],
            capture_output=True,
            text=True,
            timeout=20,
            cwd=tmp_path,
        )
        expected = (
            row["responses"] if row["responses"] is not None else _parse_output(row["raw_expected_output"])
        )
        got = _parse_output(result.stdout)
        if got == expected:
            exact.add(row["id"])
        if got[:1] == expected[:1]:
            first.add(row["id"])
    assert exact >= _DEFAULT_EXACT, sorted(_DEFAULT_EXACT - exact)
    assert first >= _DEFAULT_FIRST_RESPONSE, sorted(_DEFAULT_FIRST_RESPONSE - first)


def test_raw_newline_inside_a_string_disappears_like_upstream(test_data_dir: Path) -> None:
    """The REPL joins input lines without newlines: "by<NL>sorry" reaches Lean as "bysorry"."""
    row = next(r for r in _transcripts(test_data_dir) if r["id"] == "test_invalid_line_break")
    assert row["requests"] is None
    blocks = split_blocks(row["raw_input"])
    assert [json.loads(b)["cmd"] for b in blocks] == [
        "theorem foo : 1 = 1 := bysorry",
        "theorem bar : 1 = 1 := byrfl",
    ]
    # without transcripts the fake sees no `sorry` token there either
    out = _parse_output(_run_raw(row["raw_input"]).stdout)
    assert [o["env"] for o in out] == [0, 1]
    assert all("sorries" not in o for o in out)


def test_escaped_newlines_split_over_lines_are_kept(test_data_dir: Path) -> None:
    row = next(r for r in _transcripts(test_data_dir) if r["id"] == "test_line_breaks")
    blocks = [json.loads(b) for b in split_blocks(row["raw_input"])]
    assert blocks[1]["cmd"] == "theorem foo : 1 = 1 := by\n  sorry"
    out = _parse_output(_run_raw(row["raw_input"]).stdout)
    assert out[1]["sorries"][0]["pos"] == {"line": 2, "column": 2}
    assert out[1]["messages"][0]["pos"] == {"line": 1, "column": 8}


def test_replay_falls_back_to_default_semantics_after_a_mismatch(test_data_dir: Path) -> None:
    path = test_data_dir / "lean_repl_transcripts.jsonl"
    raw = '{"cmd": "def f : Nat := by sorry"}\n\n{"cmd": "theorem zz : True := trivial", "env": 0}\n\n'
    out = _parse_output(_run_raw(raw, {"FAKE_REPL_TRANSCRIPTS": str(path)}).stdout)
    assert out[0]["sorries"][0]["goal"] == "⊢ Nat"
    assert out[1] == {"env": 1}


# --------------------------------------------------------------------------------------------
# protocol
# --------------------------------------------------------------------------------------------
def test_env_ids_only_grow_and_unknown_env_is_an_error_object(session: Session) -> None:
    assert session.ask({"cmd": "def a := 1"}) == {"env": 0}
    assert session.ask({"cmd": "def b := 2", "env": 0}) == {"env": 1}
    assert session.ask({"cmd": "def c := 3", "env": 0}) == {"env": 2}
    assert session.ask({"cmd": "def d := 4", "env": 17}) == {"message": "Unknown environment."}
    assert session.ask({"cmd": "def e := 5"}) == {"env": 3}


def test_sorry_gives_sorries_entry_and_backtick_warning_by_default(session: Session) -> None:
    resp = session.ask({"cmd": "theorem foo (x : Int) : x = x := by sorry"})
    assert resp["sorries"] == [
        {
            "proofState": 0,
            "pos": {"line": 1, "column": 36},
            "goal": "x : Int\n⊢ x = x",
            "endPos": {"line": 1, "column": 41},
        }
    ]
    assert resp["messages"] == [
        {
            "severity": "warning",
            "pos": {"line": 1, "column": 8},
            "endPos": {"line": 1, "column": 11},
            "data": "declaration uses `sorry`",
        }
    ]


def test_sorry_warning_single_quote_style() -> None:
    s = Session({"FAKE_REPL_SORRY_QUOTE": "single"})
    try:
        resp = s.ask({"cmd": "example : True := by admit"})
        assert resp["messages"][0]["data"] == "declaration uses 'sorry'"
        assert resp["messages"][0]["pos"] == {"line": 1, "column": 0}
        assert resp["messages"][0]["endPos"] == {"line": 1, "column": 7}
    finally:
        s.close()


def test_sorry_in_comments_and_strings_is_not_a_sorry(session: Session) -> None:
    resp = session.ask({"cmd": 'def s := "sorry" -- sorry\n/- sorry -/ theorem t : True := trivial'})
    assert resp == {"env": 0}


def test_print_axioms_reports_declared_axioms_sorry_and_native(session: Session) -> None:
    session.ask({"cmd": "axiom cheat : False\ntheorem t : False := cheat\ntheorem s : 1 = 1 := by sorry"})
    resp = session.ask({"cmd": "#print axioms t\n#print axioms s", "env": 0})
    data = [m["data"] for m in resp["messages"]]
    assert data[0] == "'t' depends on axioms: [Classical.choice, Quot.sound, cheat, propext]"
    assert "sorryAx" in data[1]
    assert resp["messages"][0]["severity"] == "info"
    assert resp["messages"][0]["pos"] == {"line": 1, "column": 0}
    native = session.ask({"cmd": "theorem n : 2 + 2 = 4 := by native_decide\n#print axioms n", "env": 0})
    assert "Lean.ofReduceBool" in native["messages"][0]["data"]
    plus = session.ask({"cmd": "theorem m : 2 + 2 = 4 := by decide +native\n#print axioms m", "env": 0})
    assert "Lean.ofReduceBool" in plus["messages"][0]["data"]


def test_print_axioms_without_default_axioms_and_unknown_constant() -> None:
    s = Session({"FAKE_REPL_DEFAULT_AXIOMS": ""})
    try:
        resp = s.ask({"cmd": "theorem ok : True := trivial\n#print axioms ok\n#print axioms nope"})
        assert resp["messages"][0]["data"] == "'ok' does not depend on any axioms"
        assert resp["messages"][1]["severity"] == "error"
        assert resp["messages"][1]["data"] == "unknown constant 'nope'"
    finally:
        s.close()


def test_redeclaring_a_name_of_the_base_env_is_already_declared(session: Session) -> None:
    assert session.ask({"cmd": "axiom cheat : False"}) == {"env": 0}
    resp = session.ask({"cmd": "axiom cheat : False", "env": 0})
    assert resp["messages"][0]["data"] == "'cheat' has already been declared"
    assert resp["messages"][0]["pos"] == {"line": 1, "column": 6}
    # a fresh env (no `env`) does not see env 0's declarations
    assert session.ask({"cmd": "axiom cheat : False"}) == {"env": 2}


def test_namespaces_prefix_declaration_names(session: Session) -> None:
    resp = session.ask({"cmd": "namespace A\ntheorem t : True := trivial\nend A\n#print axioms A.t"})
    assert resp["messages"][0]["data"].startswith("'A.t' depends on axioms")


def test_import_with_env_is_an_error(session: Session) -> None:
    session.ask({"cmd": "import Mathlib"})
    resp = session.ask({"cmd": "import Mathlib\ntheorem t : True := trivial", "env": 0})
    assert resp["messages"][0]["severity"] == "error"
    assert "import" in resp["messages"][0]["data"]


def test_tactic_mode_and_unknown_proof_state(session: Session) -> None:
    first = session.ask({"cmd": "def f : Nat := by sorry"})
    ps = first["sorries"][0]["proofState"]
    assert session.ask({"tactic": "exact 42", "proofState": ps}) == {
        "proofStatus": "Completed",
        "proofState": 1,
        "goals": [],
    }
    assert session.ask({"tactic": "sorry", "proofState": ps})["proofStatus"] == "Incomplete: contains sorry"
    assert session.ask({"tactic": "rfl", "proofState": 99}) == {"message": "Unknown proof state."}


def test_comment_blocks_are_skipped(session: Session) -> None:
    assert session.proc.stdin is not None
    session.proc.stdin.write(b"# a comment block\n\n-- another\n\n")
    session.proc.stdin.flush()
    assert session.ask({"cmd": "def a := 1"}) == {"env": 0}


@pytest.mark.parametrize("raw", ['{"cmd": \n\n', '{"nothing": 1}\n\n', "\n\n"])
def test_bad_json_or_unknown_command_is_uncaught(raw: str) -> None:
    result = _run_raw(raw)
    assert result.returncode == 1
    assert "uncaught exception" in result.stderr
    assert result.stdout == ""


def test_eof_ends_the_process_cleanly() -> None:
    result = _run_raw('{"cmd": "def a := 1"}\n\n')
    assert result.returncode == 0
    assert _parse_output(result.stdout) == [{"env": 0}]


def test_file_mode_reads_the_path(tmp_path: Path, session: Session) -> None:
    f = tmp_path / "x.lean"
    f.write_text("theorem t : True := by\n  sorry\n")
    resp = session.ask({"path": str(f), "allTactics": True})
    assert resp["sorries"][0]["pos"] == {"line": 2, "column": 2}


def test_pickle_round_trip(tmp_path: Path, session: Session) -> None:
    session.ask({"cmd": "axiom cheat : False"})
    target = tmp_path / "e.olean"
    assert session.ask({"pickleTo": str(target), "env": 0}) == {"env": 0}
    assert session.ask({"unpickleEnvFrom": str(target)}) == {"env": 1}
    resp = session.ask({"cmd": "axiom cheat : False", "env": 1})
    assert "already been declared" in resp["messages"][0]["data"]


# --------------------------------------------------------------------------------------------
# misbehaviour knobs
# --------------------------------------------------------------------------------------------
def test_hang_never_answers(session: Session) -> None:
    session.send({"cmd": "theorem t : True := trivial -- FAKE:hang"})
    assert session.read_block(timeout=0.7) is None
    assert session.proc.poll() is None


def test_crash_kills_the_process_mid_request(session: Session) -> None:
    session.send({"cmd": "theorem t : True := trivial -- FAKE:crash"})
    assert session.proc.wait(timeout=10) == -signal.SIGKILL


def test_garbage_prints_non_json_then_keeps_serving(session: Session) -> None:
    session.send({"cmd": "-- FAKE:garbage\ntheorem t : True := trivial"})
    block = session.read_block()
    assert block is not None
    with pytest.raises(json.JSONDecodeError):
        json.loads(block)
    assert session.ask({"cmd": "def a := 1"}) == {"env": 0}


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (768 * 1024 * 1024, 768 * 1024 * 1024))


@pytest.mark.slow
def test_oom_dies_under_an_address_space_limit() -> None:
    s = Session(preexec=_limit_memory)
    try:
        s.send({"cmd": "theorem big : True := by FAKE:oom"})
        rc = s.proc.wait(timeout=60)
        assert s.proc.stderr is not None
        err = s.proc.stderr.read().decode()
        assert rc == 1
        assert "out of memory" in err
    finally:
        s.close()


def test_oom_without_a_limit_stops_at_the_safety_cap_like_the_oom_killer() -> None:
    s = Session({"FAKE_REPL_OOM_CAP_MB": "128"})
    try:
        s.send({"cmd": "-- FAKE:oom"})
        assert s.proc.wait(timeout=60) == -signal.SIGKILL
    finally:
        s.close()


def test_slow_trigger_and_service_time() -> None:
    s = Session({"FAKE_REPL_SERVICE_MS": "100"})
    try:
        t0 = time.monotonic()
        assert s.ask({"cmd": "def a := 1 -- FAKE:slow=300"}) == {"env": 0}
        assert time.monotonic() - t0 >= 0.4
        t0 = time.monotonic()
        s.ask({"cmd": "def b := 1"})
        assert 0.1 <= time.monotonic() - t0 < 0.4
    finally:
        s.close()


def test_import_time_applies_to_headers_only() -> None:
    s = Session({"FAKE_REPL_IMPORT_MS": "300"})
    try:
        t0 = time.monotonic()
        s.ask({"cmd": "import Mathlib"})
        assert time.monotonic() - t0 >= 0.3
        t0 = time.monotonic()
        s.ask({"cmd": "theorem t : True := trivial", "env": 0})
        assert time.monotonic() - t0 < 0.3
    finally:
        s.close()


def test_error_trigger_puts_an_error_on_its_line_and_taints_axioms(session: Session) -> None:
    resp = session.ask(
        {"cmd": "theorem t : True := by\n  simp -- FAKE:error=simp made no progress\n#print axioms t"}
    )
    errors = [m for m in resp["messages"] if m["severity"] == "error"]
    assert errors == [
        {
            "severity": "error",
            "pos": {"line": 2, "column": 10},
            "endPos": {"line": 2, "column": 42},
            "data": "simp made no progress",
        }
    ]
    info = next(m for m in resp["messages"] if m["severity"] == "info")
    assert "sorryAx" in info["data"]


def test_rules_file_messages_sleep_axioms_and_actions(tmp_path: Path) -> None:
    rules: list[dict[str, Any]] = [
        {
            "match": "bad_thm",
            "messages": [
                {
                    "severity": "error",
                    "pos": {"line": 1, "column": 0},
                    "endPos": None,
                    "data": "scripted error",
                }
            ],
        },
        {"match": "print axioms good", "axioms": ["propext", "Lean.trustCompiler"]},
        {"match": "slow_thm", "sleep_ms": 250},
        {"match": "empty_thm", "action": "empty"},
    ]
    path = tmp_path / "rules.json"
    path.write_text(json.dumps(rules))
    s = Session({"FAKE_REPL_RULES": str(path)})
    try:
        assert s.ask({"cmd": "theorem bad_thm : True := trivial"})["messages"] == rules[0]["messages"]
        s.ask({"cmd": "theorem good : True := trivial"})
        resp = s.ask({"cmd": "#print axioms good", "env": 1})
        assert resp["messages"][0]["data"] == "'good' depends on axioms: [Lean.trustCompiler, propext]"
        t0 = time.monotonic()
        s.ask({"cmd": "theorem slow_thm : True := trivial"})
        assert time.monotonic() - t0 >= 0.25
        s.send({"cmd": "theorem empty_thm : True := trivial"})
        assert s.read_block() == ""
    finally:
        s.close()


def test_log_records_every_request(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    s = Session({"FAKE_REPL_LOG": str(log)})
    try:
        s.ask({"cmd": "def a := 1"})
        s.send({"cmd": "def b := 1 -- FAKE:hang"})
        time.sleep(0.3)
    finally:
        s.close()
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [entry["request"]["cmd"] for entry in lines] == ["def a := 1", "def b := 1 -- FAKE:hang"]
    assert lines[0]["response"] == {"env": 0}
    assert lines[1]["response"] is None
    assert lines[0]["pid"] == s.proc.pid
