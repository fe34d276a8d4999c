"""skill pins: `conversation_skills`, the package version of each skill a conversation loaded

Revision ID: 0007_skill_pins
Revises: 0006
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007_skill_pins"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "conversation_skills",
        sa.Column("conversation_id", sa.String(length=36), nullable=False),
        sa.Column("skill", sa.String(length=140), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("pinned", sa.Boolean(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["conversation_id"],
            ["conversations.id"],
            name=op.f("fk_conversation_skills_conversation_id_conversations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("conversation_id", "skill", name=op.f("pk_conversation_skills")),
    )


def downgrade() -> None:
    op.drop_table("conversation_skills")
