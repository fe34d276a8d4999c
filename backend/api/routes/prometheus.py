"""`GET /metrics`: the Prometheus text format, for Prometheus' bearer token or an admin.

With `SKILLHIVE_METRICS_PORT` the metrics are served on that port instead (backend/ops/serve.py)
and the app has no such route: one place to scrape, chosen by the operator.
"""

from __future__ import annotations

import hmac

from fastapi import APIRouter, Request, Response

from backend.api.deps import bearer_token
from backend.api.errors import errors
from backend.config import Settings
from backend.errors import Forbidden
from backend.ops import metrics

router = APIRouter(tags=["operations"])


async def _authorize(request: Request, settings: Settings) -> None:
    token = bearer_token(request.headers.get("authorization"))
    expected = settings.metrics_token
    if expected is not None and hmac.compare_digest(
        token.encode(), expected.get_secret_value().encode()
    ):
        return
    user = await request.app.state.auth.authenticate(token)
    request.state.user_id = user.id
    if not user.is_admin:
        raise Forbidden("admin only", code="admin_required")


@router.get(
    "/metrics",
    response_class=Response,
    responses={
        200: {"content": {metrics.CONTENT_TYPE: {"schema": {"type": "string"}}}},
        **errors(401, 403, 503),
    },
)
async def prometheus_metrics(request: Request) -> Response:
    """This process's metrics in the Prometheus text format (all processes' in multiprocess
    mode); `Authorization: Bearer` with `SKILLHIVE_METRICS_TOKEN` or an admin's API token."""
    await _authorize(request, request.app.state.settings)
    body = metrics.render(request.app.state.metrics_registry)
    return Response(body, media_type=metrics.CONTENT_TYPE)
