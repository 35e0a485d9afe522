"""The `sorryless` command line: one typer app wiring every part's sub-commands.

Each part registers its own commands (`register(app)`) and imports its heavy dependencies
inside the command bodies, so `sorryless --help` stays fast.
"""

from __future__ import annotations

import typer

from api.cli import register as register_api
from lean_server.audit_cli import register as register_audit
from lean_server.cli import register as register_lean_server
from prover.cli import register as register_prover
from prover.eval.cli import register as register_eval
from sorryless.setup_lean import register as register_setup
from sorryless.stack import register as register_stack


def build_app() -> typer.Typer:
    app = typer.Typer(
        name="sorryless",
        help="A Lean 4 theorem-proving service: verified proofs with a certificate.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    for register in (
        register_stack,  # run
        register_setup,  # setup-lean
        register_lean_server,  # lean-server, check
        register_audit,  # audit
        register_prover,  # prove
        register_api,  # serve, worker, keys
        register_eval,  # eval, eval-report
    ):
        register(app)
    return app


def main() -> None:
    build_app()()
