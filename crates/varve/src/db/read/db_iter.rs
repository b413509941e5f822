//! [`DbIterator`]: the user-facing iterator. It turns the merged stream of
//! internal entries into user keys and values as of one sequence number:
//! newer versions than the snapshot are invisible, older versions of a key
//! are hidden behind the newest visible one, tombstones hide the key, an
//! entry under a range tombstone the snapshot sees, or expired by
//! `Options::ttl`, counts as a tombstone (`crate::range_del`, `db/ttl.rs`),
//! and `[lower, upper)` bounds are applied.
//!
//! Direction handling follows LevelDB's `DBIter`: moving forward, the
//! internal iterator sits on the entry being returned; moving backward, the
//! current entry is copied into `saved_*` and the internal iterator sits
//! just before every entry of that user key. Single-threaded (`Send`).
//!
//! As a Rust iterator it is double-ended: `next` walks the cursor forward,
//! `next_back` walks a second cursor (made on first use, over the same
//! pinned state) backward from the end, and neither yields a key the other
//! has passed: the front yields a key only if it is not above the back
//! cursor's next key, and the other way round, so the two meet without a
//! copy of any key. An error of either ends both.

use std::cell::{Cell, OnceCell, RefCell};
use std::cmp::Ordering;
use std::sync::Arc;

use super::scan_ahead::{At, ScanAhead, Scout};
use super::shared_pass::{Cursor, SegmentBuilder, Step, Ticket};
use super::{Share, Sibling};
use crate::blob::cache::BlobReaders;
use crate::blob::format::BlobPointer;
use crate::blob::readahead::{BlobReadahead, BlobValue};
use crate::db::memtables::SuperVersion;
use crate::error::Result;
use crate::internal_iter::InternalIterator;
use crate::keys::{self, MAX_SEQUENCE, SequenceNumber, ValueKind};
use crate::range_del::RangeView;
use crate::snapshot::Snapshot;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    Reverse,
}

/// An ordered cursor over the database at one point in time, and a
/// double-ended Rust [`Iterator`] of `Result<(key, value)>`.
///
/// As an `Iterator`, [`next`](Iterator::next) yields the entry under the
/// cursor and moves it forward (a cursor never positioned starts at the
/// first key, so `db.iter()` walks everything in order; after a
/// [`seek`](Self::seek) it walks on from there), and
/// [`next_back`](DoubleEndedIterator::next_back) yields entries from the
/// last key backward, so `db.iter().rev()` and `db.range(a..b).rev()`
/// work. The two ends never yield the same key. An `Err` item ends the
/// iteration: nothing follows it, from either end.
///
/// The cursor API ([`seek`](Self::seek), [`move_next`](Self::move_next),
/// [`move_prev`](Self::move_prev), [`key`](Self::key), [`value`](Self::value))
/// borrows instead of copying.
///
/// The iterator keeps its snapshot and memtables alive while it exists; it
/// never sees writes made after it was created.
pub struct DbIterator {
    iter: Box<dyn InternalIterator>,
    seq: SequenceNumber,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
    direction: Direction,
    valid: bool,
    positioned: bool,
    saved_key: Vec<u8>,
    saved_value: Vec<u8>,
    error: Option<crate::error::Error>,
    /// An `Err` item was yielded (or the two ends met): the Rust iterator
    /// is finished.
    done: bool,
    /// Makes the cursor `back` walks (for `next_back`).
    sibling: Sibling,
    /// The backward cursor of the double-ended iterator, made on the first
    /// `next_back` and positioned at the last key.
    back: Option<Box<DbIterator>>,
    /// The current entry's value lives in a blob file (its raw value is a
    /// pointer).
    blob: bool,
    /// The current entry's blob value, read on the first `value()` at this
    /// position (a key-only walk reads none); an `Err` makes the iterator
    /// invalid with that error.
    loaded: OnceCell<Result<BlobValue>>,
    /// A blob value this iterator asked for failed to read (its own, in
    /// `loaded`, or a shared pass's entry): the iterator is invalid from
    /// then on and [`status`](Self::status) has the error. Kept as a flag
    /// so that `valid()`, asked at every step of a scan, reads two bools.
    /// Only this iterator's own reads set it: an iterator of a shared pass
    /// that never asks for the damaged value goes on as it would alone.
    failed: Cell<bool>,
    /// Where blob values are read from.
    blobs: Arc<BlobReaders>,
    /// Read-ahead of blob values for forward scans.
    blob_ra: RefCell<BlobReadahead>,
    /// The look-ahead of short forward scans over blob values: batches
    /// of the next entries' values read together (`scan_ahead.rs`).
    ahead: RefCell<ScanAhead>,
    /// Counts moves: a `next` forward adds 1, any other move 2, so two
    /// values asked for one `next` apart are in a row.
    step: u64,
    _snapshot: Snapshot,
    /// Keeps the memtables and table files the iterator reads alive.
    pin: Arc<SuperVersion>,
    /// The range tombstones of `pin`.
    ranges: RangeView,
    /// `Options::ttl`: entries below this sequence number are expired.
    expired: SequenceNumber,
    /// `ranges` is not empty or `expired` is not 0: only then can an entry
    /// read as a value be hidden (when nothing hides, the forward loop
    /// runs a copy without the test and the backward one tests this once
    /// per entry).
    hiding: bool,
    /// How to join a shared pass over this state (`shared_pass`): set for
    /// iterators without bounds.
    share: Option<Share>,
    /// The place in a shared pass, while the cursor walks one: then it,
    /// not `iter`, holds the current entry (and `direction` is forward).
    shared: Option<Cursor>,
    /// Registered as walking its state from the start (alone or in a
    /// pass): iterators that start meanwhile share a pass.
    ticket: Option<Ticket>,
}

