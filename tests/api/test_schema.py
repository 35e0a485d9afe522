"""Property-based run of the OpenAPI schema (schemathesis): no input produces a 5xx."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
import uvicorn
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.core.result import Ok

from api.app import create_app
from sorryless.config import Settings
from tests.api.conftest import free_port

ADMIN_KEY = "schemathesis-admin"


@pytest.fixture
def served(settings: Settings) -> Iterator[str]:
    """The gateway in a uvicorn thread of its own (its own event loop for its Redis clients)."""
    app = create_app(settings.model_copy(update={"max_request_bytes": 50_000, "admin_key": ADMIN_KEY}))
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "gateway did not start"
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


def _checker(operation: Any, mode: GenerationMode, statuses: dict[int, int], failures: list[str]) -> Any:
    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=20,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.explicit, Phase.generate],
        database=None,
    )
    def check(case: Any) -> None:
        extra: dict[str, str] = {}
        if mode is GenerationMode.POSITIVE:
            # valid requests go as the admin, so they get past auth into the routes
            for key in [k for k in (case.headers or {}) if k.lower() == "x-api-key"]:
                del case.headers[key]
            extra["Authorization"] = f"Bearer {ADMIN_KEY}"
        response = case.call(timeout=10, headers=extra)
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
        if response.status_code >= 500:
            failures.append(
                f"{case.method} {case.formatted_path} -> {response.status_code}: {response.text[:300]}"
            )
            return
        if response.status_code >= 400 and "application/json" in str(response.headers.get("content-type")):
            body = response.json()
            if set(body) != {"error"} or not {"code", "message"} <= set(body["error"]):
                failures.append(f"{case.method} {case.formatted_path}: error shape {body}")

    return check


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_no_server_errors(served: str) -> None:
    """Positive (valid, as admin) and negative (invalid) examples, 20 each per operation."""
    schema = schemathesis.openapi.from_url(f"{served}/openapi.json")
    failures: list[str] = []
    statuses: dict[int, int] = {}
    operations = 0
    for result in schema.get_all_operations():
        assert isinstance(result, Ok), result
        operation = result.ok()
        operations += 1
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            try:
                _checker(operation, mode, statuses, failures)()
            except Unsatisfiable:
                if mode is GenerationMode.POSITIVE:
                    raise  # only negative generation can be impossible (nothing to break, e.g. /health)
    assert operations >= 12
    assert sum(statuses.values()) >= 200 and len(statuses) >= 5, statuses
    assert not failures, "\n".join(failures[:20])


def test_every_field_and_error_is_documented(settings: Settings) -> None:
    spec = create_app(settings).openapi()
    undocumented = [
        f"{name}.{prop}"
        for name, schema in spec["components"]["schemas"].items()
        for prop, field in schema.get("properties", {}).items()
        if "description" not in field
    ]
    assert undocumented == []
    assert [n for n, s in spec["components"]["schemas"].items() if "description" not in s] == []
    error_ref = "#/components/schemas/ErrorResponse"
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            declared = operation["responses"]
            assert "503" in declared, (method, path)
            if path.startswith("/v1"):
                assert {"401", "422", "429"} <= set(declared), (method, path)
            for status, response in declared.items():
                if status.startswith(("4", "5")) and path != "/health":
                    schema = response["content"]["application/json"]["schema"]
                    assert schema == {"$ref": error_ref}, (method, path, status)
