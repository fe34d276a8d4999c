"""SKILLHIVE_SANDBOX_RUN_UID: the host user sandbox runs execute as when the service is root."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from backend.chat.sandbox import create_sandbox
from backend.config import Settings
from tests.support.sandbox import owners_of_a_run


async def test_an_operator_gives_runs_a_uid_of_their_own() -> None:
    engine = create_sandbox(Settings(sandbox_run_uid=4242, sandbox_wall_seconds=10))

    assert await owners_of_a_run(engine) == {4242}


@pytest.mark.parametrize("uid", [0, -1, 2**32 - 1])
def test_root_and_impossible_uids_are_refused(uid: int) -> None:
    with pytest.raises(ValidationError, match="sandbox_run_uid"):
        Settings(sandbox_run_uid=uid)
