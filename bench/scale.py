"""Scale-out benchmark: `python -m bench.scale`.

2 gateways + 2 workers (separate processes) on real PostgreSQL and Redis, an instant fake
model, and 200 concurrent Socket.IO conversations for 60 s spread over both gateways. Reports
turns/s and errors (target 0 errors). Ends with `RESULT scale turns_per_s=X errors=N`.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path

import httpx

from backend.config import Settings
from bench.chat import GHOST, Conversations, soak, user_token
from tests.support import services
from tests.support.cluster import Cluster, cluster_env


async def run(clients: int, seconds: float) -> tuple[int, int]:
    workdir = Path(tempfile.mkdtemp(prefix="skillhive-bench-scale-"))
    admin_url, pg = services.start_postgres()
    services.prepare_postgres_template(admin_url)
    redis_url, redis = services.start_redis(workdir)
    try:
        with services.postgres_database(admin_url) as url:
            settings = Settings(database_url=url, data_dir=workdir, redis_url=redis_url)
            cluster = Cluster(
                workdir, cluster_env(url, redis_url, workdir, SKILLHIVE_LOG_LEVEL="WARNING")
            )
            try:
                gateways = [cluster.spawn_gateway(["bench._gateway"]) for _ in range(2)]
                workers = [cluster.spawn("worker", ["bench._worker"]) for _ in range(2)]
                for process in gateways:
                    cluster.wait_ready(process)
                token = await user_token(settings)
                headers = {"Authorization": f"Bearer {token}"}
                async with httpx.AsyncClient(
                    base_url=gateways[0].url or "", headers=headers, timeout=30
                ) as client:
                    (
                        await client.post("/api/v1/namespaces/dev/ghosts", json=GHOST)
                    ).raise_for_status()
                    half = clients // 2
                    results = await asyncio.gather(
                        soak(gateways[0].url or "", token, Conversations(client), half, seconds),
                        soak(
                            gateways[1].url or "",
                            token,
                            Conversations(client),
                            clients - half,
                            seconds,
                        ),
                    )
                for worker in workers:
                    assert worker.popen.poll() is None, worker.output()
            finally:
                cluster.stop_all()
    finally:
        if redis is not None:
            redis.shutdown()
        if pg is not None:
            pg.cleanup()
    return sum(r[0] for r in results), sum(r[1] for r in results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()
    turns_per_s, errors = asyncio.run(run(args.clients, args.seconds))
    print(
        f"{args.clients} concurrent Socket.IO conversations over 2 gateways + 2 workers for "
        f"{args.seconds:.0f} s: {turns_per_s} turns/s, {errors} errors (target 0)"
    )
    print(f"RESULT scale turns_per_s={turns_per_s} errors={errors}")


if __name__ == "__main__":
    main()
