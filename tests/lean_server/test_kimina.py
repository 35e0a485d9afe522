"""Kimina Lean Server compatible routes: exact request/response shapes, 422/401/429, isolation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sorryless.config import Settings
from tests.lean_server.test_app_helpers import GOOD, SORRY, FullBacklogService, served, small_pool

HEADER = "import Mathlib\n"


def _by_id(results: list[dict[str, Any]], key: str = "id") -> dict[str, dict[str, Any]]:
    return {r[key]: r for r in results}


async def test_api_check_shapes_field_by_field(settings: Settings) -> None:
    body = {
        "snippets": [
            {"id": "good", "code": HEADER + GOOD},
            {"id": "sorry", "code": HEADER + SORRY},
            {
                "id": "error",
                "code": HEADER + "theorem bad : 1 = 1 := by\n  simp -- FAKE:error=simp made no progress",
            },
        ],
        "timeout": 30,
        "debug": False,
        "reuse": True,
        "infotree": None,
    }
    async with served(small_pool(settings)) as (_, client):
        response = await client.post("/api/check", json=body)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    payload = response.json()
    assert list(payload) == ["results"]
    results = payload["results"]
    assert [r["id"] for r in results] == ["good", "sorry", "error"]  # request order
    for r in results:
        assert list(r) == ["id", "time", "response"]  # exactly one of response/error; no diagnostics
        assert isinstance(r["time"], float) and r["time"] >= 0
        assert "message" not in r["response"]
    good, sorry, error = (r["response"] for r in results)
    assert not good.get("messages") and not good.get("sorries")
    # Sorry: a `sorries` entry and the warning, at positions in the user's text (header = line 1).
    assert len(sorry["sorries"]) == 1
    entry = sorry["sorries"][0]
    assert set(entry) >= {"pos", "endPos", "goal"}
    assert entry["pos"]["line"] == 2
    warning = sorry["messages"][0]
    assert warning["severity"] == "warning" and warning["data"] == "declaration uses `sorry`"
    assert set(warning) >= {"severity", "pos", "endPos", "data"}
    assert warning["pos"]["line"] == 2
    err = next(m for m in error["messages"] if m["severity"] == "error")
    assert err["data"] == "simp made no progress"
    assert err["pos"]["line"] == 3


async def test_api_check_debug_adds_diagnostics_and_trailing_slash_route(settings: Settings) -> None:
    body = {"snippets": [{"id": "x", "code": GOOD}], "debug": True}
    async with served(small_pool(settings)) as (_, client):
        response = await client.post("/api/check/", json=body)
    assert response.status_code == 200
    (result,) = response.json()["results"]
    assert list(result) == ["id", "time", "response", "diagnostics"]
    assert isinstance(result["diagnostics"], dict)


async def test_api_check_timeout_is_an_error_item_and_the_pool_recovers(settings: Settings) -> None:
    body = {
        "snippets": [{"id": "hang", "code": "-- FAKE:hang\n" + GOOD}, {"id": "ok", "code": GOOD}],
        "timeout": 1,
    }
    async with served(small_pool(settings)) as (_, client):
        response = await client.post("/api/check", json=body)
        again = await client.post("/api/check", json={"snippets": [{"id": "after", "code": GOOD}]})
    assert response.status_code == 200
    results = _by_id(response.json()["results"])
    assert list(results["hang"]) == ["id", "time", "error"]
    assert results["hang"]["error"] == "Lean REPL command timed out in 1 seconds"  # Kimina's words
    assert "response" in results["ok"]
    assert again.status_code == 200 and "response" in again.json()["results"][0]


async def test_verify_shapes_field_by_field(settings: Settings) -> None:
    body = {
        "codes": [
            {"custom_id": 7, "proof": HEADER + GOOD},
            {"custom_id": "s", "code": HEADER + SORRY},
        ],
        "timeout": 300,
        "infotree_type": None,
        "disable_cache": False,
    }
    async with served(small_pool(settings)) as (_, client):
        response = await client.post("/verify", json=body)
        legacy = await client.post(
            "/one_pass_verify_batch", json={"codes": [{"custom_id": "l", "proof": GOOD}]}
        )
    assert response.status_code == 200
    results = response.json()["results"]
    assert [r["custom_id"] for r in results] == ["7", "s"]
    for r in results:
        assert list(r) == ["custom_id", "error", "response"]
        assert r["error"] is None
        assert isinstance(r["response"]["time"], float)
    assert not results[0]["response"].get("sorries")
    assert results[1]["response"]["sorries"][0]["pos"]["line"] == 2
    assert legacy.status_code == 200 and legacy.json()["results"][0]["custom_id"] == "l"


async def test_verify_empty_codes_is_an_empty_result(settings: Settings) -> None:
    async with served(small_pool(settings)) as (_, client):
        response = await client.post("/verify", json={"codes": []})
    assert response.status_code == 200
    assert response.json() == {"results": []}


@pytest.mark.parametrize(
    ("route", "body", "needle"),
    [
        ("/api/check", {"snippets": []}, "non-empty"),
        ("/api/check", {"timeout": 3}, "non-empty"),
        ("/api/check", {"snippets": [{"id": "a", "code": GOOD}, {"id": "a", "code": GOOD}]}, "unique"),
        ("/api/check", {"snippets": [{"id": "a"}]}, "code"),
        ("/api/check", {"snippets": [{"id": 1, "code": GOOD}]}, "string"),
        ("/api/check", {"snippets": [{"id": "a", "code": ""}]}, "empty"),
        ("/api/check", {"snippets": [{"id": "a", "code": GOOD, "extra": 1}]}, "extra"),
        ("/api/check", {"snippets": [{"id": "a", "code": GOOD}], "colour": 1}, "colour"),
        ("/api/check", {"snippets": [{"id": "a", "code": GOOD}], "timeout": -1}, "timeout"),
        ("/api/check", {"snippets": [{"id": "a", "code": GOOD}], "timeout": "soon"}, "timeout"),
        ("/api/check", {"snippets": [{"id": "a", "code": GOOD}], "infotree": "everything"}, "infotree"),
        ("/verify", {"codes": [{"custom_id": "a"}]}, "proof"),
        ("/verify", {"codes": [{"proof": GOOD}]}, "custom_id"),
        ("/verify", {"codes": "x"}, "codes"),
    ],
)
async def test_invalid_requests_are_422(
    settings: Settings, route: str, body: dict[str, Any], needle: str
) -> None:
    async with served(small_pool(settings)) as (_, client):
        response = await client.post(route, json=body)
    assert response.status_code == 422, response.text
    assert needle in response.json()["detail"]


async def test_invalid_json_and_oversized_code(settings: Settings) -> None:
    async with served(small_pool(settings, lean_max_code_bytes=100)) as (_, client):
        invalid = await client.post(
            "/api/check", content=b'{"snippets": [', headers={"content-type": "application/json"}
        )
        big = await client.post("/api/check", json={"snippets": [{"id": "a", "code": "é" * 60}]})
        verify_big = await client.post("/verify", json={"codes": [{"custom_id": "a", "proof": "x" * 101}]})
    assert invalid.status_code == 400 and "JSON" in invalid.json()["detail"]
    assert big.status_code == 413 and "100 bytes" in big.json()["detail"]
    assert verify_big.status_code == 413


async def test_backlog_full_is_429_with_retry_after_on_both_routes(settings: Settings) -> None:
    async with served(settings, FullBacklogService(retry_after=0.2)) as (_, client):
        check = await client.post(
            "/api/check", json={"snippets": [{"id": "a", "code": GOOD}, {"id": "b", "code": GOOD}]}
        )
        verify = await client.post("/verify", json={"codes": [{"custom_id": "a", "proof": GOOD}]})
    for response in (check, verify):
        assert response.status_code == 429
        assert response.headers["retry-after"] == "1"
        assert "No available REPLs" in response.json()["detail"]


async def test_header_less_requests_do_not_leak_into_each_other(settings: Settings) -> None:
    """Kimina ran request B on the env 0 that request A's `axiom cheat : False` created."""
    cheat = "axiom cheat : False\ntheorem use_cheat : False := cheat"
    async with served(small_pool(settings)) as (_, client):
        first = await client.post(
            "/api/check", json={"snippets": [{"id": f"a{i}", "code": cheat} for i in range(4)]}
        )
        second = await client.post(
            "/api/check", json={"snippets": [{"id": f"b{i}", "code": cheat} for i in range(4)]}
        )
    assert first.status_code == second.status_code == 200
    for result in first.json()["results"] + second.json()["results"]:
        messages = result["response"].get("messages", [])
        assert not any("already been declared" in m["data"] for m in messages), result


