"""Every number of a report, computed from the attempt log lines alone.

Budget is counted the three ways the published numbers use, side by side:

- ``samples``: independent prove runs per problem (DeepSeek/Goedel/Kimina pass@k);
- ``samples_x_tool_calls``: LongCat's whole-proof TIR budget "parallel inferences × average tool
  calls". Per sample we only know its totals, A attempts (generations) and T tool calls; one
  generation with T tool calls costs max(1, T), and A generations cost at most A + T - 1 (at least
  one generation made a call) or A (none did). We count that upper bound, max(1, A) + max(0, T - 1),
  so our number under this definition is never flattered;
- ``attempts``: LLM generations or tactic tries, repair rounds included (LongCat's sketch budget,
  Goedel self-correction).

Samples count in n only when they ended on the prover's own terms: a sample whose prove call
failed on infrastructure (``infra_error``) and was never run again is left out of n (so pass@k
with n < k is refused with a clear error) and reported separately. The run line records the
planned problems and n, so an incomplete run is reported as "X/Y problems complete".
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable

from pydantic import BaseModel, Field

from lean_server.verdict import Certificate
from prover.eval.errors import InsufficientSamples
from prover.eval.passk import pass_at_k
from prover.eval.runlog import AttemptLine, EventLine, RunLine, SampleLine, latest_attempts


class CostSummary(BaseModel):
    """Summed (or averaged, see `per`) cost; floats so that averages keep their fractions."""

    tokens: float = 0
    prompt_tokens: float = 0
    completion_tokens: float = 0
    llm_calls: float = 0
    compile_calls: float = 0
    tool_calls: float = 0
    attempts: float = 0
    repair_rounds: float = 0
    wall_seconds: float = 0.0
    sample_seconds: float = Field(default=0.0, description="Wall seconds measured around each prove call.")

    def add_sample(self, line: SampleLine) -> None:
        cost = line.cost
        self.tokens += cost.tokens
        self.prompt_tokens += cost.prompt_tokens
        self.completion_tokens += cost.completion_tokens
        self.llm_calls += cost.llm_calls
        self.compile_calls += cost.compile_calls
        self.tool_calls += cost.tool_calls
        self.attempts += cost.attempts
        self.repair_rounds += cost.repair_rounds
        self.wall_seconds += cost.wall_seconds
        self.sample_seconds += line.wall_s

    def per(self, count: int) -> CostSummary:
        """This total divided by `count` (a zero summary when count is 0)."""
        if count <= 0:
            return CostSummary()
        return CostSummary(**{name: getattr(self, name) / count for name in type(self).model_fields})


class BudgetSpent(BaseModel):
    samples: int = 0
    samples_x_tool_calls: int = 0
    attempts: int = 0


class SolvedEntry(BaseModel):
    """A solved problem with the first verified proof and its certificate's identity."""

    problem_id: str
    sample: int
    statement_sha256: str
    proof: str | None
    proof_hash: str | None
    verdict: str | None
    backend: str | None
    lean_version: str | None
    checker_version: str | None
    certificate: Certificate | None = Field(default=None, description="The PASS certificate, as logged.")


class ProblemMetrics(BaseModel):
    problem_id: str
    benchmark: str
    split: str
    tags: list[str]
    decl_kind: str
    n: int
    c: int
    pass_at: dict[int, float] = Field(default_factory=dict)
    budget: BudgetSpent
    attempts_to_first_solve: int | None = Field(
        default=None, description="Attempts (repairs included, samples in order) spent up to the first PASS."
    )
    samples_to_first_solve: int | None = None
    units_to_first_solve: int | None = Field(
        default=None, description="samples × tool calls units (see module doc) up to the first PASS."
    )
    cost: CostSummary
    infra_errors: int = Field(
        default=0, description="Samples that failed on infrastructure and were not re-run (not in n)."
    )
    verdicts: dict[str, int] = Field(default_factory=dict)


class CategoryMetrics(BaseModel):
    tag: str
    problems: int
    solved: int
    pass_at: dict[int, float]


