"""A worker process for the fault tests: ``python -m tests.api.worker_main`` (settings from SORRYLESS_*)."""

from __future__ import annotations

import asyncio

from api.worker import run_worker
from sorryless.config import Settings


def main() -> None:
    asyncio.run(run_worker(Settings(_env_file=None)))


if __name__ == "__main__":
    main()
