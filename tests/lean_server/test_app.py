"""POST /v1/check (streaming and not), /health, /metrics, auth and bad input, through the real pool + fake REPL."""

from __future__ import annotations

import orjson
import pytest

from lean_server.verdict import Certificate, Verdict
from sorryless.config import Settings
from tests.lean_server.test_app_helpers import GOOD, SORRY, FullBacklogService, served, small_pool


async def test_stream_yields_each_certificate_as_it_finishes(settings: Settings) -> None:
    body = {
        "snippets": [
            {"id": "slow", "code": "-- FAKE:slow=800\ntheorem slow_one : 2 = 2 := rfl"},
            {"id": "fast-a", "code": GOOD},
            {"id": "fast-b", "code": SORRY},
        ],
        "stream": True,
    }
    async with served(small_pool(settings, lean_max_processes=3)) as (_, client):
        response = await client.post("/v1/check", json=body)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/x-ndjson")
    lines = [line for line in response.text.split("\n") if line.strip()]
    certs = [Certificate.model_validate_json(line) for line in lines]
    assert [c.id for c in certs][-1] == "slow", "the slow snippet must arrive after the fast ones"
    assert sorted(c.id for c in certs) == ["fast-a", "fast-b", "slow"]
    verdicts = {c.id: c.verdict for c in certs}
    assert verdicts == {"slow": Verdict.PASS, "fast-a": Verdict.PASS, "fast-b": Verdict.SORRY}


async def test_non_streaming_returns_results_in_request_order(settings: Settings) -> None:
    body = {
        "snippets": [
            {"id": "a", "code": SORRY},
            {"id": "b", "code": GOOD},
            {
                "id": "c",
                "code": "theorem broken : 1 = 1 := by\n  exact foo -- FAKE:error=unknown identifier 'foo'",
            },
        ],
        "priority": "batch",
    }
    async with served(small_pool(settings)) as (_, client):
        response = await client.post("/v1/check", json=body)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    results = response.json()["results"]
    assert [r["id"] for r in results] == ["a", "b", "c"]
    certs = [Certificate.model_validate(r) for r in results]
    assert [c.verdict for c in certs] == [Verdict.SORRY, Verdict.PASS, Verdict.LEAN_ERROR]
    error = next(m for m in certs[2].messages if m.severity == "error")
    assert "unknown identifier" in error.data
    assert error.pos is not None and error.pos.line == 2  # position in the user's own text


@pytest.mark.parametrize(
    ("payload", "status", "needle"),
    [
        (b"{not json", 400, "JSON"),
        (b'{"snippets": [{"id": "a", "code": "\xff\xfe"}]}', 400, "UTF-8"),
        (b"", 400, "empty"),
        (b"[1, 2]", 422, "object"),
        (orjson.dumps({"snippets": []}), 422, "snippets"),
        (orjson.dumps({"snippets": [{"id": "a", "code": "x"}], "colour": "red"}), 422, "colour"),
        (orjson.dumps({"snippets": [{"id": "a", "code": "x", "colour": 1}]}), 422, "colour"),
        (orjson.dumps({"snippets": [{"id": "a", "code": "   "}]}), 422, "empty"),
        (orjson.dumps({"snippets": [{"id": "a", "code": "x"}, {"id": "a", "code": "y"}]}), 422, "unique"),
        (orjson.dumps({"snippets": [{"id": "a", "code": "x"}], "priority": "urgent"}), 422, "priority"),
        (
            orjson.dumps({"snippets": [{"id": "a", "code": "x", "policy": "bogus"}]}),
            422,
            "unknown policy 'bogus'",
        ),
        (
            orjson.dumps(
                {"snippets": [{"id": "a", "code": "x", "policy_overrides": {"allow_sorry": "maybe"}}]}
            ),
            422,
            "allow_sorry",
        ),
        (
            orjson.dumps({"snippets": [{"id": "a", "code": "x", "policy_overrides": {"colour": 1}}]}),
            422,
            "colour",
        ),
        (orjson.dumps({"snippets": [{"id": "a", "code": "x" * 5000}]}), 413, "bytes"),
    ],
)
async def test_bad_input_is_a_4xx_with_a_json_reason(
    settings: Settings, payload: bytes, status: int, needle: str
) -> None:
    async with served(small_pool(settings, lean_max_code_bytes=4096)) as (_, client):
        response = await client.post(
            "/v1/check", content=payload, headers={"content-type": "application/json"}
        )
        assert response.status_code == status, response.text
        assert needle.lower() in orjson.dumps(response.json()["detail"]).decode().lower()
        # Nothing a client sent broke the pool: a good snippet still passes afterwards.
        ok = await client.post("/v1/check", json={"snippets": [{"id": "ok", "code": GOOD}]})
        assert ok.status_code == 200
        assert ok.json()["results"][0]["verdict"] == "PASS"


