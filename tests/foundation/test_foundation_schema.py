"""``glyphoxa schema``: valid Draft 2020-12 JSON Schema, in step with the committed copies."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from bot.cli import main
from bot.frontends.schemas import SCHEMA_MODELS, json_schema, schema_file_name

from .foundation_support import CONFIG, EXAMPLE, REPO


@pytest.mark.parametrize("kind", sorted(SCHEMA_MODELS))
def test_cli_prints_valid_json_schema(kind: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", kind]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)
    committed = json.loads((REPO / "schemas" / schema_file_name(kind)).read_text())
    assert committed == schema, "run: glyphoxa schema all -o schemas"


def test_descriptions_reach_the_editor() -> None:
    properties = json_schema("npc")["properties"]
    assert "unique" in properties["name"]["description"]
    assert properties["budget_tier"]["enum"] == ["fast", "standard", "deep"]
    assert properties["engine"]["$ref"].endswith("EngineKind") or "enum" in str(
        json_schema("npc")["$defs"]
    )


def _validator(kind: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json_schema(kind))


def test_example_files_satisfy_their_schemas() -> None:
    pairs = [("campaign", EXAMPLE / "campaign.yaml"), ("entities", EXAMPLE / "entities.yaml")]
    pairs += [("npc", p) for p in sorted((EXAMPLE / "npcs").glob("*.yaml"))]
    pairs += [("table", p) for p in sorted((EXAMPLE / "tables").glob("*.yaml"))]
    pairs.append(("config", CONFIG))
    pairs.append(("scene", EXAMPLE / "scene.yaml"))
    for kind, path in pairs:
        errors = list(_validator(kind).iter_errors(yaml.safe_load(path.read_text())))
        assert not errors, f"{path}: {errors[0].message}"


def test_schema_rejects_what_check_rejects() -> None:
    bad = {"name": "Mira", "personality": "x", "engine": "warp", "personalty": "y"}
    messages = [e.message for e in _validator("npc").iter_errors(bad)]
    assert any("warp" in m for m in messages)
    assert any("personalty" in m for m in messages)


def test_modelines_point_at_existing_schemas() -> None:
    files = [CONFIG, EXAMPLE / "campaign.yaml", EXAMPLE / "entities.yaml"]
    files += [*EXAMPLE.glob("npcs/*.yaml"), *EXAMPLE.glob("tables/*.yaml")]
    files.append(EXAMPLE / "scene.yaml")
    for path in files:
        first = path.read_text().splitlines()[0]
        assert first.startswith("# yaml-language-server: $schema="), path
        target = (path.parent / first.split("$schema=", 1)[1]).resolve()
        assert target.is_file(), f"{path}: {target}"


def test_all_writes_every_schema(tmp_path: Path) -> None:
    assert main(["schema", "all", "-o", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        schema_file_name(k) for k in SCHEMA_MODELS
    )