impl std::fmt::Debug for DbIterator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DbIterator")
            .field("sequence", &self.seq)
            .field("valid", &self.valid)
            .finish()
    }
}

impl DbIterator {
    pub(crate) fn new(
        iter: Box<dyn InternalIterator>,
        snapshot: Snapshot,
        lower: Option<Vec<u8>>,
        upper: Option<Vec<u8>>,
        pin: Arc<SuperVersion>,
        sibling: Sibling,
        (blobs, blob_ra, ahead): (Arc<BlobReaders>, BlobReadahead, ScanAhead),
    ) -> Self {
        let ranges = pin.range_view();
        let hiding = !ranges.is_empty();
        DbIterator {
            iter,
            seq: snapshot.sequence(),
            lower,
            upper,
            direction: Direction::Forward,
            valid: false,
            positioned: false,
            saved_key: Vec::new(),
            saved_value: Vec::new(),
            error: None,
            done: false,
            sibling,
            back: None,
            blob: false,
            loaded: OnceCell::new(),
            failed: Cell::new(false),
            blobs,
            blob_ra: RefCell::new(blob_ra),
            ahead: RefCell::new(ahead),
            step: 0,
            _snapshot: snapshot,
            ranges,
            pin,
            expired: 0,
            hiding,
            share: None,
            shared: None,
            ticket: None,
        }
    }

    /// Lets `seek_to_first` join a shared pass of `key`, made by `make`.
    pub(crate) fn with_share(mut self, share: Share) -> Self {
        self.share = Some(share);
        self
    }

    /// An iterator that fails with `error` (if any) before reading.
    pub(crate) fn with_error(mut self, error: Option<crate::error::Error>) -> Self {
        if error.is_some() {
            self.error = error;
        }
        self
    }

    /// Hides the entries below sequence number `floor` (expired by
    /// `Options::ttl`, as of the iterator's creation).
    pub(crate) fn with_expiry_floor(mut self, floor: SequenceNumber) -> Self {
        self.expired = floor;
        self.hiding |= floor > 0;
        self
    }

    /// True when a range tombstone this reader sees covers entry
    /// `(user_key, seq)`, or `Options::ttl` expired it: it then counts as a
    /// deletion. Asked only when `hiding` (the scan loops test that first,
    /// the forward one at compile time).
    #[inline(always)]
    fn hidden(&self, user_key: &[u8], seq: SequenceNumber) -> bool {
        debug_assert!(self.hiding, "asked only when something can hide");
        debug_assert_eq!(self.hiding, self.expired > 0 || !self.ranges.is_empty());
        seq < self.expired || self.ranges.hides(user_key, seq, self.seq)
    }

