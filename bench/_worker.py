"""Run `skillhive worker` with the instant scripted model, for benchmarks (settings from env)."""

from __future__ import annotations

import asyncio

from backend.config import Settings
from backend.logging_config import configure_logging
from backend.worker import serve
from bench._gateway import instant_model


def main() -> None:
    settings = Settings()
    configure_logging(settings.log_level)
    asyncio.run(serve(settings, model=instant_model()))


if __name__ == "__main__":
    main()
