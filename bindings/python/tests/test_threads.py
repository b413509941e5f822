"""Threads: the GIL is released during engine calls; a Db serves many
threads; closing while another thread scans is safe."""

from __future__ import annotations

import collections
import functools
import itertools
import sys
import threading
import time
from typing import Callable, Iterator, List

import pytest

import varve

N_KEYS = 200_000


@pytest.fixture(scope="module")
def big_db(tmp_path_factory) -> Iterator[varve.Db]:
    """A database large enough that a full scan takes a while."""
    path = tmp_path_factory.mktemp("big") / "db"
    db = varve.Db(path, write_buffer_size=8 << 20)
    value = b"v" * 100
    for start in range(0, N_KEYS, 10_000):
        with db.write_batch() as b:
            for i in range(start, start + 10_000):
                b.put(b"key%08d" % i, value)
    db.flush()
    yield db
    db.close()


def progress_during(work: Callable[[], object]) -> int:
    """How many times another Python thread made progress in the middle of
    `work` running on this thread.

    A spinner thread notes the time every 100 increments of a counter. The
    interpreter may hand it the GIL at the edges of `work` (when bytecode
    runs there, for up to a switch interval, set to 1 ms here), so only
    notes from the middle of the run count, away from both ends by a tenth
    of the run plus 3 ms. `work` must be one native call: if it spends its
    time in native code holding the GIL, the middle has no note at all.
    """
    notes: List[float] = []
    stop = threading.Event()

    def spin() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            if n % 100 == 0:
                notes.append(time.perf_counter())

    interval = sys.getswitchinterval()
    sys.setswitchinterval(0.001)
    t = threading.Thread(target=spin)
    t.start()
    try:
        while not notes:  # the spinner is running
            time.sleep(0.001)
        t0 = time.perf_counter()
        work()
        t1 = time.perf_counter()
    finally:
        stop.set()
        t.join()
        sys.setswitchinterval(interval)
    margin = (t1 - t0) / 10 + 0.003
    return sum(1 for x in notes if t0 + margin < x < t1 - margin)


# Each work below is one native call (C-level `deque`, `map`, `chain`,
# `partial`: no bytecode runs between the engine calls) lasting 100 ms or
# more even in a release build, so the spinner has a long middle to show up
# in, however the machine is loaded. (Point reads and writes go through the
# same GIL-releasing path, `Handle::run`, but each lasts microseconds: on a
# loaded machine the caller takes the GIL back before the spinner is even
# scheduled, so they cannot be shown this way without flakiness.)


def test_scan_releases_the_gil(big_db: varve.Db) -> None:
    # deque(maxlen=0) consumes the iterators in C: no Python bytecode runs
    # on this thread during the scans, so the interpreter never hands the
    # GIL to the spinner by itself. The spinner only runs while an iterator
    # refill runs with the GIL released.
    iters = [big_db.items() for _ in range(4)]
    advanced = progress_during(
        lambda: collections.deque(itertools.chain.from_iterable(iters), maxlen=0)
    )
    assert all(next(it, None) is None for it in iters)  # the scans ran to the end
    assert advanced >= 20, f"the other thread advanced only {advanced} times"


def test_par_count_releases_the_gil(big_db: varve.Db) -> None:
    counts: collections.deque = collections.deque()
    count = functools.partial(big_db.par_count, threads=1)
    advanced = progress_during(lambda: counts.extend(map(count, [None] * 20)))
    assert list(counts) == [N_KEYS] * 20
    assert advanced >= 20, f"the other thread advanced only {advanced} times"


def test_multi_get_releases_the_gil(big_db: varve.Db) -> None:
    keys = [b"key%08d" % i for i in range(0, N_KEYS, 3)]
    got: collections.deque = collections.deque()
    advanced = progress_during(lambda: got.extend(map(big_db.multi_get, [keys] * 6)))
    assert len(got) == 6 and got[5][0] == b"v" * 100 and len(got[5]) == len(keys)
    assert advanced >= 20, f"the other thread advanced only {advanced} times"


def test_many_threads_share_one_db(db: varve.Db) -> None:
    errors: List[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(1000):
                key = b"t%d-%05d" % (n, i)
                db[key] = key
                assert db[key] == key
            with db.write_batch() as b:
                for i in range(1000):
                    b.delete(b"t%d-%05d" % (n, i) if i % 2 else b"none")
            assert sum(1 for _ in db.keys(b"t%d-" % n, b"t%d." % n)) == 500
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert db.par_count() == 6 * 500


def test_close_while_another_thread_scans(tmp_path) -> None:
    db = varve.Db(tmp_path / "db")
    with db.write_batch() as b:
        for i in range(50_000):
            b.put(b"%08d" % i, b"x" * 50)
    outcome: List[str] = []
    started = threading.Event()

    def scan() -> None:
        try:
            while True:
                for _ in db.items():
                    started.set()
        except varve.ClosedError:
            outcome.append("closed")
        except BaseException as e:  # noqa: BLE001 - reported below
            outcome.append(repr(e))

    t = threading.Thread(target=scan)
    t.start()
    assert started.wait(30)
    db.close()
    t.join(30)
    assert not t.is_alive()
    assert outcome == ["closed"]
    # The directory is free again.
    with varve.Db(tmp_path / "db") as again:
        assert again.par_count() == 50_000


def test_one_iterator_shared_by_threads_yields_each_entry_once(db: varve.Db) -> None:
    with db.write_batch() as b:
        for i in range(20_000):
            b.put(b"%06d" % i, b"")
    it = db.keys()
    seen: List[List[bytes]] = [[] for _ in range(4)]

    def take(n: int) -> None:
        for k in it:
            seen[n].append(k)

    threads = [threading.Thread(target=take, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    everything = sorted(k for part in seen for k in part)
    assert everything == [b"%06d" % i for i in range(20_000)]