async def test_hostile_snippets_cannot_break_the_pool_or_other_items(settings: Settings) -> None:
    hostile = {
        "blank-lines": "theorem a : True := by\n\n\n  trivial\n\n",
        "control-chars": "theorem b : True := trivial -- \u0000\u0007\u001b[2J",
        "json-lookalike": '{"cmd": "x"}\n\n{"tactic": "sorry", "proofState": 0}\n\ntheorem c : True := trivial',
        "crash": "-- FAKE:crash\n" + GOOD,
        "garbage": "-- FAKE:garbage\n" + GOOD,
    }
    body = {"snippets": [{"id": k, "code": v} for k, v in hostile.items()] + [{"id": "good", "code": GOOD}]}
    async with served(small_pool(settings)) as (_, client):
        response = await client.post("/api/check", json=body, timeout=60.0)
        surrogate = await client.post(
            "/api/check",
            content=b'{"snippets": [{"id": "s", "code": "theorem s : True := trivial -- \\ud800"}]}',
            headers={"content-type": "application/json"},
        )
        after = await client.post("/api/check", json={"snippets": [{"id": "after", "code": GOOD}]})
    assert response.status_code == 200
    results = _by_id(response.json()["results"])
    for key in ("blank-lines", "control-chars", "json-lookalike", "good"):
        assert "response" in results[key], results[key]
        assert not any(m["severity"] == "error" for m in results[key]["response"].get("messages", [])), key
    for key in ("crash", "garbage"):
        assert list(results[key]) == ["id", "time", "error"], results[key]
    assert surrogate.status_code == 400
    assert after.status_code == 200 and "response" in after.json()["results"][0]


