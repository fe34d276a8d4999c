"""skill search: skill_search, skill_labels and each database's full-text index of them

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23

PostgreSQL: `skill_search.document`, a tsvector generated from the term columns with weights
(A name, B tags and "when to use", C description, D body) under a GIN index, and `head`, the
same without the body, for ranking many rows cheaply. SQLite: the FTS5
table `skill_search_fts` over the same columns, kept in step by triggers. Both index text that
backend/skills/search/text.py has already normalized, so they match the same words. Existing
skills are indexed here by the code that indexes every later write.
"""

import json
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from backend.skills.search.index import index_values, label_values

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TERM_COLUMNS = ("name_terms", "tag_terms", "when_terms", "desc_terms", "body_terms")

_HEAD = """
    setweight(to_tsvector('simple'::regconfig, name_terms), 'A')
    || setweight(to_tsvector('simple'::regconfig, tag_terms || ' ' || when_terms), 'B')
    || setweight(to_tsvector('simple'::regconfig, desc_terms), 'C')"""
PG_DOCUMENT = f"""
ALTER TABLE skill_search ADD COLUMN document tsvector GENERATED ALWAYS AS ({_HEAD}
    || setweight(to_tsvector('simple'::regconfig, body_terms), 'D')
) STORED
"""
# The same without the body: small enough to rank thousands of rows cheaply.
PG_HEAD = f"ALTER TABLE skill_search ADD COLUMN head tsvector GENERATED ALWAYS AS ({_HEAD}) STORED"

_COLUMNS = ", ".join(TERM_COLUMNS)
_NEW = ", ".join(f"new.{c}" for c in TERM_COLUMNS)
_OLD = ", ".join(f"old.{c}" for c in TERM_COLUMNS)
SQLITE_FTS = [
    f"""CREATE VIRTUAL TABLE skill_search_fts USING fts5({_COLUMNS}, content='skill_search',
    content_rowid='kind_id', tokenize='unicode61 remove_diacritics 0')""",
    f"""CREATE TRIGGER skill_search_fts_insert AFTER INSERT ON skill_search BEGIN
    INSERT INTO skill_search_fts(rowid, {_COLUMNS}) VALUES (new.kind_id, {_NEW}); END""",
    f"""CREATE TRIGGER skill_search_fts_delete AFTER DELETE ON skill_search BEGIN
    INSERT INTO skill_search_fts(skill_search_fts, rowid, {_COLUMNS})
    VALUES ('delete', old.kind_id, {_OLD}); END""",
    f"""CREATE TRIGGER skill_search_fts_update AFTER UPDATE ON skill_search BEGIN
    INSERT INTO skill_search_fts(skill_search_fts, rowid, {_COLUMNS})
    VALUES ('delete', old.kind_id, {_OLD});
    INSERT INTO skill_search_fts(rowid, {_COLUMNS}) VALUES (new.kind_id, {_NEW}); END""",
]


def upgrade() -> None:
    skill_search = op.create_table(
        "skill_search",
        sa.Column("kind_id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("namespace", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("chat", sa.Boolean(), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("catalog_chars", sa.Integer(), nullable=False),
        sa.Column("uses_secrets", sa.Boolean(), nullable=False),
        *(sa.Column(c, sa.Text(), nullable=False) for c in TERM_COLUMNS),
        sa.ForeignKeyConstraint(
            ["kind_id"],
            ["kinds.id"],
            name=op.f("fk_skill_search_kind_id_kinds"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("kind_id", name=op.f("pk_skill_search")),
    )
    op.create_index(
        "ix_skill_search_user_id_namespace", "skill_search", ["user_id", "namespace", "name"]
    )
    op.create_index("ix_skill_search_uses_secrets", "skill_search", ["uses_secrets"])
    skill_labels = op.create_table(
        "skill_labels",
        sa.Column("kind_id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("key", sa.String(length=63), nullable=False),
        sa.Column("value", sa.String(length=253), nullable=False),
        sa.ForeignKeyConstraint(
            ["kind_id"],
            ["kinds.id"],
            name=op.f("fk_skill_labels_kind_id_kinds"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("kind_id", "key", name=op.f("pk_skill_labels")),
    )
    op.create_index("ix_skill_labels_key_value", "skill_labels", ["key", "value"])

    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        op.execute(PG_DOCUMENT)
        op.execute(PG_HEAD)
        op.execute("CREATE INDEX ix_skill_search_document ON skill_search USING gin (document)")
        op.execute("CREATE INDEX ix_skill_search_head ON skill_search USING gin (head)")
        # Keep the tsvector in the row (compressed if need be) and move the term texts out
        # first: matching and ranking read the tsvector of many rows, the texts of a few.
        op.execute("ALTER TABLE skill_search ALTER COLUMN document SET STORAGE MAIN")
        for column in TERM_COLUMNS:
            op.execute(f"ALTER TABLE skill_search ALTER COLUMN {column} SET STORAGE EXTERNAL")
    else:
        for statement in SQLITE_FTS:
            op.execute(statement)

    rows = bind.execute(
        sa.text("SELECT id, user_id, namespace, json FROM kinds WHERE kind = 'Skill'")
    ).all()
    for kind_id, user_id, namespace, raw in rows:
        crd = json.loads(raw) if isinstance(raw, str) else raw
        values = index_values(kind_id, user_id, namespace, crd)
        # Today's columns (later revisions add some, e.g. 0008's `revision`).
        op.bulk_insert(skill_search, [{c.name: values[c.name] for c in skill_search.columns}])
        labels = label_values(kind_id, crd)
        if labels:
            op.bulk_insert(skill_labels, labels)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for trigger in ("insert", "delete", "update"):
            op.execute(f"DROP TRIGGER IF EXISTS skill_search_fts_{trigger}")
        op.execute("DROP TABLE IF EXISTS skill_search_fts")
    op.drop_index("ix_skill_labels_key_value", table_name="skill_labels")
    op.drop_table("skill_labels")
    op.drop_index("ix_skill_search_uses_secrets", table_name="skill_search")
    op.drop_index("ix_skill_search_user_id_namespace", table_name="skill_search")
    op.drop_table("skill_search")
