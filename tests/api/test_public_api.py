"""api's public names resolve, and nothing else is exported."""

from __future__ import annotations

import api


def test_public_names_resolve() -> None:
    assert api.__all__ == sorted(api.__all__)
    for name in api.__all__:
        assert getattr(api, name) is not None, name
    assert api.create_app.__module__ == "api.app"
    assert issubclass(api.QueueError, Exception)
