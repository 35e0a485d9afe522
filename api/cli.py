"""``sorryless serve``, ``sorryless worker`` and ``sorryless keys create|revoke|list``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from api.auth import ApiKeys


def register(app: typer.Typer) -> None:
    app.command("serve", help="Run the HTTP gateway (FastAPI + uvicorn).")(serve)
    app.command("worker", help="Run a job worker (horizontally scalable: run many, anywhere Redis is).")(
        worker
    )
    keys_app = typer.Typer(help="Manage API keys (admin; talks to Redis directly).", no_args_is_help=True)
    keys_app.command("create")(keys_create)
    keys_app.command("revoke")(keys_revoke)
    keys_app.command("list")(keys_list)
    app.add_typer(keys_app, name="keys")


def serve(
    host: Annotated[str | None, typer.Option(help="Bind host (default: settings.api_host).")] = None,
    port: Annotated[int | None, typer.Option(help="Bind port (default: settings.api_port).")] = None,
) -> None:
    import uvicorn

    from api.app import create_app
    from sorryless.config import Settings
    from sorryless.logging import configure_logging

    settings = Settings()
    configure_logging(settings)
    uvicorn.run(
        create_app(settings),
        host=host or settings.api_host,
        port=port or settings.api_port,
        log_config=None,
        access_log=False,
    )


def worker(
    concurrency: Annotated[
        int | None, typer.Option(help="Interactive jobs at once (default: settings).")
    ] = None,
    batch_concurrency: Annotated[
        int | None, typer.Option(help="Batch jobs at once (default: concurrency).")
    ] = None,
    queues: Annotated[str, typer.Option(help="Comma-separated queues to serve.")] = "interactive,batch",
) -> None:
    import asyncio

    from api.keyspace import QUEUE_NAMES
    from api.worker import run_worker
    from sorryless.config import Settings
    from sorryless.logging import configure_logging

    names = tuple(q.strip() for q in queues.split(",") if q.strip())
    unknown = [q for q in names if q not in QUEUE_NAMES]
    if unknown or not names:
        raise typer.BadParameter(f"queues must be among {', '.join(QUEUE_NAMES)}", param_hint="--queues")
    settings = Settings()
    configure_logging(settings)
    asyncio.run(
        run_worker(settings, queues=names, concurrency=concurrency, batch_concurrency=batch_concurrency)
    )


def keys_create(
    name: Annotated[str, typer.Argument(help="Who or what the key is for.")],
    rate: Annotated[float | None, typer.Option(help="Requests per second (0 = unlimited).")] = None,
    burst: Annotated[int | None, typer.Option(help="Burst size.")] = None,
    max_active_jobs: Annotated[
        int | None, typer.Option(help="Unfinished jobs at once (0 = unlimited).")
    ] = None,
    daily_jobs: Annotated[int | None, typer.Option(help="Jobs per UTC day (0 = unlimited).")] = None,
    daily_attempts: Annotated[
        int | None,
        typer.Option(help="Prover attempts per UTC day, from prove budgets (0 = unlimited)."),
    ] = None,
) -> None:
    """Create a key and print it (shown once)."""
    import asyncio

    from api.schemas import KeyLimits

    limits = KeyLimits(
        rate_per_s=rate,
        burst=burst,
        max_active_jobs=max_active_jobs,
        daily_jobs=daily_jobs,
        daily_attempts=daily_attempts,
    )

    async def _create() -> None:
        async with _keys() as keys:
            view, token = await keys.create(name, limits)
        typer.echo(f"id:  {view.id}\nkey: {token}")

    asyncio.run(_create())


def keys_revoke(
    key_id: Annotated[str, typer.Argument(help="Key id (from `keys create` or `keys list`).")],
) -> None:
    """Revoke a key at once."""
    import asyncio

    async def _revoke() -> bool:
        async with _keys() as keys:
            return await keys.revoke(key_id) is not None

    if not asyncio.run(_revoke()):
        typer.echo(f"no key {key_id}", err=True)
        raise typer.Exit(1)
    typer.echo(f"revoked {key_id}")


def keys_list() -> None:
    """List keys (never their secrets)."""
    import asyncio

    async def _list() -> None:
        async with _keys() as keys:
            for view in await keys.list():
                state = "revoked" if view.revoked else "active"
                typer.echo(
                    f"{view.id}  {state:7}  {view.name}  rate={view.rate_per_s:g}/s burst={view.burst} "
                    f"active<={view.max_active_jobs} daily<={view.daily_jobs} "
                    f"attempts/day<={view.daily_attempts}"
                )

    asyncio.run(_list())


@asynccontextmanager
async def _keys() -> AsyncIterator[ApiKeys]:
    import redis.asyncio as aioredis

    from api.auth import ApiKeys
    from api.keyspace import Keyspace
    from sorryless.config import Settings

    settings = Settings()
    redis = aioredis.Redis.from_url(settings.redis_url, decode_responses=True)
    try:
        yield ApiKeys(redis, Keyspace(settings.redis_key_prefix), settings)
    finally:
        await redis.aclose()
