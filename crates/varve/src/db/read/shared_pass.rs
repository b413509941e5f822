//! Shared passes: iterators that walk the same state from its first key
//! in key order share one merge (`docs/shared-passes.md`).
//!
//! A pass is the merged, visible entries of one read state (a keyspace's
//! memtables and version, as of one sequence number and one TTL floor),
//! cut into [`Segment`]s of up to [`SEGMENT_ENTRIES`] entries. The first
//! iterator that needs a segment nobody made yet makes it from the pass's
//! one [`Source`] (a private merging iterator); every other iterator of the
//! pass reads the segment made. A blob value is read once per pass too: the
//! first iterator to ask for it reads it (through its own read-ahead and
//! the database's shared chunks) and leaves it in the segment's entry.
//!
//! Bounded: a pass keeps at most [`WINDOW`] segments, and fewer (but two)
//! when its segments' blob values come to more than the pass's
//! `window_bytes` (the values an iterator read stay in their entries, as
//! copies or as views that keep shared chunks resident), plus the one
//! each iterator is in; a segment holds at most [`SEGMENT_ENTRIES`]
//! entries and [`SEGMENT_BYTES`] of keys and inline values (or its one
//! first entry, if larger). With a memory budget, a segment reserves its
//! bound ([`SEGMENT_RESERVE`]) from the read-ahead part's gauge before
//! any entry is taken from the source, keeps what it holds reserved while
//! it lives, and is not made when there is no room: the iterators that
//! wanted it go on alone, as when they fall behind.
//!
//! Pacing (leaders wait, briefly, for followers): the iterator that makes a
//! segment when the window is full drops the oldest one only when no
//! iterator is in it, waiting up to [`PACE`] for the last one to leave;
//! the first segment is also kept (as long) while the pass is young, or
//! while an earlier pass of the same state still has iterators, so
//! iterators that start together, or finish one pass and start the next,
//! find the new pass still at its start. (A lone iterator makes no pass.)
//! After the wait the segment goes all the same: an iterator that finds
//! its next segment gone goes on alone, from its last key, on its own
//! merge (the caller's job).
//!
//! Thread-safety: [`SharedPasses`] and [`SharedPass`] are shared by every
//! iterator of the database; a [`Cursor`] belongs to one iterator.
//! Invariants: a pass's segments have consecutive ids from `base`; a
//! segment's entries are in strictly increasing key order and follow the
//! previous segment's; only the last segment has `last` set; a segment
//! is never changed once published, except for the value an entry reads
//! once ([`OnceLock`]).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use super::pass_pace::Pace;
use crate::blob::readahead::BlobValue;
use crate::error::{Error, Result};
use crate::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use crate::sync::{Condvar, Mutex, MutexGuard};
use crate::util::memory::{MemoryGauge, Reservation};

/// Entries per segment.
pub(crate) const SEGMENT_ENTRIES: usize = 256;
/// Key and inline-value bytes after which a segment is cut short.
pub(crate) const SEGMENT_BYTES: usize = 64 << 10;
/// Segments a pass keeps resident.
pub(crate) const WINDOW: usize = 16;
/// Longest a leader waits for an iterator in the oldest segment.
pub(crate) const PACE: Duration = Duration::from_millis(50);

/// The state a pass walks: iterators with equal keys see exactly the same
/// entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct PassKey {
    /// The keyspace.
    pub(crate) tree: u32,
    /// The read state's address (alive while the pass's source pins it).
    pub(crate) state: usize,
    /// The sequence number read as of.
    pub(crate) seq: u64,
    /// The TTL floor (entries below it are expired).
    pub(crate) floor: u64,
}

/// Where a pass's entries come from: a merge of the pass's state.
pub(crate) trait Source: Send {
    /// Appends the next entries to `seg` until [`SegmentBuilder::full`];
    /// `Ok(false)` once the state has no more entries.
    fn fill(&mut self, seg: &mut SegmentBuilder) -> Result<bool>;
}

struct Entry {
    /// Where the key, then the raw value, lie in the segment's bytes.
    at: u32,
    key_len: u32,
    raw_len: u32,
    /// The raw value is a blob pointer.
    blob: bool,
    /// The blob value, read by the first iterator that asked.
    loaded: OnceLock<Result<BlobValue>>,
}

/// Bytes a segment reserves before it is made (with a memory budget):
/// its keys and raw values and its entries; shrunk to what it holds once
/// made.
pub(crate) const SEGMENT_RESERVE: usize =
    SEGMENT_BYTES + SEGMENT_ENTRIES * std::mem::size_of::<Entry>();

/// Entries of a pass under construction.
pub(crate) struct SegmentBuilder {
    bytes: Vec<u8>,
    entries: Vec<Entry>,
    /// An iterator of the pass read a blob value: the source may start
    /// reading the segment's values ahead.
    values_wanted: bool,
    /// Bytes of the blob values of the entries.
    value_bytes: u64,
    /// The segment's part of the memory budget (`None` without one).
    room: Option<Reservation>,
}

