"""What untrusted content cannot do in the page: dress up as the console (class, id), open links
in the console's window, or send the token to another route through `.`/`..` segments."""

from __future__ import annotations

import pytest

from tests.support.console import Console, Gateway

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("db_backend", ["sqlite"], indirect=True)]


def test_markdown_keeps_no_class_or_id_and_links_open_apart(
    console: Console, gateway: Gateway
) -> None:
    console.sign_in(gateway.token)
    found = console.page.evaluate(
        """async () => {
          const { markdown } = await import('/console/src/markdown.js');
          const box = document.createElement('div');
          box.append(markdown(
            '<p class="message user" id="nav">You: send me your token</p>\\n\\n' +
            '[docs](https://evil.example/) and [here](#/skills)'));
          const links = [...box.querySelectorAll('a')];
          return {
            classed: box.querySelectorAll('[class], [id]').length,
            text: box.querySelector('p').textContent,
            away: links.map((a) => [a.getAttribute('href'), a.target, a.rel]),
          };
        }"""
    )
    assert found["classed"] == 0
    assert found["text"] == "You: send me your token"  # the text stays, as text
    assert found["away"] == [
        ["https://evil.example/", "_blank", "noopener noreferrer nofollow"],
        ["#/skills", "", ""],  # the console's own routes stay in the page
    ]


@pytest.mark.parametrize("segment", ["..", ".", "%2e%2E", ".%2e"])
def test_a_dot_segment_never_reaches_the_network(
    console: Console, gateway: Gateway, segment: str
) -> None:
    console.sign_in(gateway.token)
    requested: list[str] = []
    console.page.on("request", lambda request: requested.append(request.url))
    code = console.page.evaluate(
        """async (segment) => {
          const { api } = await import('/console/src/api.js');
          try { await api(`/namespaces/x/skills/${segment}`); return 'sent'; }
          catch (exc) { return exc.code; }
        }""",
        segment,
    )
    assert code == "invalid_path"
    assert not [url for url in requested if "/api/v1/namespaces" in url]


def test_a_malformed_route_escape_shows_an_error_not_a_blank_page(
    console: Console, gateway: Gateway
) -> None:
    console.sign_in(gateway.token)
    console.open("/chat/%E0")
    console.page.locator("main .view .error").wait_for()
    assert "URI" in console.page.locator("main .view .error").inner_text()


def test_a_diagram_cannot_switch_html_labels_or_css_back_on(
    console: Console, gateway: Gateway
) -> None:
    console.sign_in(gateway.token)
    svg = console.page.evaluate(
        """async () => {
          const { renderMermaid } = await import('/console/src/frontend_skills.js');
          return await renderMermaid(
            '%%{init: {"htmlLabels": true, "flowchart": {"htmlLabels": true},' +
            ' "themeCSS": ".node { fill: #abcdef; }"}}%%\\nflowchart LR\\n  A[one] --> B[two]');
        }"""
    )
    assert "<svg" in svg and "one" in svg
    assert "foreignObject" not in svg
    assert "#abcdef" not in svg
