"""Optional semantic re-ranking of skill search, through an OpenAI-compatible embeddings endpoint.

Only when the operator sets `SKILLHIVE_EMBEDDINGS_URL`: the lexical search (engine.py) still
finds the candidates and decides, by its threshold, whether anything fits at all; its best
`embeddings_candidates` are then ordered by the mean of their lexical score and the cosine
similarity of the request and the skill's name and description. Only those few are embedded,
each skill text once per process (`EmbeddingCache`, by content hash, bounded), so a search
never embeds a whole catalog.

The endpoint is reached through the egress policy like every other configured URL (a
loopback or private endpoint needs `SKILLHIVE_EGRESS_ALLOW`). Any failure (refused, down,
slow, a malformed answer) logs a warning and leaves the lexical ranking as it was: semantic
ranking is never required.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import math
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import httpx

from chat_shell import EgressForbidden, EgressPolicy, egress_client

if TYPE_CHECKING:
    from backend.config import Settings
    from backend.skills.search.engine import SearchHit

log = logging.getLogger("skillhive.search")

MAX_INPUT_CHARS = 2000  # of one skill text sent to be embedded


class EmbeddingsFailed(Exception):
    """The endpoint did not answer with one vector per input."""


class EmbeddingCache:
    """Vectors by content hash (model and text), least recently used out past `max_entries`."""

    def __init__(self, max_entries: int) -> None:
        self._entries: OrderedDict[str, list[float]] = OrderedDict()
        self._max = max_entries

    def get(self, key: str) -> list[float] | None:
        found = self._entries.get(key)
        if found is not None:
            self._entries.move_to_end(key)
        return found

    def put(self, key: str, vector: list[float]) -> None:
        self._entries[key] = vector
        self._entries.move_to_end(key)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm > 0 else 0.0


def skill_text(hit: SearchHit) -> str:
    return f"{hit.name}: {hit.description}"[:MAX_INPUT_CHARS]


def _vectors(body: Any, count: int) -> list[list[float]]:
    """The vectors of an OpenAI-style answer, in input order; EmbeddingsFailed otherwise."""
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list) or len(data) != count:
        raise EmbeddingsFailed("the answer does not hold one embedding per input")
    ordered: list[list[float] | None] = [None] * count
    for position, item in enumerate(data):
        index = item.get("index", position) if isinstance(item, dict) else None
        vector = item.get("embedding") if isinstance(item, dict) else None
        if not isinstance(index, int) or not 0 <= index < count or ordered[index] is not None:
            raise EmbeddingsFailed("the answer's embedding indexes are not the inputs'")
        if not isinstance(vector, list) or not vector:
            raise EmbeddingsFailed("an embedding is not a list of numbers")
        if not all(isinstance(x, int | float) and math.isfinite(x) for x in vector):
            raise EmbeddingsFailed("an embedding is not a list of finite numbers")
        ordered[index] = [float(x) for x in vector]
    vectors = [v for v in ordered if v is not None]
    if len({len(v) for v in vectors}) != 1:
        raise EmbeddingsFailed("the embeddings differ in dimension")
    return vectors


class SemanticRanker:
    """Re-ranks lexical hits by embedding similarity; shared by every search of a process."""

    def __init__(
        self,
        *,
        url: str,
        model: str,
        api_key: str | None,
        egress: EgressPolicy,
        candidates: int,
        timeout_s: float,
        cache_entries: int,
    ) -> None:
        self.url = url.rstrip("/") + "/embeddings"
        self.model = model
        self.candidates = candidates
        self.cache = EmbeddingCache(cache_entries)
        self.embedded = 0  # texts sent to the endpoint (tests and ops)
        self._api_key = api_key
        self._egress = egress
        self._timeout = timeout_s

    def _key(self, text: str) -> str:
        return hashlib.sha256(f"{self.model}\0{text}".encode()).hexdigest()

    async def _request(self, texts: list[str]) -> list[list[float]]:
        self._egress.check_url(self.url)
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        async with egress_client(self._egress, timeout=self._timeout) as client:
            response = await client.post(
                self.url, json={"model": self.model, "input": texts}, headers=headers
            )
        if response.status_code != 200:
            raise EmbeddingsFailed(f"the endpoint answered HTTP {response.status_code}")
        try:
            body = response.json()
        except ValueError as exc:
            raise EmbeddingsFailed("the answer is not JSON") from exc
        return _vectors(body, len(texts))

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text: from the cache, else one request for all the missing ones."""
        keys = [self._key(t) for t in texts]
        missing = list(
            dict.fromkeys(t for t, k in zip(texts, keys, strict=True) if self.cache.get(k) is None)
        )
        if missing:
            self.embedded += len(missing)
            for text, vector in zip(missing, await self._request(missing), strict=True):
                self.cache.put(self._key(text), vector)
        found = [self.cache.get(k) for k in keys]
        if any(v is None for v in found):  # a cache smaller than one request's texts
            return await self._request(list(texts))
        return [v for v in found if v is not None]

    async def rerank(self, query: str, hits: Sequence[SearchHit]) -> list[SearchHit]:
        """`hits` (the lexical ranking) ordered by the mean of lexical score and similarity;
        unchanged, with a warning logged, when the endpoint fails."""
        if not hits:
            return []
        try:
            vectors = await self.embed([query[:MAX_INPUT_CHARS], *map(skill_text, hits)])
        except (EgressForbidden, EmbeddingsFailed, httpx.HTTPError) as exc:
            log.warning(
                "semantic re-ranking is skipped, the lexical ranking stands: %s (%s)",
                type(exc).__name__,
                getattr(exc, "message", None) or str(exc) or "no detail",
            )
            return list(hits)
        asked, skills = vectors[0], vectors[1:]
        blended = [
            dataclasses.replace(
                hit, score=round((hit.score + max(cosine(asked, vector), 0.0)) / 2, 4)
            )
            for hit, vector in zip(hits, skills, strict=True)
        ]
        blended.sort(key=lambda h: (-h.score, h.name, h.namespace, h.kind_id))
        return blended


_rankers: dict[tuple[Any, ...], SemanticRanker] = {}


def ranker_for(settings: Settings) -> SemanticRanker | None:
    """The process's ranker for these settings (its cache shared by every search), or None
    when no embeddings endpoint is configured."""
    if not settings.embeddings_url:
        return None
    key = settings.embeddings_api_key
    secret = key.get_secret_value() if key is not None else None
    config = (
        settings.embeddings_url,
        settings.embeddings_model,
        secret,
        tuple(settings.egress_allow),
        tuple(settings.egress_deny),
        settings.embeddings_candidates,
        settings.embeddings_timeout_s,
        settings.embeddings_cache_entries,
    )
    ranker = _rankers.get(config)
    if ranker is None:
        ranker = SemanticRanker(
            url=settings.embeddings_url,
            model=settings.embeddings_model,
            api_key=secret,
            egress=settings.egress,
            candidates=settings.embeddings_candidates,
            timeout_s=settings.embeddings_timeout_s,
            cache_entries=settings.embeddings_cache_entries,
        )
        _rankers.clear()  # one configuration per process; a test's new settings replace it
        _rankers[config] = ranker
    return ranker
