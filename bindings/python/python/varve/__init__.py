"""varve: an embedded, persistent, ordered key-value store.

Keys and values are ``bytes``. A ``Db`` behaves like a dict kept in key
order on disk::

    import varve

    with varve.Db("/tmp/example-db") as db:
        db[b"apple"] = b"red"
        db.put(b"banana", b"yellow", sync=True)
        assert db[b"apple"] == b"red"
        assert db.get(b"cherry") is None

        with db.write_batch() as b:       # atomic
            b.put(b"cherry", b"dark red")
            b.delete(b"apple")

        with db.snapshot() as s:          # a consistent view
            for key, value in s.items(start=b"b"):
                print(key, value)

        for key in db.keys(reverse=True): # lazy, GIL released while reading
            print(key)

Every engine call releases the GIL, so a ``Db`` can serve many threads.
Errors are ``varve.Error`` subclasses (see ``varve._errors``).
"""

from ._errors import (
    AlreadyExistsError,
    BusyError,
    ClosedError,
    CorruptionError,
    Error,
    InvalidArgumentError,
    NotFoundError,
    PoisonedError,
    ReadOnlyError,
    UnsupportedVersionError,
    VarveIOError,
)
from ._varve import (
    DEFAULT_MIN_BLOB_SIZE,
    Db,
    DbIterator,
    Snapshot,
    WriteBatch,
    __version__,
    destroy,
    io_uring_available,
)

__all__ = [
    "Db",
    "DbIterator",
    "Snapshot",
    "WriteBatch",
    "destroy",
    "io_uring_available",
    "DEFAULT_MIN_BLOB_SIZE",
    "Error",
    "CorruptionError",
    "UnsupportedVersionError",
    "VarveIOError",
    "InvalidArgumentError",
    "BusyError",
    "NotFoundError",
    "AlreadyExistsError",
    "PoisonedError",
    "ReadOnlyError",
    "ClosedError",
    "__version__",
]
