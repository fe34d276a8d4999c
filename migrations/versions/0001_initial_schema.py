"""initial schema: users, api_tokens, kinds, skill_binaries; the system user 0

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TS = sa.DateTime(timezone=True)
JSON = sa.JSON()


def upgrade() -> None:
    users = op.create_table(
        "users",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("is_active", sa.Boolean(), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_users")),
        sa.UniqueConstraint("name", name=op.f("uq_users_name")),
    )
    op.create_table(
        "api_tokens",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("last_used_at", TS, nullable=True),
        sa.Column("expires_at", TS, nullable=True),
        sa.Column("revoked_at", TS, nullable=True),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_api_tokens_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_tokens")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_api_tokens_token_hash")),
    )
    op.create_index(op.f("ix_api_tokens_user_id"), "api_tokens", ["user_id"])
    op.create_table(
        "kinds",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("namespace", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("json", JSON, nullable=False),
        sa.Column("is_active", sa.Boolean(), nullable=False),
        sa.Column("resource_version", sa.Integer(), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_kinds_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_kinds")),
        sa.UniqueConstraint(
            "user_id",
            "kind",
            "namespace",
            "name",
            name=op.f("uq_kinds_user_id_kind_namespace_name"),
        ),
    )
    op.create_index("ix_kinds_kind_namespace", "kinds", ["kind", "namespace"])
    op.create_table(
        "skill_binaries",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("kind_id", sa.Integer(), nullable=False),
        sa.Column("binary_data", sa.LargeBinary(), nullable=False),
        sa.Column("file_size", sa.BigInteger(), nullable=False),
        sa.Column("file_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.ForeignKeyConstraint(
            ["kind_id"],
            ["kinds.id"],
            name=op.f("fk_skill_binaries_kind_id_kinds"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_skill_binaries")),
        sa.UniqueConstraint("kind_id", name=op.f("uq_skill_binaries_kind_id")),
    )
    op.create_index(op.f("ix_skill_binaries_file_hash"), "skill_binaries", ["file_hash"])

    if op.get_bind().dialect.name == "postgresql":
        # No TOAST compression: CRDs are read far more than written (listing decompressed them
        # on every read), and ZIP bytes are already compressed.
        op.execute("ALTER TABLE kinds ALTER COLUMN json SET STORAGE EXTERNAL")
        op.execute("ALTER TABLE skill_binaries ALTER COLUMN binary_data SET STORAGE EXTERNAL")

    # User 0 owns public resources (docs/architecture.md); it never gets a token.
    op.bulk_insert(
        users,
        [
            {
                "id": 0,
                "name": "system",
                "role": "admin",
                "is_active": False,
                "created_at": datetime.now(UTC),
            }
        ],
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_skill_binaries_file_hash"), table_name="skill_binaries")
    op.drop_table("skill_binaries")
    op.drop_index("ix_kinds_kind_namespace", table_name="kinds")
    op.drop_table("kinds")
    op.drop_index(op.f("ix_api_tokens_user_id"), table_name="api_tokens")
    op.drop_table("api_tokens")
    op.drop_table("users")
