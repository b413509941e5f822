"""Type stubs of the native module ``varve._varve`` (import ``varve``)."""

from __future__ import annotations

import os
import pathlib
from typing import (
    Any,
    Dict,
    Iterable,
    Iterator,
    List,
    Literal,
    Optional,
    Tuple,
    TypeVar,
    Union,
    final,
    overload,
)

# Anything exporting the buffer protocol; ``str`` is refused.
_BytesLike = Union[bytes, bytearray, memoryview]
_StrPath = Union[str, "os.PathLike[str]"]
_T = TypeVar("_T")
_D = TypeVar("_D")

__all__ = [
    "Db",
    "DbIterator",
    "Snapshot",
    "WriteBatch",
    "destroy",
    "io_uring_available",
    "DEFAULT_MIN_BLOB_SIZE",
    "__version__",
]

__version__: str
DEFAULT_MIN_BLOB_SIZE: Optional[int]

def destroy(path: _StrPath) -> None:
    """Deletes the database in ``path``. Raises ``BusyError`` if it is open."""

def io_uring_available() -> bool:
    """True when this kernel lets the process use io_uring."""

@final
class DbIterator(Iterator[_T]):
    """A lazy iterator over a range of a database (see ``Db.items``)."""

    def __iter__(self) -> DbIterator[_T]: ...
    def __next__(self) -> _T: ...
    def close(self) -> None:
        """Ends the iteration now; ``next()`` then raises ``ClosedError``."""
    def __enter__(self) -> DbIterator[_T]: ...
    def __exit__(self, *args: object) -> bool: ...

@final
class WriteBatch:
    """Puts and deletes applied atomically."""

    def __new__(cls) -> WriteBatch: ...
    def put(self, key: _BytesLike, value: _BytesLike) -> None: ...
    def delete(self, key: _BytesLike) -> None: ...
    def delete_range(self, start: _BytesLike, end: _BytesLike) -> None: ...
    def __setitem__(self, key: _BytesLike, value: _BytesLike, /) -> None: ...
    def __delitem__(self, key: _BytesLike, /) -> None: ...
    def clear(self) -> None: ...
    def __len__(self) -> int: ...
    @property
    def size_in_bytes(self) -> int: ...
    @property
    def finished(self) -> bool: ...
    def commit(self) -> None:
        """Applies the batch to the database it came from (``db.write_batch()``)."""
    def discard(self) -> None: ...
    def __enter__(self) -> WriteBatch: ...
    def __exit__(self, *args: object) -> bool: ...

@final
class Snapshot:
    """A consistent read-only view of the database at one moment."""

    @overload
    def get(self, key: _BytesLike) -> Optional[bytes]: ...
    @overload
    def get(self, key: _BytesLike, default: _D) -> Union[bytes, _D]: ...
    def __getitem__(self, key: _BytesLike, /) -> bytes: ...
    def __contains__(self, key: _BytesLike, /) -> bool: ...
    def multi_get(
        self, keys: Iterable[_BytesLike], *, async_io: bool = True
    ) -> List[Optional[bytes]]: ...
    def items(
        self,
        start: Optional[_BytesLike] = None,
        stop: Optional[_BytesLike] = None,
        *,
        reverse: bool = False,
        shared_passes: bool = True,
    ) -> DbIterator[Tuple[bytes, bytes]]: ...
    def keys(
        self,
        start: Optional[_BytesLike] = None,
        stop: Optional[_BytesLike] = None,
        *,
        reverse: bool = False,
        shared_passes: bool = True,
    ) -> DbIterator[bytes]: ...
    def values(
        self,
        start: Optional[_BytesLike] = None,
        stop: Optional[_BytesLike] = None,
        *,
        reverse: bool = False,
        shared_passes: bool = True,
    ) -> DbIterator[bytes]: ...
    def __iter__(self) -> DbIterator[bytes]: ...
    def par_count(
        self,
        start: Optional[_BytesLike] = None,
        stop: Optional[_BytesLike] = None,
        *,
        threads: int = 0,
        fill_cache: bool = True,
    ) -> int: ...
    @property
    def sequence(self) -> int: ...
    @property
    def released(self) -> bool: ...
    def release(self) -> None: ...
    def __enter__(self) -> Snapshot: ...
    def __exit__(self, *args: object) -> bool: ...

