//! Parallel scans: [`Db::par_scan`](crate::Db::par_scan),
//! [`Db::par_scan_ordered`](crate::Db::par_scan_ordered) and
//! [`Db::par_count`](crate::Db::par_count).
//!
//! A scan pins one snapshot (the caller's, or a fresh one) for its whole
//! life, so every chunk sees the same state however writes, flushes and
//! compactions interleave. The range (intersected with the read options'
//! bounds) is cut by anchors ([`super::anchors`]) into many more chunks than
//! threads: `threads * CHUNKS_PER_THREAD`, more if a chunk would exceed
//! `MAX_CHUNK_BYTES`, at most `MAX_CHUNKS`. Each chunk is read by its own
//! [`DbIterator`] bounded to the chunk, with the cursor API (`key()` /
//! `value()` borrow; nothing is allocated per entry).
//!
//! Hand-out: workers pull chunk numbers from one shared atomic cursor
//! (dynamic, so skew in the estimates evens out). Unordered scans hand out
//! the largest chunks first; the caller's thread is one of the workers. The
//! ordered scan hands chunks out in key order to `threads` worker threads
//! that fill per-chunk buffers; the caller's thread consumes them in key
//! order. A worker waits before starting chunk `i` until
//! `i < delivered + 2 * threads`, so at most `2 * threads` chunks (each at
//! most about `MAX_CHUNK_BYTES`) are buffered; the chunk the consumer waits
//! for is always being read or ready, so this never deadlocks.
//!
//! Errors: the first error (from the engine or the callback) sets a stop
//! flag that every worker checks before each entry, and is returned once all
//! workers have stopped. A panicking worker also sets it (the panic is then
//! propagated by `std::thread::scope`).
//!
//! Thread-safety: the callback of the unordered scans runs on several
//! threads at once (`Fn + Sync`); the ordered callback runs only on the
//! caller's thread (`FnMut`).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use parking_lot::{Condvar, Mutex};

use super::Tree;
use super::anchors::{self, KeyRange};
use crate::db::{DbIterator, Snapshot};
use crate::error::{Error, Result};
use crate::options::{ReadOptions, ScanPrefetch};

/// Chunks per thread when the range is small enough.
pub(crate) const CHUNKS_PER_THREAD: usize = 8;
/// Largest estimated size of one chunk (bounds the ordered scan's buffers).
pub(crate) const MAX_CHUNK_BYTES: u64 = 16 << 20;
/// Most chunks one scan is cut into.
pub(crate) const MAX_CHUNKS: usize = 1 << 16;

/// The chunk an entry given to a scan callback belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkInfo {
    /// Position of the chunk in key order (`0..chunks`).
    pub index: usize,
    /// Number of chunks of the scan.
    pub chunks: usize,
    /// The chunk's keys (inside the scanned range); chunks are contiguous
    /// and disjoint.
    pub range: KeyRange,
    /// Estimated bytes of the chunk (see [`Anchors`](crate::Anchors)).
    pub estimated_bytes: u64,
}

/// A scan's snapshot and chunks.
struct Plan {
    snapshot: Snapshot,
    chunks: Vec<ChunkInfo>,
    /// The caller's read-ahead and cache choices, for every chunk's iterator.
    readahead_size: usize,
    fill_cache: bool,
    /// Prefetch in the chunks' iterators: only when the caller asked for
    /// it on parallel scans too (`ScanPrefetch::Always`).
    prefetch: bool,
}

impl Plan {
    fn new(db: Tree<'_>, opts: &ReadOptions, range: &KeyRange, threads: usize) -> Result<Plan> {
        let snapshot = opts.snapshot.clone().unwrap_or_else(|| {
            let inner = db.db;
            inner
                .snapshots
                .acquire(inner.writes.visible_sequence(&inner.last_sequence))
        });
        let bounds = KeyRange::from_bounds(
            opts.iterate_lower_bound.clone(),
            opts.iterate_upper_bound.clone(),
        );
        let range = range.intersect(&bounds);
        let pieces = if range.is_empty() {
            vec![(range, 0)]
        } else {
            let want = threads
                .saturating_mul(CHUNKS_PER_THREAD)
                .clamp(1, MAX_CHUNKS);
            let a = anchors::approximate_key_anchors(db.db, db.id, &range, MAX_CHUNKS * 4)?;
            let by_size = a.total_bytes().div_ceil(MAX_CHUNK_BYTES);
            let parts = usize::try_from(by_size)
                .unwrap_or(MAX_CHUNKS)
                .clamp(want, MAX_CHUNKS);
            anchors::split_anchors(&a, &range, parts)
        };
        let n = pieces.len();
        let chunks = pieces
            .into_iter()
            .enumerate()
            .map(|(index, (range, estimated_bytes))| ChunkInfo {
                index,
                chunks: n,
                range,
                estimated_bytes,
            })
            .collect();
        Ok(Plan {
            snapshot,
            chunks,
            readahead_size: opts.readahead_size,
            fill_cache: opts.fill_cache,
            prefetch: opts.scan_prefetch == ScanPrefetch::Always,
        })
    }

