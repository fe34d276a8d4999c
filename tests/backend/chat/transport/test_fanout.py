"""Delivery to this process's subscribers: every envelope, or (`ends_only`) turn ends only."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from backend.chat.transport import LocalTransport
from backend.chat.transport.envelope import BrowserEvent, TurnEnded, TurnEnvelope, TurnEvent
from chat_shell import StartEvent


async def _first(envelopes: AsyncIterator[TurnEnvelope], count: int) -> list[TurnEnvelope]:
    return [await asyncio.wait_for(anext(envelopes), 5) for _ in range(count)]


async def test_an_ends_only_subscriber_hears_only_the_turn_ends_of_its_conversation() -> None:
    transport = LocalTransport()
    start = StartEvent(conversation_id="c", turn_index=0)
    events = [TurnEvent(conversation_id="c", message_id=m, event=start) for m in (1, 2)]
    ends = [TurnEnded(conversation_id="c", message_id=m) for m in (1, 2)]
    elsewhere = TurnEnded(conversation_id="other", message_id=3)
    async with (
        transport.subscribe("c") as everything,
        transport.subscribe("c", ends_only=True) as ends_only,
        transport.subscribe("other", ends_only=True) as other,
    ):
        for envelope in (
            events[0],
            BrowserEvent(conversation_id="c", name="skill:request", data={}),
            ends[0],
            events[1],
            ends[1],
            elsewhere,
        ):
            await transport.publish(envelope)
        # Browser events go to the listeners (the Socket.IO edge), not to subscribers.
        assert await _first(everything, 4) == [events[0], ends[0], events[1], ends[1]]
        assert await _first(ends_only, 2) == ends  # the second end, not the event before it
        assert await _first(other, 1) == [elsewhere]
