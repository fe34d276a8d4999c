"""Secret storage per user. Values are encrypted before they touch the database."""

from __future__ import annotations

import re

from cryptography.fernet import Fernet
from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from backend.db.models import Secret
from backend.db.types import utcnow
from backend.errors import InvalidRequest, NotFound
from backend.secrets.cipher import decrypt

NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


def check_name(name: str) -> None:
    if not NAME_RE.fullmatch(name):
        raise InvalidRequest(
            "secret names are 1-128 characters of letters, digits and '_', not starting with a "
            "digit (they are used as ${{secrets.NAME}})",
            code="invalid_secret_name",
            details={"name": name},
        )


async def put(session: AsyncSession, cipher: Fernet, user_id: int, name: str, value: str) -> bool:
    """Create or replace; True when created."""
    check_name(name)
    encrypted = cipher.encrypt(value.encode("utf-8"))
    row = await session.scalar(select(Secret).where(Secret.user_id == user_id, Secret.name == name))
    if row is None:
        session.add(Secret(user_id=user_id, name=name, value_encrypted=encrypted))
        return True
    row.value_encrypted = encrypted
    row.updated_at = utcnow()
    return False


async def remove(session: AsyncSession, user_id: int, name: str) -> None:
    result = await session.execute(
        delete(Secret).where(Secret.user_id == user_id, Secret.name == name)
    )
    if result.rowcount == 0:  # type: ignore[attr-defined]
        raise NotFound(f"no secret {name!r}", code="secret_not_found")


async def list_names(session: AsyncSession, user_id: int) -> list[Secret]:
    rows = await session.scalars(
        select(Secret).where(Secret.user_id == user_id).order_by(Secret.name)
    )
    return list(rows)


async def values(session: AsyncSession, cipher: Fernet, user_id: int) -> dict[str, str]:
    """All of a user's secrets, decrypted: the substitution context of a chat turn."""
    return {
        row.name: decrypt(cipher, row.value_encrypted) for row in await list_names(session, user_id)
    }