    /// True when the cursor is on an entry (false once reading its blob
    /// value failed: see [`status`](Self::status)).
    #[inline]
    pub fn valid(&self) -> bool {
        debug_assert!(
            self.failed.get() || !matches!(self.loaded.get(), Some(Err(_))),
            "a failed read of this iterator's own blob value sets `failed`"
        );
        self.valid & !self.failed.get()
    }

    /// The current key. Empty when not [`valid`](Self::valid).
    #[inline]
    pub fn key(&self) -> &[u8] {
        if !self.valid {
            return &[];
        }
        if let Some(c) = &self.shared {
            return c.key();
        }
        match self.direction {
            Direction::Forward => keys::user_key(self.iter.key()),
            Direction::Reverse => &self.saved_key,
        }
    }

    /// The current value. Empty when not [`valid`](Self::valid). A value
    /// kept in a blob file is read here, on the first call at a position;
    /// if that read fails the value is empty, the iterator turns invalid
    /// and [`status`](Self::status) has the error.
    #[inline]
    pub fn value(&self) -> &[u8] {
        if !self.valid {
            return &[];
        }
        if let Some(c) = &self.shared {
            return self.shared_value(c);
        }
        let raw = match self.direction {
            Direction::Forward => self.iter.value(),
            Direction::Reverse => &self.saved_value,
        };
        if !self.blob {
            return raw;
        }
        self.blob_value(raw)
    }

    /// The blob value that `raw` points to, read on the first call at this
    /// position. Kept out of line: a scan of inline values never calls it.
    #[inline(never)]
    fn blob_value(&self, raw: &[u8]) -> &[u8] {
        match self.loaded.get_or_init(|| self.read_blob(raw)) {
            Ok(v) => v.as_slice(),
            Err(_) => {
                self.failed.set(true);
                &[]
            }
        }
    }

    /// Reads the blob value `raw` points to, for the current entry: through
    /// the short-scan look-ahead, which may read it with the next entries'
    /// values (on a scout, a twin of this cursor).
    fn read_blob(&self, raw: &[u8]) -> Result<BlobValue> {
        let at = At {
            step: self.step,
            key: self.key(),
        };
        let scout = || Box::new(self.twin()) as Box<dyn Scout>;
        self.ahead
            .borrow_mut()
            .value(&mut self.blob_ra.borrow_mut(), &self.blobs, raw, at, &scout)
    }

    /// The value of the shared pass's current entry; a blob value is read
    /// once per pass, by the first iterator that asks.
    #[inline]
    fn shared_value<'a>(&'a self, c: &'a Cursor) -> &'a [u8] {
        let (raw, blob) = c.raw();
        if !blob {
            return raw;
        }
        let read = |raw: &[u8]| {
            let mut ra = self.blob_ra.borrow_mut();
            let v = ra.value(&self.blobs, raw)?;
            // The entry keeps a view of its own; the one served goes back
            // to the read-ahead state (which may hold its chunk).
            Ok(match v.share() {
                Some(kept) => {
                    ra.recycle(v);
                    kept
                }
                None => v,
            })
        };
        match c.blob_value(read) {
            Ok(v) => v.as_slice(),
            Err(_) => {
                self.failed.set(true);
                &[]
            }
        }
    }

    /// The first error met while iterating, if any. An iterator that hit an
    /// error is not valid, and stays invalid: no seek brings it back (open a
    /// new iterator). As an [`Iterator`] it yields the error as its next
    /// item and nothing after it.
    pub fn status(&self) -> Result<()> {
        if let Some(Err(e)) = self.loaded.get() {
            return Err(e.duplicate());
        }
        if self.failed.get()
            && let Some(Err(e)) = self.shared.as_ref().and_then(Cursor::loaded)
        {
            return Err(e.duplicate());
        }
        match &self.error {
            None => self.iter.status(),
            Some(e) => Err(e.duplicate()),
        }
    }

    /// Forgets the blob value read at the previous position. Every move
    /// starts with it; a failed blob read is kept as the iterator's error.
    fn moving(&mut self) {
        if !self.blob {
            // An inline value: nothing was loaded (the common step of a
            // scan of small values does no more than this test).
            debug_assert!(self.loaded.get().is_none(), "loaded only on a blob entry");
            return;
        }
        match self.loaded.take() {
            Some(Err(e)) if self.error.is_none() => self.error = Some(e),
            // A value from a shared chunk gives the chunk back to the
            // read-ahead state, which may serve the next value from it.
            Some(Ok(v)) => self.blob_ra.get_mut().recycle(v),
            _ => {}
        }
        self.blob = false;
    }

