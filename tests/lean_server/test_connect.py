from __future__ import annotations

from lean_server.checker import Checker
from lean_server.connect import connect
from lean_server.service import LeanService
from sorryless.config import Settings


async def test_connect_gives_the_in_process_service_without_a_url(settings: Settings) -> None:
    checker = connect(settings)
    assert isinstance(checker, LeanService)
    assert isinstance(checker, Checker)
    await checker.aclose()


async def test_connect_gives_the_http_client_with_a_url(settings: Settings) -> None:
    checker = connect(settings.model_copy(update={"lean_server_url": "http://127.0.0.1:8100"}))
    assert type(checker).__name__ == "LeanServerClient"
    assert isinstance(checker, Checker)
    await checker.aclose()
