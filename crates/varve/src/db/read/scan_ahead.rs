//! [`ScanAhead`]: the blob values of a short scan, read ahead in batches
//! that go to the disk together (`docs/blob-files.md`, "Short scans").
//!
//! A scan that has asked for the values of two entries in a row (a seek
//! and a `next`, or two `next`s) has a *scout*, a second cursor over the
//! same pinned state and bounds (so it never looks past the upper bound),
//! walk ahead of it looking at blob pointers only (they are in the
//! memtables and tables, no blob IO), and the values of the current entry
//! and the next K entries are read in one batch (`blob/value_batch.rs`:
//! on fibers, io_uring, as `multi_get` reads its blob values). K starts at
//! 2 and doubles with each batch (at most [`MAX_AHEAD`]), and a batch
//! never takes a value that would make the bytes read exceed
//! `1.5 x (bytes returned) + SLACK`: what was read ahead and not (yet)
//! returned is at most half of what was returned plus [`SLACK`], however
//! long the scan turns out to be. Once a scan has returned [`LONG_SCAN`]
//! bytes, a whole read-ahead chunk (1 MiB) is a small fraction of them:
//! it is proven long, and its values go to today's read-ahead
//! (`blob/readahead.rs`: windows of a file in key order, or the shared
//! chunks concurrent scans share), which reads at the disk's rate.
//!
//! Values are served by pointer: a value from a batch is served only to
//! the entry whose pointer is exactly the one it was read for (pointers
//! name their bytes for good: file numbers are never reused, a file's
//! bytes never change), so a scout that went another way can cost reads,
//! never a wrong value. Each value is checked against its pointer's CRC
//! when it is read; an error of a value read ahead is returned only if
//! the scan asks for that value.
//!
//! Single-threaded: owned by one iterator. Invariants (checked with
//! `debug_assert!`): before a scan is long, bytes read <= 1.5 x bytes
//! returned + `SLACK`, each value counted as the pages it spans; a batch
//! starts with the value asked for.

use std::collections::VecDeque;

use crate::blob::cache::BlobReaders;
use crate::blob::format::BlobPointer;
use crate::blob::readahead::{BlobReadahead, BlobValue};
use crate::blob::value_batch::read_values;
use crate::error::{Error, Result};
use crate::io::IoEngine;

/// Bytes a scan may have read beyond 1.5 x what it returned: one small
/// read-ahead unit (the first window of `blob/readahead.rs`).
pub(crate) const SLACK: u64 = 64 << 10;
/// Bytes returned that prove a scan long: a 1 MiB read-ahead chunk (and
/// the two read ahead after it) is then at most a few tenths of them.
pub(crate) const LONG_SCAN: u64 = 8 << 20;
/// Most values one batch looks ahead.
const MAX_AHEAD: usize = 128;
/// Values the first batch looks ahead.
const FIRST_AHEAD: usize = 2;

/// The most bytes a short scan that returned `returned` bytes may have
/// read.
pub(crate) fn read_bound(returned: u64) -> u64 {
    returned + returned / 2 + SLACK
}

/// The bytes a read of `p` alone reads: the pages it spans.
fn pages(p: &BlobPointer) -> u64 {
    if p.offset.checked_add(u64::from(p.length)).is_none() {
        return u64::from(p.length); // malformed: its read fails
    }
    p.aligned_span().1 as u64
}

/// The cursor a look-ahead walks ahead of its scan: a twin of the scan's
/// own cursor (same state, snapshot, bounds), which it only seeks and
/// steps forward, looking at keys and raw values.
pub(crate) trait Scout: Send {
    /// Positions at the first entry with a key `>= key`.
    fn seek_to(&mut self, key: &[u8]);
    /// The current key; `None` when not on an entry.
    fn current_key(&self) -> Option<&[u8]>;
    /// The current raw value, and whether it is a blob pointer; `None`
    /// when not on an entry (the end, the bound, an error).
    fn raw(&self) -> Option<(&[u8], bool)>;
    /// Moves to the next entry.
    fn advance(&mut self);
}

