"""The exceptions varve raises.

Every failure the engine reports is an instance of :class:`Error`, with the
engine's message as its text. The subclasses say what went wrong; some also
derive from the built-in exception a Python programmer would expect
(``OSError`` for IO failures, ``ValueError`` for bad arguments and for use
of a closed object), so ``except OSError`` works as usual.

A missing key is not an engine error: ``db[key]`` raises the built-in
``KeyError``.
"""

from __future__ import annotations

__all__ = [
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
]


class Error(Exception):
    """Base class of every error varve raises."""


class CorruptionError(Error):
    """Data on disk failed a checksum or does not parse.

    The message names the damaged file and the byte offset.
    """


class UnsupportedVersionError(Error):
    """A file was written by a format version this build does not read."""


class VarveIOError(Error, OSError):
    """An operating-system IO error on a named file or directory.

    The message names the file; ``errno`` is set when the OS reported one.
    """


class InvalidArgumentError(Error, ValueError):
    """The engine refused an argument or an option (too large a key, a
    nonsensical option, a checkpoint target that is not empty, ...)."""


class BusyError(Error):
    """The database directory is locked by another open ``Db``, in this
    process or another one."""


class NotFoundError(Error):
    """The database does not exist and ``create_if_missing`` is false."""


class AlreadyExistsError(Error):
    """The database exists and ``error_if_exists`` is true."""


class PoisonedError(Error):
    """An earlier write failure stopped writes until the database is
    reopened or, after a full disk, ``Db.resume()`` succeeds. Reads go on."""


class ReadOnlyError(Error):
    """A write, flush or compaction on a database opened with
    ``read_only=True``."""


class ClosedError(Error, ValueError):
    """The database was closed (or the snapshot released, the batch
    committed, the iterator closed) before this use."""


# Shown (and pickled) as ``varve.X``, where they are re-exported.
for _cls in (
    Error,
    CorruptionError,
    UnsupportedVersionError,
    VarveIOError,
    InvalidArgumentError,
    BusyError,
    NotFoundError,
    AlreadyExistsError,
    PoisonedError,
    ReadOnlyError,
    ClosedError,
):
    _cls.__module__ = "varve"
del _cls
