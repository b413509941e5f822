//! [`RunHistory`]: how far the recent sequential runs of one read-ahead
//! state went, so the next run after a seek can be read ahead at once
//! instead of in chunks that grow one round trip at a time.
//!
//! A *run* starts at a non-sequential block access (a seek, a jump) and
//! grows by the bytes of every block accessed in sequence after it (also
//! across a file boundary of a level). When the next run starts, the
//! finished run's length — the bytes after its first block — is recorded;
//! the last [`RUNS`] are kept. Empty runs (a point seek, or a seek into a
//! level whose next key lies beyond what the scan reads, e.g. a gap
//! between the files of a level) are counted but say nothing about how
//! far a scan goes; the prediction comes from the non-empty ones: the
//! longest when they agree (the shortest is at least a quarter of the
//! longest: a cursor that keeps seeking and scanning about as far, like
//! `seekrandom --seek_nexts=N`) or are all short (at most [`SMALL_RUN`]),
//! else the shortest (erratic runs: only what every one of them read).
//! Nothing is predicted before [`RUNS`] runs have finished with at least
//! two non-empty ones, so a single scan and every iterator's first seeks
//! read ahead exactly as without it; a cursor doing point seeks never
//! gets a prediction.
//!
//! Plain data, single-threaded (owned by one `Readahead`). Invariants:
//! `len <= RUNS`; `runs[..len]` are finished runs; `current` is the run in
//! progress when `active`.

/// Finished runs remembered.
pub(super) const RUNS: usize = 8;

/// Runs up to this long are predicted in full however erratic: reading
/// them with the seek's block costs little more than the block alone.
pub(super) const SMALL_RUN: u64 = 64 << 10;

/// Lengths of the last few sequential runs (see the module docs).
#[derive(Debug, Default, Clone)]
pub(super) struct RunHistory {
    runs: [u64; RUNS],
    len: usize,
    next: usize,
    current: u64,
    active: bool,
}

impl RunHistory {
    /// An empty history: predicts nothing.
    pub(super) fn new() -> RunHistory {
        RunHistory::default()
    }

    /// A non-sequential access: the run in progress (if any) is finished
    /// and recorded, a new one starts.
    pub(super) fn start(&mut self) {
        if self.active {
            self.runs[self.next] = self.current;
            self.next = (self.next + 1) % RUNS;
            self.len = (self.len + 1).min(RUNS);
        }
        self.current = 0;
        self.active = true;
    }

    /// A sequential access of `bytes` (block and trailer) in the current run.
    pub(super) fn extend(&mut self, bytes: u64) {
        if self.active {
            self.current = self.current.saturating_add(bytes);
        }
    }

    /// Bytes a non-empty run is expected to read after its first block;
    /// 0 when there is no prediction.
    pub(super) fn predicted(&self) -> u64 {
        if self.len < RUNS {
            return 0;
        }
        let mut nonempty = self.runs.iter().copied().filter(|&r| r > 0);
        let Some(first) = nonempty.next() else {
            return 0;
        };
        let (mut min, mut max, mut n) = (first, first, 1);
        for r in nonempty {
            min = min.min(r);
            max = max.max(r);
            n += 1;
        }
        if n < 2 {
            0
        } else if min.saturating_mul(4) >= max || max <= SMALL_RUN {
            max
        } else {
            min
        }
    }

    /// True when at least half of the remembered runs were non-empty: a
    /// seek is then worth reading a little past its block.
    pub(super) fn mostly_nonempty(&self) -> bool {
        let n = self.runs[..self.len].iter().filter(|&&r| r > 0).count();
        self.len > 0 && n * 2 >= self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(h: &mut RunHistory, bytes: &[u64]) {
        h.start();
        for &b in bytes {
            h.extend(b);
        }
    }

    #[test]
    fn predicts_nothing_until_enough_runs_finished() {
        let mut h = RunHistory::new();
        assert_eq!(h.predicted(), 0);
        h.extend(100); // before any run: ignored
        for _ in 0..RUNS {
            run(&mut h, &[4000, 4000]);
            assert_eq!(h.predicted(), 0, "the run in progress is not counted");
        }
        h.start();
        assert_eq!(h.predicted(), 8000);
        assert!(h.mostly_nonempty());
    }

    #[test]
    fn consistent_runs_predict_the_longest() {
        let mut h = RunHistory::new();
        for n in [90u64, 95, 88, 93, 91, 90, 89, 92] {
            run(&mut h, &vec![4100; n as usize]);
        }
        h.start();
        assert_eq!(h.predicted(), 95 * 4100);
    }

    #[test]
    fn empty_runs_do_not_lower_the_prediction() {
        let mut h = RunHistory::new();
        for n in [90u64, 0, 93, 0, 0, 91, 0, 92] {
            run(&mut h, &vec![4100; n as usize]);
        }
        h.start();
        assert_eq!(h.predicted(), 93 * 4100);
        assert!(h.mostly_nonempty());
        run(&mut h, &[]);
        h.start();
        assert!(!h.mostly_nonempty(), "five of eight runs were empty");
    }

    #[test]
    fn erratic_runs_predict_the_shortest_and_old_runs_age_out() {
        let mut h = RunHistory::new();
        for n in [1u64, 1000, 1, 1, 1, 1, 1, 1] {
            run(&mut h, &vec![4100; n as usize]);
        }
        h.start();
        assert_eq!(h.predicted(), 4100);
        // Short runs, however erratic, are covered in full.
        for n in [0u64, 3, 1, 15, 2, 2, 2, 2] {
            run(&mut h, &vec![4100; n as usize]);
        }
        h.start();
        assert_eq!(h.predicted(), 15 * 4100);
        // Point seeks: runs of nothing after the first block.
        for _ in 0..RUNS {
            run(&mut h, &[]);
        }
        assert_eq!(h.predicted(), 0);
        assert!(!h.mostly_nonempty());
    }
}
