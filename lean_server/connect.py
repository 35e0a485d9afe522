"""``connect(settings)``: the Checker to use — the HTTP client of a running lean-server when
``settings.lean_server_url`` is set, else an in-process :class:`LeanService`."""

from __future__ import annotations

import importlib
from typing import cast

from lean_server.checker import Checker
from sorryless.config import Settings


def connect(settings: Settings) -> Checker:
    if settings.lean_server_url:
        client_module = importlib.import_module("lean_server.client")
        return cast(Checker, client_module.LeanServerClient(settings))
    from lean_server.service import LeanService

    return LeanService(settings)
