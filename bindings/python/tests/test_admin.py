"""multi_get, par_count, checkpoint, flush/compact, stats, reopen, options."""

from __future__ import annotations

import inspect

import pytest

import varve


def fill(db: varve.Db, n: int) -> None:
    with db.write_batch() as b:
        for i in range(n):
            b.put(b"key%05d" % i, b"value%d" % i)


def test_multi_get(db: varve.Db) -> None:
    fill(db, 1000)
    db.flush()
    db[b"key00007"] = b"in the memtable"
    keys = [b"key00007", b"missing", b"key00999", bytearray(b"key00000"), b"key00999"]
    for async_io in (True, False):
        got = db.multi_get(keys, async_io=async_io)
        assert got == [b"in the memtable", None, b"value999", b"value0", b"value999"]
    assert db.multi_get([]) == []
    # Any iterable of keys.
    assert db.multi_get(b"key%05d" % i for i in range(3)) == [b"value0", b"value1", b"value2"]
    with pytest.raises(TypeError):
        db.multi_get([b"ok", "str"])


def test_par_count(db: varve.Db) -> None:
    fill(db, 5000)
    db.flush()
    fill(db, 100)  # overwrites in the memtable
    assert db.par_count() == 5000
    assert db.par_count(threads=1) == 5000
    assert db.par_count(b"key01000", b"key02000", threads=4) == 1000
    assert db.par_count(start=b"key04990") == 10
    assert db.par_count(stop=b"key00010", fill_cache=False) == 10
    assert db.par_count(b"z", b"a") == 0


def test_checkpoint_is_an_openable_copy(db: varve.Db, tmp_path) -> None:
    fill(db, 2000)
    db.flush()
    db[b"late"] = b"memtable only"
    target = tmp_path / "copy"
    db.checkpoint(target)
    db[b"after"] = b"not in the copy"
    with varve.Db(target) as copy:
        assert copy[b"late"] == b"memtable only"
        assert b"after" not in copy
        assert copy.par_count() == 2001
        assert list(copy.items()) == [kv for kv in db.items() if kv[0] != b"after"]
    with pytest.raises(varve.InvalidArgumentError):
        db.checkpoint(target)  # not empty any more


def test_flush_compact_stats(db: varve.Db) -> None:
    fill(db, 3000)
    db.flush()
    for i in range(0, 3000, 2):
        del db[b"key%05d" % i]
    db.compact()
    db.compact(b"key00000", b"key01000")
    db.compact(start=b"key02000")
    db.wait_for_compactions()
    assert db.par_count() == 1500
    text = db.stats()
    assert "varve stats" in text
    d = db.stats_dict()
    assert d["user_writes"] > 0
    assert d["flushes"] >= 1
    assert len(d["levels"]) == 7
    assert {"files", "bytes", "score"} <= set(d["levels"][0])
    assert sum(level["files"] for level in d["levels"]) >= 1
    assert "memtables" in d["memory"]
    assert d["open_times"]["total"] >= 0.0
    db.resume()  # not poisoned: a no-op


def test_reopen_keeps_everything(db_path) -> None:
    with varve.Db(db_path) as db:
        fill(db, 500)
        db.flush()
        db[b"unflushed"] = b"in the WAL"
        db.put(b"synced", b"yes", sync=True)
        del db[b"key00001"]
    with varve.Db(db_path, create_if_missing=False) as db:
        assert db[b"unflushed"] == b"in the WAL"
        assert db[b"synced"] == b"yes"
        assert b"key00001" not in db
        assert db.par_count() == 501
    # Dropped without close(): the engine closes itself.
    db = varve.Db(db_path)
    db[b"dropped"] = b"1"
    del db
    import gc

    gc.collect()
    with varve.Db(db_path) as db:
        assert db[b"dropped"] == b"1"


def test_read_only(db_path) -> None:
    with varve.Db(db_path) as db:
        db[b"a"] = b"1"
    with varve.Db(db_path, read_only=True) as ro:
        assert ro.read_only
        assert ro[b"a"] == b"1"
        assert list(ro.items()) == [(b"a", b"1")]
        with pytest.raises(varve.Error):
            ro[b"b"] = b"2"
        with pytest.raises(varve.Error):
            ro.flush()


def test_options(tmp_path) -> None:
    opts = dict(
        write_buffer_size=1 << 20,
        cache_size=8 << 20,
        min_blob_size=None,
        blob_file_size=4 << 20,
        bloom_bits_per_key=12,
        compression="lz4",
        block_size=8192,
        max_open_files=64,
        use_direct_reads=False,
        io_engine="sync",
    )
    with varve.Db(tmp_path / "a", **opts) as db:
        fill(db, 1000)
        db.flush()
        assert db[b"key00500"] == b"value500"
    with varve.Db(tmp_path / "b", memory_budget=64 << 20, compression=None) as db:
        db[b"k"] = b"v"
        assert db.stats_dict()["memory"]["budget"] == 64 << 20
    with pytest.raises(varve.InvalidArgumentError, match="compression"):
        varve.Db(tmp_path / "c", compression="zstd")
    with pytest.raises(varve.InvalidArgumentError, match="io_engine"):
        varve.Db(tmp_path / "c", io_engine="threads")
    with pytest.raises(varve.InvalidArgumentError, match="memory_budget"):
        varve.Db(tmp_path / "c", memory_budget=1 << 20)
    with pytest.raises(TypeError):
        varve.Db(tmp_path / "c", no_such_option=1)
    # Sub-second TTLs are honoured; under a millisecond they are refused.
    with varve.Db(tmp_path / "d", ttl=0.5) as db:
        db[b"k"] = b"v"
    with pytest.raises(varve.InvalidArgumentError, match="ttl"):
        varve.Db(tmp_path / "c", ttl=0.0005)
    with pytest.raises(varve.InvalidArgumentError, match="ttl"):
        varve.Db(tmp_path / "c", ttl=-1.0)


def test_ttl_hides_expired_keys(tmp_path) -> None:
    import time

    with varve.Db(tmp_path / "ttl", ttl=1) as db:
        db[b"old"] = b"v"
        assert db[b"old"] == b"v", "never early"
        deadline = time.monotonic() + 20
        while db.get(b"old") is not None:
            assert time.monotonic() < deadline, "the key never expired"
            time.sleep(0.1)
        db[b"new"] = b"v"
        assert [k for k, _ in db.items()] == [b"new"]


def test_signature_documents_the_engine_default() -> None:
    sig = inspect.signature(varve.Db)
    assert sig.parameters["min_blob_size"].default == varve.DEFAULT_MIN_BLOB_SIZE
    assert "create_if_missing" in (varve.Db.__doc__ or "")
    assert varve.Db.items.__doc__


def test_destroy(db_path) -> None:
    with varve.Db(db_path) as db:
        db[b"a"] = b"1"
        with pytest.raises(varve.BusyError):
            varve.destroy(db_path)
    varve.destroy(str(db_path))
    assert not db_path.exists()
    with pytest.raises(varve.NotFoundError):
        varve.Db(db_path, create_if_missing=False)


def test_path_and_repr(db: varve.Db, db_path) -> None:
    assert db.path == db_path
    assert "open" in repr(db)
    assert not db.closed
    db.close()
    assert db.closed
    assert "closed" in repr(db)
    assert isinstance(varve.io_uring_available(), bool)
    assert varve.__version__
