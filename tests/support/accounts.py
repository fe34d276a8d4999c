"""A user of the suite's `make_account` fixture (tests/conftest.py): id, name and API token."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Account:
    id: int
    name: str
    token: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}
