"""`sorryless audit`: statement match and legality of proofs, without Lean.

Single proof::

    sorryless audit --stub STUB.lean --proof PROOF.lean [--policy strict] [--json]

Batch::

    sorryless audit --benchmark minif2f.jsonl --proofs proofs.jsonl [--json]

Each proofs line has ``problem_id`` and ``proof`` (and optionally ``split``); the stub is the
benchmark record's ``lean4_code`` (matched on ``id``, and on ``split`` when given). The batch prints
one JSON line per proof (``problem_id``, ``ok``, ``violations``) and a summary line.
Exit status: 0 all passed, 1 violations found, 2 usage error or unreadable input.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

EXIT_OK = 0
EXIT_VIOLATIONS = 1
EXIT_USAGE = 2


def _fail(message: str) -> typer.Exit:
    typer.echo(message, err=True)
    return typer.Exit(EXIT_USAGE)


def _read(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise _fail(f"cannot read {what} {path}: {exc}") from exc


def _read_jsonl(path: Path, what: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for n, line in enumerate(_read(path, what).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise _fail(f"{path}:{n}: not JSON ({exc})") from exc
        if not isinstance(row, dict):
            raise _fail(f"{path}:{n}: not a JSON object")
        rows.append(row)
    return rows


def _violation_dicts(report: Any) -> list[dict[str, Any]]:
    return [
        {"rule": v.rule, "message": v.message, "line": v.line, "column": v.column} for v in report.violations
    ]


def _audit_one(stub_path: Path, proof_path: Path, policy: Any, as_json: bool) -> int:
    from lean_server.trust import audit

    stub = _read(stub_path, "stub")
    proof = _read(proof_path, "proof")
    report = audit(stub, proof, policy)
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "ok": report.ok,
                    "verdict": report.verdict.value,
                    "target": report.target,
                    "violations": _violation_dicts(report),
                },
                ensure_ascii=False,
            )
        )
    else:
        typer.echo(f"{proof_path}: {report.verdict.value} (target {report.target})")
        for v in report.violations:
            typer.echo(f"  {proof_path}:{v.line}:{v.column}: [{v.rule}] {v.message}")
    return EXIT_OK if report.ok else EXIT_VIOLATIONS


def _audit_batch(benchmark: Path, proofs: Path, policy: Any, as_json: bool) -> int:
    from lean_server.trust import audit

    stubs: dict[tuple[str, str | None], str] = {}
    for row in _read_jsonl(benchmark, "benchmark"):
        if "id" not in row or "lean4_code" not in row:
            raise _fail(f"{benchmark}: every line needs `id` and `lean4_code`")
        stubs[(str(row["id"]), row.get("split"))] = str(row["lean4_code"])
        stubs.setdefault((str(row["id"]), None), str(row["lean4_code"]))
    total = passed = unknown = 0
    rules: dict[str, int] = {}
    for row in _read_jsonl(proofs, "proofs"):
        if "problem_id" not in row or "proof" not in row:
            raise _fail(f"{proofs}: every line needs `problem_id` and `proof`")
        pid = str(row["problem_id"])
        total += 1
        stub = stubs.get((pid, row.get("split"))) or stubs.get((pid, None))
        out: dict[str, Any] = {"problem_id": pid}
        if "id" in row:
            out["id"] = row["id"]
        if stub is None:
            unknown += 1
            out.update(
                ok=False,
                violations=[
                    {
                        "rule": "unknown_problem",
                        "message": f"no benchmark record `{pid}`",
                        "line": 0,
                        "column": 0,
                    }
                ],
            )
        else:
            report = audit(stub, str(row["proof"]), policy)
            out.update(ok=report.ok, verdict=report.verdict.value, violations=_violation_dicts(report))
            passed += report.ok
        for v in out["violations"]:
            rules[v["rule"]] = rules.get(v["rule"], 0) + 1
        if as_json:
            typer.echo(json.dumps(out, ensure_ascii=False))
        else:
            status = (
                "ok" if out["ok"] else "REJECTED " + ", ".join(sorted({v["rule"] for v in out["violations"]}))
            )
            typer.echo(f"{out.get('id', pid)}: {status}")
    summary = {
        "summary": True,
        "total": total,
        "passed": passed,
        "rejected": total - passed,
        "unknown_problems": unknown,
        "rules": dict(sorted(rules.items())),
    }
    typer.echo(
        json.dumps(summary)
        if as_json
        else f"{passed}/{total} passed, {total - passed} rejected; rules: {summary['rules']}"
    )
    return EXIT_OK if passed == total else EXIT_VIOLATIONS


def register(app: typer.Typer) -> None:
    """Add the `audit` command to the sorryless CLI."""

    @app.command("audit")
    def audit_command(
        stub: Annotated[Path | None, typer.Option("--stub", help="The sorry-stub (statement) file.")] = None,
        proof: Annotated[Path | None, typer.Option("--proof", help="The candidate proof file.")] = None,
        benchmark: Annotated[
            Path | None, typer.Option("--benchmark", help="Benchmark JSONL (id, lean4_code).")
        ] = None,
        proofs: Annotated[
            Path | None, typer.Option("--proofs", help="Proofs JSONL (problem_id, proof).")
        ] = None,
        policy: Annotated[str, typer.Option("--policy", help="strict, sketch or lenient.")] = "strict",
        as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    ) -> None:
        """Check statement match and legality of proofs (no Lean needed)."""
        from lean_server.policy import resolve_policy

        try:
            pol = resolve_policy(policy)
        except ValueError as exc:
            raise _fail(str(exc)) from exc
        single = stub is not None or proof is not None
        batch = benchmark is not None or proofs is not None
        if single == batch:
            raise _fail("give either --stub and --proof, or --benchmark and --proofs")
        if single:
            if stub is None or proof is None:
                raise _fail("--stub and --proof go together")
            code = _audit_one(stub, proof, pol, as_json)
        else:
            if benchmark is None or proofs is None:
                raise _fail("--benchmark and --proofs go together")
            code = _audit_batch(benchmark, proofs, pol, as_json)
        raise typer.Exit(code)
