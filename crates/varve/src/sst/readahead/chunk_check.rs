//! [`Progress`] and [`Verified`]: the checksums of the data blocks a
//! read-ahead chunk holds whole, verified on the background thread that
//! read it, so the consumer does not have to — and while the consumer is
//! already serving the chunk's first blocks.
//!
//! A table's data blocks tile `[0, data_end)` with no gaps (`Table::open`
//! rejects an index that says otherwise), and the table's in-memory search
//! array keeps where each one starts ([`IndexSearch::bounds`]). Given
//! those bounds, a chunk read at `start` and the bytes it got, the blocks
//! `[bounds[i], bounds[i + 1])` that lie inside the chunk are checked in
//! file order the way the consumer would check them (masked CRC32C of
//! contents and type byte). The reader hands the chunk to its consumer
//! *before* it checks it, with a shared [`Progress`]: a watermark that
//! says "every block from the chunk's first whole block up to here
//! matched", raised block by block. The check stops at the first block
//! that does not match (and when the consumer has dropped the chunk).
//!
//! The consumer serves a block without verifying it again only if the
//! watermark of the very buffer it is served from covers it
//! ([`Verified::wait_for`]: it waits a few µs for a reader that is busy
//! checking just ahead of it, then verifies the block itself). So a block
//! that failed, lies past a failure, was cut by the chunk's end or was
//! never looked at is verified as before and damage still surfaces as
//! `Error::Corruption`; the chunk is never served on a claim about other
//! bytes, because a block counts only if its offset and end are exactly
//! two neighbouring bounds.
//!
//! Thread-safety: one reader raises a [`Progress`], any number of threads
//! read it. The watermark only grows; it guards no memory (the chunk's
//! bytes are immutable once shared, handed over by the channel that
//! carries the chunk), so `Acquire`/`Release` only keep the claim and the
//! `done` flag in order. Atomics come from `crate::sync` (loom under
//! `--cfg loom`).
//!
//! [`IndexSearch::bounds`]: crate::sst::index_search::IndexSearch::bounds

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::sst::format::stored_checksums;
use crate::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// How long a consumer waits for the reader to vouch for a block before
/// it verifies the block itself: the reader checks a 4 KiB block in about
/// a microsecond, so this only covers a reader just behind the consumer,
/// not one that lost its core.
/// (Unit tests wait longer, so what they count does not depend on how
/// busy the machine is; `a_stalled_reader_is_not_waited_for_long` covers
/// giving up.)
const WAIT_FOR_READER: Duration = if cfg!(test) {
    Duration::from_millis(50)
} else {
    Duration::from_micros(20)
};

/// How far a reader has verified a chunk (see the module docs).
#[derive(Debug)]
pub(crate) struct Progress {
    bounds: Arc<[u64]>,
    /// Index in `bounds` of the chunk's first whole block.
    first: usize,
    /// Blocks `first..upto` matched their checksums.
    upto: AtomicUsize,
    /// The reader has stopped (every whole block checked, a mismatch, or
    /// the consumer dropped the chunk): `upto` no longer grows.
    done: AtomicBool,
}

impl Progress {
    /// Nothing verified yet of a chunk at `start`.
    pub(crate) fn new(bounds: Arc<[u64]>, start: u64) -> Progress {
        let first = bounds.partition_point(|&b| b < start);
        Progress {
            bounds,
            first,
            upto: AtomicUsize::new(first),
            done: AtomicBool::new(false),
        }
    }

    /// Checks the blocks of `chunk` (file bytes from `start`, the offset
    /// given to [`Progress::new`]) in file order, raising the watermark
    /// after each one that matches; stops at the first that does not, at
    /// the chunk's end, or when `go_on` says the chunk is no longer wanted
    /// (asked every few blocks). Marks the progress done.
    pub(crate) fn verify(&self, chunk: &[u8], start: u64, go_on: impl Fn() -> bool) {
        let stop = start.saturating_add(chunk.len() as u64);
        let mut i = self.first;
        while let (Some(&offset), Some(&end)) = (self.bounds.get(i), self.bounds.get(i + 1)) {
            if end > stop || (i - self.first) % 8 == 7 && !go_on() {
                break;
            }
            let (Ok(s), Ok(e)) = (
                usize::try_from(offset - start),
                usize::try_from(end - start),
            ) else {
                break;
            };
            let ok = chunk
                .get(s..e)
                .and_then(stored_checksums)
                .is_some_and(|(want, got)| want == got);
            if !ok {
                break;
            }
            i += 1;
            self.upto.store(i, Ordering::Release);
        }
        self.done.store(true, Ordering::Release);
    }

