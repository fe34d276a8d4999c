"""Which skills' instructions are in the prompt: retention across turns, LRU within a budget.

Pure bookkeeping (no I/O), restored at the start of each turn from the `loaded_skills` records of
history, so any worker can continue any conversation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from chat_shell.contracts import HistoryMessage, LoadedSkill


def last_loaded_records(history: Sequence[HistoryMessage]) -> list[LoadedSkill]:
    """The records of the latest assistant message that has them (an errored turn has none)."""
    for message in reversed(history):
        if message.role == "assistant" and message.loaded_skills is not None:
            return list(message.loaded_skills)
    return []


class ActiveSkills:
    """Active skills with their last-use turn, least recently used first.

    `costs` (estimated tokens of each known skill's instructions) defines which names exist.
    Pinned skills (preloads) are always active and never evicted. `names()` keeps the order in
    which skills entered the prompt this turn, so a touch does not reshuffle the cached prefix.
    """

    def __init__(
        self, costs: Mapping[str, int], *, budget: int, turn: int, pinned: Iterable[str] = ()
    ) -> None:
        self._costs = costs
        self._budget = budget
        self.turn = turn
        self._pinned = frozenset(n for n in pinned if n in costs)
        self._last_used: dict[str, int] = {}  # insertion order = recency, oldest first
        self._prompt_order: list[str] = []

    @classmethod
    def restore(
        cls,
        records: Iterable[LoadedSkill],
        *,
        costs: Mapping[str, int],
        budget: int,
        turn: int,
        retention: int,
        pinned: Sequence[str] = (),
    ) -> ActiveSkills:
        """Skills used within the last `retention` turns, plus the pinned ones, within budget."""
        active = cls(costs, budget=budget, turn=turn, pinned=pinned)
        for record in records:
            if record.name in costs and 0 <= turn - record.last_used_turn <= retention:
                active._use(record.name, record.last_used_turn)
        for name in pinned:
            if name in costs:
                active._use(name, turn)
        active._evict(protect=None)
        return active

    def __contains__(self, name: object) -> bool:
        return name in self._last_used

    def names(self) -> list[str]:
        return list(self._prompt_order)

    def is_pinned(self, name: str) -> bool:
        return name in self._pinned

    def touch(self, name: str) -> None:
        """Mark an active skill as used this turn (restarts its retention, makes it most recent)."""
        if name in self._last_used:
            self._use(name, self.turn)

    def load(self, name: str) -> list[str]:
        """Activate `name`; return the skills evicted to stay within budget (never `name`)."""
        self._use(name, self.turn)
        return self._evict(protect=name)

    def total_cost(self) -> int:
        return sum(self._costs[n] for n in self._last_used)

    def records(self) -> list[LoadedSkill]:
        return [LoadedSkill(name=n, last_used_turn=t) for n, t in self._last_used.items()]

    def _use(self, name: str, turn: int) -> None:
        self._last_used.pop(name, None)
        self._last_used[name] = turn
        if name not in self._prompt_order:
            self._prompt_order.append(name)

    def _evict(self, protect: str | None) -> list[str]:
        evicted: list[str] = []
        total = self.total_cost()
        for name in list(self._last_used):
            if total <= self._budget:
                break
            if name == protect or name in self._pinned:
                continue
            total -= self._costs[name]
            del self._last_used[name]
            self._prompt_order.remove(name)
            evicted.append(name)
        return evicted