impl SegmentBuilder {
    /// True once an iterator of the pass asked for a blob value (a
    /// key-only walk never does: then no value is read ahead).
    pub(crate) fn values_wanted(&self) -> bool {
        self.values_wanted
    }

    /// True if an entry of `len` key and raw-value bytes goes in next:
    /// fewer than [`SEGMENT_ENTRIES`] entries, and the bytes stay within
    /// [`SEGMENT_BYTES`]; a first entry larger than that goes in alone if
    /// the budget (when there is one) has room for it. False: the source
    /// stops before the entry (the next segment starts with it).
    pub(crate) fn room_for(&mut self, len: usize) -> bool {
        if self.entries.len() >= SEGMENT_ENTRIES {
            return false;
        }
        if self.bytes.len() + len <= SEGMENT_BYTES {
            return true;
        }
        if !self.entries.is_empty() {
            return false;
        }
        match &mut self.room {
            None => true,
            Some(r) => {
                let fits = r.resize(SEGMENT_RESERVE - SEGMENT_BYTES + len);
                if fits {
                    // Exactly: the reservation covers the capacity.
                    self.bytes.reserve_exact(len);
                }
                fits
            }
        }
    }

    /// Appends an entry (`raw`: the value, or a blob pointer, of a value
    /// of `value_len` bytes, when `blob`).
    pub(crate) fn push(&mut self, key: &[u8], raw: &[u8], blob: bool, value_len: u64) {
        if blob {
            self.value_bytes += value_len;
        }
        debug_assert!(
            self.entries.len() < SEGMENT_ENTRIES
                && (self.entries.is_empty()
                    || self.bytes.len() + key.len() + raw.len() <= SEGMENT_BYTES),
            "room_for said yes"
        );
        debug_assert!(
            self.entries.last().is_none_or(|_| {
                let n = self.entries.len() - 1;
                self.key(n) < key
            }),
            "a segment's keys increase"
        );
        let at = self.bytes.len() as u32;
        self.bytes.extend_from_slice(key);
        self.bytes.extend_from_slice(raw);
        self.entries.push(Entry {
            at,
            key_len: key.len() as u32,
            raw_len: raw.len() as u32,
            blob,
            loaded: OnceLock::new(),
        });
    }

    fn key(&self, i: usize) -> &[u8] {
        let e = &self.entries[i];
        &self.bytes[e.at as usize..(e.at + e.key_len) as usize]
    }
}

/// A run of consecutive entries of a pass.
pub(crate) struct Segment {
    id: u64,
    bytes: Vec<u8>,
    entries: Vec<Entry>,
    /// No segment follows.
    last: bool,
    /// The pass ended with this error after the entries.
    error: Option<Error>,
    /// Iterators in this segment.
    readers: AtomicUsize,
    /// Bytes of the blob values of the entries.
    value_bytes: u64,
    /// Its part of the memory budget, given back when the last iterator
    /// (or the window) lets it go.
    _room: Option<Reservation>,
}

impl Segment {
    fn len(&self) -> usize {
        self.entries.len()
    }

    fn key(&self, i: usize) -> &[u8] {
        let e = &self.entries[i];
        &self.bytes[e.at as usize..(e.at + e.key_len) as usize]
    }

    fn raw(&self, i: usize) -> &[u8] {
        let e = &self.entries[i];
        let at = (e.at + e.key_len) as usize;
        &self.bytes[at..at + e.raw_len as usize]
    }

    fn footprint(&self) -> usize {
        self.bytes.capacity() + self.entries.capacity() * std::mem::size_of::<Entry>()
    }
}

/// Counters of every pass of a database.
#[derive(Default, Debug)]
pub(crate) struct PassCounters {
    /// Passes started.
    pub(crate) passes: AtomicU64,
    /// Iterators that joined a pass another one started.
    pub(crate) joined: AtomicU64,
    /// Segments made.
    pub(crate) segments: AtomicU64,
    /// Iterators that found their next segment gone and went on alone.
    pub(crate) behind: AtomicU64,
    /// Waits of a leader for an iterator in the oldest segment.
    pub(crate) paced: AtomicU64,
    /// Segments not made for lack of room in the memory budget (the
    /// iterators that wanted them went on alone).
    pub(crate) refused: AtomicU64,
    /// Bytes of segments resident now.
    pub(crate) bytes: AtomicU64,
}

struct Ring {
    /// Id of `segs[0]`.
    base: u64,
    segs: VecDeque<Arc<Segment>>,
    /// Bytes of the blob values of `segs`.
    value_bytes: u64,
    /// An iterator is making the next segment.
    making: bool,
}

/// Ends the making of a segment: clears `making` and wakes the iterators
/// that wait for it (also when the merge panicked).
struct Making<'a>(&'a SharedPass);

impl Drop for Making<'_> {
    fn drop(&mut self) {
        lock(&self.0.ring).making = false;
        self.0.made.notify_all();
    }
}

