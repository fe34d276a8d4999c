"""Persistence: SQLAlchemy 2 models and the async engine (PostgreSQL via psycopg 3, SQLite)."""
