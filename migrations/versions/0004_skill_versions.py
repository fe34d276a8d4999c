"""skill versions: content-addressed `skill_blobs` and immutable `skill_versions`

Replaces `skill_binaries`: each existing package becomes version 1 of its skill, its bytes one
blob per distinct hash.

Revision ID: 0004
Revises: 0002 (re-point to 0003 at merge)
Create Date: 2026-11-23
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TS = sa.DateTime(timezone=True)
JSON = sa.JSON()


def upgrade() -> None:
    op.create_table(
        "skill_blobs",
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("sha256", name=op.f("pk_skill_blobs")),
    )
    op.create_table(
        "skill_versions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("kind_id", sa.Integer(), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("crd", JSON, nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("created_by", sa.Integer(), nullable=True),
        sa.Column("source", JSON, nullable=False),
        sa.ForeignKeyConstraint(
            ["kind_id"],
            ["kinds.id"],
            name=op.f("fk_skill_versions_kind_id_kinds"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["sha256"], ["skill_blobs.sha256"], name=op.f("fk_skill_versions_sha256_skill_blobs")
        ),
        sa.ForeignKeyConstraint(
            ["created_by"],
            ["users.id"],
            name=op.f("fk_skill_versions_created_by_users"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_skill_versions")),
        sa.UniqueConstraint("kind_id", "number", name=op.f("uq_skill_versions_kind_id_number")),
    )
    op.create_index(op.f("ix_skill_versions_sha256"), "skill_versions", ["sha256"])
    if op.get_bind().dialect.name == "postgresql":  # ZIP bytes are already compressed
        op.execute("ALTER TABLE skill_blobs ALTER COLUMN data SET STORAGE EXTERNAL")
    # One blob per distinct hash (the lowest id's bytes), then version 1 of every skill.
    op.execute(
        "INSERT INTO skill_blobs (sha256, data, size, created_at)"
        " SELECT b.file_hash, b.binary_data, b.file_size, b.created_at FROM skill_binaries b"
        " WHERE b.id = (SELECT min(b2.id) FROM skill_binaries b2 WHERE b2.file_hash = b.file_hash)"
    )
    op.execute(
        "INSERT INTO skill_versions"
        " (kind_id, number, sha256, size, crd, created_at, created_by, source)"
        " SELECT b.kind_id, 1, b.file_hash, b.file_size, k.json, b.created_at, NULL,"
        ' \'{"type": "migration"}\' FROM skill_binaries b JOIN kinds k ON k.id = b.kind_id'
    )
    op.drop_table("skill_binaries")


def downgrade() -> None:
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
        op.execute("ALTER TABLE skill_binaries ALTER COLUMN binary_data SET STORAGE EXTERNAL")
    # Each skill keeps its newest version as its package; older versions are lost.
    op.execute(
        "INSERT INTO skill_binaries (kind_id, binary_data, file_size, file_hash, created_at)"
        " SELECT v.kind_id, bl.data, v.size, v.sha256, v.created_at FROM skill_versions v"
        " JOIN skill_blobs bl ON bl.sha256 = v.sha256 WHERE v.number ="
        " (SELECT max(v2.number) FROM skill_versions v2 WHERE v2.kind_id = v.kind_id)"
    )
    op.drop_index(op.f("ix_skill_versions_sha256"), table_name="skill_versions")
    op.drop_table("skill_versions")
    op.drop_table("skill_blobs")