    /// An iterator over chunk `c`, positioned on its first entry.
    fn open(&self, db: Tree<'_>, c: &ChunkInfo) -> DbIterator {
        let opts = ReadOptions {
            snapshot: Some(self.snapshot.clone()),
            iterate_lower_bound: c.range.start.clone(),
            iterate_upper_bound: c.range.end.clone(),
            readahead_size: self.readahead_size,
            fill_cache: self.fill_cache,
            scan_prefetch: if self.prefetch {
                ScanPrefetch::Always
            } else {
                ScanPrefetch::Off
            },
            ..ReadOptions::default()
        };
        let mut it = super::iter(db.db, db.id, &opts);
        it.seek_to_first();
        it
    }
}

/// `threads`, or the machine's parallelism for 0.
fn thread_count(threads: usize) -> usize {
    if threads > 0 {
        return threads;
    }
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Sets the stop flag if the thread unwinds, so other threads end too.
struct StopOnPanic<'a>(&'a dyn Fn());

impl Drop for StopOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            (self.0)();
        }
    }
}

/// Runs `per_chunk` on every chunk, largest first, on `threads` threads (the
/// caller's included); the first error stops the others and is returned.
fn run_unordered<E, F>(db: Tree<'_>, plan: &Plan, threads: usize, per_chunk: F) -> Result<(), E>
where
    E: From<Error> + Send,
    F: Fn(&ChunkInfo, &mut DbIterator, &AtomicBool) -> Result<(), E> + Sync,
{
    let mut order: Vec<usize> = (0..plan.chunks.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(plan.chunks[i].estimated_bytes));
    let cursor = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let first_error: Mutex<Option<E>> = Mutex::new(None);
    let set_stop = || stop.store(true, Ordering::Release);
    let worker = || {
        let _guard = StopOnPanic(&set_stop);
        while !stop.load(Ordering::Acquire) {
            let Some(&i) = order.get(cursor.fetch_add(1, Ordering::Relaxed)) else {
                break;
            };
            let chunk = &plan.chunks[i];
            let mut it = plan.open(db, chunk);
            let done = per_chunk(chunk, &mut it, &stop).and_then(|()| it.status().map_err(E::from));
            if let Err(e) = done {
                first_error.lock().get_or_insert(e);
                set_stop();
                break;
            }
        }
    };
    let threads = thread_count(threads).min(plan.chunks.len()).max(1);
    std::thread::scope(|s| {
        for _ in 1..threads {
            s.spawn(worker);
        }
        worker();
    });
    match first_error.into_inner() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// See [`Db::par_scan`](crate::Db::par_scan).
pub(crate) fn par_scan<E, F>(
    db: Tree<'_>,
    opts: &ReadOptions,
    range: &KeyRange,
    threads: usize,
    f: F,
) -> Result<(), E>
where
    E: From<Error> + Send,
    F: Fn(&ChunkInfo, &[u8], &[u8]) -> Result<(), E> + Sync,
{
    let threads = thread_count(threads);
    let plan = Plan::new(db, opts, range, threads)?;
    run_unordered(db, &plan, threads, |chunk, it, stop| {
        while it.valid() && !stop.load(Ordering::Relaxed) {
            let value = it.value();
            if !it.valid() {
                break; // its blob value could not be read: `status` has why
            }
            f(chunk, it.key(), value)?;
            it.move_next();
        }
        Ok(())
    })
}

/// See [`Db::par_count`](crate::Db::par_count).
pub(crate) fn par_count(
    db: Tree<'_>,
    opts: &ReadOptions,
    range: &KeyRange,
    threads: usize,
) -> Result<u64> {
    let threads = thread_count(threads);
    let plan = Plan::new(db, opts, range, threads)?;
    let total = AtomicU64::new(0);
    run_unordered(db, &plan, threads, |_chunk, it, stop| {
        let mut n = 0u64;
        while it.valid() {
            // Key-only: the value is never touched, let alone copied.
            n += 1;
            if n.is_multiple_of(1024) && stop.load(Ordering::Relaxed) {
                break;
            }
            it.move_next();
        }
        total.fetch_add(n, Ordering::Relaxed);
        Ok::<(), Error>(())
    })?;
    Ok(total.into_inner())
}

/// The entries of one chunk, packed: `data` holds key then value of each
/// entry, `ends` the end offsets of each key and value.
#[derive(Default)]
struct ChunkBuf {
    data: Vec<u8>,
    ends: Vec<(usize, usize)>,
}

impl ChunkBuf {
    fn push(&mut self, key: &[u8], value: &[u8]) {
        self.data.extend_from_slice(key);
        let k = self.data.len();
        self.data.extend_from_slice(value);
        self.ends.push((k, self.data.len()));
    }

    fn entries(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        let mut start = 0;
        self.ends.iter().map(move |&(k, v)| {
            let e = (&self.data[start..k], &self.data[k..v]);
            start = v;
            e
        })
    }
}

/// What the ordered scan's workers and consumer share under one lock.
struct Reorder<E> {
    /// Chunks read and not yet taken by the consumer.
    ready: BTreeMap<usize, ChunkBuf>,
    /// Chunks taken by the consumer so far (the next one it wants).
    delivered: usize,
    /// Set when everyone must stop (an error or a panic).
    stop: bool,
    error: Option<E>,
}

/// See [`Db::par_scan_ordered`](crate::Db::par_scan_ordered).
pub(crate) fn par_scan_ordered<E, F>(
    db: Tree<'_>,
    opts: &ReadOptions,
    range: &KeyRange,
    threads: usize,
    mut f: F,
) -> Result<(), E>
where
    E: From<Error> + Send,
    F: FnMut(&ChunkInfo, &[u8], &[u8]) -> Result<(), E>,
{
    let threads = thread_count(threads);
    let plan = Plan::new(db, opts, range, threads)?;
    let n = plan.chunks.len();
    let window = 2 * threads;
    let cursor = AtomicUsize::new(0);
    let quick_stop = AtomicBool::new(false);
    let state = Mutex::new(Reorder::<E> {
        ready: BTreeMap::new(),
        delivered: 0,
        stop: false,
        error: None,
    });
    let changed = Condvar::new();
    let halt = |error: Option<E>| {
        let mut st = state.lock();
        st.stop = true;
        if st.error.is_none() {
            st.error = error;
        }
        quick_stop.store(true, Ordering::Release);
        changed.notify_all();
    };
    let halt_on_panic = || halt(None);
    let worker = || {
        let _guard = StopOnPanic(&halt_on_panic);
        loop {
            let i = cursor.fetch_add(1, Ordering::Relaxed);
            if i >= n {
                break;
            }
            {
                let mut st = state.lock();
                while !st.stop && i >= st.delivered + window {
                    changed.wait(&mut st);
                }
                if st.stop {
                    break;
                }
            }
            let chunk = &plan.chunks[i];
            let mut it = plan.open(db, chunk);
            let mut buf = ChunkBuf::default();
            while it.valid() && !quick_stop.load(Ordering::Relaxed) {
                let value = it.value();
                if !it.valid() {
                    break; // its blob value could not be read
                }
                buf.push(it.key(), value);
                it.move_next();
            }
            if let Err(e) = it.status() {
                halt(Some(E::from(e)));
                break;
            }
            let mut st = state.lock();
            st.ready.insert(i, buf);
            changed.notify_all();
        }
    };
    std::thread::scope(|s| {
        for _ in 0..threads.min(n) {
            s.spawn(worker);
        }
        // A panicking callback must not leave workers waiting forever.
        let _guard = StopOnPanic(&halt_on_panic);
        for chunk in &plan.chunks {
            let buf = {
                let mut st = state.lock();
                loop {
                    if st.stop {
                        // An error (returned below) or a panic (re-raised
                        // by the scope).
                        return st.error.take().map_or(Ok(()), Err);
                    }
                    if let Some(b) = st.ready.remove(&chunk.index) {
                        st.delivered = chunk.index + 1;
                        changed.notify_all();
                        break b;
                    }
                    changed.wait(&mut st);
                }
            };
            for (k, v) in buf.entries() {
                if let Err(e) = f(chunk, k, v) {
                    halt(None);
                    return Err(e);
                }
            }
        }
        Ok(())
    })
}
