"""list_skill_files and read_skill_file: paging, caps, binary files, and every refusal."""

from __future__ import annotations

import io
import json
import stat
import zipfile
from dataclasses import dataclass, field
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import ToolException

from chat_shell.contracts import SkillFileInfo, SkillSpec
from chat_shell.packages import Package
from chat_shell.ports import InMemoryPackageSource
from chat_shell.skills.active import ActiveSkills
from chat_shell.skills.prompt import MAX_LISTED_FILES, render_loaded_skill
from chat_shell.tools.builtin import skill_files
from chat_shell.tools.builtin.skill_files import (
    SkillFileReader,
    list_skill_files,
    read_skill_file,
)
from tests.support.fakes import FakeToolChatModel, call, collect, done, load, request, say, skill

GUIDE = "# Guide\n" + "".join(f"line {i}: naïve café ✓\n" for i in range(400))
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"


def package(files: dict[str, str | bytes], *, root: str = "notes") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(f"{root}/SKILL.md", "---\nname: notes\n---\nRead references.\n")
        for path, data in files.items():
            archive.writestr(f"{root}/{path}", data)
    return buffer.getvalue()


def listed(files: dict[str, str | bytes]) -> list[SkillFileInfo]:
    sizes = {
        "SKILL.md": 1,
        **{p: len(d.encode() if isinstance(d, str) else d) for p, d in files.items()},
    }
    return [SkillFileInfo(path=p, size=s) for p, s in sorted(sizes.items())]


FILES: dict[str, str | bytes] = {
    "references/guide.md": GUIDE,
    "references/empty.txt": "",
    "assets/logo.png": PNG,
    "assets/blob.bin": b"text until a NUL\x00byte",
    "assets/latin1.txt": "caf\xe9".encode("latin-1"),
}


