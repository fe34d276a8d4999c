"""Zip a skill folder of the sandbox workspace into $OUTPUT_DIR/<name>.zip for installing.

Usage: python3 $SKILL_DIR/scripts/package.py FOLDER
Checks that FOLDER/SKILL.md exists and starts with frontmatter naming the skill, then writes
one top-level folder into the ZIP (dotfiles and links left out) and prints where it went.
"""

import os
import pathlib
import re
import sys
import zipfile


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: package.py FOLDER", file=sys.stderr)
        return 2
    folder = pathlib.Path(sys.argv[1])
    manifest = folder / "SKILL.md"
    if not manifest.is_file():
        print(f"{manifest} is missing", file=sys.stderr)
        return 1
    text = manifest.read_text(encoding="utf-8")
    found = re.search(r"^name:\s*([a-z0-9-]+)\s*$", text.split("\n---", 1)[0], re.MULTILINE)
    if not text.startswith("---") or found is None:
        print("SKILL.md must start with frontmatter (---) holding `name:`", file=sys.stderr)
        return 1
    name = found.group(1)
    out = pathlib.Path(os.environ.get("OUTPUT_DIR", "out"))
    out.mkdir(parents=True, exist_ok=True)
    target = out / f"{name}.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            relative = path.relative_to(folder)
            if path.is_symlink() or not path.is_file():
                continue
            if any(part.startswith(".") for part in relative.parts):
                continue
            archive.write(path, f"{name}/{relative.as_posix()}")
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
