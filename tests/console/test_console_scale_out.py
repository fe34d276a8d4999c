"""The scale-out setup in a browser: two gateways and a worker on Redis and PostgreSQL. A turn
sent through gateway A runs in the worker; the page, served by and connected to gateway B, gets
the `skill:request` through Redis, renders the diagram, and its answer reaches the worker's tool
through the Redis registry."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Browser, expect

from backend.config import Settings
from tests.support.cluster import Cluster, cluster_env
from tests.support.console import ADMIN_TOKEN, GUARD_SCRIPT, Console, tool_results
from tests.support.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.support.redis_server import RedisServer

pytestmark = [
    pytest.mark.slow,
    pytest.mark.parametrize("db_backend", ["postgresql"], indirect=True),
    pytest.mark.timeout(480),  # five processes on a shared machine
]


@pytest.fixture
def cluster(
    settings: Settings,
    redis_server: RedisServer,  # noqa: F811 (the imported fixture)
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Cluster]:
    env = cluster_env(
        settings.database_url or "",
        redis_server.url,
        settings.data_dir,
        SKILLHIVE_EGRESS_ALLOW=",".join(settings.egress_allow),  # the scripted model server
        SKILLHIVE_BOOTSTRAP_ADMIN_TOKEN=ADMIN_TOKEN,
    )
    running = Cluster(tmp_path_factory.mktemp("cluster"), env)
    try:
        yield running
    finally:
        running.stop_all()


def test_a_diagram_is_answered_by_a_page_on_another_gateway_than_the_turns(
    chromium: str,
    browser: Browser,
    cluster: Cluster,
    openai_server: FakeOpenAIServer,
) -> None:
    gateway_a = cluster.gateway()
    cluster.wait_ready(gateway_a, deadline_s=180)  # creates the bootstrap admin before B starts
    gateway_b = cluster.gateway()
    worker = cluster.worker()
    for process in (gateway_b, worker):
        cluster.wait_ready(process, deadline_s=180)
    assert gateway_a.url and gateway_b.url
    auth = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    with httpx.Client(base_url=f"{gateway_a.url}/api/v1", headers=auth, timeout=30) as api:
        ghost = {
            "apiVersion": "skillhive.io/v1",
            "kind": "Ghost",
            "metadata": {"name": "artist"},
            "spec": {
                "systemPrompt": "You draw.",
                "model": {"name": "scripted", "baseUrl": openai_server.base_url},
                "skills": ["mermaid-diagram"],
            },
        }
        assert api.post("/namespaces/default/ghosts", json=ghost).status_code == 201
        cid = api.post("/conversations", json={"ghost": "default/artist"}).json()["id"]

        context = browser.new_context(viewport={"width": 1280, "height": 900})
        context.add_init_script(GUARD_SCRIPT)
        try:
            console = Console(context.new_page(), gateway_b.url)
            console.page.on("pageerror", lambda exc: console.errors.append(str(exc)))
            console.sign_in(ADMIN_TOKEN)
            console.open(f"/chat/{cid}")
            expect(console.page.locator("body")).to_have_attribute("data-socket", "connected")
            expect(console.page.locator(".transcript[data-ready]")).to_have_count(1)
            openai_server.script(
                Reply(tool_calls=[ToolCall("load_skill", {"skill_name": "mermaid-diagram"})]),
                Reply(tool_calls=[ToolCall("render_mermaid", {"code": "graph LR; Gw-->Wk"})]),
                Reply(text="Drawn across the cluster."),
            )
            sent = api.post(f"/conversations/{cid}/messages", json={"content": "draw"})
            assert sent.status_code == 200, sent.text
            assert sent.json()["content"] == "Drawn across the cluster."
            figure = console.page.locator("figure.diagram").first
            expect(figure.locator("svg")).to_contain_text("Wk")
            expect(figure).to_have_attribute("data-outcome", "resolved")
            assert tool_results(openai_server)[-1] == "rendered"
            done = console.page.locator(".message.assistant.status-ok")
            expect(done.locator(".text")).to_have_text("Drawn across the cluster.")
            assert console.errors == []
        finally:
            context.close()
    assert "render_mermaid" in worker.output() or worker.popen.poll() is None
