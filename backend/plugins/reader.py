"""One plugin folder (a file tree) read into what an import stores: pure, no database.

Layout (Claude Code's plugin format): `.claude-plugin/plugin.json` (optional: a marketplace
entry or the folder name can stand in), `skills/<folder>/SKILL.md`, `commands/*.md`,
`.mcp.json`, `agents/` and `hooks/`. Each skill becomes its own deterministic skill ZIP read by
the skill package reader (every rule of uploads applies); a skill it refuses is reported, the
rest of the plugin still imports. A frontmatter name that breaks the name rule is replaced by a
derived valid one, with a warning.
"""

from __future__ import annotations

import io
import json
import re
import stat
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from backend.crd.plugin import PluginCommand, PluginFile, PluginSkillRef, PluginSpec
from backend.crd.skill import SkillWarning
from backend.errors import InvalidRequest, SkillhiveError
from backend.plugins import naming
from backend.plugins.mcp import plugin_servers
from backend.plugins.tree import MANIFEST, Tree, TreeFile, subtree
from backend.skills.errors import ErrorCode, PackageError
from backend.skills.frontmatter import parse_skill_md
from backend.skills.limits import ArchiveLimits
from backend.skills.package import SKILL_MD_NAMES, SkillPackage, read_package
from chat_shell import is_ignored

KEPT_TEXT_BYTES = 64 * 1024  # agents and hooks: text kept up to this size
_EPOCH = (1980, 1, 1, 0, 0, 0)
_FRONTMATTER = re.compile(r"\A(\ufeff?---[ \t]*\r?\n)(.*?)(\r?\n---[ \t]*(?:\r?\n|\Z))", re.S)


@dataclass(frozen=True)
class SkillDraft:
    name: str  # `<plugin>/<skill>`
    path: str  # its folder in the plugin
    package: SkillPackage
    data: bytes  # the skill ZIP stored as its package
    warnings: list[SkillWarning]


@dataclass(frozen=True)
class Refusal:
    path: str
    code: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)

    def answer(self) -> dict[str, Any]:
        return {"path": self.path, "code": self.code, "message": self.message}


@dataclass
class PluginDraft:
    name: str
    spec: PluginSpec
    skills: list[SkillDraft]
    refused_skills: list[Refusal]
    warnings: list[SkillWarning]


def _warn(code: str, message: str) -> SkillWarning:
    return SkillWarning(code=code, message=message)


_MANIFEST_CODE = "invalid_plugin_manifest"