    /// Moves to the first key (at or after the lower bound).
    pub fn seek_to_first(&mut self) {
        self.step = self.step.wrapping_add(2);
        self.moving();
        self.leave_pass();
        self.positioned = true;
        self.direction = Direction::Forward;
        self.saved_key.clear();
        let joined = match &self.share {
            Some(s) if self.error.is_none() => {
                let (ticket, cursor) = s.passes.join(s.key, s.window_bytes, || (s.make)());
                self.ticket = Some(ticket);
                cursor
            }
            _ => None,
        };
        if let Some(c) = joined {
            // The pass keeps its iterators together: no chunk pacing.
            self.blob_ra.get_mut().set_pacing(false);
            self.valid = c.on_entry();
            if !self.valid {
                self.error = c.error();
            }
            self.shared = Some(c);
            return;
        }
        match self.lower.clone() {
            Some(lower) => self.iter.seek(&keys::lookup_key(&lower, self.seq)),
            None => self.iter.seek_to_first(),
        }
        self.find_next_user_entry(false);
    }

    /// Moves to the last key (before the upper bound).
    pub fn seek_to_last(&mut self) {
        self.step = self.step.wrapping_add(2);
        self.moving();
        self.leave_pass();
        self.positioned = true;
        self.direction = Direction::Reverse;
        self.saved_key.clear();
        self.saved_value.clear();
        match &self.upper {
            Some(upper) => {
                let t = keys::make_internal_key(upper, MAX_SEQUENCE, ValueKind::FOR_SEEK);
                self.iter.seek_for_prev(&t);
                // The target sorts before every entry of `upper`, but an
                // entry equal to it would be `upper` itself: step past it.
                if self.iter.valid() && keys::user_key(self.iter.key()) >= upper.as_slice() {
                    self.iter.prev();
                }
            }
            None => self.iter.seek_to_last(),
        }
        self.find_prev_user_entry();
    }

    /// Moves to the first key `>= key` (clamped to the bounds).
    pub fn seek(&mut self, key: impl AsRef<[u8]>) {
        let mut target = key.as_ref();
        if let Some(lower) = &self.lower
            && target < lower.as_slice()
        {
            target = lower;
        }
        let t = keys::lookup_key(target, self.seq);
        self.step = self.step.wrapping_add(2);
        self.moving();
        self.leave_pass();
        self.positioned = true;
        self.direction = Direction::Forward;
        self.saved_key.clear();
        self.iter.seek(&t);
        self.find_next_user_entry(false);
    }

    /// Moves to the last key `<= key` (clamped to the bounds).
    pub fn seek_for_prev(&mut self, key: impl AsRef<[u8]>) {
        let key = key.as_ref();
        if let Some(upper) = &self.upper
            && key >= upper.as_slice()
        {
            self.seek_to_last();
            return;
        }
        self.step = self.step.wrapping_add(2);
        self.moving();
        self.leave_pass();
        self.positioned = true;
        self.direction = Direction::Reverse;
        self.saved_key.clear();
        self.saved_value.clear();
        // (key, 0, Deletion) is the largest internal key of `key`.
        self.iter
            .seek_for_prev(&keys::make_internal_key(key, 0, ValueKind::Deletion));
        self.find_prev_user_entry();
    }

    /// Moves to the next key. Does nothing when not valid.
    pub fn move_next(&mut self) {
        if !self.valid() {
            return;
        }
        if self.shared.is_some() {
            self.shared_next();
            return;
        }
        self.moving();
        if self.direction == Direction::Reverse {
            self.step = self.step.wrapping_add(2);
            self.direction = Direction::Forward;
            // The internal iterator is just before every entry of the
            // current key; step onto the first of them, then skip them all.
            if self.iter.valid() {
                self.iter.next();
            } else {
                self.iter.seek_to_first();
            }
            if !self.iter.valid() {
                self.valid = false;
                self.saved_key.clear();
                self.check_status();
                return;
            }
        } else {
            self.step = self.step.wrapping_add(1);
            self.saved_key.clear();
            self.saved_key
                .extend_from_slice(keys::user_key(self.iter.key()));
            self.iter.next();
        }
        self.find_next_user_entry(true);
    }

