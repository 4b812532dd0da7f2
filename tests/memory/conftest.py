"""Fixtures: the same tests run on SQLite and, when GLYPHOXA_TEST_POSTGRES_URL is set, PostgreSQL.

PostgreSQL tests share one throw-away database created for the session (and dropped after it);
every table is truncated before each test, so tests never see each other's rows and the server's
existing databases are untouched.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from campaigns.content import EntitiesFile
from campaigns.memory import MemoryStore
from campaigns.yamlio import load_model

from ..postgres_db import BACKENDS, asyncpg_dsn, throwaway_database

EXAMPLE_ENTITIES = Path(__file__).resolve().parents[2] / "campaigns/example/entities.yaml"


@pytest.fixture(scope="session")
async def postgres_database() -> AsyncIterator[str | None]:
    """One throw-away PostgreSQL database for the test session (dropped at the end)."""
    async with throwaway_database("glyphoxa_t") as url:
        yield url


@pytest.fixture(params=BACKENDS)
async def memory_url(
    request: pytest.FixtureRequest, tmp_path: Path, postgres_database: str | None
) -> AsyncIterator[str]:
    """A URL of an empty memory database on the parametrized backend."""
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'memory.db'}"
        return
    url = postgres_database
    assert url is not None
    connection = await asyncpg.connect(asyncpg_dsn(url))
    try:  # empty every table, keep the migrated schema (much faster than a new database)
        tables = await connection.fetch(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' "
            "AND tablename <> 'alembic_version'"
        )
        if tables:
            names = ", ".join(f'"{row["tablename"]}"' for row in tables)
            await connection.execute(f"TRUNCATE {names} RESTART IDENTITY CASCADE")
    finally:
        await connection.close()
    yield url


@pytest.fixture
async def store(memory_url: str) -> AsyncIterator[MemoryStore]:
    memory = await MemoryStore.open(memory_url)
    yield memory
    await memory.close()


@pytest.fixture(scope="session")
def example_entities() -> EntitiesFile:
    return load_model(EXAMPLE_ENTITIES, EntitiesFile).unwrap()


# --------------------------------------------------------------------------------------------
# A local server speaking the OpenAI wire protocol (the cloud is unreachable from tests).

#: Words that mean the same thing to the test embedding model, so vectors find what words miss.
CONCEPTS = {
    "ale": "drink", "beer": "drink", "mead": "drink", "wine": "drink", "drink": "drink",
    "coin": "money", "gold": "money", "silver": "money", "debt": "money", "money": "money",
    "crypt": "tomb", "tomb": "tomb", "grave": "tomb", "catacomb": "tomb",
}  # fmt: skip
DIMENSIONS = 64


def concept_vector(text: str) -> list[float]:
    """Deterministic bag-of-concepts embedding: hashed words, synonyms share a slot."""
    vector = [0.0] * DIMENSIONS
    for word in re.findall(r"[a-z]+", text.lower()):
        word = word.rstrip("s") if word.endswith("s") and len(word) > 3 else word
        concept = CONCEPTS.get(word)
        if concept is None:
            continue  # only known concepts: keeps similarities clean for assertions
        slot = int(hashlib.sha256(concept.encode()).hexdigest(), 16) % DIMENSIONS
        vector[slot] += 1.0
    return vector


class OpenAIStub:
    """State of the local server: switches to fail, and every request body it received."""

    def __init__(self) -> None:
        self.fail_embeddings = False
        self.fail_chat = False
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.summary_text = "The party learned that Bartok owes the Black Candle money."
        self.base_url = ""


def _handler(stub: OpenAIStub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            stub.requests.append((self.path, body))
            if self.path.endswith("/embeddings"):
                if stub.fail_embeddings:
                    self._send(500, {"error": {"message": "embeddings down", "type": "server"}})
                    return
                inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
                data = [
                    {"object": "embedding", "index": i, "embedding": concept_vector(text)}
                    for i, text in enumerate(inputs)
                ]
                self._send(
                    200,
                    {
                        "object": "list",
                        "data": data,
                        "model": body["model"],
                        "usage": {"prompt_tokens": 1, "total_tokens": 1},
                    },
                )
            elif self.path.endswith("/chat/completions"):
                if stub.fail_chat:
                    self._send(500, {"error": {"message": "llm down", "type": "server"}})
                    return
                self._send(
                    200,
                    {
                        "id": "chatcmpl-1",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body["model"],
                        "choices": [
                            {
                                "index": 0,
                                "finish_reason": "stop",
                                "message": {"role": "assistant", "content": stub.summary_text},
                            }
                        ],
                    },
                )
            else:
                self._send(404, {"error": {"message": "not found"}})

    return Handler


@pytest.fixture(scope="session")
def openai_server() -> Iterator[OpenAIStub]:
    stub = OpenAIStub()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(stub))
    thread = threading.Thread(target=server.serve_forever, name="openai-stub", daemon=True)
    thread.start()
    stub.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    yield stub
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


@pytest.fixture
def openai_stub(openai_server: OpenAIStub) -> OpenAIStub:
    openai_server.fail_chat = openai_server.fail_embeddings = False
    openai_server.requests.clear()
    return openai_server
