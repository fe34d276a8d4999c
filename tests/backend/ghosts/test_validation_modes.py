"""Ghost fields of issue 13 on write: `mcpToolMode` and `allowPlanExecution` are stored as given."""

from __future__ import annotations

import pytest

from backend.errors import InvalidRequest
from backend.ghosts.validation import parse_ghost
from backend.kinds.store import Scope
from tests.support.ghosts import ghost

SCOPE = Scope(1, "dev")


@pytest.mark.parametrize("mode", ["direct", "code"])
def test_a_known_mcp_tool_mode_is_stored_in_camel_case(mode: str) -> None:
    crd = parse_ghost(ghost("g", mcpToolMode=mode, allowPlanExecution=True), SCOPE).crd
    assert crd["spec"]["mcpToolMode"] == mode
    assert crd["spec"]["allowPlanExecution"] is True


def test_unset_fields_stay_out_of_the_stored_ghost() -> None:
    spec = parse_ghost(ghost("g"), SCOPE).crd["spec"]
    assert "mcpToolMode" not in spec and "allowPlanExecution" not in spec


@pytest.mark.parametrize("mode", ["turbo", "", 1, "CODE"])
def test_any_other_mode_is_refused_with_its_own_code(mode: object) -> None:
    with pytest.raises(InvalidRequest) as info:
        parse_ghost(ghost("g", mcpToolMode=mode), SCOPE)
    assert info.value.code == "invalid_mcp_tool_mode"
