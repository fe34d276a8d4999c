"""`fetch_source` tells what it downloaded, whether it succeeds or fails (a shared budget
charges both), against a file server on loopback."""

from __future__ import annotations

import pytest

from backend.config import Settings
from backend.skills.importing.errors import FetchError
from backend.skills.importing.fetch import fetch_source
from backend.skills.importing.limits import FetchLimits
from tests.support.chat import LOOPBACK_ALLOW
from tests.support.marketplace import build_zip, skill_md
from tests.support.sources import SourceServer


async def test_the_bytes_downloaded_are_told_for_a_fetch_that_fails_and_one_that_succeeds() -> None:
    policy = Settings(egress_allow=LOOPBACK_ALLOW).egress
    archive = build_zip({"SKILL.md": skill_md("tiny", "A tiny skill.", "BODY")}, root="tiny")
    told: list[int] = []
    with SourceServer() as server:
        server.files["/junk.zip"] = b"j" * 5000
        server.files["/tiny.zip"] = archive

        with pytest.raises(FetchError) as refused:
            await fetch_source(
                server.url("/junk.zip"), None, None, policy, FetchLimits(), received=told.append
            )
        fetched = await fetch_source(
            server.url("/tiny.zip"), None, None, policy, FetchLimits(), received=told.append
        )

    assert refused.value.code == "not_an_archive"
    assert "SKILL.md" in fetched.files
    assert told == [5000, len(archive)]
