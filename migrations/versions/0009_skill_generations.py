"""skill generations: a random number per user, drawn anew by every write a search reads

`skill_generations` holds it; triggers on `skill_search`, `skill_labels` and the Plugin rows of
`kinds` draw it, in the writing transaction, so no write path can miss it (a cascaded delete
fires them too). A search whose owners' generations are the ones it kept knows its selection is
unchanged, and reads neither its sample's fingerprint nor its counts
(backend/skills/search/sample.py). No rows are made here: a user without one has written
nothing since, which is a generation too.

Revision ID: 0009_skill_generations
Revises: 0008_search_sample
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009_skill_generations"
down_revision: str | None = "0008_search_sample"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_MAX = 1 << 52  # as skill_search.revision: below 2**63 on both databases
_PLUGIN = "'Plugin'"  # Ghosts read an owner's Plugin rows (search/selection.py)

_PG = [
    f"""CREATE FUNCTION skill_generation_draw(owner integer) RETURNS void LANGUAGE sql AS $$
    INSERT INTO skill_generations (user_id, generation)
    VALUES (owner, floor(random() * {_MAX})::bigint)
    ON CONFLICT (user_id) DO UPDATE SET generation = EXCLUDED.generation $$""",
    # Rows carrying their owner: skill_search, kinds.
    """CREATE FUNCTION skill_generation_of_row() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP <> 'INSERT' THEN PERFORM skill_generation_draw(OLD.user_id); END IF;
        IF TG_OP <> 'DELETE' THEN PERFORM skill_generation_draw(NEW.user_id); END IF;
        RETURN NULL;
    END $$""",
    # Labels name their skill: its owner is the kinds row's (gone in a cascade, when the
    # skill_search row's own trigger draws).
    """CREATE FUNCTION skill_generation_of_label() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP <> 'INSERT' THEN
            PERFORM skill_generation_draw(k.user_id) FROM kinds AS k WHERE k.id = OLD.kind_id;
        END IF;
        IF TG_OP <> 'DELETE' THEN
            PERFORM skill_generation_draw(k.user_id) FROM kinds AS k WHERE k.id = NEW.kind_id;
        END IF;
        RETURN NULL;
    END $$""",
    """CREATE TRIGGER skill_search_generation AFTER INSERT OR UPDATE OR DELETE ON skill_search
    FOR EACH ROW EXECUTE FUNCTION skill_generation_of_row()""",
    """CREATE TRIGGER skill_labels_generation AFTER INSERT OR UPDATE OR DELETE ON skill_labels
    FOR EACH ROW EXECUTE FUNCTION skill_generation_of_label()""",
    f"""CREATE TRIGGER kinds_generation_insert AFTER INSERT ON kinds
    FOR EACH ROW WHEN (NEW.kind = {_PLUGIN}) EXECUTE FUNCTION skill_generation_of_row()""",
    f"""CREATE TRIGGER kinds_generation_update AFTER UPDATE ON kinds
    FOR EACH ROW WHEN (OLD.kind = {_PLUGIN} OR NEW.kind = {_PLUGIN})
    EXECUTE FUNCTION skill_generation_of_row()""",
    f"""CREATE TRIGGER kinds_generation_delete AFTER DELETE ON kinds
    FOR EACH ROW WHEN (OLD.kind = {_PLUGIN}) EXECUTE FUNCTION skill_generation_of_row()""",
]
_PG_DROP = [
    "DROP TRIGGER IF EXISTS kinds_generation_delete ON kinds",
    "DROP TRIGGER IF EXISTS kinds_generation_update ON kinds",
    "DROP TRIGGER IF EXISTS kinds_generation_insert ON kinds",
    "DROP TRIGGER IF EXISTS skill_labels_generation ON skill_labels",
    "DROP TRIGGER IF EXISTS skill_search_generation ON skill_search",
    "DROP FUNCTION IF EXISTS skill_generation_of_label()",
    "DROP FUNCTION IF EXISTS skill_generation_of_row()",
    "DROP FUNCTION IF EXISTS skill_generation_draw(integer)",
]


def _sqlite_draw(owner: str) -> str:
    """SQLite: draw the generation of the user `owner` selects (none when it selects no row)."""
    return (
        f"INSERT OR REPLACE INTO skill_generations (user_id, generation) "
        f"SELECT {owner}, abs(random()) % {_MAX} WHERE {owner} IS NOT NULL;"
    )


def _label_owner(row: str) -> str:
    return f"(SELECT user_id FROM kinds WHERE id = {row}.kind_id)"


# (name, event, table, WHEN condition or "", statements)
_SQLITE = [
    ("skill_search_generation_insert", "INSERT", "skill_search", "", ["new.user_id"]),
    (
        "skill_search_generation_update",
        "UPDATE",
        "skill_search",
        "",
        ["old.user_id", "new.user_id"],
    ),
    ("skill_search_generation_delete", "DELETE", "skill_search", "", ["old.user_id"]),
    ("skill_labels_generation_insert", "INSERT", "skill_labels", "", [_label_owner("new")]),
    (
        "skill_labels_generation_update",
        "UPDATE",
        "skill_labels",
        "",
        [_label_owner("old"), _label_owner("new")],
    ),
    ("skill_labels_generation_delete", "DELETE", "skill_labels", "", [_label_owner("old")]),
    ("kinds_generation_insert", "INSERT", "kinds", f"new.kind = {_PLUGIN}", ["new.user_id"]),
    (
        "kinds_generation_update",
        "UPDATE",
        "kinds",
        f"old.kind = {_PLUGIN} OR new.kind = {_PLUGIN}",
        ["old.user_id", "new.user_id"],
    ),
    ("kinds_generation_delete", "DELETE", "kinds", f"old.kind = {_PLUGIN}", ["old.user_id"]),
]


def upgrade() -> None:
    op.create_table(
        "skill_generations",
        sa.Column("user_id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("generation", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("user_id", name=op.f("pk_skill_generations")),
    )
    if op.get_bind().dialect.name == "postgresql":
        for statement in _PG:
            op.execute(statement)
        return
    for name, event, table, when, owners in _SQLITE:
        condition = f" WHEN {when}" if when else ""
        body = " ".join(_sqlite_draw(owner) for owner in owners)
        op.execute(
            f"CREATE TRIGGER {name} AFTER {event} ON {table} FOR EACH ROW{condition} "
            f"BEGIN {body} END"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for statement in _PG_DROP:
            op.execute(statement)
    else:
        for name, *_ in _SQLITE:
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
    op.drop_table("skill_generations")
