//! [`SharedChunks`]: one database's pool of resident blob-file chunks that
//! concurrent scans share (`Options::shared_scan_bytes`,
//! `docs/blob-files.md`, "Shared scan chunks").
//!
//! Blob files are cut into a fixed grid of [`CHUNK`]-byte chunks (chunk
//! `i` of a file is its bytes `i * CHUNK ..`), so every iterator names the
//! same chunk for the same bytes. A scan that needs a value asks for its
//! chunk: a resident chunk serves it with no IO; a chunk another scan is
//! loading is waited for, not read again; a missing chunk is read once, in
//! one aligned read, into a buffer of the pool. The pool never holds more
//! than its budget of buffers: a load takes a free buffer, or a new one
//! while the budget allows, or the least recently used chunk that no scan
//! is copying from; when none is left it reports `None` and the caller
//! reads the value alone (degrading to one read per value, never growing).
//!
//! Leaders wait for nobody: the first scan to reach a chunk loads it, and
//! every scan behind it finds it resident as long as fewer than a budget's
//! worth of chunks were loaded since (least recently used goes first).
//!
//! Thread-safe: one mutex around the map, held to find, reserve or publish
//! a chunk, never across a read; a condition variable wakes the scans
//! waiting for a chunk being loaded. Invariants: `used` (bytes of every
//! buffer the pool owns: resident, loading or free) never exceeds the
//! budget; a chunk is `Ready` only with the bytes its file held at its
//! offset when it was read; a chunk some caller copies from
//! (`Arc` shared) is never evicted; a failed load leaves no entry.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Condvar, Mutex};

use crate::error::Result;
use crate::io::AlignedBuf;

/// Bytes of one chunk (whole pages, for direct IO).
pub(crate) const CHUNK: usize = 1 << 20;

/// A resident chunk: the bytes of its file from `start`.
#[derive(Debug)]
pub(crate) struct Chunk {
    /// File offset of the first byte.
    pub start: u64,
    buf: AlignedBuf,
    /// Bytes read (fewer than `CHUNK` at the end of the file).
    got: usize,
}

impl Chunk {
    /// The bytes read.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.buf.as_slice()[..self.got]
    }
}

#[derive(Debug)]
enum Slot {
    /// A scan is reading it.
    Loading,
    /// Resident; `used` is the clock of its last use.
    Ready { chunk: Arc<Chunk>, used: u64 },
}

#[derive(Debug, Default)]
struct State {
    chunks: HashMap<(u64, u64), Slot>,
    /// Buffers of evicted chunks, kept for the next load.
    free: Vec<AlignedBuf>,
    /// Bytes of every buffer the pool owns.
    used: usize,
    clock: u64,
}

/// What the pool did, for `Db::stats`.
#[derive(Debug, Default)]
pub(crate) struct SharedChunkCounters {
    /// Chunks read from disk.
    pub loads: AtomicU64,
    /// Requests served by a resident chunk (or one being loaded).
    pub hits: AtomicU64,
    /// Requests turned away for lack of room (read value by value).
    pub no_room: AtomicU64,
}

/// The pool; see the module docs.
#[derive(Debug)]
pub(crate) struct SharedChunks {
    budget: usize,
    state: Mutex<State>,
    loaded: Condvar,
    pub(crate) counters: SharedChunkCounters,
}

impl SharedChunks {
    /// A pool of at most `budget` bytes of chunk buffers.
    pub(crate) fn new(budget: usize) -> SharedChunks {
        SharedChunks {
            budget,
            state: Mutex::new(State::default()),
            loaded: Condvar::new(),
            counters: SharedChunkCounters::default(),
        }
    }

    /// The budget, bytes.
    pub(crate) fn budget(&self) -> usize {
        self.budget
    }

    /// Bytes of buffers the pool owns now (at most the budget).
    pub(crate) fn used(&self) -> usize {
        self.state.lock().used
    }

    /// Chunk `index` of file `file` if it is resident (or being loaded:
    /// then after the load), without reading anything.
    pub(crate) fn resident(&self, file: u64, index: u64) -> Option<Arc<Chunk>> {
        let mut st = self.state.lock();
        loop {
            st.clock += 1;
            let now = st.clock;
            match st.chunks.get_mut(&(file, index)) {
                Some(Slot::Ready { chunk, used }) => {
                    *used = now;
                    self.counters.hits.fetch_add(1, Ordering::Relaxed);
                    return Some(Arc::clone(chunk));
                }
                Some(Slot::Loading) => self.loaded.wait(&mut st),
                None => return None,
            }
        }
    }

