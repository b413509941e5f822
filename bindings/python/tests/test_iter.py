"""Lazy iteration with bounds, both ways, checked against a sorted dict."""

from __future__ import annotations

import bisect
import random
from typing import Dict, List, Optional, Tuple

import pytest

import varve


def model_range(
    model: Dict[bytes, bytes],
    start: Optional[bytes],
    stop: Optional[bytes],
    reverse: bool,
) -> List[Tuple[bytes, bytes]]:
    keys = sorted(model)
    lo = 0 if start is None else bisect.bisect_left(keys, start)
    hi = len(keys) if stop is None else bisect.bisect_left(keys, stop)
    out = [(k, model[k]) for k in keys[lo:max(lo, hi)]]
    return out[::-1] if reverse else out


def random_key(rng: random.Random) -> bytes:
    return bytes(rng.choice(b"\x00abcz\xff") for _ in range(rng.randint(1, 4)))


@pytest.fixture
def filled(db: varve.Db) -> Tuple[varve.Db, Dict[bytes, bytes]]:
    """A database with tables and memtable entries, overwrites and deletes,
    and its model."""
    rng = random.Random(7)
    model: Dict[bytes, bytes] = {}
    for round_ in range(3):
        for _ in range(400):
            k = random_key(rng)
            if rng.random() < 0.25:
                db.delete(k)
                model.pop(k, None)
            else:
                v = b"v%d-%d" % (round_, rng.randint(0, 1 << 30))
                db[k] = v
                model[k] = v
        if round_ < 2:
            db.flush()
    return db, model


def test_bounds_both_ways_match_the_model(filled) -> None:
    db, model = filled
    rng = random.Random(11)
    bounds: List[Optional[bytes]] = [None, b"", b"a", b"b", b"\xff\xff\xff\xff\xff"]
    bounds += [random_key(rng) for _ in range(25)]
    bounds += list(rng.sample(sorted(model), 10))
    for start in bounds:
        for stop in bounds:
            for reverse in (False, True):
                want = model_range(model, start, stop, reverse)
                got = list(db.items(start, stop, reverse=reverse))
                assert got == want, (start, stop, reverse)
                assert list(db.keys(start, stop, reverse=reverse)) == [k for k, _ in want]
                assert list(db.values(start=start, stop=stop, reverse=reverse)) == [
                    v for _, v in want
                ]


def test_whole_range_and_iter(filled) -> None:
    db, model = filled
    assert list(db) == sorted(model)
    assert list(db.items()) == sorted(model.items())
    assert list(db.items(reverse=True)) == sorted(model.items(), reverse=True)


def test_empty_ranges(db: varve.Db) -> None:
    assert list(db.items()) == []
    assert list(db.items(reverse=True)) == []
    for k in (b"a", b"b", b"c"):
        db[k] = k
    for start, stop in [(b"b", b"b"), (b"c", b"a"), (None, b""), (b"d", None), (b"bb", b"c")]:
        assert list(db.items(start, stop)) == []
        assert list(db.items(start, stop, reverse=True)) == []
    assert list(db.items(b"b", b"b\x00")) == [(b"b", b"b")]
    assert list(db.keys(b"", b"b", reverse=True)) == [b"a"]


def test_iterators_are_lazy(db: varve.Db) -> None:
    for i in range(10000):
        db[b"%05d" % i] = b"x"
    it = db.keys()
    assert isinstance(it, varve.DbIterator)
    assert not isinstance(it, list)
    assert iter(it) is it
    assert next(it) == b"00000"
    assert next(it) == b"00001"
    # Stopping early is fine; the rest is never read.
    for n, _ in enumerate(it):
        if n == 10:
            break
    assert next(it) == b"00013"
    it.close()
    with pytest.raises(varve.ClosedError):
        next(it)
    rev = db.items(stop=b"00100", reverse=True)
    assert next(rev) == (b"00099", b"x")
    assert sum(1 for _ in rev) == 99
    with pytest.raises(StopIteration):
        next(rev)


def test_iterator_sees_the_database_as_of_its_creation(db: varve.Db) -> None:
    db[b"a"] = b"1"
    it = db.items()
    db[b"b"] = b"2"
    db[b"a"] = b"changed"
    assert list(it) == [(b"a", b"1")]


def test_values_from_blob_files(db_path) -> None:
    with varve.Db(db_path, min_blob_size=16) as db:
        model = {b"k%04d" % i: bytes([i % 256]) * (100 + i) for i in range(500)}
        for k, v in model.items():
            db[k] = v
        db.flush()
        assert list(db.items()) == sorted(model.items())
        assert list(db.values(reverse=True)) == [v for _, v in sorted(model.items(), reverse=True)]


def test_iterator_as_context_manager(db: varve.Db) -> None:
    db[b"a"] = b"1"
    with db.items() as it:
        assert next(it) == (b"a", b"1")
    with pytest.raises(varve.ClosedError):
        next(it)


def test_shared_passes_share_one_merge_and_see_the_same(filled) -> None:
    """Two iterators from the first key at once share one merge (a pass)
    unless ``shared_passes=False``; either way each sees the model."""
    db, model = filled
    want = sorted(model.items())
    for shared in (False, True):
        before = db.stats_dict()["shared_passes"]
        a = db.items(shared_passes=shared)
        b = db.items(shared_passes=shared)
        got_a: List[Tuple[bytes, bytes]] = []
        got_b: List[Tuple[bytes, bytes]] = []
        for x, y in zip(a, b):
            got_a.append(x)
            got_b.append(y)
        got_a.extend(a)
        got_b.extend(b)
        assert got_a == want and got_b == want
        passes = db.stats_dict()["shared_passes"] - before
        assert (passes >= 1) if shared else (passes == 0), (shared, passes)
    assert list(db.keys(shared_passes=False)) == [k for k, _ in want]
    assert list(db.values(shared_passes=True)) == [v for _, v in want]
    snap = db.snapshot()
    assert list(snap.items(shared_passes=False)) == want
    assert list(snap.keys(shared_passes=True)) == [k for k, _ in want]
