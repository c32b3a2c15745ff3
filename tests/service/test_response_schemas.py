"""The client and the service share one definition of every response body: each JSON answer
that the OpenAPI schema declares, on every route and status, is a model of
cheapqa_client.schemas, so the light client parses exactly what the service sends."""

from __future__ import annotations

from pydantic import BaseModel

from cheapqa_client import schemas
from service.app import create_app
from tests.service.conftest import SettingsFactory

CLIENT_MODELS = {
    name: model
    for name, model in vars(schemas).items()
    if isinstance(model, type)
    and issubclass(model, BaseModel)
    and model.__module__ == schemas.__name__
}


def test_every_json_response_of_every_route_is_a_client_model(
    make_settings: SettingsFactory,
) -> None:
    spec = create_app(make_settings()).openapi()
    declared: dict[str, str] = {}  # "METHOD path status" -> model name
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            for status, response in operation["responses"].items():
                body = response.get("content", {}).get("application/json")
                if body is not None:
                    ref = body["schema"].get("$ref", "")
                    declared[f"{method.upper()} {path} {status}"] = ref.rsplit("/", 1)[-1]
    assert declared["POST /v1/documents/{doc_id}/answers 200"] == "AnswersOut"
    assert declared["GET /v1/documents/{doc_id} 200"] == "DocumentInfo"
    assert declared["GET /v1/documents/{doc_id}/entities 200"] == "DocumentEntities"
    not_the_clients = {where: name for where, name in declared.items() if name not in CLIENT_MODELS}
    assert not_the_clients == {}
    # The schema the service publishes is the client's model's, field for field.
    for name in set(declared.values()):
        published = spec["components"]["schemas"][name]
        own = CLIENT_MODELS[name].model_json_schema(
            ref_template="#/components/schemas/{model}", mode="serialization"
        )
        assert published["properties"].keys() == own["properties"].keys(), name
        assert set(published.get("required", [])) == set(own.get("required", [])), name
