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
//! Thread-safe: the pool is cut into up to 16 shards by a hash of the
//! chunk (each with at least eight chunks of budget), each a mutex around
//! its map, held to find, reserve or publish a chunk, never across a read,
//! and a condition variable that wakes the scans waiting for a chunk being
//! loaded; each shard evicts its own least recently used chunk (with 64
//! scans on one lock, the lock was a quarter of a range scan's time).
//! Invariants: a shard's `used` (bytes of every buffer it owns: resident,
//! loading or free) never exceeds its share of the budget, so the pool's
//! never exceeds the budget; a chunk is `Ready` only with the bytes its file held at its
//! offset when it was read; a chunk some caller copies from or holds
//! (`Arc` shared) is never evicted; a failed load leaves no entry.
//!
//! Scans hold the chunks they come back to ([`super::held_chunks`]); when
//! a load finds every chunk held, the pool bumps its pressure count and
//! the holders let go at their next value.
//!
//! Pacing: each shard remembers the keys of the chunks it evicted lately
//! (its ghosts, at most [`GHOSTS_PER_CHUNK`] times its chunks). A load of
//! a ghost is a load again, by a scan that fell behind the window; for the
//! next [`RECENT_LOADS`] loads, a scan about to load a chunk that is not a
//! ghost (a scan in front) sleeps [`PACE`] first, outside every lock, and
//! looks again, so the scans behind catch up instead of falling further
//! behind. Loads again and read-aheads never wait.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use parking_lot::{Condvar, Mutex};

use super::pins::{Holders, Pins};
use super::reader::BlobReader;
use crate::error::Result;
use crate::io::AlignedBuf;
use crate::sst::ReaderPool;
use crate::util::lru::IntHasher;

/// Bytes of one chunk (whole pages, for direct IO).
pub(crate) const CHUNK: usize = 1 << 20;

/// Slots of a chunk's table of values already checked against their
/// pointer's CRC.
const CHECKED_SLOTS: usize = 1024;
/// Slots a lookup or an insert probes before giving up.
const CHECKED_PROBES: usize = 8;

/// A resident chunk: the bytes of its file from `start`, and which values
/// in them were already checked against their pointer's CRC.
#[derive(Debug)]
pub(crate) struct Chunk {
    /// File offset of the first byte.
    pub start: u64,
    buf: AlignedBuf,
    /// Bytes read (fewer than `CHUNK` at the end of the file).
    got: usize,
    /// Open-addressing set of [`Chunk::checked_key`]s (0: empty): the
    /// bytes never change once read, so a value checked by one scan needs
    /// no CRC from the 63 others that pass it. Lock-free; a full
    /// neighbourhood only means the next scan checks again.
    checked: Box<[AtomicU64]>,
    /// Iterators holding the chunk in their tables of held chunks, and the
    /// pool's shard that owns it, whose [`Pins`] count it.
    pub(crate) holders: Holders,
}

impl Chunk {
    fn new(start: u64, buf: AlignedBuf, got: usize, shard: usize) -> Chunk {
        Chunk {
            start,
            buf,
            got,
            checked: (0..CHECKED_SLOTS).map(|_| AtomicU64::new(0)).collect(),
            holders: Holders::new(shard),
        }
    }

