"""Where the CLI finds the API: `~/.config/skillhive/config.yaml`, under the environment.

The file holds `url`, `token` and `namespace`; `SKILLHIVE_URL`, `SKILLHIVE_TOKEN` and
`SKILLHIVE_NAMESPACE` take precedence over it. It is written 0600 (it holds a token).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import yaml

from backend.client.errors import CliError, ExitCode

DEFAULT_NAMESPACE = "default"
ENV = {"url": "SKILLHIVE_URL", "token": "SKILLHIVE_TOKEN", "namespace": "SKILLHIVE_NAMESPACE"}


@dataclass(frozen=True)
class ClientConfig:
    url: str
    token: str | None
    namespace: str


def config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "skillhive" / "config.yaml"


def default_url() -> str:
    from backend.config import get_settings  # only for the port: a bad setting fails late

    return f"http://127.0.0.1:{get_settings().port}"


def read_file(path: Path | None = None) -> dict[str, str]:
    path = path or config_path()
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise CliError(f"cannot read {path}: {exc}", ExitCode.ERROR) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise CliError(f"{path} must be a YAML mapping (url, token, namespace)", ExitCode.ERROR)
    return {k: str(v) for k, v in data.items() if k in ENV and v is not None}


def load() -> ClientConfig:
    """The file's values, each overridden by its environment variable when that is set."""
    values = read_file()
    for key, variable in ENV.items():
        if os.environ.get(variable):
            values[key] = os.environ[variable]
    url = values.get("url") or default_url()
    return ClientConfig(
        url=url.rstrip("/"),
        token=values.get("token") or None,
        namespace=values.get("namespace") or DEFAULT_NAMESPACE,
    )


def save(values: dict[str, str], path: Path | None = None) -> Path:
    """Write the file owner-only (0600, its folder 0700), replacing it atomically."""
    path = path or config_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        os.fchmod(out.fileno(), 0o600)  # an older file of that name may have had wider bits
        yaml.safe_dump(values, out, default_flow_style=False, sort_keys=True)
    os.replace(tmp, path)
    return path
