"""The served gateway freezes what it starts with out of full garbage collections.

Run in a child process: freezing is process-wide, and this test process must keep collecting
what its many apps leave behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

_CHILD = """
import gc, json
from backend.app import create_served_app
create_served_app()
print(json.dumps({"frozen": gc.get_freeze_count(), "tracked": len(gc.get_objects())}))
"""


def test_the_served_app_leaves_only_what_it_makes_later_to_full_collections(
    tmp_path: Path,
) -> None:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("SKILLHIVE_")},
        "SKILLHIVE_DATA_DIR": str(tmp_path),
        "PYTHONPATH": str(ROOT),
    }
    done = subprocess.run(
        [sys.executable, "-c", _CHILD],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    counts = json.loads(done.stdout.strip().splitlines()[-1])
    # Importing and building the app makes hundreds of thousands of long-lived objects; the
    # ones a full collection still walks are the few made after the freeze.
    assert counts["frozen"] > 100_000
    assert counts["tracked"] < counts["frozen"] / 20
