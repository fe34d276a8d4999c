"""CRDs read back from the `kinds` table, validated once into their models.

Every write validated the CRD, so a stored row normally validates again. One that does not
(written by an older version with looser rules, or edited in the database) is a 409
`stored_crd_invalid` naming the resource and the failing fields, never a 500: re-applying the
resource fixes it. Messages carry field paths only, never values (an MCP header may hold a
credential).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import ValidationError

from backend.crd.common import CamelModel
from backend.errors import Conflict

M = TypeVar("M", bound=CamelModel)


class StoredCrdInvalid(Conflict):
    code = "stored_crd_invalid"


STALE_GHOST = (409, "the stored Ghost no longer validates (`stored_crd_invalid`): apply it again")


def stored(model: type[M], crd: Mapping[str, Any]) -> M:
    """`crd` (a `kinds.json` value) as `model` (`Ghost`, `Skill`, `Plugin`)."""
    try:
        return model.model_validate(crd)
    except ValidationError as exc:
        raise _invalid(model.__name__, crd, exc) from None


def _invalid(kind: str, crd: Mapping[str, Any], exc: ValidationError) -> StoredCrdInvalid:
    metadata = crd.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    where = f"{kind} {name!r}" if isinstance(name, str) else f"a stored {kind}"
    raw = exc.errors(include_url=False, include_input=False, include_context=False)
    errors = [{"loc": [str(p) for p in e["loc"]], "msg": e["msg"], "type": e["type"]} for e in raw]
    first = ".".join(errors[0]["loc"]) or "body"
    return StoredCrdInvalid(
        f"the stored {where} no longer validates ({first}: {errors[0]['msg']}); apply it again",
        details={"kind": kind, "name": name if isinstance(name, str) else None, "errors": errors},
    )
