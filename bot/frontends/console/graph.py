"""Entities and relations as a picture: a force-directed layout drawn as SVG on the server.

Fruchterman-Reingold with a fixed seed, so the same ``entities.yaml`` always gives the same
picture; a campaign's few hundred entities lay out in milliseconds with numpy. The template
draws nodes (coloured by type) and labelled edges; every label is escaped like any text.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from campaigns.content import EntitiesFile

__all__ = ["GraphEdge", "GraphNode", "GraphPicture", "layout_graph"]

_WIDTH = 960.0
_HEIGHT = 640.0
_MARGIN = 70.0
_PALETTE = ("#7c5cff", "#2a9d8f", "#e76f51", "#e9c46a", "#457b9d", "#d62828", "#8ab17d")


@dataclass(frozen=True, slots=True)
class GraphNode:
    key: str
    name: str
    type: str
    x: float
    y: float
    colour: str
    summary: str


@dataclass(frozen=True, slots=True)
class GraphEdge:
    source: str
    target: str
    label: str
    x1: float
    y1: float
    x2: float
    y2: float

    @property
    def mid(self) -> tuple[float, float]:
        return (self.x1 + self.x2) / 2, (self.y1 + self.y2) / 2


@dataclass(frozen=True, slots=True)
class GraphPicture:
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    types: dict[str, str]
    width: float = _WIDTH
    height: float = _HEIGHT


def layout_graph(entities: EntitiesFile, iterations: int = 300) -> GraphPicture:
    """Place every entity; relations naming an unknown entity are left out."""
    items = list(entities.entities)
    keys = [entity.key for entity in items]
    index = {key: i for i, key in enumerate(keys)}
    pairs = [
        (index[r.source], index[r.target], r)
        for r in entities.relations
        if r.source in index and r.target in index and r.source != r.target
    ]
    positions = _forces(len(items), [(a, b) for a, b, _ in pairs], iterations)
    types: list[str] = sorted({str(entity.type) for entity in items})
    colours = {kind: _PALETTE[i % len(_PALETTE)] for i, kind in enumerate(types)}
    nodes = [
        GraphNode(
            key=entity.key,
            name=entity.name,
            type=entity.type,
            x=float(x),
            y=float(y),
            colour=colours[str(entity.type)],
            summary=(entity.description or "").strip(),
        )
        for entity, (x, y) in zip(items, positions, strict=True)
    ]
    edges = [
        GraphEdge(keys[a], keys[b], relation.type, nodes[a].x, nodes[a].y, nodes[b].x, nodes[b].y)
        for a, b, relation in pairs
    ]
    return GraphPicture(nodes, edges, colours)


def _forces(count: int, edges: list[tuple[int, int]], iterations: int) -> np.ndarray:
    if count == 0:
        return np.zeros((0, 2))
    rng = np.random.default_rng(7)
    angle = np.linspace(0, 2 * math.pi, count, endpoint=False)
    pos = np.stack([np.cos(angle), np.sin(angle)], axis=1) + rng.normal(0, 0.05, (count, 2))
    k = 1.6 * math.sqrt(1.0 / count)
    temperature = 0.1
    for _ in range(iterations):
        delta = pos[:, None, :] - pos[None, :, :]
        distance = np.linalg.norm(delta, axis=2) + 1e-9
        np.fill_diagonal(distance, 1.0)
        push = (k * k / distance**2)[:, :, None] * delta
        np.einsum("iij->ij", push)[:] = 0.0
        move = push.sum(axis=1)
        for a, b in edges:
            d = pos[a] - pos[b]
            length = float(np.linalg.norm(d)) + 1e-9
            pull = d * length / k
            move[a] -= pull
            move[b] += pull
        move -= pos * 0.15  # a little gravity keeps islands in view
        length = np.linalg.norm(move, axis=1)[:, None] + 1e-9
        pos += move / length * np.minimum(length, temperature)
        temperature *= 0.985
    low, high = pos.min(axis=0), pos.max(axis=0)
    span = np.where(high - low < 1e-9, 1.0, high - low)
    unit = (pos - low) / span
    if count == 1:
        unit[:] = 0.5
    width, height = _WIDTH - 2 * _MARGIN, _HEIGHT - 2 * _MARGIN
    return np.stack([_MARGIN + unit[:, 0] * width, _MARGIN + unit[:, 1] * height], axis=1)