/// Makes a look-ahead's scout.
pub(crate) type MakeScout<'a> = &'a dyn Fn() -> Box<dyn Scout>;

/// Where the cursor asking for a value stands.
#[derive(Debug, Clone, Copy)]
pub(crate) struct At<'a> {
    /// The cursor's step count: one more than at the previous position
    /// after a `next`, more than that after any other move.
    pub(crate) step: u64,
    /// Its current user key.
    pub(crate) key: &'a [u8],
}

/// The short-scan look-ahead of one iterator.
pub(crate) struct ScanAhead {
    /// Off: every value goes to the read-ahead (a cursor without
    /// read-ahead, or the backward cursor).
    on: bool,
    engine: IoEngine,
    depth: usize,
    /// Walks ahead of the cursor (made on the first batch, kept across
    /// runs and placed again at each run's first batch).
    scout: Option<Box<dyn Scout>>,
    /// The scout stands after the values queued in this run.
    placed: bool,
    /// The scout ran out (the end, the bound, an error): nothing more to
    /// read ahead in this run.
    scout_done: bool,
    /// Values read ahead, in the order the scan will ask for them.
    queue: VecDeque<(BlobPointer, Result<Vec<u8>>)>,
    /// The step of the last value asked for.
    last_step: Option<u64>,
    /// Values asked for in a row (one `next` apart).
    streak: u32,
    /// Values the next batch looks ahead.
    ahead: usize,
    /// Bytes of the values returned in this run (pages).
    returned: u64,
    /// Bytes read for this run.
    read: u64,
    /// This run has proven long: values go to the read-ahead.
    long: bool,
}

impl std::fmt::Debug for ScanAhead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScanAhead")
            .field("on", &self.on)
            .field("queued", &self.queue.len())
            .field("returned", &self.returned)
            .field("read", &self.read)
            .field("long", &self.long)
            .finish()
    }
}

impl ScanAhead {
    /// A look-ahead (`on`) whose batches read on `engine`, at most
    /// `depth` reads at once.
    pub(crate) fn new(on: bool, engine: IoEngine, depth: usize) -> ScanAhead {
        ScanAhead {
            on,
            engine,
            depth: depth.max(1),
            scout: None,
            placed: false,
            scout_done: false,
            queue: VecDeque::new(),
            last_step: None,
            streak: 0,
            ahead: FIRST_AHEAD,
            returned: 0,
            read: 0,
            long: false,
        }
    }

    /// None: every value is read by the read-ahead (or alone).
    pub(crate) fn off() -> ScanAhead {
        ScanAhead::new(false, IoEngine::Sync, 1)
    }

    /// A new run: what was read ahead is dropped (its bytes were counted
    /// in the run before).
    fn restart(&mut self, ra: &mut BlobReadahead) {
        self.queue.clear();
        self.placed = false;
        self.scout_done = false;
        self.streak = 0;
        self.ahead = FIRST_AHEAD;
        self.returned = 0;
        self.read = 0;
        if self.long {
            self.long = false;
            ra.set_long(false);
        }
    }

    /// The value `raw` (an encoded pointer) names, for the cursor `at`;
    /// `scout` makes the scout (a cursor over the same state and bounds,
    /// not yet positioned).
    pub(crate) fn value(
        &mut self,
        ra: &mut BlobReadahead,
        readers: &BlobReaders,
        raw: &[u8],
        at: At<'_>,
        scout: MakeScout<'_>,
    ) -> Result<BlobValue> {
        if !self.on {
            return ra.value(readers, raw);
        }
        let p = BlobPointer::decode(raw)
            .ok_or_else(|| Error::corruption(readers.dir(), 0, "malformed blob pointer"))?;
        let in_row = self.last_step.is_some_and(|s| s.wrapping_add(1) == at.step);
        self.last_step = Some(at.step);
        if !in_row {
            self.restart(ra);
        }
        self.streak = self.streak.saturating_add(1);
        let cost = pages(&p);
        if let Some(v) = self.take_queued(&p) {
            let v = v?;
            self.returned(ra, cost);
            return Ok(BlobValue::Owned(v));
        }
        if self.long {
            return ra.value(readers, raw);
        }
        if let Some(v) = ra.resident_value(readers, &p)? {
            self.returned(ra, cost);
            return Ok(v);
        }
        let v = if self.streak >= 2 && !self.scout_done {
            self.batch(readers, &p, cost, at.key, scout)
        } else {
            self.read += cost;
            readers.value_of(&p)
        }?;
        self.returned(ra, cost);
        Ok(BlobValue::Owned(v))
    }

