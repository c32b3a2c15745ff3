"""The readers this server answers with."""

from __future__ import annotations

from fastapi import APIRouter

from cheapqa_client.schemas import ModelsOut
from service.deps import ModelsDep
from service.errors import error_responses
from service.guard import API_KEY_SCHEME
from service.readers import describe_models

router = APIRouter(prefix="/v1", tags=["models"], dependencies=[API_KEY_SCHEME])


@router.get(
    "/models",
    response_model=ModelsOut,
    operation_id="list_models",
    summary="The loaded readers: mode, model id, size, entity slots, training, accuracy",
    responses=error_responses(401, 503),
)
async def list_models(models: ModelsDep) -> ModelsOut:
    """One entry per loaded mode; `test_accuracy` is null unless recorded for that very
    checkpoint. 503 while the models load."""
    return describe_models(models)