/// One pass; see the module docs.
pub(crate) struct SharedPass {
    ring: Mutex<Ring>,
    /// A leader's wait for the iterators in the oldest segment, and their
    /// signal when the last one leaves it.
    pace: Pace,
    /// Signalled when a segment was made.
    made: Condvar,
    /// The merge. It (and the read state it pins) stays until the pass
    /// goes: while the pass is in the map, its state's address cannot name
    /// another state.
    source: Mutex<Box<dyn Source>>,
    /// Iterators in the pass.
    cursors: AtomicUsize,
    /// An iterator asked for a blob value.
    values_wanted: AtomicBool,
    /// The pass of the same state before this one.
    before: Weak<SharedPass>,
    /// When the pass began.
    started: Instant,
    /// Blob value bytes the window holds before it drops segments early.
    window_bytes: u64,
    /// The gauge segments reserve from (the read-ahead part of the memory
    /// budget), if any.
    room: Option<Arc<MemoryGauge>>,
    counters: Arc<PassCounters>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding a pass's lock leaves consistent state (every
    // change under it is one push or pop), so poisoning is ignored.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl SharedPass {
    /// Segment `id`, with the caller counted in it; `None` once it left
    /// the window (the caller fell behind), or when the memory budget had
    /// no room to make it (the caller goes on alone, on its own merge,
    /// whose read-ahead the budget bounds too).
    fn segment(&self, id: u64) -> Option<Arc<Segment>> {
        let mut ring = lock(&self.ring);
        loop {
            if id < ring.base {
                return None;
            }
            if let Some(s) = ring.segs.get((id - ring.base) as usize) {
                s.readers.fetch_add(1, Ordering::SeqCst);
                return Some(Arc::clone(s));
            }
            debug_assert_eq!(id, ring.base + ring.segs.len() as u64, "asked in order");
            if !ring.making {
                break;
            }
            // Another iterator is making it: wait for it here, still
            // counted in the segment before, so it is not dropped under
            // this iterator while it waits.
            ring = self.made.wait(ring).unwrap_or_else(|e| e.into_inner());
        }
        ring.making = true;
        drop(ring);
        // Clears `making` and wakes the waiters however this ends.
        let making = Making(self);
        // Room first: a source's entries, once taken, must go into this
        // segment.
        let room = match &self.room {
            None => None,
            Some(g) => match g.try_reserve(SEGMENT_RESERVE) {
                Some(r) => Some(r),
                None => return self.refused(making),
            },
        };
        let mut b = SegmentBuilder {
            // Allocated once at its bound, so the reservation covers it.
            bytes: Vec::with_capacity(if room.is_some() { SEGMENT_BYTES } else { 0 }),
            entries: Vec::with_capacity(SEGMENT_ENTRIES),
            values_wanted: self.values_wanted.load(Ordering::Relaxed),
            value_bytes: 0,
            room,
        };
        // (Nobody asks past the last segment, so the source has more.)
        let (more, error) = match lock(&self.source).fill(&mut b) {
            Ok(more) => (more, None),
            Err(e) => (false, Some(e)),
        };
        if b.entries.is_empty() && more && error.is_none() {
            // Only a first entry larger than the budget's room stops a
            // source with no entry taken: nothing of the pass is lost.
            return self.refused(making);
        }
        b.bytes.shrink_to_fit();
        let mut seg = Segment {
            id,
            bytes: b.bytes,
            entries: b.entries,
            last: !more,
            error,
            readers: AtomicUsize::new(1),
            value_bytes: b.value_bytes,
            _room: None,
        };
        if let Some(mut r) = b.room {
            let shrunk = r.resize(seg.footprint());
            debug_assert!(
                shrunk && r.bytes() >= seg.footprint(),
                "the reservation covers the segment"
            );
            seg._room = Some(r);
        }
        let seg = Arc::new(seg);
        self.counters.segments.fetch_add(1, Ordering::Relaxed);
        self.counters
            .bytes
            .fetch_add(seg.footprint() as u64, Ordering::Relaxed);
        let mut ring = self.make_room(lock(&self.ring));
        debug_assert_eq!(ring.base + ring.segs.len() as u64, id, "segments in order");
        ring.value_bytes += seg.value_bytes;
        ring.segs.push_back(Arc::clone(&seg));
        drop(ring);
        drop(making);
        Some(seg)
    }

    /// A segment the budget had no room for: counted; the caller goes on
    /// alone.
    fn refused(&self, making: Making<'_>) -> Option<Arc<Segment>> {
        drop(making);
        self.counters.refused.fetch_add(1, Ordering::Relaxed);
        None
    }

    /// Drops the oldest segments until one more fits, waiting up to
    /// [`PACE`] for iterators still in the oldest.
    fn make_room<'a>(&'a self, mut ring: MutexGuard<'a, Ring>) -> MutexGuard<'a, Ring> {
        let mut deadline: Option<Instant> = None;
        while ring.segs.len() >= WINDOW
            || (ring.segs.len() >= 2 && ring.value_bytes > self.window_bytes)
        {
            if self.busy(&ring.segs[0]) {
                let now = Instant::now();
                let until = *deadline.get_or_insert_with(|| {
                    self.counters.paced.fetch_add(1, Ordering::Relaxed);
                    now + PACE
                });
                if now < until {
                    // Woken by the last iterator to leave the segment, or
                    // after the slice (iterators of the pass before, and
                    // the pass's youth, do not signal: they are polled).
                    let slice = (until - now).min(PACE / 10);
                    ring = self.pace.wait(ring, slice, |r| {
                        r.segs.front().is_some_and(|s| self.busy(s))
                    });
                    continue;
                }
            }
            if let Some(old) = ring.segs.pop_front() {
                self.counters
                    .bytes
                    .fetch_sub(old.footprint() as u64, Ordering::Relaxed);
                ring.value_bytes -= old.value_bytes;
            }
            ring.base += 1;
            deadline = None;
        }
        ring
    }