    /// Moves to the previous key. Does nothing when not valid.
    pub fn move_prev(&mut self) {
        if !self.valid() {
            return;
        }
        if self.shared.is_some() {
            // Backward is this iterator's own walk: position its merge on
            // the current key first.
            let here = self.key().to_vec();
            self.seek(&here);
            if !self.valid() {
                return;
            }
        }
        self.step = self.step.wrapping_add(2);
        self.moving();
        if self.direction == Direction::Forward {
            self.saved_key.clear();
            self.saved_key
                .extend_from_slice(keys::user_key(self.iter.key()));
            loop {
                self.iter.prev();
                if !self.iter.valid() {
                    self.valid = false;
                    self.saved_key.clear();
                    self.saved_value.clear();
                    self.check_status();
                    return;
                }
                if keys::user_key(self.iter.key()) < self.saved_key.as_slice() {
                    break;
                }
            }
            self.direction = Direction::Reverse;
        }
        self.find_prev_user_entry();
    }

    /// Leaves the shared pass, if in one; an error met there stays the
    /// iterator's.
    fn leave_pass(&mut self) {
        self.ticket = None;
        if let Some(c) = self.shared.take() {
            self.blob_ra.get_mut().set_pacing(true);
            if self.failed.get()
                && let Some(Err(e)) = c.loaded()
                && self.error.is_none()
            {
                self.error = Some(e.duplicate());
            }
        }
    }

    /// `move_next` in a shared pass.
    fn shared_next(&mut self) {
        let Some(c) = self.shared.as_mut() else {
            return;
        };
        match c.advance() {
            Step::On => {}
            Step::End(error) => {
                self.valid = false;
                if error.is_some() {
                    self.error = error;
                }
            }
            Step::Behind => {
                // The pass went on without this iterator: go on alone,
                // after the key it is on.
                let here = c.key().to_vec();
                self.seek(&here);
                if self.valid() && self.key() == here.as_slice() {
                    self.move_next();
                }
            }
        }
    }

    fn check_status(&mut self) {
        if self.error.is_none()
            && let Err(e) = self.iter.status()
        {
            self.error = Some(e);
            self.valid = false;
        }
    }

    /// Forward: advance until the internal iterator is on the newest visible
    /// value of a user key not hidden by `saved_key` (when `skipping`).
    ///
    /// Two copies of one loop: a reader with nothing that hides entries
    /// (no range tombstone, no expiry) runs the one without the test, so
    /// its per-entry work is what it was before range tombstones and TTL.
    #[inline]
    fn find_next_user_entry(&mut self, skipping: bool) {
        if self.hiding {
            self.find_next_user_entry_in::<true>(skipping);
        } else {
            self.find_next_user_entry_in::<false>(skipping);
        }
    }

    /// [`find_next_user_entry`](Self::find_next_user_entry), with the
    /// range-tombstone and expiry test only when `HIDING`.
    fn find_next_user_entry_in<const HIDING: bool>(&mut self, mut skipping: bool) {
        debug_assert_eq!(HIDING, self.hiding);
        if self.error.is_some() {
            self.valid = false;
            return;
        }
        while self.iter.valid() {
            if let Some(p) = keys::parse_internal_key(self.iter.key()) {
                if p.seq <= self.seq {
                    let kind = if HIDING && self.hidden(p.user_key, p.seq) {
                        ValueKind::Deletion
                    } else {
                        p.kind
                    };
                    match kind {
                        ValueKind::Deletion => {
                            self.saved_key.clear();
                            self.saved_key.extend_from_slice(p.user_key);
                            skipping = true;
                        }
                        ValueKind::Value | ValueKind::BlobIndex => {
                            let hidden = skipping && p.user_key <= self.saved_key.as_slice();
                            if !hidden {
                                if let Some(upper) = &self.upper
                                    && p.user_key >= upper.as_slice()
                                {
                                    break;
                                }
                                self.blob = p.kind == ValueKind::BlobIndex;
                                self.valid = true;
                                self.saved_key.clear();
                                return;
                            }
                        }
                    }
                }
            } else {
                self.error = Some(malformed_key());
                break;
            }
            self.iter.next();
        }
        self.valid = false;
        self.saved_key.clear();
        self.check_status();
    }