@pytest.mark.parametrize(
    ("route", "body"),
    [
        ("/api/check", {"snippets": [{"id": "i", "code": GOOD}], "infotree": "tactics"}),
        ("/verify", {"codes": [{"custom_id": "i", "proof": GOOD}], "infotree_type": "tactics"}),
    ],
)
async def test_infotree_is_passed_to_the_repl_request(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, route: str, body: dict[str, Any]
) -> None:
    log = tmp_path / "repl.log"
    monkeypatch.setenv("FAKE_REPL_LOG", str(log))
    async with served(small_pool(settings)) as (_, client):
        response = await client.post(route, json=body)
        plain = await client.post("/api/check", json={"snippets": [{"id": "p", "code": GOOD + " "}]})
    assert response.status_code == 200 and plain.status_code == 200
    bodies = [json.loads(line)["request"] for line in log.read_text().splitlines()]
    bodies = [b for b in bodies if "env" in b]
    assert [b.get("infotree") for b in bodies] == ["tactics", None]


def _without_time(response: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in response.items() if k not in ("time", "env")}


def _body_requests(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [r for r in (json.loads(line)["request"] for line in log.read_text().splitlines()) if "env" in r]


async def test_verify_uses_the_result_cache_and_dedups_unless_disable_cache(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "repl.log"
    monkeypatch.setenv("FAKE_REPL_LOG", str(log))
    code = "theorem cached_once : 3 = 3 := rfl"
    twice = {"codes": [{"custom_id": "a", "proof": code}, {"custom_id": "b", "proof": code}]}
    async with served(small_pool(settings)) as (app, client):
        first = await client.post("/verify", json=twice)
        after_first = len(_body_requests(log))
        again = await client.post("/verify", json={"codes": [{"custom_id": "c", "proof": code}]})
        after_again = len(_body_requests(log))
        fresh = await client.post("/verify", json={**twice, "disable_cache": True})
        after_fresh = len(_body_requests(log))
        hits = app.state.service.cache.hits
    assert after_first == 1  # the duplicate ran once
    assert after_again == 1  # answered from the cache
    assert after_fresh == 3  # disable_cache: both ran
    assert hits >= 1
    for response in (first, again, fresh):
        assert response.status_code == 200
        for item in response.json()["results"]:
            assert list(item) == ["custom_id", "error", "response"]  # Kimina's exact shape
            assert item["error"] is None and isinstance(item["response"]["time"], float)
            assert _without_time(item["response"]) == _without_time(first.json()["results"][0]["response"])


async def test_verify_never_caches_an_error(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "repl.log"
    monkeypatch.setenv("FAKE_REPL_LOG", str(log))
    body = {
        "codes": [{"custom_id": "h", "proof": "theorem h : True := by\n  FAKE:slow=3000\n  trivial"}],
        "timeout": 0.2,
    }
    async with served(small_pool(settings)) as (app, client):
        first = await client.post("/verify", json=body)
        second = await client.post("/verify", json=body)
        kills = app.state.service.stats().kills
    assert kills.get("timeout") == 2  # the second request ran again
    for response in (first, second):
        item = response.json()["results"][0]
        assert "timed out" in item["error"]