    /// An iterator is in `front`, or `front` is the first segment and
    /// more iterators are likely to come to it: the pass is younger than
    /// [`PACE`] (a pass is only made while another iterator walks the
    /// state, and threads started together arrive within it), or the pass
    /// before still has iterators.
    fn busy(&self, front: &Segment) -> bool {
        front.readers.load(Ordering::SeqCst) > 0
            || (front.id == 0
                && (self.started.elapsed() < PACE
                    || self
                        .before
                        .upgrade()
                        .is_some_and(|b| b.cursors.load(Ordering::SeqCst) > 0)))
    }

    /// The caller left `seg`.
    fn leave(&self, seg: &Segment) {
        self.pace.leave(&seg.readers, &self.ring);
    }
}

/// The passes of a database, by state, and how many iterators walk each
/// state from its start right now (in a pass or alone).
#[derive(Default)]
struct Registry {
    passes: HashMap<PassKey, Weak<SharedPass>>,
    walking: HashMap<PassKey, usize>,
}

/// The passes of a database; see [`SharedPasses::join`].
#[derive(Default)]
pub(crate) struct SharedPasses {
    registry: Mutex<Registry>,
    pub(crate) counters: Arc<PassCounters>,
    /// The gauge segments reserve from (with a memory budget).
    room: Option<Arc<MemoryGauge>>,
}

/// An iterator's registration as walking a state from its start, for as
/// long as it lives.
pub(crate) struct Ticket {
    passes: Arc<SharedPasses>,
    key: PassKey,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut reg = lock(&self.passes.registry);
        if let Some(n) = reg.walking.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                reg.walking.remove(&self.key);
            }
        }
    }
}

impl SharedPasses {
    /// Passes whose segments reserve their bytes from `room` (the
    /// read-ahead part of the memory budget), if given.
    pub(crate) fn new(room: Option<Arc<MemoryGauge>>) -> SharedPasses {
        SharedPasses {
            room,
            ..SharedPasses::default()
        }
    }

    /// True unless the budget's part has less than a segment's bound free
    /// (a hint: a segment still reserves for itself when it is made).
    fn room_for_a_segment(&self) -> bool {
        self.room
            .as_ref()
            .is_none_or(|g| g.limit().saturating_sub(g.used()) >= SEGMENT_RESERVE)
    }

    /// Registers an iterator that starts to walk the state of `key` from
    /// its first key, and finds it a pass: the newest pass of the state
    /// when that one is still at its start; else, when other iterators
    /// walk the state now, a new pass over the merge `make` makes; else
    /// none (`None`: the iterator walks alone, on its own merge, and pays
    /// nothing for a pass nobody shares).
    pub(crate) fn join(
        self: &Arc<Self>,
        key: PassKey,
        window_bytes: u64,
        make: impl FnOnce() -> Box<dyn Source>,
    ) -> (Ticket, Option<Cursor>) {
        let mut reg = lock(&self.registry);
        let walking = reg.walking.entry(key).or_insert(0);
        let others = *walking;
        *walking += 1;
        let ticket = Ticket {
            passes: Arc::clone(self),
            key,
        };
        let current = reg.passes.get(&key).and_then(Weak::upgrade);
        if let Some(p) = &current {
            p.cursors.fetch_add(1, Ordering::SeqCst);
            // Its first segment: resident, being made (wait for it), or
            // gone (it moved on). Outside the registry's lock: other
            // states' iterators go on meanwhile.
            drop(reg);
            if let Some(seg) = p.segment(0) {
                self.counters.joined.fetch_add(1, Ordering::Relaxed);
                return (ticket, Some(Cursor::on(Arc::clone(p), seg)));
            }
            reg = lock(&self.registry);
            p.cursors.fetch_sub(1, Ordering::SeqCst);
        }
        if others == 0 || !self.room_for_a_segment() {
            // Alone, or a pass whose first segment the budget has no room
            // for: its merge would be built only to be dropped.
            return (ticket, None);
        }
        reg.passes.retain(|_, w| w.strong_count() > 0);
        let pass = Arc::new(SharedPass {
            ring: Mutex::new(Ring {
                base: 0,
                segs: VecDeque::with_capacity(WINDOW),
                value_bytes: 0,
                making: false,
            }),
            pace: Pace::new(),
            made: Condvar::new(),
            values_wanted: AtomicBool::new(false),
            source: Mutex::new(make()),
            cursors: AtomicUsize::new(1),
            before: current.as_ref().map_or_else(Weak::new, Arc::downgrade),
            started: Instant::now(),
            window_bytes,
            room: self.room.clone(),
            counters: Arc::clone(&self.counters),
        });
        reg.passes.insert(key, Arc::downgrade(&pass));
        drop(reg);
        self.counters.passes.fetch_add(1, Ordering::Relaxed);
        // Made outside the registry's lock: other states' iterators go on.
        // (A joiner may have taken and left the first segment meanwhile,
        // and the window dropped it: then this iterator walks alone.)
        match pass.segment(0) {
            Some(seg) => (ticket, Some(Cursor::on(pass, seg))),
            None => {
                pass.cursors.fetch_sub(1, Ordering::SeqCst);
                (ticket, None)
            }
        }
    }
}

