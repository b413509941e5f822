"""Snapshots: consistent views, released on exit."""

from __future__ import annotations

import pytest

import varve


def test_snapshot_sees_the_past(db: varve.Db) -> None:
    db[b"a"] = b"1"
    db[b"b"] = b"2"
    with db.snapshot() as s:
        db[b"a"] = b"changed"
        del db[b"b"]
        db[b"c"] = b"3"
        assert s.get(b"a") == b"1"
        assert s[b"b"] == b"2"
        assert b"c" not in s
        assert s.get(b"c", b"dflt") == b"dflt"
        with pytest.raises(KeyError):
            s[b"c"]
        assert list(s.items()) == [(b"a", b"1"), (b"b", b"2")]
        assert list(s.keys(reverse=True)) == [b"b", b"a"]
        assert list(s.values(b"b")) == [b"2"]
        assert list(s) == [b"a", b"b"]
        assert s.multi_get([b"a", b"b", b"c"]) == [b"1", b"2", None]
        assert s.par_count() == 2
        assert s.par_count(b"b") == 1
        assert s.sequence > 0
    assert s.released
    assert db[b"a"] == b"changed"
    assert list(db.keys()) == [b"a", b"c"]


def test_snapshot_survives_flush_and_compaction(db: varve.Db) -> None:
    for i in range(100):
        db[b"k%03d" % i] = b"old"
    s = db.snapshot()
    for i in range(100):
        db[b"k%03d" % i] = b"new"
    db.flush()
    db.compact()
    assert all(v == b"old" for v in s.values())
    assert s.par_count() == 100
    s.release()
    assert all(v == b"new" for v in db.values())


def test_released_snapshot_raises_closed(db: varve.Db) -> None:
    db[b"a"] = b"1"
    s = db.snapshot()
    it = s.items()
    s.release()
    s.release()  # idempotent
    with pytest.raises(varve.ClosedError, match="released"):
        s.get(b"a")
    with pytest.raises(varve.ClosedError):
        s.items()
    # An iterator made before the release keeps its view.
    assert list(it) == [(b"a", b"1")]


def test_snapshot_after_db_close_raises(db: varve.Db) -> None:
    s = db.snapshot()
    db.close()
    with pytest.raises(varve.ClosedError):
        s.get(b"a")
    s.release()
