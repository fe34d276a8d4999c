"""search terms: words with a dotted capital I indexed again, letters and digits only

Lowercasing `İ` (U+0130) gives `i` and a combining dot (U+0307). The tokenizer kept that mark
inside a word, so a request holding such a word failed, and a skill holding one was indexed
with a term no request can ask for (backend/skills/search/text.py now drops the mark). The
mark cannot come into a term any other way, so the rows whose terms hold it are exactly the
ones to index again, with the code that indexes every write.

Revision ID: 0010_dotted_i_terms
Revises: 0009_skill_generations
Create Date: 2026-12-02
"""

import json
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from backend.skills.search.index import index_values

revision: str = "0010_dotted_i_terms"
down_revision: str | None = "0009_skill_generations"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TERM_COLUMNS = ("name_terms", "tag_terms", "when_terms", "desc_terms", "body_terms")
_MARKED = " OR ".join(f"s.{c} LIKE :mark" for c in TERM_COLUMNS)


def upgrade() -> None:
    bind = op.get_bind()
    rows = bind.execute(
        sa.text(
            "SELECT k.id, k.user_id, k.namespace, k.json FROM skill_search AS s "
            f"JOIN kinds AS k ON k.id = s.kind_id WHERE {_MARKED}"
        ),
        {"mark": "%\u0307%"},
    ).all()
    assignments = ", ".join(f"{c} = :{c}" for c in (*TERM_COLUMNS, "revision"))
    update = sa.text(f"UPDATE skill_search SET {assignments} WHERE kind_id = :kind_id")
    for kind_id, user_id, namespace, raw in rows:
        crd = json.loads(raw) if isinstance(raw, str) else raw
        values = index_values(kind_id, user_id, namespace, crd)
        bind.execute(update, {c: values[c] for c in (*TERM_COLUMNS, "revision", "kind_id")})


def downgrade() -> None:
    pass  # the new terms are what the old code would search too, less the mark
