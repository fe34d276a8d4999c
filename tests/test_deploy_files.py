"""No Docker engine runs here: the Dockerfile and compose file are checked by reading them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from backend.config import Settings

ROOT = Path(__file__).resolve().parents[1]
SETTING_VARIABLES = {f"SKILLHIVE_{name.upper()}" for name in Settings.model_fields}


def _compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return loaded


def test_compose_sets_only_real_settings() -> None:
    services = _compose()["services"]
    seen = set()
    for name, service in services.items():
        env = service.get("environment") or {}
        keys = env.keys() if isinstance(env, dict) else [e.split("=", 1)[0] for e in env]
        for key in keys:
            if key.startswith("SKILLHIVE_"):
                assert key in SETTING_VARIABLES, f"{name} sets unknown {key}"
                seen.add(key)
    assert {"SKILLHIVE_DATABASE_URL", "SKILLHIVE_REDIS_URL"} <= seen


def test_every_compose_service_has_a_health_check() -> None:
    services = _compose()["services"]
    assert {"postgres", "redis", "migrate", "gateway", "worker"} <= services.keys()
    for name, service in services.items():
        assert service.get("healthcheck", {}).get("test"), f"{name} has no health check"


def test_gateways_and_workers_wait_for_healthy_services_and_the_migration() -> None:
    for service in ("gateway", "worker"):
        depends = _compose()["services"][service]["depends_on"]
        assert depends["postgres"]["condition"] == "service_healthy"
        assert depends["redis"]["condition"] == "service_healthy"
        assert depends["migrate"]["condition"] == "service_completed_successfully"
    worker = _compose()["services"]["worker"]
    assert worker["command"] == ["worker"]
    assert "SKILLHIVE_REDIS_URL" in worker["environment"]
    images = {s.get("image") for s in _compose()["services"].values()}
    assert {"postgres:17", "redis:7"} <= images


def test_dockerfile_is_multi_stage_non_root_with_readiness_check() -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert len(re.findall(r"^FROM ", text, re.M)) >= 2
    users = re.findall(r"^USER (\S+)", text, re.M)
    assert users and users[-1] not in {"root", "0"}
    assert re.search(r"^HEALTHCHECK .*\n?.*/readyz", text, re.M)
    assert re.search(r'^ENTRYPOINT \["skillhive"\]', text, re.M)
    for path in re.findall(r"^COPY (?!--from)(\S+)", text, re.M):
        assert (ROOT / path).exists(), f"Dockerfile copies missing {path}"
