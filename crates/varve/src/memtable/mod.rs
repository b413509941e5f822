//! The memtable: recent writes, sorted by internal key, in memory.
//!
//! One [`MemTable`] is one fixed-size arena (a single allocation, exact
//! accounting) holding a lock-free skiplist: `arena` (bump allocator, `u32`
//! offsets, the only raw memory access), `skiplist` (node layout, CAS-linked
//! concurrent inserts, Acquire/Release publication, searches) and `table`
//! (the engine-facing [`MemTable`] and its `MemTableIterator`).
//!
//! Thread-safety: many threads may `add` concurrently while any number of
//! `get`s and iterators run, with no locks. Invariants: entries are never
//! changed or removed; `memory_usage() <= capacity()`; an `add` uses at most
//! [`MemTable::entry_charge`] bytes and a failed `add` changes nothing.
//!
//! # Model checking with loom
//!
//! ```text
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test -p varve --release --lib memtable
//! ```
//!
//! Under `--cfg loom` the arena's atomic words (skiplist links and node
//! length headers) live in a side table of loom atomics, `MAX_HEIGHT` is 3
//! and node heights are a function of the user key, so executions are
//! deterministic. Two loom tests run two inserting threads (keys 1 and 2,
//! heights 2 and 3, contending for the same links) on a list holding key 3,
//! against a reader thread: one reader iterates forward, the other does a
//! point lookup. The reader must only see sorted, fully written entries (the
//! length words it reads are loom-tracked, so a publication missing its
//! Release/Acquire edge shows up as a zero length); afterwards every key is
//! found, every level is sorted, the count is right and backward iteration
//! agrees. They run with a preemption bound of 3 (`LOOM_MAX_PREEMPTIONS`
//! overrides it), in under a minute (release). Checked by mutation: weakening the
//! linking CAS to Relaxed, or the readers' link loads to Relaxed, makes them
//! fail.
//!
//! Not covered by loom: the key and value *bytes* are plain memory, which
//! loom does not model (their visibility rides on the same Release/Acquire
//! edge as the length words, which loom does check); interleavings beyond
//! the preemption bound; heights above 3; and the bump allocator only as
//! far as two inserts contend on it. The multi-threaded stress test in
//! `tests` exercises the real (non-loom) layout.

mod arena;
mod skiplist;
mod table;

#[cfg(all(test, loom))]
mod loom_tests;
#[cfg(all(test, not(loom)))]
mod tests;

pub(crate) use arena::MemTableFull;
pub(crate) use table::MemTable;