    /// Index of the block `[offset, end)` among the bounds, if it is one.
    fn block(&self, offset: u64, end: u64) -> Option<usize> {
        let i = self.bounds.binary_search(&offset).ok()?;
        (i >= self.first && self.bounds.get(i + 1) == Some(&end)).then_some(i)
    }

    /// Blocks verified so far.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn verified(&self) -> usize {
        self.upto.load(Ordering::Acquire) - self.first
    }
}

/// The verification state of one chunk buffer: nothing (a chunk read by
/// its consumer, or without bounds) or its reader's [`Progress`].
#[derive(Debug, Default, Clone)]
pub(crate) struct Verified(Option<Arc<Progress>>);

impl Verified {
    /// Nothing verified.
    pub(crate) fn none() -> Verified {
        Verified(None)
    }

    /// Verification by a reader that reports to `progress`.
    pub(crate) fn by(progress: Arc<Progress>) -> Verified {
        Verified(Some(progress))
    }

    /// True if the block `[offset, end)` was verified, without waiting.
    #[cfg(test)]
    pub(crate) fn contains(&self, offset: u64, end: u64) -> bool {
        let Some(p) = &self.0 else { return false };
        p.block(offset, end)
            .is_some_and(|i| i < p.upto.load(Ordering::Acquire))
    }

    /// True if the block `[offset, end)` was verified; while its reader is
    /// still checking blocks before it, waits up to [`WAIT_FOR_READER`]
    /// for the watermark to pass it. False means: verify it yourself.
    pub(crate) fn wait_for(&self, offset: u64, end: u64) -> bool {
        let Some(p) = &self.0 else { return false };
        let Some(i) = p.block(offset, end) else {
            return false;
        };
        let mut since: Option<Instant> = None;
        loop {
            // `done` first: once set, `upto` is final.
            let done = p.done.load(Ordering::Acquire);
            if i < p.upto.load(Ordering::Acquire) {
                return true;
            }
            if done {
                return false;
            }
            let t = *since.get_or_insert_with(Instant::now);
            if t.elapsed() >= WAIT_FOR_READER {
                return false;
            }
            for _ in 0..32 {
                std::hint::spin_loop();
            }
        }
    }

    /// True if nothing is (yet) verified.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn is_empty(&self) -> bool {
        self.0.as_ref().is_none_or(|p| p.verified() == 0)
    }

    /// Number of blocks verified so far.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |p| p.verified())
    }
}

