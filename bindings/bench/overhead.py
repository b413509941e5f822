"""The binding-overhead loop, in Python, for varve and its peers.

The same loop as ``overhead.rs`` (the Rust reference) and ``overhead.c``:
``fill`` puts NUM 16-byte keys (``%016d`` of a permuted index) with
100-byte values in a fixed pseudo-random order, unsynced; then the
database is closed and reopened (db_bench's readrandom on an existing
database); ``read`` makes one untimed pass over every key (hot in a 256 MiB
block cache),
then NUM timed gets in another fixed order, each checked. Prints one line
per phase: ``<engine> fill <ops/s>`` and ``<engine> read <ops/s>``.

    python overhead.py ENGINE DIR [NUM]     (ENGINE: varve, plyvel, rocksdict)
"""

import shutil
import sys
import time

FILL_STEP = 999_983
READ_STEP = 7_919


def key(i):
    return b"%016d" % i


def value(i):
    return (b"%016d" % i).ljust(100, b"x")


def open_engine(engine, path):
    """(put, get, close) for ENGINE at PATH, each with a 256 MiB block cache."""
    if engine == "varve":
        import varve

        db = varve.Db(path, create_if_missing=True, cache_size=256 << 20)
        return db.put, db.get, db.close
    if engine == "plyvel":
        import plyvel

        db = plyvel.DB(path, create_if_missing=True, lru_cache_size=256 << 20)
        return db.put, db.get, db.close
    if engine == "rocksdict":
        import rocksdict

        opts = rocksdict.Options(raw_mode=True)
        opts.create_if_missing(True)
        table = rocksdict.BlockBasedOptions()
        table.set_block_cache(rocksdict.Cache(256 << 20))
        opts.set_block_based_table_factory(table)
        db = rocksdict.Rdict(path, options=opts)
        return db.put, db.get, db.close
    raise SystemExit(f"unknown engine {engine!r}")


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    engine, path = sys.argv[1], sys.argv[2]
    num = int(sys.argv[3]) if len(sys.argv) > 3 else 1_000_000
    if num % FILL_STEP == 0 or num % READ_STEP == 0:
        raise SystemExit("bad NUM")
    shutil.rmtree(path, ignore_errors=True)
    put, get, close = open_engine(engine, path)

    t = time.perf_counter()
    for j in range(num):
        i = j * FILL_STEP % num
        put(key(i), value(i))
    print(f"{engine} fill {num / (time.perf_counter() - t):.0f}", flush=True)
    close()
    put, get, close = open_engine(engine, path)

    for i in range(num):
        if get(key(i)) is None:
            raise SystemExit(f"{engine}: key {i} missing")
    t = time.perf_counter()
    found = 0
    for j in range(num):
        i = j * READ_STEP % num
        v = get(key(i))
        if v is not None:
            if len(v) != 100:
                raise SystemExit(f"{engine}: key {i}: {len(v)} bytes")
            found += 1
    rate = num / (time.perf_counter() - t)
    if found != num:
        raise SystemExit(f"{engine}: found {found} of {num}")
    print(f"{engine} read {rate:.0f}", flush=True)
    close()


if __name__ == "__main__":
    main()