    /// Backward: collect the newest visible entry of the previous user key
    /// into `saved_*`, leaving the internal iterator before all its entries.
    fn find_prev_user_entry(&mut self) {
        if self.error.is_some() {
            self.valid = false;
            self.direction = Direction::Forward;
            return;
        }
        let mut kind = ValueKind::Deletion;
        while self.iter.valid() {
            let Some(p) = keys::parse_internal_key(self.iter.key()) else {
                self.error = Some(malformed_key());
                break;
            };
            if p.seq <= self.seq {
                if kind != ValueKind::Deletion && p.user_key.cmp(&self.saved_key) == Ordering::Less
                {
                    break; // saved_* holds a complete entry of a later key
                }
                if let Some(lower) = &self.lower
                    && p.user_key < lower.as_slice()
                {
                    break;
                }
                kind = if self.hiding && self.hidden(p.user_key, p.seq) {
                    ValueKind::Deletion
                } else {
                    p.kind
                };
                match kind {
                    ValueKind::Deletion => {
                        self.saved_key.clear();
                        self.saved_value.clear();
                    }
                    ValueKind::Value | ValueKind::BlobIndex => {
                        self.saved_key.clear();
                        self.saved_key.extend_from_slice(p.user_key);
                        self.saved_value.clear();
                        self.saved_value.extend_from_slice(self.iter.value());
                        self.blob = p.kind == ValueKind::BlobIndex;
                    }
                }
            }
            self.iter.prev();
        }
        // The merge ran out or failed: a failure may have hidden a newer
        // entry of the key collected in `saved_*`, so it must not be
        // returned.
        if !self.iter.valid() {
            self.check_status();
        }
        if kind == ValueKind::Deletion || self.error.is_some() {
            self.valid = false;
            self.saved_key.clear();
            self.saved_value.clear();
            self.direction = Direction::Forward;
            self.check_status();
        } else {
            self.valid = true;
        }
    }
}

impl Drop for DbIterator {
    /// A value served from a chunk the read-ahead holds goes back to it
    /// before the read-ahead state (and its held chunks) goes.
    fn drop(&mut self) {
        if let Some(Ok(v)) = self.loaded.take() {
            self.blob_ra.get_mut().recycle(v);
        }
    }
}

impl DbIterator {
    /// The cursor `next_back` walks: a second one over the same state and
    /// bounds, made on first use and positioned at the last key.
    fn back_cursor(&mut self) -> &mut DbIterator {
        let b = match self.back.take() {
            Some(b) => b,
            None => {
                let mut b = Box::new(self.twin());
                b.seek_to_last();
                b
            }
        };
        self.back.insert(b)
    }

    /// A second cursor over the same pinned state, snapshot, bounds and
    /// floors, not positioned, with no blob read-ahead of its own (the
    /// backward cursor: values come in descending order; the scout of the
    /// look-ahead: it reads pointers only). It never joins a shared pass.
    pub(crate) fn twin(&self) -> DbIterator {
        DbIterator {
            iter: (self.sibling)(),
            seq: self.seq,
            lower: self.lower.clone(),
            upper: self.upper.clone(),
            direction: Direction::Forward,
            valid: false,
            positioned: true,
            saved_key: Vec::new(),
            saved_value: Vec::new(),
            error: None,
            done: false,
            sibling: Arc::clone(&self.sibling),
            back: None,
            blob: false,
            loaded: OnceCell::new(),
            failed: Cell::new(false),
            blobs: Arc::clone(&self.blobs),
            blob_ra: RefCell::new(BlobReadahead::new(0, None)),
            ahead: RefCell::new(ScanAhead::off()),
            step: 0,
            _snapshot: self._snapshot.clone(),
            pin: Arc::clone(&self.pin),
            ranges: self.ranges.clone(),
            expired: self.expired,
            hiding: self.hiding,
            share: None,
            shared: None,
            ticket: None,
        }
    }

