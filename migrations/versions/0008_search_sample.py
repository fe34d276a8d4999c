"""skill search revisions: `skill_search.revision`, a random number each write of a row draws

Fingerprints the sample a search counts words in, so the counts are kept per version of the
sample, and orders it: the sample is a random one (backend/skills/search/sample.py). Existing
rows get a random revision each.

Revision ID: 0008_search_sample
Revises: 0007_skill_pins
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008_search_sample"
down_revision: str | None = "0007_skill_pins"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_MAX = 1 << 52  # backend/skills/search/sample.py REVISION_BITS


def upgrade() -> None:
    op.add_column(
        "skill_search",
        sa.Column("revision", sa.BigInteger(), nullable=False, server_default="0"),
    )
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"UPDATE skill_search SET revision = floor(random() * {_MAX})::bigint")
        op.alter_column("skill_search", "revision", server_default=None)
    else:  # SQLite keeps the default: dropping it would rebuild the table under its FTS5 index
        op.execute(f"UPDATE skill_search SET revision = abs(random()) % {_MAX}")
    op.create_index(
        "ix_skill_search_user_id_namespace_revision",
        "skill_search",
        ["user_id", "namespace", "revision"],
        postgresql_include=["kind_id", "enabled", "chat"],
    )


def downgrade() -> None:
    op.drop_index("ix_skill_search_user_id_namespace_revision", table_name="skill_search")
    op.drop_column("skill_search", "revision")