class EnvironmentSeen(BaseModel):
    """Which Lean produced the verdicts, as the certificates themselves say."""

    backends: dict[str, int] = Field(
        default_factory=dict, description="Certificate.environment.backend -> count."
    )
    lean_versions: dict[str, int] = Field(default_factory=dict)
    mathlib_commits: dict[str, int] = Field(default_factory=dict)
    repl_commits: dict[str, int] = Field(default_factory=dict)
    toolchains: dict[str, int] = Field(default_factory=dict)
    checker_versions: dict[str, int] = Field(default_factory=dict)
    models: dict[str, int] = Field(default_factory=dict)
    profiles: dict[str, int] = Field(default_factory=dict)
    strategies: dict[str, int] = Field(default_factory=dict)


class RunMetrics(BaseModel):
    benchmark: str | None
    split: str | None
    problems: int = Field(description="Problems with at least one counted sample or infra failure.")
    planned_problems: int = Field(
        description="Problems the run is meant to cover (run line); `problems` when not recorded."
    )
    planned_n: int | None = Field(default=None, description="Samples planned per problem (run line).")
    plan_recorded: bool = Field(default=False, description="The run line lists the planned problems.")
    complete_problems: int = Field(description="Planned problems with all n samples counted.")
    complete: bool = Field(description="Every planned problem has its n counted samples.")
    solved: int
    samples: int = Field(description="Counted samples (infrastructure failures excluded).")
    n_min: int
    n_max: int
    ks: list[int]
    pass_at: dict[int, float]
    budget_total: BudgetSpent
    budget_per_problem: dict[str, float]
    cost_total: CostSummary
    cost_per_problem: CostSummary
    cost_per_solved: CostSummary
    infra_errors: int = Field(
        description="Samples that failed on infrastructure and were never re-run: not in n, not in cost."
    )
    infra_retried: int = Field(default=0, description="Infrastructure failures later re-run successfully.")
    orphan_events: int = Field(description="Events of samples that never finished (interrupted work).")
    orphan_attempts: int = Field(
        default=0, description="Attempt lines of interrupted or failed prove calls: logged, not counted."
    )
    memory_hit_attempts: int = Field(
        default=0, description="Counted attempts whose prompt showed proofs retrieved from the memory."
    )
    max_sample_attempts: int = Field(
        default=0, description="Most attempts one counted sample spent (1: every sample one generation)."
    )
    verdicts: dict[str, int]
    categories: list[CategoryMetrics]
    per_problem: list[ProblemMetrics]
    solved_set: list[SolvedEntry]
    environment_seen: EnvironmentSeen
    cumulative_solved_by_attempts: list[tuple[int, int]]
    cumulative_solved_by_samples: list[tuple[int, int]]


def _final_samples(lines: Iterable[SampleLine]) -> dict[tuple[str, int], SampleLine]:
    """One line per (problem, sample): a finished one wins over an infrastructure failure, else the last."""
    chosen: dict[tuple[str, int], SampleLine] = {}
    for line in lines:
        key = (line.problem_id, line.sample)
        current = chosen.get(key)
        if current is None or current.infra_error:
            chosen[key] = line
    return chosen


def sample_attempts(line: SampleLine) -> int:
    """Attempts (generations or tactic tries, repairs included) a sample spent; at least 1."""
    return max(line.cost.attempts, line.n_attempts, 1)


def sample_tool_units(line: SampleLine) -> int:
    """The sample's "inferences × tool calls" units, counted from above (see the module doc)."""
    return sample_attempts(line) + max(0, line.cost.tool_calls - 1)


def _first_solve(samples: list[SampleLine]) -> tuple[int | None, int | None, int | None]:
    """(attempts, samples, tool units) spent in sample order up to and including the first solving sample."""
    attempts = units = 0
    for position, line in enumerate(samples, 1):
        attempts += sample_attempts(line)
        units += sample_tool_units(line)
        if line.solved:
            return attempts, position, units
    return None, None, None


def _counter(values: Iterable[str | None]) -> dict[str, int]:
    return dict(Counter(v for v in values if v))


