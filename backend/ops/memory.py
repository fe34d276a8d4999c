"""The objects a process starts with, out of the garbage collector's full passes.

A built gateway holds about 375,000 objects the collector tracks (modules, schemas, mappers,
routes), made by importing and building it, that live as long as the process. A full
(generation 2) pass walks every one: about 0.3 s here in which the process serves no request,
no socket and no turn. `gc.freeze()` moves them to a permanent generation that passes skip; a
full pass over a started gateway then took about 1 ms. Garbage is collected first, so none is
kept. Only process entry points call this (`skillhive serve`, `skillhive worker`): tests build
many apps in one process, and what those leave behind must stay collectable.
"""

from __future__ import annotations

import gc


def freeze_startup_objects() -> int:
    """Collect, then freeze what is left; the number of objects frozen."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
