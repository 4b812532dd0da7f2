"""Render a JSON Schema of ``schemas/`` as a Markdown reference page for the docs site.

The schemas are generated from the pydantic models (``glyphoxa schema all -o schemas``) and their
descriptions are the models' field docstrings, so the reference pages say exactly what
``glyphoxa check`` accepts and are never written twice. Each object gets a table of its keys
(type, default, what it is for); nested objects (``voice``, ``mcp.servers[]``) get a section of
their own, linked from the row that holds them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from docs_markdown import inline, table_cell

__all__ = ["render_schema_page"]

Schema = dict[str, Any]


@dataclass(slots=True)
class _Section:
    path: str
    schema: Schema
    note: str = ""


@dataclass(slots=True)
class _Renderer:
    root: Schema
    queue: list[_Section] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)

    def resolve(self, schema: Schema) -> Schema:
        ref = schema.get("$ref")
        if not ref:
            return schema
        name = ref.rsplit("/", 1)[-1]
        merged = dict(self.root["$defs"][name])
        merged.update({k: v for k, v in schema.items() if k != "$ref"})
        return merged

    def is_object(self, schema: Schema) -> bool:
        return "properties" in self.resolve(schema)

    def describe_type(self, schema: Schema, path: str) -> str:
        """A short type for the table, queueing a section for any object it contains."""
        schema = self.resolve(schema)
        if "properties" in schema:
            self.add(path, schema)
            return f"[object](#{_anchor(path)})"
        options = schema.get("anyOf") or schema.get("oneOf")
        if options:
            discriminator = schema.get("discriminator", {}).get("propertyName")
            if discriminator:
                return self.variants(options, path, discriminator)
            parts = [self.describe_type(option, path) for option in options]
            return " or ".join(dict.fromkeys(parts))
        if "enum" in schema:
            return "one of " + ", ".join(f"`{value}`" for value in schema["enum"])
        if "const" in schema:  # a variant's tag, or false (how YAML reads an unquoted off)
            value = schema["const"]
            return f"`{value if isinstance(value, str) else json.dumps(value)}`"
        kind = schema.get("type")
        if kind == "array":
            items = schema.get("items", {})
            return "list of " + self.describe_type(items, f"{path}[]")
        if kind == "object":
            values = schema.get("additionalProperties")
            if isinstance(values, dict):
                return "map of name to " + self.describe_type(values, f"{path}.<name>")
            return "map"
        return str(kind or "any")

    def variants(self, options: list[Schema], path: str, key: str) -> str:
        names = []
        for option in options:
            resolved = self.resolve(option)
            tag = (
                resolved["properties"][key].get("const")
                or resolved["properties"][key].get("enum", ["?"])[0]
            )
            variant_path = f"{path} ({key}: {tag})"
            self.add(variant_path, resolved, note=f"With `{key}: {tag}`.")
            names.append(f"[`{key}: {tag}`](#{_anchor(variant_path)})")
        return "object: " + " or ".join(names)

    def add(self, path: str, schema: Schema, note: str = "") -> None:
        if path not in self.seen:
            self.seen.add(path)
            self.queue.append(_Section(path, schema, note))

    def table(self, section: _Section) -> list[str]:
        schema = section.schema
        required = set(schema.get("required", ()))
        lines = ["| key | type | default | what it is for |", "|---|---|---|---|"]
        for key, prop in schema.get("properties", {}).items():
            path = f"{section.path}.{key}" if section.path else key
            kind = self.describe_type(prop, path)
            limits = _limits(self.resolve(prop))
            if limits:
                kind += f" ({limits})"
            default = "**required**" if key in required else _default(prop)
            text = inline(_own_description(prop, self.resolve(prop)))
            cells = (f"`{key}`", kind, default, text)
            lines.append("| " + " | ".join(table_cell(cell) for cell in cells) + " |")
        return lines


def render_schema_page(schema: Schema, *, title: str, intro: str, source: str) -> str:
    """The Markdown page for one schema: intro, then one table per object, top-level first.

    Args:
        schema: the parsed JSON Schema (Draft 2020-12, with ``$defs``).
        title: the page's heading.
        intro: a paragraph for the reader (what file this is, where it lives).
        source: the schema file's path in the repository, named at the foot of the page.
    """
    renderer = _Renderer(schema)
    renderer.add("", schema)
    lines = [f"# {title}", "", intro, ""]
    if schema.get("description"):
        lines += [inline(schema["description"]), ""]
    index = 0
    while index < len(renderer.queue):
        section = renderer.queue[index]
        index += 1
        table = renderer.table(section)
        if section.path:
            lines += [f"## `{section.path}` {{ #{_anchor(section.path)} }}", ""]
            description = inline(section.schema.get("description", ""))
            for text in (section.note, description):
                if text:
                    lines += [text, ""]
        lines += [*table, ""]
    lines += [
        "---",
        "",
        f"Generated from `{source}` by `scripts/docs_reference.py` (a test fails when this "
        "page is out of date), so it always matches what the program accepts.",
        "",
    ]
    return "\n".join(lines)


def _own_description(prop: Schema, resolved: Schema) -> str:
    """The key's own description; an object's class docstring heads its section instead."""
    if "description" in prop or "properties" in resolved:
        return str(prop.get("description", ""))
    return str(resolved.get("description", ""))


def _anchor(path: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", path.lower()).strip("-") or "top"


def _default(schema: Schema) -> str:
    if "default" not in schema:
        return ""
    value = schema["default"]
    if value is None:
        return "empty (`null`)"
    return f"`{json.dumps(value, ensure_ascii=False)}`"


def _limits(schema: Schema) -> str:
    parts = []
    for key, sign in (
        ("minimum", ">="),
        ("exclusiveMinimum", ">"),
        ("maximum", "<="),
        ("exclusiveMaximum", "<"),
    ):
        if key in schema:
            parts.append(f"{sign} {schema[key]}")
    for key, label in (
        ("minLength", "at least {} character"),
        ("maxLength", "at most {} character"),
        ("minItems", "at least {} item"),
        ("maxItems", "at most {} item"),
    ):
        if key in schema:
            count = schema[key]
            parts.append(label.format(count) + ("" if count == 1 else "s"))
    if "pattern" in schema:
        parts.append(f"matches `{schema['pattern']}`")
    for option in schema.get("anyOf", ()):
        nested = _limits(option)
        if nested:
            parts.append(nested)
    return ", ".join(parts)
