"""A scripted OpenAI-compatible embeddings endpoint on loopback (semantic re-ranking tests).

with EmbeddingsServer() as server:
    server.url           # http://127.0.0.1:PORT/v1 (the base URL a setting names)
    server.inputs        # every text asked to be embedded, in order
    server.status = 500  # answer every request with this status instead

Vectors are deterministic: each text's words hashed into `DIMENSIONS` buckets, `synonyms`
mapping a word to the bucket of another, so a test can make two wordings "mean" the same.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable
from typing import Any

from tests.support.wsgi import LoopbackWsgi

DIMENSIONS = 64


def _bucket(word: str) -> int:
    return int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "big") % DIMENSIONS


class EmbeddingsServer(LoopbackWsgi):
    def __init__(self, synonyms: dict[str, str] | None = None) -> None:
        self.synonyms = synonyms or {}
        self.inputs: list[str] = []
        self.authorizations: list[str] = []
        self.status = 200
        self.body: bytes | None = None  # answer with these bytes instead of vectors
        super().__init__()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def vector(self, text: str) -> list[float]:
        vector = [0.0] * DIMENSIONS
        for word in re.findall(r"[a-z0-9]+", text.lower()):
            vector[_bucket(self.synonyms.get(word, word))] += 1.0
        return vector

    def _app(self, environ: dict[str, Any], start: Callable[..., Any]) -> Iterable[bytes]:
        size = int(environ.get("CONTENT_LENGTH") or 0)
        request = json.loads(environ["wsgi.input"].read(size) or b"{}")
        self.authorizations.append(environ.get("HTTP_AUTHORIZATION", ""))
        if environ["PATH_INFO"] != "/v1/embeddings":
            start("404 Not Found", [("Content-Type", "text/plain")])
            return [b"not found"]
        texts = request.get("input") or []
        self.inputs.extend(texts)
        if self.status != 200:
            start(f"{self.status} Scripted", [("Content-Type", "application/json")])
            return [b'{"error": {"message": "scripted failure"}}']
        body = self.body
        if body is None:
            data = [{"index": i, "embedding": self.vector(t)} for i, t in enumerate(texts)]
            body = json.dumps({"object": "list", "data": data, "model": request["model"]}).encode()
        start("200 OK", [("Content-Type", "application/json")])
        return [body]
