"""Errors: the exception classes, locking, bad paths, use after close."""

from __future__ import annotations

import errno
import pickle

import pytest

import varve


def test_hierarchy() -> None:
    for cls in (
        varve.CorruptionError,
        varve.UnsupportedVersionError,
        varve.VarveIOError,
        varve.InvalidArgumentError,
        varve.BusyError,
        varve.NotFoundError,
        varve.AlreadyExistsError,
        varve.PoisonedError,
        varve.ReadOnlyError,
        varve.ClosedError,
    ):
        assert issubclass(cls, varve.Error)
        assert cls.__module__ == "varve"
    assert issubclass(varve.VarveIOError, OSError)
    assert issubclass(varve.InvalidArgumentError, ValueError)
    assert issubclass(varve.ClosedError, ValueError)
    e = pickle.loads(pickle.dumps(varve.BusyError("x")))
    assert isinstance(e, varve.BusyError)


def test_second_opener_is_busy(db: varve.Db, db_path) -> None:
    with pytest.raises(varve.BusyError, match="locked"):
        varve.Db(db_path)
    db.close()
    with varve.Db(db_path):
        pass


def test_bad_paths(tmp_path) -> None:
    a_file = tmp_path / "file"
    a_file.write_bytes(b"not a directory")
    with pytest.raises(varve.Error) as info:
        varve.Db(a_file)
    assert str(a_file) in str(info.value)
    with pytest.raises(varve.VarveIOError) as io:
        varve.Db(a_file / "below")
    assert io.value.errno == errno.ENOTDIR
    assert isinstance(io.value, OSError)
    assert str(a_file / "below") in str(io.value)
    with pytest.raises(varve.NotFoundError, match="does not exist"):
        varve.Db(tmp_path / "missing", create_if_missing=False)
    with varve.Db(tmp_path / "exists"):
        pass
    with pytest.raises(varve.AlreadyExistsError):
        varve.Db(tmp_path / "exists", error_if_exists=True)
    with pytest.raises(varve.NotFoundError):
        varve.Db(tmp_path / "missing", read_only=True)


def test_invalid_arguments(db: varve.Db) -> None:
    with pytest.raises(varve.InvalidArgumentError):
        db[b"k" * (1 << 17)] = b"key too large"
    with pytest.raises(ValueError):
        db.put(b"k" * (1 << 17), b"v")


def test_use_after_close_raises_closed(db: varve.Db) -> None:
    db[b"a"] = b"1"
    snap = db.snapshot()
    batch = db.write_batch()
    db.close()
    db.close()  # idempotent
    calls = [
        lambda: db[b"a"],
        lambda: db.get(b"a"),
        lambda: b"a" in db,
        lambda: db.put(b"a", b"2"),
        lambda: db.__setitem__(b"a", b"2"),
        lambda: db.__delitem__(b"a"),
        lambda: db.delete(b"a"),
        lambda: db.multi_get([b"a"]),
        lambda: db.items(),
        lambda: db.keys(b"a", b"a"),
        lambda: iter(db),
        lambda: db.par_count(),
        lambda: db.par_count(b"b", b"a"),
        lambda: db.snapshot(),
        lambda: db.checkpoint("/nonexistent-varve-target"),
        lambda: db.flush(),
        lambda: db.compact(),
        lambda: db.stats(),
        lambda: db.stats_dict(),
        lambda: snap.get(b"a"),
        lambda: list(snap.items()),
        lambda: (batch.put(b"a", b"1"), batch.commit()),
        lambda: db.write(varve.WriteBatch()),
    ]
    for call in calls:
        with pytest.raises(varve.ClosedError, match="closed"):
            call()
    with pytest.raises(varve.ClosedError):
        with db.write_batch() as b:
            b.put(b"k", b"v")


def test_close_ends_live_iterators(db: varve.Db) -> None:
    for i in range(5000):
        db[b"%05d" % i] = b"v"
    started = db.items()
    assert next(started) == (b"00000", b"v")
    fresh = db.keys(reverse=True)
    db.close()
    with pytest.raises(varve.ClosedError):
        next(started)
    with pytest.raises(varve.ClosedError):
        next(fresh)
    with pytest.raises(varve.ClosedError):
        list(started)


def test_iterators_and_snapshots_keep_a_dropped_db_open(db_path) -> None:
    db = varve.Db(db_path)
    db[b"a"] = b"1"
    db[b"b"] = b"2"
    it = db.items()
    snap = db.snapshot()
    del db
    import gc

    gc.collect()
    assert snap[b"a"] == b"1"
    assert list(it) == [(b"a", b"1"), (b"b", b"2")]
    # Still open (by them): a second opener is refused.
    with pytest.raises(varve.BusyError):
        varve.Db(db_path)
    del it, snap
    gc.collect()
    with varve.Db(db_path) as again:
        assert again[b"b"] == b"2"


def test_read_only_errors(db_path) -> None:
    with varve.Db(db_path) as db:
        db[b"a"] = b"1"
    with varve.Db(db_path, read_only=True) as ro:
        with pytest.raises(varve.ReadOnlyError):
            ro.put(b"b", b"2")
        with pytest.raises(varve.ReadOnlyError):
            with ro.write_batch() as b:
                b.put(b"c", b"3")
