"""The tables (docs/architecture.md); `migrations/` must match them (a test checks it)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from backend.db.types import JSONType, UTCDateTime, utcnow

# Deterministic constraint names so Alembic can alter them on both backends.
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

SYSTEM_USER_ID = 0  # owner of public resources; has no login
SYSTEM_USER_NAME = "system"


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class User(Base):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    role: Mapped[str] = mapped_column(String(16), default="user")  # admin | user
    is_active: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"


class ApiToken(Base):
    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(128))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class Kind(Base):
    """One CRD (Skill, Ghost, ...) per row; `json` holds the whole object."""

    __tablename__ = "kinds"
    __table_args__ = (
        UniqueConstraint("user_id", "kind", "namespace", "name"),
        Index("ix_kinds_kind_namespace", "kind", "namespace"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(32))
    namespace: Mapped[str] = mapped_column(String(64))
    name: Mapped[str] = mapped_column(String(64))
    json: Mapped[dict[str, Any]] = mapped_column(JSONType)
    is_active: Mapped[bool] = mapped_column(Boolean, default=True)
    resource_version: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)


class SkillBlob(Base):
    """A skill ZIP, stored once per content hash however many versions or skills use it."""

    __tablename__ = "skill_blobs"

    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    data: Mapped[bytes] = mapped_column(LargeBinary)
    size: Mapped[int] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class SkillVersion(Base):
    """An immutable package version of a Skill; the newest one is the current package.

    Metadata only: listing versions never reads bytes (those live in `skill_blobs`).
    """

    __tablename__ = "skill_versions"
    __table_args__ = (UniqueConstraint("kind_id", "number"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind_id: Mapped[int] = mapped_column(ForeignKey("kinds.id", ondelete="CASCADE"))
    number: Mapped[int] = mapped_column(Integer)
    sha256: Mapped[str] = mapped_column(ForeignKey("skill_blobs.sha256"), index=True)
    size: Mapped[int] = mapped_column(BigInteger)
    crd: Mapped[dict[str, Any]] = mapped_column(JSONType)  # the CRD as it was
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    created_by: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), nullable=True
    )
    source: Mapped[dict[str, Any]] = mapped_column(JSONType)  # {"type": "upload"|"rollback"|...}


class Secret(Base):
    """A user's named secret, Fernet-encrypted at rest; feeds `${{secrets.NAME}}`."""

    __tablename__ = "secrets"
    __table_args__ = (UniqueConstraint("user_id", "name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(128))
    value_encrypted: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)


class Conversation(Base):
    __tablename__ = "conversations"
    __table_args__ = (Index("ix_conversations_user_id_updated_at", "user_id", "updated_at"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)  # uuid4: not enumerable
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    ghost: Mapped[str] = mapped_column(String(140))  # "ns/name" or "public/name"
    title: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)


class ConversationSkill(Base):
    """The package version of each skill a conversation's turns loaded, as of its last good turn
    (backend/chat/skill_versions.py): a later turn compares it to what it uses now and says
    when a retained skill changed (`skill_changed`)."""

    __tablename__ = "conversation_skills"

    conversation_id: Mapped[str] = mapped_column(
        ForeignKey("conversations.id", ondelete="CASCADE"), primary_key=True
    )
    skill: Mapped[str] = mapped_column(String(140), primary_key=True)  # `name` or `plugin/name`
    version: Mapped[int] = mapped_column(Integer)
    pinned: Mapped[bool] = mapped_column(Boolean)  # the version came from a Ghost's pin
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Message(Base):
    """One chat message. An assistant message names the user message it answers (`reply_to`,
    unique), so a turn retried after a worker died cannot store a second answer."""

    __tablename__ = "messages"
    __table_args__ = (Index("ix_messages_conversation_id_id", "conversation_id", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    conversation_id: Mapped[str] = mapped_column(ForeignKey("conversations.id", ondelete="CASCADE"))
    role: Mapped[str] = mapped_column(String(16))  # user | assistant
    content: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16), default="ok")  # ok | error | cancelled
    reply_to: Mapped[int | None] = mapped_column(
        ForeignKey("messages.id", ondelete="CASCADE"), unique=True, nullable=True
    )
    tool_calls: Mapped[list[Any]] = mapped_column(JSONType, default=list)
    loaded_skills: Mapped[list[Any]] = mapped_column(JSONType, default=list)
    usage: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    error: Mapped[dict[str, Any] | None] = mapped_column(JSONType, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class ConversationArtifact(Base):
    """A file of a conversation: a `skill_run` output (`kind` output), a user's upload (input),
    or the kept workspace of a conversation-long sandbox (workspace, one tar per conversation).

    The bytes sit in the row (deferred: listings never read them) so they go with their
    conversation; `message_id` is the user message of the turn that wrote an output.
    """

    __tablename__ = "conversation_artifacts"
    __table_args__ = (
        Index("ix_conversation_artifacts_conversation_id_kind", "conversation_id", "kind"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)  # uuid4: not enumerable
    conversation_id: Mapped[str] = mapped_column(ForeignKey("conversations.id", ondelete="CASCADE"))
    message_id: Mapped[int | None] = mapped_column(
        ForeignKey("messages.id", ondelete="CASCADE"), nullable=True
    )
    kind: Mapped[str] = mapped_column(String(16))  # output | input | workspace
    name: Mapped[str] = mapped_column(String(255))
    mime_type: Mapped[str] = mapped_column(String(127))
    size: Mapped[int] = mapped_column(BigInteger)
    sha256: Mapped[str] = mapped_column(String(64))
    data: Mapped[bytes] = mapped_column(LargeBinary, deferred=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class SkillSearch(Base):
    """What search and the chat catalog read about a skill, kept in step with its `kinds` row.

    Written in the transaction of every skill write (backend/skills/search/index.py). The
    `*_terms` columns hold normalized search terms (backend/skills/search/text.py). Each
    database indexes them with its own full-text engine, outside these models (`UNMODELLED`):
    PostgreSQL generated, weighted tsvectors (`document` under a GIN index, and `head` without
    the body, for ranking); SQLite the FTS5 table `skill_search_fts`, kept in step by triggers
    on this table.
    """

    __tablename__ = "skill_search"
    __table_args__ = (
        Index("ix_skill_search_user_id_namespace", "user_id", "namespace", "name"),
        Index("ix_skill_search_uses_secrets", "uses_secrets"),  # turns ask "any?" of thousands
        # A namespace's rows in the order search samples them (search/sample.py); on PostgreSQL
        # with what the sample reads, so an index-only scan takes it in that order even where
        # plain index scans are off (engine.GIN_ONLY).
        Index(
            "ix_skill_search_user_id_namespace_revision",
            "user_id",
            "namespace",
            "revision",
            postgresql_include=["kind_id", "enabled", "chat"],
        ),
    )

    kind_id: Mapped[int] = mapped_column(
        ForeignKey("kinds.id", ondelete="CASCADE"), primary_key=True, autoincrement=False
    )
    user_id: Mapped[int] = mapped_column(Integer)
    namespace: Mapped[str] = mapped_column(String(64))
    name: Mapped[str] = mapped_column(String(64))
    enabled: Mapped[bool] = mapped_column(Boolean)
    chat: Mapped[bool] = mapped_column(Boolean)  # binds the Chat shell
    description: Mapped[str] = mapped_column(Text)
    sha256: Mapped[str] = mapped_column(String(64))
    catalog_chars: Mapped[int] = mapped_column(Integer)  # of its catalog entry
    uses_secrets: Mapped[bool] = mapped_column(Boolean)  # its MCP servers name `${{secrets.*}}`
    # Random, drawn anew by every write of the row: fingerprints samples (search/sample.py).
    revision: Mapped[int] = mapped_column(BigInteger)
    name_terms: Mapped[str] = mapped_column(Text)
    tag_terms: Mapped[str] = mapped_column(Text)
    when_terms: Mapped[str] = mapped_column(Text)
    desc_terms: Mapped[str] = mapped_column(Text)
    body_terms: Mapped[str] = mapped_column(Text)


class SkillGeneration(Base):
    """A random number per user, drawn anew by every write of what a search of their skills
    reads: their `skill_search` and `skill_labels` rows and their Plugin rows in `kinds`.

    Written by triggers on those tables (migration 0009), so no write path can miss it; a
    search that finds its owners' generations unchanged knows its selection is unchanged
    (search/sample.py). Random, not counted: a restored backup or a rolled-back write cannot
    bring back a number that meant other rows. A user without a row has written nothing."""

    __tablename__ = "skill_generations"

    user_id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    generation: Mapped[int] = mapped_column(BigInteger)


class SkillLabel(Base):
    """A skill's labels, one row each, so label selectors run in SQL on both databases."""

    __tablename__ = "skill_labels"
    __table_args__ = (Index("ix_skill_labels_key_value", "key", "value"),)

    kind_id: Mapped[int] = mapped_column(
        ForeignKey("kinds.id", ondelete="CASCADE"), primary_key=True, autoincrement=False
    )
    key: Mapped[str] = mapped_column(String(63), primary_key=True)
    value: Mapped[str] = mapped_column(String(253))


class UsageRecord(Base):
    """The usage of one model call (backend/ops/usage.py); summed by `GET /api/v1/usage`.

    Kept when its conversation is deleted (accounting outlives chats): no foreign key to it.
    """

    __tablename__ = "usage_records"
    __table_args__ = (
        Index("ix_usage_records_user_id_created_at", "user_id", "created_at"),
        Index("ix_usage_records_conversation_id", "conversation_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    ghost: Mapped[str] = mapped_column(String(140))
    model: Mapped[str] = mapped_column(String(200))
    conversation_id: Mapped[str] = mapped_column(String(36))
    message_id: Mapped[int] = mapped_column(Integer)  # the user message the turn answered
    prompt_tokens: Mapped[int] = mapped_column(BigInteger)
    completion_tokens: Mapped[int] = mapped_column(BigInteger)
    estimated: Mapped[bool] = mapped_column(Boolean)  # no usage from the provider: estimated
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class UserQuota(Base):
    """An admin's per-user overrides of the `quota_*` settings (backend/ops/quotas.py)."""

    __tablename__ = "user_quotas"

    user_id: Mapped[int] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), primary_key=True, autoincrement=False
    )
    limits: Mapped[dict[str, Any]] = mapped_column(JSONType)  # limit name -> int or null


# Database objects the migrations create that these models do not describe: each engine's
# full-text index of `skill_search` (see SkillSearch). Schema comparison skips them.
UNMODELLED_TABLES = frozenset({"skill_search_fts"})
UNMODELLED_TABLE_PREFIXES = ("skill_search_fts_",)  # FTS5 shadow tables
UNMODELLED_COLUMNS = frozenset({("skill_search", "document"), ("skill_search", "head")})
UNMODELLED_INDEXES = frozenset({"ix_skill_search_document", "ix_skill_search_head"})


def _unmodelled_table(name: str) -> bool:
    return name in UNMODELLED_TABLES or name.startswith(UNMODELLED_TABLE_PREFIXES)


def include_name(name: str | None, type_: str, parent_names: object) -> bool:
    """Alembic's `include_name`: do not even reflect the full-text tables."""
    return not (type_ == "table" and name is not None and _unmodelled_table(name))


def include_in_schema(
    obj: object, name: str | None, type_: str, reflected: bool, compare_to: object
) -> bool:
    """Alembic's `include_object`: leave the full-text objects of `UNMODELLED_*` alone."""
    if type_ == "table" and name is not None:
        return not _unmodelled_table(name)
    if type_ == "column":
        table = getattr(getattr(obj, "table", None), "name", None)
        return (table, name) not in UNMODELLED_COLUMNS
    if type_ == "index":
        return name not in UNMODELLED_INDEXES
    return True
