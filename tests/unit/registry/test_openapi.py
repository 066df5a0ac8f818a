"""The OpenAPI schema documents every field, and says every error's shape."""

from atoll.registry.main import create_app


def undocumented(schema: dict) -> list[str]:
    missing = []
    for name, component in schema["components"]["schemas"].items():
        for field, spec in component.get("properties", {}).items():
            if not spec.get("description"):
                missing.append(f"{name}.{field}")
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            for parameter in operation.get("parameters", []):
                if not (parameter.get("description") or parameter["schema"].get("description")):
                    missing.append(f"{method.upper()} {path} ?{parameter['name']}")
    return missing


def test_every_field_and_parameter_has_a_description() -> None:
    assert undocumented(create_app().openapi()) == []


def test_every_v1_operation_documents_its_errors_as_error_bodies() -> None:
    schema = create_app().openapi()
    for path, operations in schema["paths"].items():
        if not path.startswith("/v1/"):
            continue
        for method, operation in operations.items():
            for status in ("401", "422", "503"):
                content = operation["responses"][status]["content"]["application/json"]
                assert content["schema"] == {"$ref": "#/components/schemas/ErrorBody"}, (
                    method,
                    path,
                    status,
                )
            assert operation["security"] == [{"HTTPBearer": []}]