    /// Chunk `index` of file `file`: resident, or read now with `read`
    /// (which fills the buffer from the file at `index * CHUNK` and returns
    /// the bytes read). `None` when the pool has no room for it.
    pub(crate) fn get(
        &self,
        file: u64,
        index: u64,
        read: impl FnOnce(&mut [u8], u64) -> Result<usize>,
    ) -> Result<Option<Arc<Chunk>>> {
        let mut st = self.state.lock();
        let mut buf = loop {
            st.clock += 1;
            let now = st.clock;
            match st.chunks.get_mut(&(file, index)) {
                Some(Slot::Ready { chunk, used }) => {
                    *used = now;
                    self.counters.hits.fetch_add(1, Ordering::Relaxed);
                    return Ok(Some(Arc::clone(chunk)));
                }
                // Another scan reads it: wait for it rather than read the
                // same bytes twice.
                Some(Slot::Loading) => {
                    self.loaded.wait(&mut st);
                    continue;
                }
                None => {}
            }
            let Some(buf) = self.room(&mut st) else {
                self.counters.no_room.fetch_add(1, Ordering::Relaxed);
                return Ok(None);
            };
            st.chunks.insert((file, index), Slot::Loading);
            break buf;
        };
        debug_assert!(st.used <= self.budget, "the pool stays within its budget");
        drop(st);
        let start = index * CHUNK as u64;
        let read = read(buf.as_mut_slice(), start);
        let mut st = self.state.lock();
        let out = match read {
            Ok(got) => {
                let chunk = Arc::new(Chunk {
                    start,
                    buf,
                    got: got.min(CHUNK),
                });
                st.clock += 1;
                let used = st.clock;
                st.chunks.insert(
                    (file, index),
                    Slot::Ready {
                        chunk: Arc::clone(&chunk),
                        used,
                    },
                );
                self.counters.loads.fetch_add(1, Ordering::Relaxed);
                Ok(Some(chunk))
            }
            Err(e) => {
                // No entry is left behind; the buffer stays the pool's.
                st.chunks.remove(&(file, index));
                st.free.push(buf);
                Err(e)
            }
        };
        drop(st);
        self.loaded.notify_all();
        out
    }

    /// A buffer for a new chunk: a free one, a new one within the budget,
    /// or the least recently used resident chunk's that nobody holds.
    fn room(&self, st: &mut State) -> Option<AlignedBuf> {
        if let Some(mut b) = st.free.pop() {
            b.resize(CHUNK);
            return Some(b);
        }
        if st.used + CHUNK <= self.budget {
            st.used += CHUNK;
            return Some(AlignedBuf::new(CHUNK));
        }
        let victim = st
            .chunks
            .iter()
            .filter_map(|(k, s)| match s {
                Slot::Ready { chunk, used } if Arc::strong_count(chunk) == 1 => Some((*used, *k)),
                _ => None,
            })
            .min()
            .map(|(_, k)| k)?;
        match st.chunks.remove(&victim) {
            Some(Slot::Ready { chunk, .. }) => match Arc::try_unwrap(chunk) {
                Ok(c) => {
                    let mut b = c.buf;
                    b.resize(CHUNK);
                    Some(b)
                }
                // Taken meanwhile (cannot happen under the lock): dropped,
                // its bytes given back.
                Err(_) => {
                    st.used -= CHUNK;
                    None
                }
            },
            _ => None,
        }
    }