def compute_metrics(
    lines: Iterable[RunLine | EventLine | AttemptLine | SampleLine], ks: list[int]
) -> RunMetrics:
    """All metrics of a run from its log lines. Raises InsufficientSamples when some n < k."""
    all_lines = list(lines)
    runs = [x for x in all_lines if isinstance(x, RunLine)]
    attempts = [x for x in all_lines if isinstance(x, AttemptLine)]
    events = [x for x in all_lines if isinstance(x, EventLine)]
    sample_lines = [x for x in all_lines if isinstance(x, SampleLine)]
    final = _final_samples(sample_lines)
    counted = {key: line for key, line in final.items() if not line.infra_error}
    unresolved = [line for line in final.values() if line.infra_error]
    infra_by_problem = Counter(line.problem_id for line in unresolved)
    by_problem: dict[str, list[SampleLine]] = defaultdict(list)
    for key in sorted(final, key=lambda k: k[1]):
        line = final[key]
        by_problem.setdefault(key[0], [])  # a problem with infrastructure failures only still shows
        if not line.infra_error:
            by_problem[key[0]].append(line)
    counted_uids = {line.uid for line in counted.values()}
    final_uids = {line.uid for line in final.values()}
    attempt_verdicts: dict[str, list[str]] = defaultdict(list)
    certificates = []
    memory_hits = 0
    for a in latest_attempts(attempts, counted_uids):
        attempt_verdicts[a.uid].append(str(a.attempt.verdict or "NO_CANDIDATE"))
        memory_hits += int(bool(a.attempt.memory_hits))
        if a.attempt.certificate is not None:
            certificates.append(a.attempt.certificate)

    per_problem: list[ProblemMetrics] = []
    solved_set: list[SolvedEntry] = []
    total_cost, budget_total = CostSummary(), BudgetSpent()
    for problem_id, samples in by_problem.items():
        cost, budget = CostSummary(), BudgetSpent(samples=len(samples))
        verdicts: Counter[str] = Counter()
        for line in samples:
            cost.add_sample(line)
            total_cost.add_sample(line)
            budget.samples_x_tool_calls += sample_tool_units(line)
            budget.attempts += sample_attempts(line)
            verdicts.update(attempt_verdicts.get(line.uid, []))
        n, c = len(samples), sum(1 for line in samples if line.solved)
        first_attempts, first_samples, first_units = _first_solve(samples)
        head = samples[0] if samples else next(x for x in unresolved if x.problem_id == problem_id)
        per_problem.append(
            ProblemMetrics(
                problem_id=problem_id,
                benchmark=head.benchmark,
                split=head.split,
                tags=head.tags,
                decl_kind=head.decl_kind,
                n=n,
                c=c,
                pass_at=_pass_at(problem_id, n, c, ks, infra_by_problem[problem_id]),
                budget=budget,
                attempts_to_first_solve=first_attempts,
                samples_to_first_solve=first_samples,
                units_to_first_solve=first_units,
                cost=cost,
                infra_errors=infra_by_problem[problem_id],
                verdicts=dict(verdicts),
            )
        )
        budget_total.samples += budget.samples
        budget_total.samples_x_tool_calls += budget.samples_x_tool_calls
        budget_total.attempts += budget.attempts
        winner = next((line for line in samples if line.solved), None)
        if winner is not None:
            cert = winner.certificate
            solved_set.append(
                SolvedEntry(
                    problem_id=problem_id,
                    sample=winner.sample,
                    statement_sha256=winner.statement_sha256,
                    proof=winner.proof,
                    proof_hash=cert.proof_hash if cert else None,
                    verdict=str(cert.verdict) if cert else None,
                    backend=cert.environment.backend if cert else None,
                    lean_version=cert.environment.lean_version if cert else None,
                    checker_version=cert.checker_version if cert else None,
                    certificate=cert,
                )
            )
            if cert is not None:
                certificates.append(cert)

    problems = len(per_problem)
    solved = len(solved_set)
    ns = [p.n for p in per_problem]
    categories = _categories(per_problem, ks)
    samples_final = list(counted.values())
    firsts_by_attempts = sorted(p.attempts_to_first_solve for p in per_problem if p.attempts_to_first_solve)
    firsts_by_samples = sorted(p.samples_to_first_solve for p in per_problem if p.samples_to_first_solve)
    verdict_totals: Counter[str] = Counter()
    for p in per_problem:
        verdict_totals.update(p.verdicts)
    seen_certs = {cert.proof_hash + cert.id: cert for cert in certificates}.values()
    last_run = runs[-1] if runs else None
    config = last_run.config if last_run else None
    planned_ids = last_run.planned_ids if last_run else None
    planned_n = (last_run.n or last_run.config.n) if last_run else None
    plan = list(planned_ids) if planned_ids is not None else [p.problem_id for p in per_problem]
    n_by_problem = {p.problem_id: p.n for p in per_problem}
    complete_problems = sum(
        1 for pid in plan if planned_n is not None and n_by_problem.get(pid, 0) >= planned_n
    )
    return RunMetrics(
        benchmark=config.benchmark if config else (per_problem[0].benchmark if per_problem else None),
        split=config.split if config else None,
        problems=problems,
        planned_problems=len(plan),
        planned_n=planned_n,
        plan_recorded=planned_ids is not None,
        complete_problems=complete_problems,
        complete=planned_ids is not None and complete_problems == len(plan),
        solved=solved,
        samples=len(samples_final),
        n_min=min(ns, default=0),
        n_max=max(ns, default=0),
        ks=ks,
        pass_at={k: (sum(p.pass_at[k] for p in per_problem) / problems if problems else 0.0) for k in ks},
        budget_total=budget_total,
        budget_per_problem={
            "samples": budget_total.samples / problems if problems else 0.0,
            "samples_x_tool_calls": budget_total.samples_x_tool_calls / problems if problems else 0.0,
            "attempts": budget_total.attempts / problems if problems else 0.0,
        },
        cost_total=total_cost,
        cost_per_problem=total_cost.per(problems),
        cost_per_solved=total_cost.per(solved),
        infra_errors=len(unresolved),
        infra_retried=sum(1 for line in sample_lines if line.infra_error and line.uid not in final_uids),
        orphan_events=sum(1 for e in events if e.uid not in counted_uids),
        orphan_attempts=sum(1 for a in attempts if a.uid not in counted_uids),
        memory_hit_attempts=memory_hits,
        max_sample_attempts=max((sample_attempts(x) for x in samples_final), default=0),
        verdicts=dict(verdict_totals),
        categories=categories,
        per_problem=per_problem,
        solved_set=solved_set,
        environment_seen=EnvironmentSeen(
            backends=_counter(c.environment.backend for c in seen_certs),
            lean_versions=_counter(c.environment.lean_version for c in seen_certs),
            mathlib_commits=_counter(c.environment.mathlib_commit for c in seen_certs),
            repl_commits=_counter(c.environment.repl_commit for c in seen_certs),
            toolchains=_counter(c.environment.toolchain for c in seen_certs),
            checker_versions=_counter(c.checker_version for c in seen_certs),
            models=_counter(s.model for s in samples_final),
            profiles=_counter(s.profile for s in samples_final),
            strategies=_counter(s.strategy for s in samples_final),
        ),
        cumulative_solved_by_attempts=_cumulative(firsts_by_attempts),
        cumulative_solved_by_samples=_cumulative(firsts_by_samples),
    )


