"""Write batches: atomic commit, rollback on exception."""

from __future__ import annotations

import pytest

import varve


def test_batch_commits_on_normal_exit(db: varve.Db) -> None:
    db[b"gone"] = b"x"
    with db.write_batch() as b:
        b.put(b"a", b"1")
        b[b"b"] = b"2"
        b.delete(b"gone")
        assert len(b) == 3
        # Nothing is visible before the commit.
        assert db.get(b"a") is None
        assert db[b"gone"] == b"x"
    assert b.finished
    assert db[b"a"] == b"1"
    assert db[b"b"] == b"2"
    assert b"gone" not in db


def test_batch_is_discarded_when_the_block_raises(db: varve.Db) -> None:
    db[b"keep"] = b"old"
    with pytest.raises(RuntimeError, match="boom"):
        with db.write_batch(sync=True) as b:
            b.put(b"new", b"1")
            b.put(b"keep", b"changed")
            b.delete(b"keep")
            raise RuntimeError("boom")
    assert b.finished
    assert db.get(b"new") is None
    assert db[b"keep"] == b"old"


def test_operations_apply_in_order(db: varve.Db) -> None:
    with db.write_batch() as b:
        b.put(b"k", b"1")
        b.delete(b"k")
        b.put(b"k", b"2")
        b.put(b"j", b"1")
        b.delete(b"j")
    assert db[b"k"] == b"2"
    assert b"j" not in db


def test_explicit_commit_and_finished_batch(db: varve.Db) -> None:
    b = db.write_batch()
    b.put(b"x", b"1")
    b.commit()
    assert db[b"x"] == b"1"
    assert len(b) == 0
    with pytest.raises(varve.ClosedError):
        b.put(b"y", b"2")
    with pytest.raises(varve.ClosedError):
        b.commit()
    d = db.write_batch()
    d.put(b"z", b"1")
    d.discard()
    with pytest.raises(varve.ClosedError):
        d.commit()
    assert b"z" not in db


def test_free_standing_batch_and_db_write(db: varve.Db) -> None:
    b = varve.WriteBatch()
    b.put(b"a", b"1")
    b.put(bytearray(b"b"), memoryview(b"2"))
    b.clear()
    b.put(b"c", b"3")
    assert len(b) == 1 and b.size_in_bytes > 0
    db.write(b, sync=True)
    assert db.get(b"a") is None
    assert db[b"c"] == b"3"
    with pytest.raises(varve.ClosedError):
        db.write(b)
    with pytest.raises(varve.InvalidArgumentError):
        varve.WriteBatch().commit()


def test_empty_batch(db: varve.Db) -> None:
    with db.write_batch():
        pass
    assert list(db) == []


def test_batch_after_close_raises(db: varve.Db) -> None:
    b = db.write_batch()
    b.put(b"k", b"v")
    db.close()
    with pytest.raises(varve.ClosedError):
        b.commit()


def test_delete_range_on_the_db_and_in_a_batch(db: varve.Db) -> None:
    for i in range(20):
        db[b"k%02d" % i] = b"v"
    db.delete_range(b"k05", b"k10")
    assert [k for k, _ in db.items()] == [b"k%02d" % i for i in range(20) if not 5 <= i < 10]
    with db.write_batch() as b:
        b.put(b"k12", b"new")
        b.delete_range(b"k10", b"k15")
        b.put(b"k13", b"after")
    assert db.get(b"k12") is None, "deleted by the range that follows it in the batch"
    assert db[b"k13"] == b"after"
    assert db[b"k15"] == b"v", "the end of a range is not deleted"
    with pytest.raises(varve.InvalidArgumentError):
        db.delete_range(b"k09", b"k01")