impl Drop for SharedPass {
    fn drop(&mut self) {
        let ring = self.ring.get_mut().unwrap_or_else(|e| e.into_inner());
        let bytes: usize = ring.segs.iter().map(|s| s.footprint()).sum();
        self.counters
            .bytes
            .fetch_sub(bytes as u64, Ordering::Relaxed);
    }
}

/// What [`Cursor::advance`] found.
pub(crate) enum Step {
    /// On the next entry.
    On,
    /// The pass ended (with this error, if it failed).
    End(Option<Error>),
    /// The next segment left the window: go on alone after `key()`.
    Behind,
}

/// One iterator's place in a pass.
pub(crate) struct Cursor {
    pass: Arc<SharedPass>,
    seg: Arc<Segment>,
    i: usize,
}

impl Cursor {
    fn on(pass: Arc<SharedPass>, seg: Arc<Segment>) -> Cursor {
        debug_assert!(seg.readers.load(Ordering::SeqCst) > 0);
        Cursor { pass, seg, i: 0 }
    }

    /// True when on an entry (false: the pass ended, see [`Self::error`]).
    pub(crate) fn on_entry(&self) -> bool {
        self.i < self.seg.len()
    }

    /// The error the pass ended with, once past its last entry.
    pub(crate) fn error(&self) -> Option<Error> {
        match &self.seg.error {
            Some(e) if !self.on_entry() => Some(e.duplicate()),
            _ => None,
        }
    }

    #[inline]
    pub(crate) fn key(&self) -> &[u8] {
        self.seg.key(self.i)
    }

    /// The raw value and whether it is a blob pointer.
    #[inline]
    pub(crate) fn raw(&self) -> (&[u8], bool) {
        (self.seg.raw(self.i), self.seg.entries[self.i].blob)
    }

    /// The blob value of the entry, read by `read` if no iterator has.
    pub(crate) fn blob_value(
        &self,
        read: impl FnOnce(&[u8]) -> Result<BlobValue>,
    ) -> &Result<BlobValue> {
        let e = &self.seg.entries[self.i];
        debug_assert!(e.blob);
        e.loaded.get_or_init(|| {
            if !self.pass.values_wanted.load(Ordering::Relaxed) {
                self.pass.values_wanted.store(true, Ordering::Relaxed);
            }
            read(self.seg.raw(self.i))
        })
    }

    /// The blob value read at this entry, if any (`None` for inline
    /// values and values not read yet).
    pub(crate) fn loaded(&self) -> Option<&Result<BlobValue>> {
        self.seg.entries.get(self.i).and_then(|e| e.loaded.get())
    }

    /// Moves to the next entry.
    pub(crate) fn advance(&mut self) -> Step {
        debug_assert!(self.on_entry());
        if self.i + 1 < self.seg.len() {
            self.i += 1;
            return Step::On;
        }
        if self.seg.last {
            self.i = self.seg.len();
            return Step::End(self.seg.error.as_ref().map(Error::duplicate));
        }
        let next = self.seg.id + 1;
        // Still counted in this segment while waiting for the next: the
        // pass does not drop it under a follower that waits.
        match self.pass.segment(next) {
            Some(seg) => {
                let old = std::mem::replace(&mut self.seg, seg);
                self.pass.leave(&old);
                self.i = 0;
                if self.seg.len() == 0 {
                    debug_assert!(self.seg.last);
                    return Step::End(self.seg.error.as_ref().map(Error::duplicate));
                }
                Step::On
            }
            None => {
                self.pass.counters.behind.fetch_add(1, Ordering::Relaxed);
                Step::Behind
            }
        }
    }
}

