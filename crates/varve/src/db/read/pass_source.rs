//! [`PassSource`]: the merge a shared pass reads from, and its scout.
//!
//! `main`, an iterator with its own merge over the pass's state, makes the
//! pass's segments. The blob values of a pass are read by the first
//! iterator that asks for each; to keep the disk busy while they do, a
//! scout (a second iterator over the same state, which looks at keys and
//! blob pointers only) walks ahead of `main` and reads the shared scan
//! chunks of the values ahead in the background: up to a quarter of the
//! chunks' budget in value bytes ahead of what `main` made. With values
//! in key order that is plain read-ahead; with lanes by key, whose values
//! of one key range lie all over the lane's chunks, it reads the next
//! range's chunks while the iterators walk this one. A read the pool turns
//! away (no room, or enough reads in flight) is asked again at the next
//! segment; the scout never passes a value it could not read ahead unless
//! `main` passed it already (then it is being read). The scout starts
//! only once an iterator of the pass asked for a value: a key-only walk
//! reads no value.
//!
//! Single-threaded: owned by one pass and used under its source lock.
//! Invariant: what the scout read ahead is at most `lead` value bytes
//! past what `main` made.

use super::db_iter::DbIterator;
use super::shared_pass::{SegmentBuilder, Source};
use crate::blob::format::BlobPointer;
use crate::error::Result;

/// Chunks the scout remembers having asked for (one ask per chunk in a
/// row of values from it).
const RECENT: usize = 8;

pub(crate) struct PassSource {
    main: DbIterator,
    /// `None` once it ended, failed or is not needed.
    scout: Option<DbIterator>,
    recent: [(u64, u64); RECENT],
    /// Value bytes of the entries `main` made.
    made: u64,
    /// Value bytes of the entries the scout passed.
    scouted: u64,
    /// Most value bytes the scout reads ahead of `made`.
    lead: u64,
}

impl PassSource {
    pub(crate) fn new(main: DbIterator, scout: DbIterator) -> PassSource {
        let lead = if scout.reads_blobs_ahead() {
            scout.blob_readers().shared_budget() as u64 * 3 / 8
        } else {
            0
        };
        PassSource {
            main,
            scout: (lead > 0).then_some(scout),
            recent: [(u64::MAX, u64::MAX); RECENT],
            made: 0,
            scouted: 0,
            lead,
        }
    }

    /// Walks the scout on until it is `lead` bytes ahead of `main`, the
    /// pool turns a read away, or it ends.
    fn scout(&mut self) {
        let Some(s) = self.scout.as_mut() else {
            return;
        };
        if !s.positioned() {
            s.seek_to_first();
        }
        while self.scouted < self.made + self.lead {
            let Some((raw, blob)) = s.raw_value() else {
                // The end, or an error (the pass meets it in `main`).
                self.scout = None;
                return;
            };
            // (A malformed pointer is reported by the read of its value.)
            if blob && let Some(p) = BlobPointer::decode(raw) {
                // Behind `main`: the value is being read; just catch up.
                if self.scouted >= self.made && !s.blob_readers().read_ahead(&p, &mut self.recent) {
                    return; // turned away: ask again at the next segment
                }
                self.scouted += u64::from(p.length);
            }
            s.move_next();
        }
    }
}

impl Source for PassSource {
    fn fill(&mut self, seg: &mut SegmentBuilder) -> Result<bool> {
        let more = self.main.fill_segment(seg, &mut self.made)?;
        if more && seg.values_wanted() {
            self.scout();
        }
        Ok(more)
    }
}