def _pass_at(problem_id: str, n: int, c: int, ks: list[int], infra: int) -> dict[int, float]:
    try:
        return {k: pass_at_k(n, c, k) for k in ks}
    except InsufficientSamples as exc:
        hint = (
            f"{infra} sample(s) failed on infrastructure and are not counted; resume the run to re-run them"
            if infra
            else "an unfinished run? resume it with the same command, or ask for smaller k"
        )
        raise InsufficientSamples(f"{problem_id}: {exc} ({hint})") from exc


def _cumulative(firsts: list[int]) -> list[tuple[int, int]]:
    """(budget, problems solved within it) at each budget where the count changes."""
    points: list[tuple[int, int]] = []
    for count, budget in enumerate(firsts, 1):
        if points and points[-1][0] == budget:
            points[-1] = (budget, count)
        else:
            points.append((budget, count))
    return points


def _categories(per_problem: list[ProblemMetrics], ks: list[int]) -> list[CategoryMetrics]:
    groups: dict[str, list[ProblemMetrics]] = defaultdict(list)
    for p in per_problem:
        for tag in p.tags or ["(untagged)"]:
            groups[tag].append(p)
    return [
        CategoryMetrics(
            tag=tag,
            problems=len(items),
            solved=sum(1 for p in items if p.c > 0),
            pass_at={k: sum(p.pass_at[k] for p in items) / len(items) for k in ks},
        )
        for tag, items in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    ]
