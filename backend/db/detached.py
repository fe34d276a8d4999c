"""Detached ORM instances made from values the caller already has, as a load makes them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from sqlalchemy.orm import make_transient_to_detached
from sqlalchemy.orm.attributes import instance_state
from sqlalchemy.orm.instrumentation import manager_of_class

from backend.db.models import Base

M = TypeVar("M", bound=Base)


def as_loaded(model: type[M], values: Mapping[str, Any]) -> M:
    """A detached `model` holding `values`, as if a Session had loaded its row and closed.

    `values` has every column, the primary key included: a detached instance cannot load one it
    lacks. Made as a load makes one: a bare instance whose values go straight into its dict, with
    no history. The constructor's per-attribute set events cost twice as much (a request's token
    read, a turn's stored answer)."""
    instance: M = manager_of_class(model).new_instance()
    instance_state(instance).dict.update(values)
    make_transient_to_detached(instance)  # the identity key from the values
    return instance