    /// Ends the Rust iteration: the error of either cursor as the last
    /// item, or nothing.
    fn finish(&mut self) -> Option<Result<(Vec<u8>, Vec<u8>)>> {
        self.done = true;
        let back = self.back.as_ref().map_or(Ok(()), |b| b.status());
        match self.status().and(back) {
            Ok(()) => None,
            Err(e) => Some(Err(e)),
        }
    }
}

impl Iterator for DbIterator {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if !self.positioned {
            self.seek_to_first();
        }
        if !self.valid {
            return self.finish();
        }
        // Keys above the back cursor's next key were yielded from the back.
        if let Some(b) = &self.back
            && (!b.valid() || self.key() > b.key())
        {
            return self.finish();
        }
        let item = (self.key().to_vec(), self.value().to_vec());
        if !self.valid() {
            return self.finish(); // the blob value could not be read
        }
        self.move_next();
        Some(Ok(item))
    }
}

impl DoubleEndedIterator for DbIterator {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let positioned = self.positioned;
        let back = self.back_cursor();
        if !back.valid() {
            return self.finish();
        }
        // Keys below the front cursor's next key were yielded from the
        // front (a front never positioned has yielded nothing).
        if positioned && (!self.valid || self.key() > self.back_key()) {
            return self.finish();
        }
        let back = self.back_cursor();
        let item = (back.key().to_vec(), back.value().to_vec());
        if !back.valid() {
            return self.finish(); // the blob value could not be read
        }
        back.move_prev();
        Some(Ok(item))
    }
}

impl DbIterator {
    fn back_key(&self) -> &[u8] {
        self.back.as_ref().map_or(&[], |b| b.key())
    }
}

impl DbIterator {
    /// Appends this iterator's next entries (forward from the first key)
    /// to a shared pass's segment until it is full; `Ok(false)` at the
    /// end. `bytes` grows by the length of each blob value appended.
    pub(crate) fn fill_segment(
        &mut self,
        seg: &mut SegmentBuilder,
        bytes: &mut u64,
    ) -> Result<bool> {
        debug_assert!(self.shared.is_none() && self.share.is_none());
        if !self.positioned {
            self.seek_to_first();
        }
        while self.valid {
            debug_assert_eq!(self.direction, Direction::Forward);
            let raw = self.iter.value();
            let key = keys::user_key(self.iter.key());
            if !seg.room_for(key.len() + raw.len()) {
                break;
            }
            let mut len = 0;
            if self.blob {
                len = BlobPointer::decode(raw).map_or(0, |p| u64::from(p.length));
                *bytes += len;
            }
            seg.push(key, raw, self.blob, len);
            self.move_next();
        }
        if self.valid {
            return Ok(true);
        }
        self.status()?;
        Ok(false)
    }

    /// The current raw value (a blob pointer when the flag is set) of an
    /// iterator walking forward on its own merge; `None` when not on an
    /// entry.
    pub(crate) fn raw_value(&self) -> Option<(&[u8], bool)> {
        if !self.valid || self.shared.is_some() || self.direction != Direction::Forward {
            return None;
        }
        Some((self.iter.value(), self.blob))
    }

    /// True once positioned by a seek.
    pub(crate) fn positioned(&self) -> bool {
        self.positioned
    }

    /// True when this iterator reads blob values ahead (a read-ahead size
    /// and a reader pool).
    pub(crate) fn reads_blobs_ahead(&self) -> bool {
        self.blob_ra.borrow().reads_ahead()
    }

    /// Where this iterator reads blob values from.
    pub(crate) fn blob_readers(&self) -> &Arc<BlobReaders> {
        &self.blobs
    }
}

/// The look-ahead's scout is a twin cursor (`DbIterator::twin`).
impl Scout for DbIterator {
    fn seek_to(&mut self, key: &[u8]) {
        self.seek(key);
    }

    fn current_key(&self) -> Option<&[u8]> {
        self.valid().then(|| self.key())
    }

    fn raw(&self) -> Option<(&[u8], bool)> {
        self.raw_value()
    }

    fn advance(&mut self) {
        self.move_next();
    }
}

fn malformed_key() -> crate::error::Error {
    crate::error::Error::corruption(
        "<memtable or table>",
        0,
        "malformed internal key in iterator",
    )
}