    /// The bytes read.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.buf.as_slice()[..self.got]
    }

    /// The set's key of a value at `offset` in the chunk of `len` bytes
    /// whose pointer's CRC is `crc`: offset (20 bits), length (21 bits) and
    /// the CRC's low 23 bits, never 0. `None` when it does not fit.
    fn checked_key(offset: usize, len: usize, crc: u32) -> Option<u64> {
        if offset >= CHUNK || len > CHUNK || len == 0 {
            return None;
        }
        let key = ((offset as u64) << 44) | ((len as u64) << 23) | u64::from(crc & 0x7f_ffff);
        (key != 0).then_some(key)
    }

    fn slots(key: u64) -> impl Iterator<Item = usize> {
        let h = (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize;
        (0..CHECKED_PROBES).map(move |i| (h + i) % CHECKED_SLOTS)
    }

    /// True if the value at `offset` of `len` bytes was checked against a
    /// pointer with CRC `crc`.
    pub(crate) fn is_checked(&self, offset: usize, len: usize, crc: u32) -> bool {
        let Some(key) = Self::checked_key(offset, len, crc) else {
            return false;
        };
        Self::slots(key).any(|i| self.checked[i].load(Ordering::Acquire) == key)
    }

    /// Records that the value at `offset` of `len` bytes matched CRC `crc`.
    pub(crate) fn mark_checked(&self, offset: usize, len: usize, crc: u32) {
        let Some(key) = Self::checked_key(offset, len, crc) else {
            return;
        };
        for i in Self::slots(key) {
            match self.checked[i].compare_exchange(0, key, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return,
                Err(k) if k == key => return,
                Err(_) => {}
            }
        }
    }
}

#[derive(Debug)]
enum Slot {
    /// A scan is reading it.
    Loading,
    /// Resident; `used` is the clock of its last use.
    Ready { chunk: Arc<Chunk>, used: u64 },
}

/// `(file, chunk)` keys come from the engine: the block cache's cheap
/// integer hasher serves them too.
type KeyMap<V> = HashMap<(u64, u64), V, std::hash::BuildHasherDefault<IntHasher>>;

#[derive(Debug, Default)]
struct State {
    chunks: KeyMap<Slot>,
    /// Buffers of evicted chunks, kept for the next load.
    free: Vec<AlignedBuf>,
    /// Bytes of every buffer the pool owns.
    used: usize,
    clock: u64,
    /// Chunks this shard evicted lately, by eviction (at most
    /// [`GHOSTS_PER_CHUNK`] times the shard's chunks): a load of one of
    /// them is a load *again*, by a scan that fell behind the pool's
    /// window. The map and the queue may disagree after a chunk was
    /// evicted twice: a ghost is then forgotten a little early.
    ghosts: KeyMap<()>,
    ghost_order: VecDeque<(u64, u64)>,
    /// Requests this shard served with a resident chunk (or one being
    /// loaded). Kept under the shard's lock rather than in a counter every
    /// scan bumps: one shared atomic was a quarter of a lookup's time with
    /// 64 scans.
    hits: u64,
}

/// What the pool did, for `Db::stats`.
#[derive(Debug, Default)]
pub(crate) struct SharedChunkCounters {
    /// Chunks read from disk.
    pub loads: AtomicU64,
    /// Requests turned away for lack of room (read value by value).
    pub no_room: AtomicU64,
    /// Loads of a chunk the pool had evicted lately (a scan behind the
    /// window).
    pub reloads: AtomicU64,
    /// Loads of a new chunk that waited [`PACE`] first because others
    /// were loading again what the pool had let go.
    pub paced: AtomicU64,
}

/// The pool's pressure count, on a cache line of its own: every scan reads
/// it for every value, and it changes only when the pool finds no chunk to
/// evict.
#[derive(Debug, Default)]
#[repr(align(128))]
struct Pressure(AtomicU64);

/// One part of the pool: its own lock, least-recently-used order and
/// share of the budget.
#[derive(Debug)]
struct Shard {
    budget: usize,
    state: Mutex<State>,
    loaded: Condvar,
}

/// Most shards (each at least eight chunks of budget).
const MAX_SHARDS: usize = 16;

/// A shard remembers this many times its chunks of evicted keys.
const GHOSTS_PER_CHUNK: usize = 8;
/// After a load again, the next this many loads are "while scans behind
/// the window load again".
const RECENT_LOADS: u64 = 64;
/// How long a scan about to load a chunk nobody had loaded lately waits
/// while scans behind the window load again.
pub(crate) const PACE: std::time::Duration = std::time::Duration::from_millis(2);