async def test_api_key_guards_every_route_but_health_and_metrics(settings: Settings) -> None:
    body = {"snippets": [{"id": "a", "code": GOOD}]}
    async with served(small_pool(settings, lean_server_api_key="s3cret")) as (_, client):
        missing = await client.post("/v1/check", json=body)
        wrong = await client.post("/v1/check", json=body, headers={"Authorization": "Bearer nope"})
        kimina_missing = await client.post("/api/check", json=body)
        verify_wrong = await client.post("/verify", json={"codes": []}, headers={"X-Auth-Token": "nope"})
        good = await client.post("/v1/check", json=body, headers={"Authorization": "Bearer s3cret"})
        kimina_good = await client.post("/api/check", json=body, headers={"X-Auth-Token": "s3cret"})
        health = await client.get("/health")
        metrics = await client.get("/metrics")
        openapi = await client.get("/openapi.json")
    assert (missing.status_code, missing.json()["detail"]) == (401, "Missing API key")
    assert (wrong.status_code, wrong.json()["detail"]) == (401, "Invalid API key")
    assert kimina_missing.status_code == 401
    assert verify_wrong.status_code == 401
    assert good.status_code == 200 and good.json()["results"][0]["verdict"] == "PASS"
    assert kimina_good.status_code == 200 and "response" in kimina_good.json()["results"][0]
    assert health.status_code == 200
    assert metrics.status_code == 200
    assert openapi.status_code == 404  # no public schema when a key is configured


async def test_backlog_full_is_429_with_retry_after(settings: Settings) -> None:
    service = FullBacklogService(retry_after=2.5)
    async with served(settings, service) as (_, client):
        plain = await client.post("/v1/check", json={"snippets": [{"id": "a", "code": GOOD}]})
        streamed = await client.post(
            "/v1/check", json={"snippets": [{"id": "a", "code": GOOD}], "stream": True}
        )
    assert service.started and service.closed  # the lifespan owns the service
    for response in (plain, streamed):
        assert response.status_code == 429
        assert response.headers["retry-after"] == "3"
        assert "backlog" in response.json()["detail"]


async def test_health_is_200_with_a_backend_and_reports_processes(settings: Settings) -> None:
    async with served(small_pool(settings)) as (_, client):
        await client.post("/v1/check", json={"snippets": [{"id": "a", "code": "import Mathlib\n" + GOOD}]})
        response = await client.get("/health")
    assert response.status_code == 200
    report = response.json()
    assert report["status"] == "ok"
    text = orjson.dumps(report).decode()
    assert "Mathlib" in text, "health must show the processes per header"


async def test_health_is_503_with_a_reason_without_a_backend(settings: Settings, tmp_path) -> None:
    broken = small_pool(
        settings,
        lean_repl_cmd=str(tmp_path / "no-such-repl"),
        lean_bin=str(tmp_path / "no-such-lean"),
        lean_project=tmp_path / "no-project",
    )
    async with served(broken) as (_, client):
        response = await client.get("/health")
        check = await client.post("/v1/check", json={"snippets": [{"id": "a", "code": GOOD}]})
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["reason"]
    # A check is still answered per snippet (never lost): an INFRA_ERROR saying why.
    assert check.status_code == 200, check.text
    result = check.json()["results"][0]
    assert result["verdict"] == "INFRA_ERROR"
    assert any("cannot start the REPL" in reason for reason in result["reasons"]), result["reasons"]


async def test_metrics_exposition_names_every_metric(settings: Settings) -> None:
    async with served(small_pool(settings)) as (_, client):
        await client.post(
            "/v1/check", json={"snippets": [{"id": "a", "code": GOOD}, {"id": "b", "code": SORRY}]}
        )
        await client.post("/api/check", json={"snippets": [{"id": "k", "code": GOOD}]})
        response = await client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    text = response.text
    for name in (
        "sorryless_lean_wait_queue_depth",
        "sorryless_lean_processes",
        "sorryless_lean_import_seconds",
        "sorryless_lean_check_seconds_bucket",
        "sorryless_lean_process_rss_bytes",
        "sorryless_lean_process_kills",
        "sorryless_lean_verdicts_total",
        "sorryless_lean_cache_hits_total",
        "sorryless_lean_http_requests_total",
    ):
        assert name in text, name
    assert 'sorryless_lean_verdicts_total{verdict="PASS"} 1.0' in text
    assert 'sorryless_lean_verdicts_total{verdict="SORRY"} 1.0' in text
    assert 'sorryless_lean_check_seconds_count{route="kimina"} 1.0' in text
    assert 'state="idle"' in text


async def test_two_apps_have_separate_registries(settings: Settings) -> None:
    async with served(small_pool(settings)) as (first, client_a):
        await client_a.post("/v1/check", json={"snippets": [{"id": "a", "code": GOOD}]})
        async with served(small_pool(settings)) as (second, client_b):
            text_b = (await client_b.get("/metrics")).text
    assert first.state.metrics.registry is not second.state.metrics.registry
    assert 'verdict="PASS"' not in text_b
