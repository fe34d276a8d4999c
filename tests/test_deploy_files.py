"""The Dockerfile, .dockerignore and docker-compose.yml. No Docker engine runs here: the compose
file is interpolated and checked against the Compose Specification's schema, the build context
is computed with the Docker SDK's own .dockerignore matcher."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
from docker.utils.build import exclude_paths
from typer.testing import CliRunner

from backend import heartbeat
from backend.api.console import VENDOR
from backend.cli import app
from backend.config import Settings, get_settings
from tests.support import compose

ROOT = Path(__file__).resolve().parents[1]
SETTING_VARIABLES = {f"SKILLHIVE_{name.upper()}" for name in Settings.model_fields}
REQUIRED = {"POSTGRES_PASSWORD": "pw-urlsafe_1", "SKILLHIVE_SECRETS_KEY": "a-fernet-key"}
SKILLHIVE_SERVICES = ("migrate", "gateway", "worker")


def _compose(env: dict[str, str] | None = None) -> dict[str, Any]:
    return compose.load(ROOT / "docker-compose.yml", REQUIRED if env is None else env)


def _container_env(service: dict[str, Any], shell: dict[str, str]) -> dict[str, str]:
    """What the container gets: a key without a value is passed through from the shell (or
    .env) when set there and left out otherwise (Compose's `environment` semantics)."""
    resolved = {}
    for key, value in (service.get("environment") or {}).items():
        if value is None:
            if key in shell:
                resolved[key] = shell[key]
        else:
            resolved[key] = str(value)
    return resolved


def _dockerfile_sources() -> list[str]:
    sources = []
    for line in re.findall(r"^COPY (?!--from)(.+)$", (ROOT / "Dockerfile").read_text(), re.M):
        sources += line.split()[:-1]  # the last word is the destination
    return sources


def _dockerignore() -> list[str]:
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


# --- compose ---------------------------------------------------------------------------------


def test_compose_file_conforms_to_the_compose_specification() -> None:
    assert compose.schema_errors(_compose()) == []


def test_the_specification_check_catches_a_misspelt_key() -> None:
    broken = _compose()
    broken["services"]["worker"]["helthcheck"] = broken["services"]["worker"].pop("healthcheck")
    broken["services"]["gateway"]["ports"] = "8000:8000"
    errors = compose.schema_errors(broken)
    assert any("helthcheck" in e for e in errors) and any("gateway/ports" in e for e in errors)


@pytest.mark.parametrize("variable", sorted(REQUIRED))
@pytest.mark.parametrize("value", [None, ""])
def test_compose_refuses_to_run_without_a_required_variable(
    variable: str, value: str | None
) -> None:
    env = {k: v for k, v in REQUIRED.items() if k != variable}
    if value is not None:
        env[variable] = value
    with pytest.raises(compose.MissingVariable) as refused:
        _compose(env)
    assert refused.value.name == variable


def test_the_database_password_reaches_postgres_and_the_database_url() -> None:
    services = _compose()["services"]
    assert services["postgres"]["environment"]["POSTGRES_PASSWORD"] == "pw-urlsafe_1"
    for name in SKILLHIVE_SERVICES:
        url = services[name]["environment"]["SKILLHIVE_DATABASE_URL"]
        assert url == "postgresql+psycopg://skillhive:pw-urlsafe_1@postgres:5432/skillhive"


def test_unset_optional_settings_stay_unset_in_the_containers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in SKILLHIVE_SERVICES:
        env = _container_env(_compose()["services"][name], shell=REQUIRED)
        assert "" not in env.values(), f"{name} passes an empty string"
        assert "SKILLHIVE_OPENAI_BASE_URL" not in env and "SKILLHIVE_OPENAI_API_KEY" not in env
        for key in list(os.environ):
            if key.startswith("SKILLHIVE_"):
                monkeypatch.delenv(key)
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        settings = Settings()  # what the container's process would read
        assert settings.openai_base_url is None and settings.cors_origins == []


def test_optional_settings_set_in_the_shell_are_passed_through() -> None:
    shell = {
        **REQUIRED,
        "SKILLHIVE_OPENAI_BASE_URL": "https://llm.example/v1",
        "SKILLHIVE_CORS_ORIGINS": '["https://app.example"]',
    }
    for name in SKILLHIVE_SERVICES:
        env = _container_env(_compose(shell)["services"][name], shell)
        assert env["SKILLHIVE_OPENAI_BASE_URL"] == "https://llm.example/v1"
        assert env["SKILLHIVE_CORS_ORIGINS"] == '["https://app.example"]'


def test_compose_sets_only_real_settings_and_passes_through_only_optional_ones() -> None:
    seen = set()
    for name, service in _compose()["services"].items():
        for key, value in (service.get("environment") or {}).items():
            if not key.startswith("SKILLHIVE_"):
                continue
            assert key in SETTING_VARIABLES, f"{name} sets unknown {key}"
            seen.add(key)
            if value is None:  # passed through: must have a default of its own
                field = Settings.model_fields[key.removeprefix("SKILLHIVE_").lower()]
                assert not field.is_required(), f"{name} may leave required {key} unset"
    assert {"SKILLHIVE_DATABASE_URL", "SKILLHIVE_REDIS_URL", "SKILLHIVE_CORS_ORIGINS"} <= seen


def test_every_compose_service_has_a_health_check() -> None:
    services = _compose()["services"]
    assert {"postgres", "redis", "migrate", "gateway", "worker"} <= services.keys()
    for name, service in services.items():
        assert service.get("healthcheck", {}).get("test"), f"{name} has no health check"


def test_gateways_and_workers_wait_for_healthy_services_and_the_migration() -> None:
    services = _compose()["services"]
    for service in ("gateway", "worker"):
        depends = services[service]["depends_on"]
        assert depends["postgres"]["condition"] == "service_healthy"
        assert depends["redis"]["condition"] == "service_healthy"
        assert depends["migrate"]["condition"] == "service_completed_successfully"
    assert services["worker"]["command"] == ["worker"]
    assert "SKILLHIVE_REDIS_URL" in services["worker"]["environment"]
    assert {"postgres:17", "redis:7"} <= {s.get("image") for s in services.values()}


def test_the_worker_health_check_asks_the_worker_for_its_heartbeat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    test = _compose()["services"]["worker"]["healthcheck"]["test"]
    assert test[:2] == ["CMD", "skillhive"]
    monkeypatch.setenv("SKILLHIVE_DATA_DIR", str(tmp_path))
    get_settings.cache_clear()
    try:
        assert CliRunner().invoke(app, test[2:]).exit_code == 1  # no worker has beaten
        (tmp_path / heartbeat.FILE_NAME).touch()
        assert CliRunner().invoke(app, test[2:]).exit_code == 0
    finally:
        get_settings.cache_clear()


# --- Dockerfile and build context ------------------------------------------------------------


def test_dockerfile_is_multi_stage_non_root_with_readiness_check() -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert len(re.findall(r"^FROM ", text, re.M)) >= 2
    users = re.findall(r"^USER (\S+)", text, re.M)
    assert users and users[-1] not in {"root", "0"}
    assert re.search(r"^HEALTHCHECK .*\n?.*/readyz", text, re.M)
    assert re.search(r'^ENTRYPOINT \["skillhive"\]', text, re.M)
    for path in _dockerfile_sources():
        assert (ROOT / path).exists(), f"Dockerfile copies missing {path}"


def test_the_image_builds_the_console_and_keeps_exactly_the_bundles_it_serves() -> None:
    text = (ROOT / "Dockerfile").read_text()
    stage = text[text.index("AS console") : text.index("AS runtime")]
    assert "COPY console/package.json console/package-lock.json" in stage
    assert re.search(r"RUN npm ci\b", stage)
    kept = re.search(r"for f in (.*?); do", stage, re.S)
    assert kept is not None
    assert sorted(kept.group(1).replace("\\", " ").split()) == sorted(VENDOR.values())
    assert re.search(r"^COPY --from=console /console console$", text, re.M)


HOSTILE = [
    "data/secrets.key",
    "data/skillhive.db",
    ".env",
    ".venv/bin/python",
    ".git/config",
    ".cache/pip/x",
    ".pytest_cache/v/cache",
    ".mypy_cache/3.11/x.json",
    ".ruff_cache/x",
    "skillhive.egg-info/PKG-INFO",
    "node_modules/x/index.js",
    "console/node_modules/mermaid/dist/mermaid.min.js",
    "tests/test_x.py",
    "backend/__pycache__/app.cpython-311.pyc",
    "chat_shell/agent/__pycache__/graph.cpython-311.pyc",
    "skills/mermaid-diagram/__pycache__/x.pyc",
]


def test_build_context_holds_what_the_dockerfile_copies_and_no_local_state(
    tmp_path: Path,
) -> None:
    wanted = []
    for source in _dockerfile_sources():
        path = ROOT / source
        files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
        wanted += [f.relative_to(ROOT).as_posix() for f in files if "__pycache__" not in f.parts]
    assert any(w.startswith("backend/") for w in wanted)
    for relative in wanted + HOSTILE:
        target = tmp_path / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.touch()
    context = exclude_paths(str(tmp_path), _dockerignore())
    assert set(wanted) <= context
    assert context.isdisjoint(HOSTILE)


def test_build_context_of_this_checkout_leaves_out_venv_data_and_caches() -> None:
    context = exclude_paths(str(ROOT), _dockerignore())
    assert "backend/app.py" in context and "pyproject.toml" in context
    leaked = [p for p in context if p.split("/")[0] in {".venv", "data", ".git", ".env"}]
    leaked += [p for p in context if p.startswith("console/node_modules/")]
    assert leaked == [] and not any("__pycache__" in p for p in context)