/// Most chunks read ahead at once ([`SharedChunks::prefetch`]).
pub(crate) const PREFETCH_MAX: usize = 16;

/// A chunk read ahead whose task has not run yet: if the task is dropped
/// unrun, its `Loading` entry goes and its buffer is given back (scans
/// waiting for it then read it themselves).
struct PendingLoad {
    pool: std::sync::Weak<SharedChunks>,
    file: u64,
    index: u64,
    buf: Option<AlignedBuf>,
}

impl Drop for PendingLoad {
    fn drop(&mut self) {
        if let (Some(buf), Some(me)) = (self.buf.take(), self.pool.upgrade()) {
            let _ = me.publish(self.file, self.index, buf, Err(crate::error::Error::Closed));
            me.prefetching.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// The pool; see the module docs.
#[derive(Debug)]
pub(crate) struct SharedChunks {
    budget: usize,
    /// Chunks go to a shard by a hash of `(file, index)`: 64 scans do not
    /// queue on one lock. Each evicts its own least recently used chunk.
    shards: Box<[Shard]>,
    pub(crate) counters: SharedChunkCounters,
    /// Bumped each time a load found no room: iterators then let go of the
    /// chunks they hold ([`super::held_chunks`]).
    pressure: Pressure,
    /// Chunks iterators hold, at most half of each shard.
    pins: Arc<Pins>,
    /// Chunks being read ahead.
    prefetching: AtomicUsize,
    /// `counters.loads` at the last load again, plus one (0: none yet).
    last_reload: AtomicU64,
}

impl SharedChunks {
    /// A pool of at most `budget` bytes of chunk buffers.
    pub(crate) fn new(budget: usize) -> SharedChunks {
        let n = (budget / (CHUNK * 8)).clamp(1, MAX_SHARDS);
        SharedChunks {
            budget,
            shards: (0..n)
                .map(|_| Shard {
                    budget: budget / n,
                    state: Mutex::new(State::default()),
                    loaded: Condvar::new(),
                })
                .collect(),
            counters: SharedChunkCounters::default(),
            pressure: Pressure::default(),
            pins: Arc::new(Pins::new(n, budget / n / CHUNK / 2)),
            prefetching: AtomicUsize::new(0),
            last_reload: AtomicU64::new(0),
        }
    }

    /// The count of chunks iterators hold, shared with their tables.
    pub(crate) fn pins(&self) -> &Arc<Pins> {
        &self.pins
    }

    /// How many times a load found no room (iterators holding chunks let
    /// them go when it moves).
    pub(crate) fn pressure(&self) -> u64 {
        self.pressure.0.load(Ordering::Relaxed)
    }

    /// The budget, bytes.
    pub(crate) fn budget(&self) -> usize {
        self.budget
    }

    /// Bytes of buffers the pool owns now (at most the budget).
    pub(crate) fn used(&self) -> usize {
        self.shards.iter().map(|sh| sh.state.lock().used).sum()
    }

    /// Requests served by a resident chunk (or one being loaded), in the
    /// pool or from a chunk an iterator held.
    pub(crate) fn hits(&self) -> u64 {
        let pool: u64 = self.shards.iter().map(|sh| sh.state.lock().hits).sum();
        pool + self.pins.hits()
    }

    /// The shard of chunk `index` of `file`.
    fn shard(&self, file: u64, index: u64) -> &Shard {
        &self.shards[self.shard_of(file, index)]
    }

    /// The index of [`shard`](Self::shard)'s answer.
    fn shard_of(&self, file: u64, index: u64) -> usize {
        let h =
            (file.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ index).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        (h >> 32) as usize % self.shards.len()
    }

    /// Chunk `index` of file `file` if it is resident (or being loaded:
    /// then after the load), without reading anything.
    pub(crate) fn resident(&self, file: u64, index: u64) -> Option<Arc<Chunk>> {
        let sh = self.shard(file, index);
        let mut st = sh.state.lock();
        Self::find(sh, &mut st, (file, index))
    }

    /// The resident chunk `key` of shard `sh` (whose state `st` is locked),
    /// marked as just used and counted as a hit; a chunk another scan is
    /// loading is waited for rather than read twice. `None` when it is not
    /// there (and, the lock being held, nobody is loading it).
    fn find(
        sh: &Shard,
        st: &mut parking_lot::MutexGuard<'_, State>,
        key: (u64, u64),
    ) -> Option<Arc<Chunk>> {
        loop {
            st.clock += 1;
            let now = st.clock;
            match st.chunks.get_mut(&key) {
                Some(Slot::Ready { chunk, used }) => {
                    *used = now;
                    let chunk = Arc::clone(chunk);
                    st.hits += 1;
                    return Some(chunk);
                }
                Some(Slot::Loading) => sh.loaded.wait(st),
                None => return None,
            }
        }
    }

    /// Chunk `index` of file `file`: resident, or read now with `read`
    /// (which fills the buffer from the file at `index * CHUNK` and returns
    /// the bytes read). `None` when the pool has no room for it.
    #[cfg(test)]
    pub(crate) fn get(
        &self,
        file: u64,
        index: u64,
        read: impl FnOnce(&mut [u8], u64) -> Result<usize>,
    ) -> Result<Option<Arc<Chunk>>> {
        Ok(self.fetch(file, index, true, read)?.map(|(c, _)| c))
    }

    /// [`get`](Self::get), and whether the chunk was read now (a miss).
    /// Without `pace`, a load never waits for scans that load again (the
    /// iterators of a shared pass keep together on their own).
    pub(crate) fn fetch(
        &self,
        file: u64,
        index: u64,
        pace: bool,
        read: impl FnOnce(&mut [u8], u64) -> Result<usize>,
    ) -> Result<Option<(Arc<Chunk>, bool)>> {
        let sh = self.shard(file, index);
        let mut st = sh.state.lock();
        if let Some(chunk) = Self::find(sh, &mut st, (file, index)) {
            return Ok(Some((chunk, false)));
        }
        if !self.note_reload(&mut st, (file, index)) && pace && self.others_reload() {
            // This scan is ahead of scans that are loading again what the
            // pool let go: it waits a moment, so that they (with the CPU
            // and the disk to themselves) come back inside the window
            // instead of falling further behind. Then it looks again.
            drop(st);
            self.counters.paced.fetch_add(1, Ordering::Relaxed);
            std::thread::sleep(PACE);
            st = sh.state.lock();
            if let Some(chunk) = Self::find(sh, &mut st, (file, index)) {
                return Ok(Some((chunk, false)));
            }
        }
        let Some(mut buf) = Self::room(sh, &mut st) else {
            self.counters.no_room.fetch_add(1, Ordering::Relaxed);
            self.pressure.0.fetch_add(1, Ordering::Relaxed);
            return Ok(None);
        };
        st.chunks.insert((file, index), Slot::Loading);
        debug_assert!(st.used <= sh.budget, "the pool stays within its budget");
        drop(st);
        let got = read(buf.as_mut_slice(), index * CHUNK as u64);
        Ok(Some((self.publish(file, index, buf, got)?, true)))
    }

    /// True if `key`, about to be loaded, was evicted lately (a load
    /// again), which it records.
    fn note_reload(&self, st: &mut State, key: (u64, u64)) -> bool {
        if st.ghosts.remove(&key).is_none() {
            return false;
        }
        self.counters.reloads.fetch_add(1, Ordering::Relaxed);
        let loads = self.counters.loads.load(Ordering::Relaxed);
        self.last_reload.store(loads + 1, Ordering::Relaxed);
        true
    }

    /// True while some scan loads again what the pool let go: within
    /// [`RECENT_LOADS`] loads of the last such load.
    fn others_reload(&self) -> bool {
        let last = self.last_reload.load(Ordering::Relaxed);
        last != 0 && self.counters.loads.load(Ordering::Relaxed) < last - 1 + RECENT_LOADS
    }

    /// Ends the load of chunk `index` of `file` (its entry is `Loading`,
    /// its buffer `buf`, `got` the read's outcome): the chunk becomes
    /// resident, or on an error the entry goes and the buffer stays the
    /// pool's. Wakes the scans waiting for it.
    fn publish(
        &self,
        file: u64,
        index: u64,
        buf: AlignedBuf,
        got: Result<usize>,
    ) -> Result<Arc<Chunk>> {
        let sh = self.shard(file, index);
        let start = index * CHUNK as u64;
        let mut st = sh.state.lock();
        let out = match got {
            Ok(got) => {
                let chunk = Arc::new(Chunk::new(
                    start,
                    buf,
                    got.min(CHUNK),
                    self.shard_of(file, index),
                ));
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
                Ok(chunk)
            }
            Err(e) => {
                // No entry is left behind; the buffer stays the pool's.
                st.chunks.remove(&(file, index));
                st.free.push(buf);
                Err(e)
            }
        };
        drop(st);
        sh.loaded.notify_all();
        out
    }

    /// Reads chunk `index` of `file` (of `size` bytes, read by `reader`)
    /// in the background on `pool`, unless it is resident or being loaded,
    /// lies past the end of the file, or the pool has no free or evictable
    /// buffer for it (a read ahead never makes room by letting held chunks
    /// go). At most [`PREFETCH_MAX`] are in flight. A scan that needs the
    /// chunk meanwhile waits for this read instead of reading it again.
    /// False when the read was turned away for lack of room or because
    /// [`PREFETCH_MAX`] are in flight (the caller may ask again later).
    /// Without `pace` it reads ahead also while scans load again (a
    /// shared pass's scout).
    pub(crate) fn prefetch(
        self: &Arc<Self>,
        pool: &ReaderPool,
        file: u64,
        index: u64,
        pace: bool,
        reader: Arc<BlobReader>,
    ) -> bool {
        if index * CHUNK as u64 >= reader.size() {
            return true;
        }
        if self.prefetching.fetch_add(1, Ordering::AcqRel) >= PREFETCH_MAX {
            self.prefetching.fetch_sub(1, Ordering::AcqRel);
            return false;
        }
        let sh = self.shard(file, index);
        let mut st = sh.state.lock();
        // A read ahead never paces: while scans behind the window load
        // again, it reads ahead only for them.
        let buf = if st.chunks.contains_key(&(file, index))
            || (!self.note_reload(&mut st, (file, index)) && pace && self.others_reload())
        {
            Err(true)
        } else {
            Self::room(sh, &mut st).ok_or(false)
        };
        let buf = match buf {
            Ok(buf) => buf,
            Err(done) => {
                drop(st);
                self.prefetching.fetch_sub(1, Ordering::AcqRel);
                return done;
            }
        };
        st.chunks.insert((file, index), Slot::Loading);
        drop(st);
        let mut load = PendingLoad {
            pool: Arc::downgrade(self),
            file,
            index,
            buf: Some(buf),
        };
        let task = move || {
            if let Some(mut buf) = load.buf.take()
                && let Some(me) = load.pool.upgrade()
            {
                let got = reader.read_into(buf.as_mut_slice(), index * CHUNK as u64);
                // A failed read ahead is forgotten: the scan that needs
                // the chunk reads it again and meets the error itself.
                let _ = me.publish(file, index, buf, got);
                me.prefetching.fetch_sub(1, Ordering::AcqRel);
            }
        };
        // Unrun (no reader thread), the task's `PendingLoad` undoes the
        // entry when it is dropped.
        pool.spawn(Box::new(task))
    }

    /// A buffer for a new chunk: a free one, a new one within the budget,
    /// or the least recently used resident chunk's that nobody holds.
    fn room(sh: &Shard, st: &mut State) -> Option<AlignedBuf> {
        if let Some(mut b) = st.free.pop() {
            b.resize(CHUNK);
            return Some(b);
        }
        if st.used + CHUNK <= sh.budget {
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
                    Self::remember_evicted(sh, st, victim);
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

    /// Records that `key` was evicted, forgetting the oldest such record
    /// past [`GHOSTS_PER_CHUNK`] times the shard's chunks.
    fn remember_evicted(sh: &Shard, st: &mut State, key: (u64, u64)) {
        let most = (sh.budget / CHUNK).max(1) * GHOSTS_PER_CHUNK;
        while st.ghost_order.len() >= most {
            if let Some(old) = st.ghost_order.pop_front() {
                st.ghosts.remove(&old);
            }
        }
        st.ghost_order.push_back(key);
        st.ghosts.insert(key, ());
        debug_assert!(st.ghosts.len() <= most, "the ghosts stay bounded");
    }

    /// Forgets the chunks of `file` that nobody holds (the file was
    /// deleted: its number is never reused, and its memory is better spent
    /// on live files). A held one goes later, as the least recently used.
    pub(crate) fn forget(&self, file: u64) {
        for sh in self.shards.iter() {
            Self::forget_in(sh, file);
        }
    }

    fn forget_in(sh: &Shard, file: u64) {
        let mut st = sh.state.lock();
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

    /// A blob file of `n` values of 64 KiB (value `i` all bytes `i`), and
    /// its reader.
    fn blob_file(dir: &tempfile::TempDir, n: u8) -> Arc<BlobReader> {
        use crate::blob::file_writer::BlobFileWriter;
        use crate::blob::format::Creator;
        use crate::io::PosixFs;
        let path = dir.path().join("000007.blob");
        let mut w = BlobFileWriter::create(&PosixFs, &path, 7, 1 << 20, Creator::WriteLane, false)
            .expect("create");
        for i in 0..n {
            w.add(&[i], &vec![i; 64 << 10]).expect("add");
        }
        w.finish().expect("finish");
        Arc::new(BlobReader::open(&PosixFs, &path, false).expect("open"))
    }

    /// A chunk evicted lately and loaded again is counted as such, and
    /// for the next [`RECENT_LOADS`] loads a load of a chunk nobody had
    /// loaded waits [`PACE`] first; after that, nobody waits.
    #[test]
    fn a_load_again_paces_new_loads_for_a_while() {
        let pool = SharedChunks::new(8 * CHUNK);
        assert_eq!(pool.shards.len(), 1);
        for i in 0..9 {
            assert!(pool.get(1, i, fill(1)).expect("read").is_some());
        }
        let c = &pool.counters;
        assert_eq!(
            c.reloads.load(Ordering::SeqCst),
            0,
            "nothing loaded again yet"
        );
        assert_eq!(c.paced.load(Ordering::SeqCst), 0);
        // (1, 0) was the least recently used: evicted by (1, 8).
        assert!(pool.get(1, 0, fill(1)).expect("read").is_some());
        assert_eq!(c.reloads.load(Ordering::SeqCst), 1);
        let t = std::time::Instant::now();
        assert!(pool.get(2, 0, fill(2)).expect("read").is_some());
        assert!(
            t.elapsed() >= PACE,
            "a new load waits while others load again"
        );
        assert_eq!(c.paced.load(Ordering::SeqCst), 1);
        // A load again itself never waits: the pace count stays (counted,
        // not timed: a loaded machine can stall any thread for longer
        // than a pace).
        assert!(pool.get(1, 1, fill(1)).expect("read").is_some());
        assert_eq!(c.reloads.load(Ordering::SeqCst), 2);
        assert_eq!(
            c.paced.load(Ordering::SeqCst),
            1,
            "a load again is not paced"
        );
        // RECENT_LOADS new loads later, new loads stop waiting.
        for i in 1..=RECENT_LOADS {
            assert!(pool.get(3, i, fill(3)).expect("read").is_some());
        }
        let paced = c.paced.load(Ordering::SeqCst);
        assert!(paced >= 2, "{paced}");
        assert!(pool.get(4, 0, fill(4)).expect("read").is_some());
        assert_eq!(c.paced.load(Ordering::SeqCst), paced, "no longer paced");
        assert!(pool.used() <= 8 * CHUNK);
        let st = pool.shards[0].state.lock();
        assert!(
            st.ghosts.len() <= 8 * GHOSTS_PER_CHUNK,
            "ghosts stay bounded"
        );
    }

    /// Held chunks never fill a shard: however the hash spreads the chunks
    /// scans hold, at most half of each shard is pinned, so a load into
    /// the most crowded shard still finds a chunk to evict.
    #[test]
    fn held_chunks_never_fill_a_shard() {
        let pool = SharedChunks::new(16 * 8 * CHUNK);
        assert_eq!(pool.shards.len(), 16);
        let pins = Arc::clone(pool.pins());
        assert_eq!(pins.limit(), 16 * 4);
        // Nine chunks of file 1 that all fall in shard 0 (of 8 chunks).
        let keys: Vec<u64> = (0..)
            .filter(|&i| pool.shard_of(1, i) == 0)
            .take(9)
            .collect();
        let mut held = Vec::new();
        for &i in &keys[..8] {
            let c = pool.get(1, i, fill(1)).expect("read").expect("room");
            if pins.pin(&c.holders) {
                held.push(c);
            }
        }
        assert_eq!(held.len(), 4, "half of shard 0, not half of the pool");
        assert_eq!(pins.pinned(), 4);
        let ninth = pool.get(1, keys[8], fill(1)).expect("read");
        assert!(ninth.is_some(), "the crowded shard still has room");
        assert_eq!(pool.counters.no_room.load(Ordering::SeqCst), 0);
        for c in &held {
            pins.unpin(&c.holders);
        }
        assert_eq!(pins.pinned(), 0);
    }

    #[test]
    fn a_chunk_read_ahead_becomes_resident_once() {
        let dir = tempfile::tempdir().expect("tmp");
        // 40 values of 64 KiB: a little over two chunks.
        let reader = blob_file(&dir, 40);
        let pool = Arc::new(SharedChunks::new(8 * CHUNK));
        let readers = ReaderPool::new(2);
        pool.prefetch(&readers, 7, 1, true, Arc::clone(&reader));
        // Waited for (resident() waits while it is being read), never read
        // twice.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let c = loop {
            if let Some(c) = pool.resident(7, 1) {
                break c;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the read ahead never landed"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        };
        assert_eq!(c.start, CHUNK as u64);
        let mut direct = AlignedBuf::new(CHUNK);
        let got = reader
            .read_into(direct.as_mut_slice(), CHUNK as u64)
            .expect("read");
        assert_eq!(c.bytes(), &direct.as_slice()[..got]);
        assert_eq!(pool.counters.loads.load(Ordering::SeqCst), 1);
        pool.prefetch(&readers, 7, 1, true, Arc::clone(&reader));
        // Past the end of the file: nothing.
        let past = reader.size() / CHUNK as u64 + 1;
        pool.prefetch(&readers, 7, past, true, Arc::clone(&reader));
        drop(readers);
        assert_eq!(pool.counters.loads.load(Ordering::SeqCst), 1, "read once");
        assert!(pool.resident(7, past).is_none());
        assert_eq!(pool.prefetching.load(Ordering::SeqCst), 0);
        // A full pool of held chunks: a read ahead makes no room.
        let tiny = Arc::new(SharedChunks::new(CHUNK));
        let held = tiny.get(7, 0, fill(7)).expect("r").expect("room");
        let readers = ReaderPool::new(1);
        tiny.prefetch(&readers, 7, 1, true, Arc::clone(&reader));
        drop(readers);
        assert!(tiny.resident(7, 1).is_none());
        assert_eq!(tiny.pressure(), 0, "a read ahead is no pressure");
        drop(held);
    }

    /// A read ahead whose task never runs leaves no entry behind: a scan
    /// that wants the chunk does not wait for it forever.
    #[test]
    fn a_read_ahead_that_never_runs_leaves_nothing() {
        let pool = Arc::new(SharedChunks::new(4 * CHUNK));
        let sh = pool.shard(3, 0);
        let mut st = sh.state.lock();
        let buf = SharedChunks::room(sh, &mut st).expect("room");
        st.chunks.insert((3, 0), Slot::Loading);
        drop(st);
        pool.prefetching.fetch_add(1, Ordering::SeqCst);
        let pending = PendingLoad {
            pool: Arc::downgrade(&pool),
            file: 3,
            index: 0,
            buf: Some(buf),
        };
        let waiter = {
            let pool = Arc::clone(&pool);
            std::thread::spawn(move || pool.resident(3, 0).is_none())
        };
        std::thread::sleep(std::time::Duration::from_millis(20));
        drop(pending);
        assert!(
            waiter.join().expect("waiter"),
            "woken, and nothing resident"
        );
        assert_eq!(pool.prefetching.load(Ordering::SeqCst), 0);
        assert!(
            pool.get(3, 0, fill(3)).expect("r").is_some(),
            "read on demand"
        );
        assert!(pool.used() <= 4 * CHUNK);
    }

    #[test]
    fn checked_values_are_remembered_exactly() {
        let c = Chunk::new(0, AlignedBuf::new(CHUNK), CHUNK, 0);
        assert!(!c.is_checked(100, 4096, 7));
        c.mark_checked(100, 4096, 7);
        assert!(c.is_checked(100, 4096, 7));
        assert!(!c.is_checked(100, 4096, 8), "another CRC");
        assert!(!c.is_checked(100, 4095, 7), "another length");
        assert!(!c.is_checked(101, 4096, 7), "another offset");
        assert!(!c.is_checked(CHUNK, 1, 7), "outside the chunk");
        // Many values: each one marked is found (or, past a full
        // neighbourhood, simply checked again: never a false yes).
        for off in 0..3000usize {
            c.mark_checked(off * 300, 200, off as u32);
        }
        for off in 0..3000usize {
            assert!(!c.is_checked(off * 300, 200, off as u32 + 1));
        }
        let found = (0..3000usize)
            .filter(|&off| c.is_checked(off * 300, 200, off as u32))
            .count();
        assert!(found > 900, "most fit: {found}");
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
        assert_eq!(pool.hits(), 2);
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

    /// A pool cut into shards still never holds more than its budget,
    /// under many threads loading many more chunks than fit.
    #[test]
    fn a_sharded_pool_stays_within_its_budget() {
        let pool = SharedChunks::new(32 * CHUNK);
        assert_eq!(pool.shards.len(), 4);
        std::thread::scope(|s| {
            for t in 0..8u64 {
                let pool = &pool;
                s.spawn(move || {
                    for i in 0..100u64 {
                        let file = 1 + (i + t) % 3;
                        if let Some(c) = pool.get(file, i, fill(file)).expect("read") {
                            let want = ((i * CHUNK as u64) / 4096 + file) as u8;
                            assert_eq!(c.bytes()[0], want);
                        }
                        assert!(pool.used() <= 32 * CHUNK);
                    }
                });
            }
        });
        assert!(pool.used() <= 32 * CHUNK);
        assert!(pool.counters.loads.load(Ordering::SeqCst) >= 100);
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
