"""usage and quotas: `usage_records` (one row per model call) and `user_quotas` (overrides)

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "usage_records",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("ghost", sa.String(length=140), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("conversation_id", sa.String(length=36), nullable=False),
        sa.Column("message_id", sa.Integer(), nullable=False),
        sa.Column("prompt_tokens", sa.BigInteger(), nullable=False),
        sa.Column("completion_tokens", sa.BigInteger(), nullable=False),
        sa.Column("estimated", sa.Boolean(), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_usage_records_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_usage_records")),
    )
    op.create_index(
        "ix_usage_records_user_id_created_at", "usage_records", ["user_id", "created_at"]
    )
    op.create_index("ix_usage_records_conversation_id", "usage_records", ["conversation_id"])
    op.create_table(
        "user_quotas",
        sa.Column("user_id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("limits", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_user_quotas_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("user_id", name=op.f("pk_user_quotas")),
    )


def downgrade() -> None:
    op.drop_table("user_quotas")
    op.drop_index("ix_usage_records_conversation_id", table_name="usage_records")
    op.drop_index("ix_usage_records_user_id_created_at", table_name="usage_records")
    op.drop_table("usage_records")