/// Verifies, on the calling thread, the blocks of `chunk` (file bytes from
/// offset `start` on) that lie in it whole according to `bounds` (every
/// data block's start, then the end of the last), up to the first that
/// does not match.
#[cfg(all(test, not(loom)))]
pub(crate) fn check_chunk(bounds: &Arc<[u64]>, chunk: &[u8], start: u64) -> Verified {
    let p = Arc::new(Progress::new(Arc::clone(bounds), start));
    p.verify(chunk, start, || true);
    Verified::by(p)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::sst::format::put_block_trailer;

    /// Blocks of `sizes` content bytes, stored back to back from offset 0;
    /// returns the file bytes and the bounds.
    pub(super) fn blocks(sizes: &[usize]) -> (Vec<u8>, Arc<[u64]>) {
        let mut file = Vec::new();
        let mut bounds = vec![0u64];
        for (i, &n) in sizes.iter().enumerate() {
            let contents: Vec<u8> = (0..n).map(|j| (i * 31 + j) as u8).collect();
            file.extend_from_slice(&contents);
            put_block_trailer(&mut file, &contents, 0);
            bounds.push(file.len() as u64);
        }
        (file, bounds.into())
    }

    #[test]
    fn names_the_whole_intact_blocks_of_a_chunk() {
        let (file, b) = blocks(&[100, 200, 300, 400]);
        // The whole file.
        let all = check_chunk(&b, &file, 0);
        assert_eq!(all.len(), 4);
        for w in b.windows(2) {
            assert!(all.contains(w[0], w[1]));
            assert!(all.wait_for(w[0], w[1]));
        }
        // A chunk from inside block 0 to inside block 3: blocks 1 and 2.
        let (s, e) = (b[0] + 10, b[3] + 10);
        let part = check_chunk(&b, &file[s as usize..e as usize], s);
        assert_eq!(part.len(), 2);
        assert!(part.contains(b[1], b[2]) && part.contains(b[2], b[3]));
        assert!(!part.contains(b[0], b[1]) && !part.contains(b[3], b[4]));
        assert!(!part.wait_for(b[0], b[1]) && !part.wait_for(b[3], b[4]));
        // A wrong end, or an offset that is not a block's, never matches.
        assert!(!part.contains(b[1], b[2] + 1) && !part.wait_for(b[1], b[2] + 1));
        assert!(!part.contains(b[1] + 1, b[2]) && !part.wait_for(b[1] + 1, b[2]));
        assert!(!part.contains(b[1], b[3]));
        // A chunk inside one block: nothing.
        assert!(check_chunk(&b, &file[110..200], 110).is_empty());
        // Past the bounds, or an empty chunk: nothing.
        assert!(check_chunk(&b, &[], 0).is_empty());
        assert!(check_chunk(&b, &file[..10], b[4]).is_empty());
        // No reader at all.
        assert!(!Verified::none().wait_for(b[0], b[1]));
    }

    #[test]
    fn verification_stops_at_a_damaged_block() {
        let (mut file, b) = blocks(&[100, 200, 300]);
        for at in [b[1] + 5, b[2] - 1, b[2] - 5] {
            let mut damaged = file.clone();
            damaged[at as usize] ^= 0x40;
            let v = check_chunk(&b, &damaged, 0);
            assert!(v.contains(b[0], b[1]), "flip at {at}");
            assert!(!v.wait_for(b[1], b[2]), "flip at {at}");
            // Nothing after it is vouched for either: the consumer
            // verifies those blocks itself.
            assert!(!v.wait_for(b[2], b[3]), "flip at {at}");
        }
        // The type byte counts too.
        file[(b[2] - 5) as usize] = 1;
        assert!(!check_chunk(&b, &file, 0).contains(b[1], b[2]));
    }

    /// A consumer asking for a block the reader has not reached yet waits
    /// for it; the reader raises the watermark block by block.
    #[test]
    fn a_consumer_waits_for_the_reader_just_ahead() {
        let sizes = vec![4000; 64];
        let (file, b) = blocks(&sizes);
        let p = Arc::new(Progress::new(Arc::clone(&b), 0));
        let v = Verified::by(Arc::clone(&p));
        assert!(v.is_empty() && !v.contains(b[0], b[1]));
        std::thread::scope(|s| {
            let (p, file) = (&p, &file);
            s.spawn(move || {
                std::thread::sleep(Duration::from_millis(5));
                p.verify(file, 0, || true);
            });
            // Asked before the reader has started: waited for.
            assert!(v.wait_for(b[0], b[1]));
            assert!(v.wait_for(b[63], b[64]));
        });
        assert_eq!(v.len(), 64);
    }

    /// A reader that never gets to a block (it lost its core, or stopped
    /// without finishing) is given up on after the wait: the consumer
    /// verifies the block itself.
    #[test]
    fn a_stalled_reader_is_not_waited_for_long() {
        let (_, b) = blocks(&[100, 200]);
        let v = Verified::by(Arc::new(Progress::new(Arc::clone(&b), 0)));
        let t = Instant::now();
        assert!(!v.wait_for(b[0], b[1]));
        let waited = t.elapsed();
        assert!(waited >= WAIT_FOR_READER, "{waited:?}");
        assert!(waited < Duration::from_secs(5), "{waited:?}");
    }

    /// A reader whose consumer let go of the chunk stops checking (asked
    /// every 8 blocks) and marks its progress done.
    #[test]
    fn an_abandoned_chunk_is_not_checked_to_the_end() {
        let sizes = vec![500; 40];
        let (file, b) = blocks(&sizes);
        let p = Progress::new(Arc::clone(&b), 0);
        p.verify(&file, 0, || false);
        assert_eq!(p.verified(), 7);
        assert!(p.done.load(Ordering::Acquire));
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::sst::format::put_block_trailer;

    /// The watermark only grows and is final once `done` is seen: a
    /// consumer that sees a later block vouched for sees every earlier one,
    /// and after `done` every intact block.
    #[test]
    fn loom_watermark_is_monotonic_and_final_when_done() {
        let mut file = Vec::new();
        let mut bounds = vec![0u64];
        for i in 0..3u8 {
            let contents = vec![i; 16];
            file.extend_from_slice(&contents);
            put_block_trailer(&mut file, &contents, 0);
            bounds.push(file.len() as u64);
        }
        let bounds: Arc<[u64]> = bounds.into();
        loom::model(move || {
            let p = Arc::new(Progress::new(Arc::clone(&bounds), 0));
            let reader = {
                let (p, file) = (Arc::clone(&p), file.clone());
                loom::thread::spawn(move || p.verify(&file, 0, || true))
            };
            let v = Verified::by(Arc::clone(&p));
            let done = p.done.load(Ordering::Acquire);
            let last = v.contains(bounds[2], bounds[3]);
            let first = v.contains(bounds[0], bounds[1]);
            assert!(
                !last || first,
                "a later block vouched before an earlier one"
            );
            if done {
                assert!(last, "done, but the last block is not vouched for");
            }
            reader.join().expect("reader");
            assert!(v.contains(bounds[1], bounds[2]) && v.contains(bounds[2], bounds[3]));
        });
    }
}
