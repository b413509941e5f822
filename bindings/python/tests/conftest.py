"""Shared fixtures: a fresh database directory per test."""

from __future__ import annotations

import pathlib
from typing import Iterator

import pytest

import varve


@pytest.fixture
def db_path(tmp_path: pathlib.Path) -> pathlib.Path:
    """A directory path for a database (not created yet)."""
    return tmp_path / "db"


@pytest.fixture
def db(db_path: pathlib.Path) -> Iterator[varve.Db]:
    """An open database, closed after the test."""
    d = varve.Db(db_path, write_buffer_size=1 << 20)
    try:
        yield d
    finally:
        d.close()
