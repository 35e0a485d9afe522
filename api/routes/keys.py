"""/v1/keys: the admin creates, lists and revokes API keys."""

from __future__ import annotations

from fastapi import APIRouter

from api.deps import Admin, State
from api.errors import ApiError
from api.schemas import KeyCreate, KeyCreated, KeyView, error_responses

router = APIRouter(prefix="/v1", tags=["keys"])


@router.post(
    "/keys",
    status_code=201,
    response_model=KeyCreated,
    summary="Create an API key (admin)",
    responses=error_responses(400, 401, 403, 413, 422, 429),
)
async def create_key(body: KeyCreate, _admin: Admin, state: State) -> KeyCreated:
    """The secret is in the answer only; Redis keeps its sha256."""
    view, token = await state.keys.create(body.name, body.limits)
    return KeyCreated(**view.model_dump(), key=token)


@router.get(
    "/keys",
    response_model=list[KeyView],
    summary="List API keys (admin)",
    responses=error_responses(401, 403, 422, 429),
)
async def list_keys(_admin: Admin, state: State) -> list[KeyView]:
    return await state.keys.list()


@router.delete(
    "/keys/{key_id}",
    response_model=KeyView,
    summary="Revoke an API key (admin)",
    responses=error_responses(401, 403, 404, 422, 429),
)
async def revoke_key(key_id: str, _admin: Admin, state: State) -> KeyView:
    """The key stops working at once; its jobs keep running."""
    view = await state.keys.revoke(key_id) if len(key_id) <= 100 else None
    if view is None:
        raise ApiError(404, "not_found", f"no key {key_id!r}")
    return view
