"""`sorryless keys create|list|revoke`, `worker` and `serve` wiring (api.cli.register)."""

from __future__ import annotations

import re

import pytest
import redis
import typer
from typer.testing import CliRunner

from api.auth import hash_token
from api.cli import register


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, redis_url: str, redis_prefix: str) -> typer.Typer:
    monkeypatch.setenv("SORRYLESS_REDIS_URL", redis_url)
    monkeypatch.setenv("SORRYLESS_REDIS_KEY_PREFIX", redis_prefix)
    app = typer.Typer()
    register(app)
    return app


def test_keys_create_list_revoke(cli: typer.Typer, redis_url: str, redis_prefix: str) -> None:
    runner = CliRunner()
    created = runner.invoke(
        cli, ["keys", "create", "ci-bot", "--rate", "5", "--daily-jobs", "100", "--daily-attempts", "640"]
    )
    assert created.exit_code == 0, created.output
    key_id = re.search(r"id:\s+(\S+)", created.output).group(1)  # type: ignore[union-attr]
    token = re.search(r"key:\s+(\S+)", created.output).group(1)  # type: ignore[union-attr]
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    try:
        assert client.get(f"{redis_prefix}:apikey-hash:{hash_token(token)}") == key_id
        listed = runner.invoke(cli, ["keys", "list"])
        assert key_id in listed.output and "rate=5/s" in listed.output and token not in listed.output
        assert "attempts/day<=640" in listed.output
        revoked = runner.invoke(cli, ["keys", "revoke", key_id])
        assert revoked.exit_code == 0
        assert client.get(f"{redis_prefix}:apikey-hash:{hash_token(token)}") is None
        assert runner.invoke(cli, ["keys", "revoke", "nope"]).exit_code == 1
    finally:
        client.close()


def test_worker_and_serve_options(cli: typer.Typer) -> None:
    runner = CliRunner()
    bad = runner.invoke(cli, ["worker", "--queues", "urgent"])
    assert bad.exit_code != 0 and "queues" in bad.output
    assert "--concurrency" in runner.invoke(cli, ["worker", "--help"]).output
    serve_help = runner.invoke(cli, ["serve", "--help"]).output
    assert "--host" in serve_help and "--port" in serve_help
