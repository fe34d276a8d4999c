"""Built-in skills are seeded at start-up and upserted only when their content changed."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from backend.app import create_app
from backend.config import Settings
from backend.skills.builtin import builtin_dir, skill_folders, sync_builtin_skills
from tests.support.lifespan import running

ROOT = Path(__file__).resolve().parents[3]


def test_repository_skills_are_found_and_valid() -> None:
    folders = skill_folders(ROOT / "skills")
    assert "skillhive-skill-authoring" in {f.name for f in folders}
    assert builtin_dir(Settings()) == ROOT / "skills"


@pytest.fixture
def own_builtins(settings: Settings, tmp_path: Path) -> Settings:
    folder = tmp_path / "builtins" / "greeter"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: greeter\ndescription: Greets.\n---\nSay hi.\n")
    return settings.model_copy(update={"builtin_skills_dir": tmp_path / "builtins"})


async def test_sync_creates_then_leaves_then_updates(own_builtins: Settings) -> None:
    app = create_app(own_builtins)
    async with running(app):  # start-up seeds it
        transport = httpx.ASGITransport(app=app)
        maker = app.state.sessionmaker
        assert [(r.name, r.action) for r in await sync_builtin_skills(maker, own_builtins)] == [
            ("greeter", "unchanged")
        ]
        skill_md = own_builtins.builtin_skills_dir / "greeter" / "SKILL.md"  # type: ignore[operator]
        skill_md.write_text("---\nname: greeter\ndescription: Greets warmly.\n---\nSay hi.\n")
        assert [r.action for r in await sync_builtin_skills(maker, own_builtins)] == ["updated"]

        from backend.auth import service

        async with maker() as session:
            user = await service.create_user(session, "reader")
            token = (await service.issue_token(session, user, "t")).secret
            await session.commit()
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            crd = (
                await client.get(
                    "/api/v1/public/skills/greeter", headers={"Authorization": f"Bearer {token}"}
                )
            ).json()
    assert crd["spec"]["description"] == "Greets warmly."
    assert crd["metadata"]["resourceVersion"] == 2
    assert crd["status"]["public"] is True


async def test_a_broken_builtin_is_reported_and_the_others_still_sync(
    own_builtins: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    broken = own_builtins.builtin_skills_dir / "broken"  # type: ignore[operator]
    broken.mkdir()
    (broken / "SKILL.md").write_text("---\nname: Not Valid!\ndescription: x\n---\n")
    app = create_app(own_builtins)
    async with running(app):  # start-up survives it
        results = await sync_builtin_skills(app.state.sessionmaker, own_builtins)
    assert {(r.name, r.action) for r in results} == {("broken", "failed"), ("greeter", "unchanged")}
    assert "built-in skill broken not synced" in caplog.text