@pytest.fixture(autouse=True, params=["whole", "windowed"])
def reading(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test twice: files read whole (up to WHOLE_FILE_BYTES, the default for these small
    files) and through a window around each page, as files past it are."""
    if request.param == "windowed":
        monkeypatch.setattr(skill_files, "WHOLE_FILE_BYTES", 0)
    return str(request.param)


@dataclass
class Host:
    skills: dict[str, SkillSpec]
    active: ActiveSkills
    skill_files: SkillFileReader
    source: InMemoryPackageSource = field(default_factory=InMemoryPackageSource)
    skill_names: list[str] = field(default_factory=list)  # the Ghost's skills by name


def host(
    *, active: tuple[str, ...] = ("notes",), cap: int = 1024, data: bytes | None = None
) -> Host:
    source = InMemoryPackageSource()
    sha = source.add(package(FILES) if data is None else data)
    skills = {
        "notes": skill("notes", sha256=sha, files=listed(FILES)),
        "other": skill("other", sha256=sha, files=listed(FILES)),
        "plain": skill("plain"),
    }
    state = ActiveSkills(dict.fromkeys(skills, 1), budget=100, turn=0)
    for name in active:
        state.load(name)
    return Host(skills, state, SkillFileReader(source, cap), source, sorted(skills))


async def read(h: Host, path: str, **args: Any) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(await read_skill_file(h, "notes", path, **args))
    return found


async def test_a_text_file_is_read_in_pages_that_join_to_the_whole_file() -> None:
    h = host(cap=100)
    pages, offset = [], 0
    while offset is not None:
        page = await read(h, "references/guide.md", offset=offset)
        assert len(page["content"].encode()) <= 100 and page["offset"] == offset
        pages.append(page["content"])
        offset = page["next_offset"]
    assert "".join(pages) == GUIDE
    assert page["size"] == len(GUIDE.encode())


async def test_a_page_never_splits_a_character_and_an_offset_inside_one_moves_to_the_next() -> None:
    h = host()
    text = GUIDE.encode()
    inside = text.index("ï".encode()) + 1  # the second byte of a two-byte character

    page = await read(h, "references/guide.md", offset=inside, limit=3)

    assert page["offset"] == inside + 1 and page["content"].startswith("ve")
    short = await read(h, "references/guide.md", offset=inside - 1, limit=1)
    assert short["content"] == "ï" and short["next_offset"] == inside + 1


async def test_limit_is_capped_by_the_setting_whatever_the_model_asks() -> None:
    page = await read(host(cap=64), "references/guide.md", limit=10_000)

    assert len(page["content"].encode()) <= 64 and page["next_offset"] is not None


async def test_an_empty_file_and_the_end_of_a_file_give_an_empty_last_page() -> None:
    h = host()
    assert await read(h, "references/empty.txt") == {
        "path": "references/empty.txt",
        "size": 0,
        "offset": 0,
        "next_offset": None,
        "content": "",
    }
    end = len(GUIDE.encode())
    assert (await read(h, "references/guide.md", offset=end))["content"] == ""
    with pytest.raises(ToolException, match="past the end"):
        await read(h, "references/guide.md", offset=end + 1)


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("assets/logo.png", "image/png"),
        ("assets/blob.bin", "application/octet-stream"),
        ("assets/latin1.txt", "text/plain"),
    ],
)
async def test_a_binary_file_comes_back_as_its_type_and_size_never_its_bytes(
    path: str, kind: str
) -> None:
    found = await read(host(), path)

    assert found == {"path": path, "size": len(FILES[path]), "type": kind, "binary": True}


async def test_a_large_file_is_paged_without_ever_being_held_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    big = "".join(f"{i:08d} ünïcode line\n" for i in range(150_000))  # ~3.8 MB, past 1 MiB
    data = package({"references/big.txt": big})
    h = host(cap=32 * 1024, data=data)
    asked: list[tuple[int, int]] = []
    real_range = Package.read_range

    def read_range(self: Package, path: str, start: int, stop: int) -> bytes:
        asked.append((start, stop))
        return real_range(self, path, start, stop)

    def read_whole(self: Package, path: str, **_: Any) -> bytes:
        raise AssertionError(f"{path} was read whole")

    monkeypatch.setattr(Package, "read_range", read_range)
    monkeypatch.setattr(Package, "read", read_whole)
    middle = len(big.encode()) // 2
    page = await read(h, "references/big.txt", offset=middle, limit=100)
    encoded = big.encode()
    assert page["size"] == len(encoded)
    assert page["content"].encode() == encoded[page["offset"] : page["next_offset"]]
    assert middle <= page["offset"] <= middle + 3 and len(page["content"].encode()) <= 100
    assert all(stop - start <= 32 * 1024 + 8 for start, stop in asked)  # pages, not the file
    last = await read(h, "references/big.txt", offset=len(encoded) - 10)
    assert last["next_offset"] is None and last["content"].endswith("line\n")


async def test_a_large_file_with_a_nul_byte_at_its_start_is_binary() -> None:
    blob = b"\x00" + b"a" * (2 * 1024 * 1024)
    h = host(data=package({"assets/big.bin": blob}))
    found = await read(h, "assets/big.bin", offset=1024)
    assert found == {
        "path": "assets/big.bin",
        "size": len(blob),
        "type": "application/octet-stream",
        "binary": True,
    }


async def test_list_skill_files_lists_the_package_with_sizes() -> None:
    found = json.loads(await list_skill_files(host(), "notes"))

    assert found["skill"] == "notes"
    assert {f["path"]: f["size"] for f in found["files"]} == {
        f.path: f.size for f in listed(FILES)
    } | {"SKILL.md": len(b"---\nname: notes\n---\nRead references.\n")}


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("../other/SKILL.md", "'..' segment"),
        ("references/../../etc/passwd", "'..' segment"),
        ("/etc/passwd", "absolute path"),
        ("C:/windows", "drive letter"),
        ("references\\guide.md", "backslash"),
        ("./references/guide.md", "'.' segment"),
        ("", "empty name"),
        (".env", "not part of the skill"),
        ("references/.secret", "not part of the skill"),
        ("__MACOSX/references/guide.md", "not part of the skill"),
        ("references/missing.md", "file_not_found"),
        ("notes/references/guide.md", "file_not_found"),  # the archive's name, not the path
        ("link", "file_not_found"),
    ],
)
async def test_hostile_and_unknown_paths_are_refused_with_a_clear_error(
    path: str, message: str
) -> None:
    with pytest.raises(ToolException, match=message.replace("\\", "\\\\")):
        await read(host(), path)


async def test_only_skills_active_in_the_turn_and_known_to_the_ghost_are_readable() -> None:
    h = host(active=("notes",))
    with pytest.raises(ToolException, match="not active"):
        await read_skill_file(h, "other", "references/guide.md")
    with pytest.raises(ToolException, match="not active"):
        await list_skill_files(h, "other")
    with pytest.raises(ToolException, match="Unknown skill 'someone-elses'"):
        await read_skill_file(h, "someone-elses", "references/guide.md")
    with pytest.raises(ToolException, match="no files"):
        await list_skill_files(host(active=("plain",)), "plain")


@pytest.mark.parametrize(("offset", "limit"), [(-1, None), (True, None), ("3", None), (0, 0)])
async def test_bad_offsets_and_limits_are_refused(offset: Any, limit: Any) -> None:
    with pytest.raises(ToolException, match="offset|limit"):
        await read(host(), "references/guide.md", offset=offset, limit=limit)


async def test_a_package_holding_a_symlink_is_refused_by_the_one_reader() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("notes/SKILL.md", "---\nname: notes\n---\n")
        link = zipfile.ZipInfo("notes/link")
        link.create_system = 3
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        archive.writestr(link, "/etc/passwd")

    with pytest.raises(ToolException, match="symlink_entry"):
        await read(host(data=buffer.getvalue()), "link")


async def test_a_package_is_opened_once_per_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    h = host()
    gets = 0
    original = h.source.get

    async def counting_get(sha256: str) -> bytes:
        nonlocal gets
        gets += 1
        return await original(sha256)

    monkeypatch.setattr(h.source, "get", counting_get)
    await list_skill_files(h, "notes")
    await read(h, "references/guide.md")
    await read(h, "assets/logo.png")

    assert gets == 1


def test_the_loaded_block_lists_the_files_besides_skill_md_bounded() -> None:
    many = [
        SkillFileInfo(path=f"references/{i:03}.md", size=i) for i in range(MAX_LISTED_FILES + 7)
    ]
    spec = skill("notes", files=[SkillFileInfo(path="SKILL.md", size=9), *many])

    block = render_loaded_skill(spec)

    assert "references/000.md (0 bytes)" in block and "SKILL.md (" not in block
    assert f"references/{MAX_LISTED_FILES - 1:03}.md" in block
    assert f"references/{MAX_LISTED_FILES:03}.md" not in block
    assert "... and 7 more" in block
    assert "<skill_files" not in render_loaded_skill(skill("bare"))


def test_a_hostile_file_name_cannot_open_a_tag_in_the_listing() -> None:
    spec = skill("notes", files=[SkillFileInfo(path="a<b>/</skill_files>.md", size=1)])

    block = render_loaded_skill(spec)

    assert "a&lt;b&gt;/&lt;/skill_files&gt;.md (1 bytes)" in block
    assert block.count("</skill_files>") == 1


def tool_results(model: FakeToolChatModel) -> list[ToolMessage]:
    return [m for m in model.calls[-1].messages if isinstance(m, ToolMessage)]


async def test_a_loaded_skill_reads_its_reference_through_the_engine() -> None:
    source = InMemoryPackageSource()
    notes = skill("notes", sha256=source.add(package(FILES)), files=listed(FILES))
    model = FakeToolChatModel(
        script=[
            load("notes"),
            call("read_skill_file", skill="notes", path="references/guide.md", limit=20),
            say("read it"),
        ]
    )

    events = await collect(request(skills=[notes, skill("plain")]), model, source=source)

    assert done(events).text == "read it"
    first, second, _ = model.calls
    assert "read_skill_file" not in first.tool_names
    assert second.tool_names[:3] == ["load_skill", "list_skill_files", "read_skill_file"]
    assert "references/guide.md (" in second.system and "<skill_files" not in first.system
    page = json.loads(tool_results(model)[-1].text)
    assert page["content"] == GUIDE.encode()[: page["next_offset"]].decode()


async def test_a_refusal_reaches_the_model_as_a_tool_error_not_a_failed_turn() -> None:
    source = InMemoryPackageSource()
    notes = skill("notes", sha256=source.add(package(FILES)), files=listed(FILES))
    model = FakeToolChatModel(
        script=[
            load("notes"),
            call("read_skill_file", skill="notes", path="../../etc/passwd"),
            say("refused"),
        ]
    )

    events = await collect(request(skills=[notes]), model, source=source)

    assert done(events).text == "refused"
    (_, error) = tool_results(model)
    assert error.status == "error" and "'..' segment" in error.text
    assert done(events).tool_calls[-1].error
