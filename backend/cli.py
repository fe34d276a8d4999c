"""`skillhive` command line (Typer)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

import typer
from pydantic import ValidationError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from sqlalchemy import make_url
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError, ProgrammingError
from sqlalchemy.ext.asyncio import AsyncSession
from typer.core import TyperGroup

from backend import cli_skills as skills_cli
from backend import heartbeat
from backend.cli_skills import fail
from backend.client import chat as chat_cli
from backend.client import commands as resource_cli
from backend.client.describe import describe_skill
from backend.client.errors import CliError
from backend.config import Settings, get_settings
from backend.db.engine import create_engine, create_sessionmaker
from backend.errors import SkillhiveError
from backend.logging_config import configure_logging, logging_dict

# Driver messages of a missing table (SQLite, PostgreSQL): a database that is up but not migrated.
_NO_SCHEMA = re.compile(r'no such table|relation "[^"]*" does not exist')


def _no_schema(exc: DBAPIError) -> bool:
    return _NO_SCHEMA.search(str(exc.orig)) is not None


def _database_problem(exc: DBAPIError) -> str:
    if _no_schema(exc):
        return "the database has no schema yet: run `skillhive migrate`"
    url = make_url(get_settings().effective_database_url).render_as_string(hide_password=True)
    reason = (str(exc.orig).strip().splitlines() or [type(exc.orig).__name__])[0][:200]
    return (
        f"cannot use the database at {url} ({reason}); is it running, and migrated "
        "(`skillhive migrate`)? Check SKILLHIVE_DATABASE_URL"
    )


def _settings_problem(exc: ValidationError) -> str:
    problems = [
        f"SKILLHIVE_{'_'.join(str(p) for p in e['loc']).upper()}: {e['msg']}" for e in exc.errors()
    ]
    return f"invalid setting: {'; '.join(problems)} (see docs/configuration.md)"


class _Commands(TyperGroup):
    """Expected failures end with one `error:` line and exit status 1, never a traceback."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except CliError as exc:  # the API client's: its own exit code (backend.client.errors)
            typer.echo(f"error: {exc.message}", err=True)
            raise typer.Exit(exc.exit_code) from None
        except SkillhiveError as exc:
            fail(f"{exc.message} ({exc.code})")
        except (OperationalError, InterfaceError) as exc:  # unreachable, or not migrated
            fail(_database_problem(exc))
        except ProgrammingError as exc:  # not migrated (PostgreSQL); any other is a bug
            if not _no_schema(exc):
                raise
            fail(_database_problem(exc))
        except ValidationError as exc:
            if exc.title != "Settings":
                raise
            fail(_settings_problem(exc))
        except (RedisConnectionError, RedisTimeoutError) as exc:
            fail(f"cannot reach Redis ({type(exc).__name__}): check SKILLHIVE_REDIS_URL")


app = typer.Typer(
    cls=_Commands,
    help="Skillhive: a backend for AI agents that learn skills on demand.",
    no_args_is_help=True,
)
admin_app = typer.Typer(help="Administration: users and tokens.", no_args_is_help=True)
app.add_typer(admin_app, name="admin")
app.add_typer(skills_cli.app, name="skills")
describe_app = typer.Typer(help="Show one object in detail.", no_args_is_help=True)
describe_app.command("skill")(describe_skill)
app.add_typer(describe_app, name="describe")
app.command()(resource_cli.login)
app.command()(resource_cli.apply)
app.command()(resource_cli.get)
app.command()(resource_cli.delete)
app.command()(chat_cli.chat)

T = TypeVar("T")


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Bind address [SKILLHIVE_HOST].")] = None,
    port: Annotated[int | None, typer.Option(help="Bind port [SKILLHIVE_PORT].")] = None,
    workers: Annotated[int, typer.Option(min=1, help="Gateway worker processes.")] = 1,
) -> None:
    """Run the gateway (REST API + Socket.IO) with uvicorn."""
    import uvicorn

    settings = get_settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    uvicorn.run(
        "backend.app:create_served_app",
        factory=True,
        host=host or settings.host,
        port=port or settings.port,
        workers=workers,
        log_config=logging_dict(settings.log_level, settings.log_levels),
        proxy_headers=True,
    )