    /// Forgets the chunks of `file` that nobody holds (the file was
    /// deleted: its number is never reused, and its memory is better spent
    /// on live files). A held one goes later, as the least recently used.
    pub(crate) fn forget(&self, file: u64) {
        let mut st = self.state.lock();
        let gone: Vec<(u64, u64)> = st
            .chunks
            .iter()
            .filter(|((f, _), s)| {
                *f == file
                    && matches!(s, Slot::Ready { chunk, .. } if Arc::strong_count(chunk) == 1)
            })
            .map(|(k, _)| *k)
            .collect();
        for k in gone {
            if let Some(Slot::Ready { chunk, .. }) = st.chunks.remove(&k)
                && let Ok(c) = Arc::try_unwrap(chunk)
            {
                st.free.push(c.buf);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// A "file" whose byte at offset o is `(o / 4096 + file) as u8`.
    fn fill(file: u64) -> impl Fn(&mut [u8], u64) -> Result<usize> {
        move |buf: &mut [u8], start: u64| {
            for (i, b) in buf.iter_mut().enumerate() {
                *b = ((start + i as u64) / 4096 + file) as u8;
            }
            Ok(buf.len())
        }
    }

    #[test]
    fn a_chunk_is_read_once_and_then_served_resident() {
        let pool = SharedChunks::new(4 * CHUNK);
        let reads = AtomicUsize::new(0);
        for _ in 0..3 {
            let c = pool
                .get(7, 2, |b, s| {
                    reads.fetch_add(1, Ordering::SeqCst);
                    fill(7)(b, s)
                })
                .expect("read")
                .expect("room");
            assert_eq!(c.start, 2 * CHUNK as u64);
            assert_eq!(c.bytes()[0], (2 * CHUNK as u64 / 4096 + 7) as u8);
        }
        assert_eq!(reads.load(Ordering::SeqCst), 1);
        assert_eq!(pool.counters.loads.load(Ordering::SeqCst), 1);
        assert_eq!(pool.counters.hits.load(Ordering::SeqCst), 2);
        assert!(pool.resident(7, 2).is_some());
        assert!(pool.resident(7, 3).is_none());
    }

    #[test]
    fn the_budget_holds_and_the_least_recently_used_unheld_chunk_goes() {
        let pool = SharedChunks::new(3 * CHUNK);
        let held = pool.get(1, 0, fill(1)).expect("r").expect("room");
        for i in 1..3 {
            pool.get(1, i, fill(1)).expect("r").expect("room");
        }
        assert_eq!(pool.used(), 3 * CHUNK);
        // Chunk 0 is the oldest but held: chunk 1 goes.
        pool.get(1, 3, fill(1)).expect("r").expect("room");
        assert_eq!(pool.used(), 3 * CHUNK, "never more than the budget");
        assert!(pool.resident(1, 0).is_some());
        assert!(pool.resident(1, 1).is_none());
        // Everything held: no room, the caller reads on its own.
        let all: Vec<_> = [0, 2, 3]
            .iter()
            .map(|&i| pool.resident(1, i).expect("resident"))
            .collect();
        assert!(pool.get(1, 9, fill(1)).expect("r").is_none());
        assert_eq!(pool.counters.no_room.load(Ordering::SeqCst), 1);
        drop(all);
        drop(held);
        assert!(pool.get(1, 9, fill(1)).expect("r").is_some());
        // A pool smaller than a chunk never reads.
        let tiny = SharedChunks::new(CHUNK - 1);
        assert!(tiny.get(1, 0, fill(1)).expect("r").is_none());
        assert_eq!(tiny.used(), 0);
    }

    #[test]
    fn a_failed_read_leaves_nothing_and_the_next_one_retries() {
        let pool = SharedChunks::new(2 * CHUNK);
        let err = pool.get(3, 0, |_, _| {
            Err(crate::error::Error::corruption(
                std::path::Path::new("x.blob"),
                0,
                "bad",
            ))
        });
        assert!(err.is_err());
        assert!(pool.resident(3, 0).is_none());
        assert!(pool.get(3, 0, fill(3)).expect("r").is_some());
        assert!(pool.used() <= 2 * CHUNK);
    }

    /// Many threads over the same chunks: each chunk is read once while
    /// it stays resident, everyone sees its bytes, the budget holds.
    #[test]
    fn concurrent_scans_share_loads_within_the_budget() {
        let pool = SharedChunks::new(8 * CHUNK);
        let reads = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..16 {
                s.spawn(|| {
                    for i in 0..8u64 {
                        let c = pool
                            .get(5, i, |b, st| {
                                reads.fetch_add(1, Ordering::SeqCst);
                                std::thread::sleep(std::time::Duration::from_millis(2));
                                fill(5)(b, st)
                            })
                            .expect("read")
                            .expect("room: 8 chunks fit");
                        let want = (i * CHUNK as u64 / 4096 + 5) as u8;
                        assert_eq!(c.bytes()[0], want);
                        assert!(pool.used() <= 8 * CHUNK);
                    }
                });
            }
        });
        assert_eq!(reads.load(Ordering::SeqCst), 8, "each chunk read once");
        pool.forget(5);
        assert!(pool.resident(5, 0).is_none());
        assert_eq!(pool.used(), 8 * CHUNK, "the buffers stay for reuse");
    }
}
