"""Running coroutines together without leaving any behind: the first failure (or our own
cancellation) cancels the rest, and they are awaited before the error propagates."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Sequence
from typing import Any, TypeVar

_T = TypeVar("_T")


async def gather_or_cancel(coros: Sequence[Coroutine[Any, Any, _T]]) -> list[_T]:
    """All results in order; when one fails (or we are cancelled) the others are cancelled, not
    left running unaccounted, and the first error is raised."""
    tasks = [asyncio.ensure_future(c) for c in coros]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        await cancel_all(tasks)
        raise


async def cancel_all(tasks: Sequence[asyncio.Future[Any]]) -> None:
    """Cancel ``tasks`` and wait until each has finished."""
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