@app.command()
def worker(
    concurrency: Annotated[
        int | None, typer.Option(min=1, help="Turns at once [SKILLHIVE_WORKER_CONCURRENCY].")
    ] = None,
    check: Annotated[
        bool,
        typer.Option(
            "--check",
            help="Do not run: exit 0 if a worker with this data dir beat within --max-age "
            "seconds, else 1 (the container health check).",
        ),
    ] = False,
    max_age: Annotated[
        float, typer.Option(min=1, help="Seconds; with --check.")
    ] = heartbeat.MAX_AGE_S,
) -> None:
    """Run chat turns from the Redis Stream (scale-out mode; needs SKILLHIVE_REDIS_URL)."""
    settings = get_settings()
    if check:
        _check_worker_heartbeat(settings, max_age)
        return
    from backend.worker import serve as serve_worker

    if concurrency is not None:
        settings = settings.model_copy(update={"worker_concurrency": concurrency})
    configure_logging(settings.log_level, settings.log_levels)
    asyncio.run(serve_worker(settings))


def _check_worker_heartbeat(settings: Settings, max_age: float) -> None:
    path = heartbeat.heartbeat_path(settings)
    age = heartbeat.age_s(path)
    if age is None:
        typer.echo(f"unhealthy: no worker heartbeat at {path}", err=True)
        raise typer.Exit(1)
    if age > max_age:
        typer.echo(f"unhealthy: last worker heartbeat {age:.0f}s ago (max {max_age:g}s)", err=True)
        raise typer.Exit(1)
    typer.echo(f"healthy: last worker heartbeat {age:.1f}s ago")


@app.command()
def migrate() -> None:
    """Upgrade the database schema to the newest revision (safe to run repeatedly)."""
    from backend.db.migrate import upgrade

    settings = get_settings()
    configure_logging(settings.log_level, settings.log_levels)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    upgrade(settings.effective_database_url)
    typer.echo("database is at the newest revision")


def _run_db(work: Callable[[AsyncSession], Awaitable[T]]) -> T:
    settings = get_settings()

    async def main() -> T:
        engine = create_engine(settings.effective_database_url)
        try:
            async with create_sessionmaker(engine)() as session:
                result = await work(session)
                await session.commit()
                return result
        finally:
            await engine.dispose()

    return asyncio.run(main())  # expected failures are reported by `_Commands`


@admin_app.command("create-user")
def create_user(
    name: Annotated[str, typer.Argument(help="Login name (a-z, 0-9, '_', '.', '-').")],
    admin: Annotated[bool, typer.Option("--admin", help="Give the user the admin role.")] = False,
) -> None:
    """Create a user and print a first API token (shown once)."""
    from backend.auth import service

    async def work(session: AsyncSession) -> str:
        user = await service.create_user(session, name, admin=admin)
        return (await service.issue_token(session, user, "cli")).secret

    secret = _run_db(work)
    # The note goes to stderr, so `TOKEN=$(skillhive admin create-user ...)` captures the token.
    typer.echo(
        f"created {'admin' if admin else 'user'} {name!r}; API token (shown once):", err=True
    )
    typer.echo(secret)


@admin_app.command("create-token")
def create_token(
    user: Annotated[str, typer.Argument(help="Name of an existing user.")],
    name: Annotated[str, typer.Option(help="A label for the token.")] = "cli",
) -> None:
    """Issue a new API token for USER and print it (shown once)."""
    from backend.auth import service

    async def work(session: AsyncSession) -> str:
        owner = await service.get_user_by_name(session, user)
        return (await service.issue_token(session, owner, name)).secret

    typer.echo(_run_db(work))


if __name__ == "__main__":  # pragma: no cover
    app()
