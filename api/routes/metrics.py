"""GET /metrics: Prometheus text format from the app's own registry."""

from __future__ import annotations

from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST

from api.deps import State
from api.schemas import error_responses

router = APIRouter(tags=["metrics"])


@router.get(
    "/metrics",
    summary="Prometheus metrics",
    response_class=Response,
    responses={
        200: {"content": {"text/plain": {}}, "description": "Prometheus text exposition."},
        **error_responses(503),
    },
)
async def metrics(state: State) -> Response:
    await state.metrics.refresh(state.redis, state.keyspace, state.queue)
    return Response(content=state.metrics.render(), media_type=CONTENT_TYPE_LATEST)