@final
class Db:
    """An open varve database: an ordered, persistent map from bytes to bytes."""

    def __new__(
        cls,
        path: _StrPath,
        *,
        create_if_missing: bool = True,
        error_if_exists: bool = False,
        read_only: bool = False,
        write_buffer_size: Optional[int] = None,
        cache_size: Optional[int] = None,
        memory_budget: Optional[int] = None,
        min_blob_size: Optional[int] = 4096,
        blob_file_size: Optional[int] = None,
        bloom_bits_per_key: Optional[int] = None,
        compression: Optional[Literal["none", "lz4"]] = None,
        block_size: Optional[int] = None,
        max_open_files: Optional[int] = None,
        use_direct_reads: bool = False,
        io_engine: Optional[Literal["io_uring", "sync"]] = None,
        ttl: Optional[float] = None,
    ) -> Db: ...
    def close(self) -> None: ...
    def __enter__(self) -> Db: ...
    def __exit__(self, *args: object) -> bool: ...
    @property
    def closed(self) -> bool: ...
    @property
    def path(self) -> pathlib.Path: ...
    @property
    def read_only(self) -> bool: ...
    @overload
    def get(self, key: _BytesLike) -> Optional[bytes]: ...
    @overload
    def get(self, key: _BytesLike, default: _D) -> Union[bytes, _D]: ...
    def __getitem__(self, key: _BytesLike, /) -> bytes: ...
    def __contains__(self, key: _BytesLike, /) -> bool: ...
    def put(self, key: _BytesLike, value: _BytesLike, *, sync: bool = False) -> None: ...
    def __setitem__(self, key: _BytesLike, value: _BytesLike, /) -> None: ...
    def delete(self, key: _BytesLike, *, sync: bool = False) -> None: ...
    def delete_range(
        self, start: _BytesLike, end: _BytesLike, *, sync: bool = False
    ) -> None: ...
    def __delitem__(self, key: _BytesLike, /) -> None: ...
    def multi_get(
        self, keys: Iterable[_BytesLike], *, async_io: bool = True
    ) -> List[Optional[bytes]]: ...
    def write_batch(self, *, sync: bool = False) -> WriteBatch: ...
    def write(self, batch: WriteBatch, *, sync: bool = False) -> None: ...
    def snapshot(self) -> Snapshot: ...
    def items(
        self,
        start: Optional[_BytesLike] = None,
        stop: Optional[_BytesLike] = None,
        *,
        reverse: bool = False,
        shared_passes: bool = True,
    ) -> DbIterator[Tuple[bytes, bytes]]: ...
    def keys(
        self,
        start: Optional[_BytesLike] = None,
        stop: Optional[_BytesLike] = None,
        *,
        reverse: bool = False,
        shared_passes: bool = True,
    ) -> DbIterator[bytes]: ...
    def values(
        self,
        start: Optional[_BytesLike] = None,
        stop: Optional[_BytesLike] = None,
        *,
        reverse: bool = False,
        shared_passes: bool = True,
    ) -> DbIterator[bytes]: ...
    def __iter__(self) -> DbIterator[bytes]: ...
    def par_count(
        self,
        start: Optional[_BytesLike] = None,
        stop: Optional[_BytesLike] = None,
        *,
        threads: int = 0,
        fill_cache: bool = True,
    ) -> int: ...
    def checkpoint(self, path: _StrPath) -> None: ...
    def flush(self) -> None: ...
    def compact(
        self, start: Optional[_BytesLike] = None, stop: Optional[_BytesLike] = None
    ) -> None: ...
    def wait_for_compactions(self) -> None: ...
    def resume(self) -> None: ...
    def stats(self) -> str: ...
    def stats_dict(self) -> Dict[str, Any]: ...