def tree_json(tree: Mapping[str, TreeFile], path: str, code: str) -> Any:
    """The JSON document at `path` of a package tree; 422 `code` naming the entry when it is
    not one (bad encoding, syntax, a 5,000-digit number, nesting too deep for the parser)."""
    try:
        return json.loads(tree[path].data.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        problem = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise InvalidRequest(
            f"{path} is not valid JSON: {problem}", code=code, details={"entry": path}
        ) from None


def zip_files(folder: str, files: Mapping[str, TreeFile]) -> bytes:
    """A deterministic ZIP of `files` under `folder/` (same files, same bytes, same hash)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as zf:
        for path in sorted(files):
            info = zipfile.ZipInfo(f"{folder}/{path}", _EPOCH)
            info.create_system = 3
            mode = 0o755 if files[path].mode & 0o111 else 0o644
            info.external_attr = (stat.S_IFREG | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, files[path].data)
    return buf.getvalue()


def _paths(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []


def _clean(path: str) -> str:
    return path.strip().removeprefix("./").strip("/")


def _skill_folders(tree: Tree, roots: list[str]) -> list[str]:
    """Every folder under a skills root holding a SKILL.md, at any depth (plugins nest skills:
    `skills/meeting-sdk/SKILL.md` and `skills/meeting-sdk/linux/SKILL.md` are two skills)."""
    found: set[str] = set()
    for root in roots:
        prefix = f"{root}/" if root else ""
        for path in tree:
            if not path.startswith(prefix) or is_ignored(path.removeprefix(prefix)):
                continue
            folder, _, file = path.rpartition("/")
            if file in SKILL_MD_NAMES and folder:
                found.add(folder)
    return sorted(found)


def _skill_files(tree: Tree, folder: str, folders: list[str]) -> dict[str, TreeFile]:
    """The files of the skill in `folder`, without those of skills nested inside it."""
    nested = [f"{f}/" for f in folders if f.startswith(f"{folder}/")]
    return {
        path.removeprefix(f"{folder}/"): file
        for path, file in tree.items()
        if path.startswith(f"{folder}/") and not any(path.startswith(n) for n in nested)
    }


def _rename(md: bytes, name: str) -> bytes:
    text = md.decode("utf-8")
    match = _FRONTMATTER.match(text)
    if match is None:
        return md
    head, body = match.group(2), text[match.end() :]
    head = re.sub(r"(?m)^name[ \t]*:.*$", f"name: {name}", head, count=1)
    return (match.group(1) + head + match.group(3) + body).encode()


def read_skill(
    plugin: str, folder: str, files: dict[str, TreeFile], limits: ArchiveLimits, *, public: bool
) -> SkillDraft:
    """One skill folder of `plugin` as a stored package; raises `SkillhiveError` on refusal."""
    files = {p: f for p, f in files.items() if not is_ignored(p)}
    base = naming.fit(plugin, naming.derive(folder.rsplit("/", 1)[-1]) or "skill")
    warnings: list[SkillWarning] = []
    data = zip_files(base, files)
    try:
        package = read_package(data, limits=limits, public=public)
    except PackageError as exc:
        if exc.code != ErrorCode.INVALID_NAME.value:
            raise
        md_path = next(n for n in SKILL_MD_NAMES if n in files)
        md = parse_skill_md(
            files[md_path].data, entry=md_path, max_frontmatter_bytes=limits.max_frontmatter_bytes
        )
        raw = str(md.frontmatter.get("name", ""))
        name = naming.fit(plugin, naming.derive(raw, plugin=plugin) or base)
        files[md_path] = TreeFile(_rename(files[md_path].data, name), files[md_path].mode)
        data = zip_files(base, files)
        package = read_package(data, limits=limits, public=public)
        warnings.append(
            _warn(
                "name_derived",
                f"skill name {raw!r} breaks the name rule; imported as "
                f"{naming.full_name(plugin, name)!r}",
            )
        )
    skill = package.name
    fitted = naming.fit(plugin, skill)
    if skill in naming.ROUTE_WORDS:
        message = f"skill {skill!r} is a word of the skills API's routes; imported as {fitted!r}"
        warnings.append(_warn("name_derived", message))
    elif fitted != skill:
        message = f"skill {skill!r} is named {fitted!r} to fit {plugin!r}/"
        warnings.append(_warn("name_shortened", message))
    skill = fitted
    return SkillDraft(naming.full_name(plugin, skill), folder, package, data, warnings)


def _renamed(draft: SkillDraft, plugin: str, folder: str, taken: set[str]) -> SkillDraft | None:
    """A skill whose name another skill of the plugin has, named after its folder path."""
    relative = folder.split("/", 1)[1] if "/" in folder else folder
    name = naming.full_name(plugin, naming.fit(plugin, naming.derive(relative)))
    if name in taken or name == naming.full_name(plugin, ""):
        return None
    old = draft.name
    message = f"{old!r} is taken by another skill of the plugin; imported as {name!r}"
    warnings = [*draft.warnings, _warn("name_derived", message)]
    return SkillDraft(name, draft.path, draft.package, draft.data, warnings)


def _command(path: str, file: TreeFile, limits: ArchiveLimits) -> PluginCommand:
    text = file.data
    if not text.lstrip(b"\xef\xbb\xbf").startswith(b"---"):
        text = b"---\n{}\n---\n" + text  # a command without frontmatter is all body
    md = parse_skill_md(text, entry=path, max_frontmatter_bytes=limits.max_frontmatter_bytes)
    fm = md.frontmatter
    hint = fm.get("argument-hint")
    skills = fm.get("skills")
    listed = [s.strip() for s in skills.split(",")] if isinstance(skills, str) else skills
    return PluginCommand(
        name=naming.derive(path.rsplit("/", 1)[-1].removesuffix(".md")) or "command",
        description=str(fm.get("description") or ""),
        argument_hint=None if hint is None else str(hint),
        prompt=md.body,
        skills=[str(s) for s in listed or [] if str(s).strip()],
        path=path,
    )


def _mentions(prompt: str, skill: str) -> bool:
    return (
        re.search(rf"(?<![A-Za-z0-9_/-]){re.escape(skill)}(?![A-Za-z0-9_/-])", prompt) is not None
    )


def _link_skills(command: PluginCommand, plugin: str, skills: list[SkillDraft]) -> PluginCommand:
    """Full names of the skills a command loads: those its frontmatter lists (`skills`) and
    the plugin's skills its text names."""
    short = {s.name.split("/", 1)[1]: s.name for s in skills}
    named = [short.get(s.removeprefix(f"{plugin}/"), s) for s in command.skills]
    named += [full for skill, full in short.items() if _mentions(command.prompt, skill)]
    return command.model_copy(update={"skills": list(dict.fromkeys(named))})


def _kept_files(tree: Tree, folder: str) -> list[PluginFile]:
    kept = []
    for path, file in sorted(subtree(tree, folder).items()):
        try:
            text: str | None = (
                file.data.decode("utf-8") if len(file.data) <= KEPT_TEXT_BYTES else None
            )
        except UnicodeDecodeError:
            text = None
        kept.append(PluginFile(path=f"{folder}/{path}", size=len(file.data), content=text))
    return kept


def read_plugin(
    tree: Tree,
    *,
    fallback_name: str,
    entry: Mapping[str, Any] | None = None,
    limits: ArchiveLimits,
    public: bool,
) -> PluginDraft:
    """The plugin in `tree`; `entry` is its marketplace entry (its fields fill in a missing
    manifest). Raises `SkillhiveError` when the plugin as a whole is refused."""
    manifest: dict[str, Any] = {}
    if MANIFEST in tree:
        loaded = tree_json(tree, MANIFEST, _MANIFEST_CODE)
        if not isinstance(loaded, dict):
            raise InvalidRequest(
                f"{MANIFEST} must be a JSON object", code="invalid_plugin_manifest"
            )
        manifest = loaded
    info = {**(entry or {}), **manifest}
    warnings: list[SkillWarning] = []
    raw_name = str(info.get("name") or fallback_name)
    name = naming.derive_plugin(raw_name)
    if not name:
        raise InvalidRequest(
            f"plugin name {raw_name!r} has nothing usable for a name",
            code="invalid_plugin_name",
            details={"name": raw_name[:200]},
        )
    if name != raw_name:
        warnings.append(_warn("name_derived", f"plugin {raw_name!r} is imported as {name!r}"))

    mcp_raw: Any = None
    if isinstance(info.get("mcpServers"), dict):
        mcp_raw = info["mcpServers"]
    elif isinstance(info.get("mcpServers"), str) and _clean(info["mcpServers"]) in tree:
        mcp_raw = tree_json(tree, _clean(info["mcpServers"]), _MANIFEST_CODE)
    elif ".mcp.json" in tree:
        mcp_raw = tree_json(tree, ".mcp.json", _MANIFEST_CODE)
    servers = plugin_servers(mcp_raw or {}, public=public)
    warnings += servers.warnings

    skill_roots = ["skills", *(_clean(p) for p in _paths(info.get("skills")))]
    drafts: list[SkillDraft] = []
    refused: list[Refusal] = []
    folders = _skill_folders(tree, skill_roots)
    for folder in folders:
        try:
            draft = read_skill(
                name, folder, _skill_files(tree, folder, folders), limits, public=public
            )
        except SkillhiveError as exc:
            refused.append(Refusal(folder, exc.code, exc.message, exc.details))
            continue
        if any(d.name == draft.name for d in drafts):
            renamed = _renamed(draft, name, folder, {d.name for d in drafts})
            if renamed is None:
                refused.append(Refusal(folder, "duplicate_skill", "a second skill of that name"))
                continue
            draft = renamed
        drafts.append(draft)
    for draft in drafts:  # the plugin's servers are its skills' servers (a skill's own win)
        skill_spec = draft.package.spec
        skill_spec.mcp_servers = {**servers.servers, **skill_spec.mcp_servers}

    command_paths = ["commands", *(_clean(p) for p in _paths(info.get("commands")))]
    commands: list[PluginCommand] = []
    for path, file in sorted(tree.items()):
        inside = any(path == c or path.startswith(f"{c}/") for c in command_paths)
        if not inside or not path.endswith(".md") or is_ignored(path):
            continue
        try:
            command = _link_skills(_command(path, file, limits), name, drafts)
        except SkillhiveError as exc:
            refused.append(Refusal(path, exc.code, exc.message, exc.details))
            continue
        if any(c.name == command.name for c in commands):
            warnings.append(_warn("duplicate_command", f"{path}: /{command.name} kept once"))
            continue
        commands.append(command)

    agents = _kept_files(tree, "agents")
    hooks = _kept_files(tree, "hooks")
    if isinstance(info.get("hooks"), dict):
        text = json.dumps(info["hooks"])
        hooks.append(PluginFile(path=f"{MANIFEST}#hooks", size=len(text), content=text))
    if agents:
        warnings.append(_warn("agents_not_run", f"{len(agents)} agent file(s) kept, not run"))
    if hooks:
        warnings.append(_warn("hooks_not_run", f"{len(hooks)} hook file(s) kept, not run"))

    author = info.get("author")
    spec = PluginSpec(
        description=str(info.get("description") or ""),
        display_name=info.get("displayName") if isinstance(info.get("displayName"), str) else None,
        version=None if info.get("version") is None else str(info["version"]),
        author=author if isinstance(author, str | dict) else None,
        skills=[PluginSkillRef(name=d.name, path=d.path) for d in drafts],
        commands=commands,
        mcp_servers=servers.servers,
        secrets=sorted(servers.secrets),
        agents=agents,
        hooks=hooks,
    )
    return PluginDraft(name, spec, drafts, refused, warnings)