    /// Counts `cost` bytes returned; at [`LONG_SCAN`] the run is long.
    fn returned(&mut self, ra: &mut BlobReadahead, cost: u64) {
        self.returned += cost;
        debug_assert!(
            self.long || self.read <= read_bound(self.returned),
            "a short scan read {} bytes for {} returned",
            self.read,
            self.returned
        );
        if !self.long && self.returned >= LONG_SCAN {
            self.long = true;
            ra.set_long(true);
        }
    }

    /// The value read ahead for `p`, dropping the ones before it (the scan
    /// went past them without asking); `None` if `p` is not queued.
    fn take_queued(&mut self, p: &BlobPointer) -> Option<Result<Vec<u8>>> {
        let i = self.queue.iter().position(|(q, _)| q == p)?;
        self.queue.drain(..i);
        self.queue.pop_front().map(|(_, v)| v)
    }

    /// Reads `p` (of `cost` bytes, the cursor's value at `key`) together
    /// with the values of the next entries the scout finds, within the
    /// look-ahead's count and byte bound; queues those and returns `p`'s.
    fn batch(
        &mut self,
        readers: &BlobReaders,
        p: &BlobPointer,
        cost: u64,
        key: &[u8],
        make: MakeScout<'_>,
    ) -> Result<Vec<u8>> {
        let allowed = read_bound(self.returned + cost).saturating_sub(self.read + cost);
        let scout = self.scout.get_or_insert_with(make);
        if !self.placed {
            scout.seek_to(key);
            if scout.current_key() == Some(key) {
                scout.advance();
            }
            self.placed = true;
        }
        let mut ps = vec![*p];
        let mut bytes = 0;
        let mut visited = 0;
        while ps.len() <= self.ahead && visited < 4 * self.ahead + 16 {
            let Some((raw, blob)) = scout.raw() else {
                // The end, the bound, or an error (the cursor meets it).
                self.scout_done = true;
                break;
            };
            if blob {
                let Some(q) = BlobPointer::decode(raw) else {
                    self.scout_done = true; // the cursor reports it
                    break;
                };
                let c = pages(&q);
                if bytes + c > allowed {
                    break; // stays the scout's entry: the next batch's first
                }
                ps.push(q);
                bytes += c;
            }
            scout.advance();
            visited += 1;
        }
        self.ahead = (self.ahead * 2).min(MAX_AHEAD);
        let (got, done) = read_values(readers, self.engine, self.depth, &ps);
        self.read += done.bytes;
        let mut got = got.into_iter();
        let first = got.next().unwrap_or_else(|| readers.value_of(p));
        for (q, v) in ps[1..].iter().zip(got) {
            self.queue.push_back((*q, v));
        }
        first
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_is_one_and_a_half_times_plus_the_slack() {
        assert_eq!(read_bound(0), SLACK);
        assert_eq!(read_bound(4096), 6144 + SLACK);
        assert!(read_bound(LONG_SCAN) < LONG_SCAN * 2);
    }

    #[test]
    fn a_page_aligned_value_costs_its_pages() {
        let p = BlobPointer {
            file_number: 1,
            offset: 8192,
            length: 4096,
            crc: 0,
        };
        assert_eq!(pages(&p), 4096);
        let q = BlobPointer { offset: 8000, ..p };
        assert_eq!(pages(&q), 8192);
        let bad = BlobPointer {
            offset: u64::MAX - 1,
            ..p
        };
        assert_eq!(pages(&bad), 4096);
    }
}