impl Drop for Cursor {
    fn drop(&mut self) {
        self.pass.leave(&self.seg);
        self.pass.cursors.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Keys `0..n` as 8-byte big-endian, values their key's first byte
    /// repeated; fails after `fail_after` entries if set.
    struct Counting {
        next: u64,
        n: u64,
        fail_after: Option<u64>,
        fills: Arc<AtomicU64>,
        /// Each entry stands for a blob value of this many bytes.
        value_len: u64,
    }

    impl Source for Counting {
        fn fill(&mut self, seg: &mut SegmentBuilder) -> Result<bool> {
            self.fills.fetch_add(1, Ordering::SeqCst);
            while self.next < self.n && seg.room_for(8 + 3) {
                if self.fail_after == Some(self.next) {
                    return Err(Error::corruption("test", self.next, "injected"));
                }
                seg.push(
                    &self.next.to_be_bytes(),
                    &[self.next as u8; 3],
                    self.value_len > 0,
                    self.value_len,
                );
                self.next += 1;
            }
            Ok(self.next < self.n)
        }
    }

    fn key(n: u64) -> PassKey {
        PassKey {
            tree: 0,
            state: n as usize,
            seq: 1,
            floor: 0,
        }
    }

    fn walk(mut c: Cursor) -> (Vec<u64>, Option<Error>, bool) {
        let mut got = Vec::new();
        if !c.on_entry() {
            return (got, c.error(), false);
        }
        loop {
            let k = u64::from_be_bytes(c.key().try_into().expect("8-byte key"));
            assert_eq!(c.raw().0, &[k as u8; 3]);
            got.push(k);
            match c.advance() {
                Step::On => {}
                Step::End(e) => return (got, e, false),
                Step::Behind => return (got, None, true),
            }
        }
    }

    fn counting(n: u64, fail_after: Option<u64>, fills: &Arc<AtomicU64>) -> Box<dyn Source> {
        Box::new(Counting {
            next: 0,
            n,
            fail_after,
            fills: Arc::clone(fills),
            value_len: 0,
        })
    }

    /// Another iterator walking the state of `k` alone: with it, the
    /// next ones make and join a pass.
    fn crowd(passes: &Arc<SharedPasses>, k: PassKey) -> Ticket {
        let fills = Arc::new(AtomicU64::new(0));
        let (t, c) = passes.join(k, u64::MAX, || counting(0, None, &fills));
        assert!(c.is_none(), "the first walker of a state walks alone");
        t
    }

    #[test]
    fn a_lone_iterator_walks_alone_and_the_next_one_makes_a_pass() {
        let passes = Arc::new(SharedPasses::default());
        let fills = Arc::new(AtomicU64::new(0));
        let (first, alone) = passes.join(key(8), u64::MAX, || counting(10, None, &fills));
        assert!(alone.is_none());
        assert_eq!(fills.load(Ordering::SeqCst), 0, "no merge made for it");
        let (_second, c) = passes.join(key(8), u64::MAX, || counting(10, None, &fills));
        assert_eq!(walk(c.expect("a pass")).0.len(), 10);
        drop(first);
        // Alone again once the others are gone.
        drop(_second);
        assert!(
            passes
                .join(key(8), u64::MAX, || counting(10, None, &fills))
                .1
                .is_none()
        );
    }

    #[test]
    fn one_cursor_sees_every_entry_and_the_end() {
        let passes = Arc::new(SharedPasses::default());
        let fills = Arc::new(AtomicU64::new(0));
        let _others: Vec<Ticket> = [0u64, 1, 255, 256, 257, 10_000]
            .iter()
            .map(|&n| crowd(&passes, key(n)))
            .collect();
        for n in [0u64, 1, 255, 256, 257, 10_000] {
            let (got, err, behind) = walk(
                passes
                    .join(key(n), u64::MAX, || counting(n, None, &fills))
                    .1
                    .expect("joined"),
            );
            assert_eq!(got, (0..n).collect::<Vec<_>>(), "n = {n}");
            assert!(err.is_none() && !behind);
        }
    }

    #[test]
    fn the_window_holds_at_most_its_value_bytes_but_two_segments() {
        let passes = Arc::new(SharedPasses::default());
        let fills = Arc::new(AtomicU64::new(0));
        let _other = crowd(&passes, key(2));
        let n = 10 * SEGMENT_ENTRIES as u64;
        let source = |value_len| {
            Box::new(Counting {
                next: 0,
                n,
                fail_after: None,
                fills: Arc::clone(&fills),
                value_len,
            }) as Box<dyn Source>
        };
        // Three segments of 4 KiB values fit.
        let window = 3 * SEGMENT_ENTRIES as u64 * 4096;
        let slow = passes
            .join(key(2), window, || source(4096))
            .1
            .expect("joined");
        let fast = passes
            .join(key(2), window, || source(4096))
            .1
            .expect("joined");
        let (got, _, behind) = walk(fast);
        assert!(!behind && got.len() as u64 == n);
        // The slow one is still in segment 0, which the leader dropped
        // after its wait: the window did not grow to 10 segments.
        let (_, _, behind) = walk(slow);
        assert!(behind);
        assert!(passes.counters.paced.load(Ordering::SeqCst) > 0);
    }

    #[test]
    fn a_young_pass_keeps_its_first_segment_a_moment_for_joiners() {
        let passes = Arc::new(SharedPasses::default());
        let fills = Arc::new(AtomicU64::new(0));
        let n = 40 * SEGMENT_ENTRIES as u64;
        // A pass with one cursor (the other walker never joins): its
        // leader waits for joiners once, for at most PACE, then goes on.
        let _other = crowd(&passes, key(9));
        let started = Instant::now();
        let (got, _, behind) = walk(
            passes
                .join(key(9), u64::MAX, || counting(n, None, &fills))
                .1
                .expect("joined"),
        );
        assert!(!behind && got.len() as u64 == n);
        assert_eq!(passes.counters.paced.load(Ordering::SeqCst), 1, "one wait");
        assert!(started.elapsed() >= PACE.min(Duration::from_millis(40)));
    }

    #[test]
    fn an_error_ends_the_pass_after_the_entries_before_it() {
        let passes = Arc::new(SharedPasses::default());
        let fills = Arc::new(AtomicU64::new(0));
        let _other = crowd(&passes, key(1));
        let (got, err, _) = walk(
            passes
                .join(key(1), u64::MAX, || counting(1000, Some(700), &fills))
                .1
                .expect("joined"),
        );
        assert_eq!(got, (0..700).collect::<Vec<_>>());
        assert!(err.is_some(), "the failure is reported at the end");
    }

    #[test]
    fn many_threads_share_one_merge_and_see_the_same_entries() {
        let passes = Arc::new(Arc::new(SharedPasses::default()));
        let fills = Arc::new(AtomicU64::new(0));
        let _other = crowd(&passes, key(7));
        let n = 50_000u64;
        let barrier = Arc::new(std::sync::Barrier::new(16));
        let handles: Vec<_> = (0..16)
            .map(|_| {
                let (passes, fills, barrier) = (
                    Arc::clone(&passes),
                    Arc::clone(&fills),
                    Arc::clone(&barrier),
                );
                std::thread::spawn(move || {
                    barrier.wait();
                    let c = passes
                        .join(key(7), u64::MAX, || counting(n, None, &fills))
                        .1
                        .expect("joined");
                    walk(c)
                })
            })
            .collect();
        let mut behind = 0;
        for h in handles {
            let (got, err, fell) = h.join().expect("no panic");
            assert!(err.is_none());
            if fell {
                behind += 1;
                assert!(got.iter().copied().eq(0..got.len() as u64), "a prefix");
            } else {
                assert_eq!(got.len() as u64, n);
                assert!(got.iter().copied().eq(0..n));
            }
        }
        let c = &passes.counters;
        let segs = n.div_ceil(SEGMENT_ENTRIES as u64);
        // Every pass makes each segment once; few passes for 16 threads
        // that started together.
        let made = c.segments.load(Ordering::SeqCst);
        assert_eq!(made % segs, 0, "whole passes: {made} segments");
        assert!(c.passes.load(Ordering::SeqCst) <= 16);
        assert_eq!(c.bytes.load(Ordering::SeqCst), 0, "gone with their cursors");
        eprintln!(
            "passes {}, joined {}, behind {behind}, paced {}",
            c.passes.load(Ordering::SeqCst),
            c.joined.load(Ordering::SeqCst),
            c.paced.load(Ordering::SeqCst)
        );
    }

    #[test]
    fn a_cursor_left_behind_is_told_and_the_window_stays_bounded() {
        let passes = Arc::new(SharedPasses::default());
        let fills = Arc::new(AtomicU64::new(0));
        let _other = crowd(&passes, key(3));
        let n = (WINDOW as u64 + 8) * SEGMENT_ENTRIES as u64;
        let slow = passes
            .join(key(3), u64::MAX, || counting(n, None, &fills))
            .1
            .expect("joined");
        let fast = passes
            .join(key(3), u64::MAX, || counting(n, None, &fills))
            .1
            .expect("joined");
        assert_eq!(
            fills.load(Ordering::SeqCst),
            1,
            "the second joined the first"
        );
        let started = Instant::now();
        let (got, err, behind) = walk(fast);
        assert!(err.is_none() && !behind);
        assert_eq!(got.len() as u64, n);
        assert!(
            started.elapsed() >= PACE,
            "the leader waited for the follower"
        );
        assert!(passes.counters.paced.load(Ordering::SeqCst) > 0);
        let (got, _, behind) = walk(slow);
        assert!(behind, "its next segment was dropped");
        assert_eq!(got.len(), SEGMENT_ENTRIES);
        // The pass is gone with its cursors; its segments with it.
    }

    #[test]
    fn a_new_pass_starts_when_the_current_one_moved_on() {
        let passes = Arc::new(SharedPasses::default());
        let fills = Arc::new(AtomicU64::new(0));
        let _others = (crowd(&passes, key(4)), crowd(&passes, key(5)));
        let n = 3 * SEGMENT_ENTRIES as u64;
        let mut a = passes
            .join(key(4), u64::MAX, || counting(n, None, &fills))
            .1
            .expect("joined");
        for _ in 0..SEGMENT_ENTRIES {
            assert!(matches!(a.advance(), Step::On));
        }
        // Segment 0 is still resident (WINDOW > 2): a newcomer joins.
        let b = passes
            .join(key(4), u64::MAX, || counting(n, None, &fills))
            .1
            .expect("joined");
        assert_eq!(passes.counters.joined.load(Ordering::SeqCst), 1);
        assert_eq!(walk(b).0.len() as u64, n);
        assert_eq!(walk(a).0.len() as u64, n - SEGMENT_ENTRIES as u64);
        // Another state: its own pass.
        let c = passes
            .join(key(5), u64::MAX, || counting(10, None, &fills))
            .1
            .expect("joined");
        assert_eq!(walk(c).0.len(), 10);
        assert_eq!(passes.counters.passes.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn segments_reserve_their_bytes_and_a_refused_one_sends_iterators_on_alone() {
        let limit = 3 * SEGMENT_RESERVE;
        let gauge = MemoryGauge::new(limit);
        let passes = Arc::new(SharedPasses::new(Some(Arc::clone(&gauge))));
        let fills = Arc::new(AtomicU64::new(0));
        let _other = crowd(&passes, key(6));
        let n = 1000 * SEGMENT_ENTRIES as u64;
        let (_t1, a) = passes.join(key(6), u64::MAX, || counting(n, None, &fills));
        // `b` stays at the start: the pass keeps every segment it made
        // (up to the window), so the gauge fills and refuses one.
        let (_t2, b) = passes.join(key(6), u64::MAX, || counting(n, None, &fills));
        let (a, b) = (a.expect("a pass"), b.expect("joined"));
        let resident = |at: &str| {
            assert!(gauge.used() <= limit, "{at}: {} of {limit}", gauge.used());
            assert!(
                passes.counters.bytes.load(Ordering::SeqCst) as usize <= gauge.used(),
                "{at}: every resident segment is reserved"
            );
        };
        resident("first segment");
        let (seen_a, err, behind) = walk(a);
        assert!(err.is_none());
        assert!(behind, "a refused segment sends the iterator on alone");
        let made = seen_a.len() / SEGMENT_ENTRIES;
        assert!((3..WINDOW).contains(&made), "{made} segments fit");
        assert_eq!(seen_a, (0..seen_a.len() as u64).collect::<Vec<_>>());
        assert_eq!(passes.counters.refused.load(Ordering::SeqCst), 1);
        resident("refused");
        // The entries the refusal left in the source are not lost: the
        // iterator behind reads the same segments, and the same end.
        let (seen_b, _, behind) = walk(b);
        assert!(behind);
        assert_eq!(seen_b, seen_a);
        resident("both behind");
        drop(passes);
        assert_eq!(gauge.used(), 0, "every segment gave its bytes back");
    }

    #[test]
    fn a_first_entry_larger_than_a_segment_needs_room_for_itself() {
        struct Big(u64);
        impl Source for Big {
            fn fill(&mut self, seg: &mut SegmentBuilder) -> Result<bool> {
                while self.0 < 3 && seg.room_for(8 + 2 * SEGMENT_BYTES) {
                    seg.push(&self.0.to_be_bytes(), &vec![7; 2 * SEGMENT_BYTES], false, 0);
                    self.0 += 1;
                }
                Ok(self.0 < 3)
            }
        }
        for (limit, fits) in [
            (SEGMENT_RESERVE + SEGMENT_BYTES, false),
            (8 * SEGMENT_RESERVE, true),
        ] {
            let gauge = MemoryGauge::new(limit);
            let passes = Arc::new(SharedPasses::new(Some(Arc::clone(&gauge))));
            let _other = crowd(&passes, key(7));
            let (_t, c) = passes.join(key(7), u64::MAX, || Box::new(Big(0)));
            if !fits {
                assert!(
                    c.is_none(),
                    "no room for the first entry: no pass, nothing taken"
                );
                assert_eq!(passes.counters.refused.load(Ordering::SeqCst), 1);
                continue;
            }
            let mut c = c.expect("a pass");
            let mut got = 0;
            loop {
                assert!(gauge.used() <= limit);
                assert_eq!(c.raw().0.len(), 2 * SEGMENT_BYTES);
                got += 1;
                match c.advance() {
                    Step::On => {}
                    Step::End(e) => {
                        assert!(e.is_none());
                        break;
                    }
                    Step::Behind => panic!("room for each"),
                }
            }
            assert_eq!(got, 3, "one entry a segment");
        }
    }

    #[test]
    fn no_pass_is_made_while_the_budget_has_no_room_for_its_first_segment() {
        let gauge = MemoryGauge::new(4 * SEGMENT_RESERVE);
        let passes = Arc::new(SharedPasses::new(Some(Arc::clone(&gauge))));
        let fills = Arc::new(AtomicU64::new(0));
        let _other = crowd(&passes, key(8));
        let taken = gauge
            .try_reserve(3 * SEGMENT_RESERVE + 1)
            .expect("the rest of the part");
        let mut made = false;
        let (_t, c) = passes.join(key(8), u64::MAX, || {
            made = true;
            counting(10, None, &fills)
        });
        assert!(c.is_none(), "walks alone");
        assert!(!made, "no merge built for a pass that could not start");
        assert_eq!(passes.counters.passes.load(Ordering::SeqCst), 0);
        drop(taken);
        let (_t, c) = passes.join(key(8), u64::MAX, || counting(10, None, &fills));
        assert_eq!(walk(c.expect("room again: a pass")).0.len(), 10);
    }
}
