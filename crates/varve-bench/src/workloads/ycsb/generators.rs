//! YCSB's number generators, as `site.ycsb.generator` defines them.
//!
//! Owns the distributions of the YCSB core workload: [`fnv_hash64`]
//! (`Utils.fnvhash64`, which also names keys), [`Zipfian`]
//! (`ZipfianGenerator`, Gray et al.'s "Quickly Generating Billion-Record
//! Synthetic Databases", SIGMOD 1994, with YCSB's incremental zeta),
//! [`ScrambledZipfian`] (`ScrambledZipfianGenerator`: a zipfian over 10^16
//! items with the precomputed zeta, hashed into the key space),
//! [`SkewedLatest`] (`SkewedLatestGenerator`), [`AckCounter`]
//! (`AcknowledgedCounterGenerator`), [`OpChooser`] (`DiscreteGenerator`) and
//! the uniform scan length (`UniformLongGenerator`).
//!
//! Thread-safety: every generator but [`AckCounter`] is owned by one thread
//! (YCSB shares one generator and gives each thread its own `Random`; here
//! each thread clones the generator, which draws the same distribution).
//! [`AckCounter`] is shared (`Sync`): a fetch-add hands out insert numbers
//! and a window of acknowledgement flags advances the highest number below
//! which every insert has finished, which is all that readers may choose.
//!
//! Random numbers come from [`Rng`] (SplitMix64), not Java's `Random`: the
//! distributions are YCSB's, the exact sequences are not.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use anyhow::{Result, bail};
use parking_lot::Mutex;

use crate::keygen::Rng;

/// YCSB's default zipfian constant (`ZipfianGenerator.ZIPFIAN_CONSTANT`).
pub const ZIPFIAN_CONSTANT: f64 = 0.99;

/// `ScrambledZipfianGenerator.ITEM_COUNT`: the scrambled generator draws
/// from this many items and hashes the draw into the key space.
pub const SCRAMBLED_ITEM_COUNT: u64 = 10_000_000_000_000_000;

/// `ScrambledZipfianGenerator.ZETAN`: zeta(10^16, 0.99), precomputed by YCSB.
pub const SCRAMBLED_ZETAN: f64 = 26.469_028_201_783_02;

/// A uniform double in `[0, 1)` (53 random bits, as Java's `nextDouble`).
pub fn next_f64(rng: &mut Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// YCSB's `Utils.fnvhash64`: FNV-1a over the 8 little-endian bytes of
/// `val`, then the absolute value as a Java `long` (`Math.abs`; for the one
/// hash equal to `i64::MIN`, Java keeps it negative and we return 2^63).
pub fn fnv_hash64(val: u64) -> u64 {
    let mut v = val;
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    for _ in 0..8 {
        let octet = v & 0xff;
        v >>= 8;
        h ^= octet;
        h = h.wrapping_mul(1_099_511_628_211);
    }
    (h as i64).unsigned_abs()
}

/// zeta(n) from `st` items on, added to `initial`: sum of 1/(i+1)^theta for
/// i in `st..n` (YCSB's `zetastatic`).
pub fn zeta(st: u64, n: u64, theta: f64, initial: f64) -> f64 {
    let mut sum = initial;
    for i in st..n {
        sum += 1.0 / ((i + 1) as f64).powf(theta);
    }
    sum
}

/// YCSB's `ZipfianGenerator`: item `base` is the most popular, `base + 1`
/// the next, and so on. Drawing with a larger item count extends zeta
/// incrementally (a smaller one keeps the larger zeta, as YCSB does
/// without `allowitemcountdecrease`). As in YCSB, `eta` is recomputed with
/// the item count given at construction.
#[derive(Debug, Clone)]
pub struct Zipfian {
    items: u64,
    base: u64,
    theta: f64,
    alpha: f64,
    zeta2theta: f64,
    zetan: f64,
    eta: f64,
    count_for_zeta: u64,
}

impl Zipfian {
    /// Items `min..=max` with constant `theta`; computes zeta (O(items)).
    pub fn new(min: u64, max: u64, theta: f64) -> Zipfian {
        let items = max - min + 1;
        Zipfian::with_zetan(min, max, theta, zeta(0, items, theta, 0.0))
    }

    /// Items `min..=max` with constant `theta` and a precomputed zeta.
    pub fn with_zetan(min: u64, max: u64, theta: f64, zetan: f64) -> Zipfian {
        let items = max - min + 1;
        let zeta2theta = zeta(0, 2, theta, 0.0);
        let mut z = Zipfian {
            items,
            base: min,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zeta2theta,
            zetan,
            eta: 0.0,
            count_for_zeta: items,
        };
        z.eta = z.eta_for(zetan);
        z
    }

    fn eta_for(&self, zetan: f64) -> f64 {
        (1.0 - (2.0 / self.items as f64).powf(1.0 - self.theta)) / (1.0 - self.zeta2theta / zetan)
    }

    /// The item count the generator was built for.
    pub fn items(&self) -> u64 {
        self.items
    }

    /// A draw among the first `item_count` items (YCSB's `nextLong`).
    pub fn next_in(&mut self, item_count: u64, rng: &mut Rng) -> u64 {
        if item_count == 0 {
            return self.base;
        }
        if item_count > self.count_for_zeta {
            self.zetan = zeta(self.count_for_zeta, item_count, self.theta, self.zetan);
            self.count_for_zeta = item_count;
            self.eta = self.eta_for(self.zetan);
        }
        let u = next_f64(rng);
        let uz = u * self.zetan;
        if uz < 1.0 {
            return self.base;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return self.base + 1;
        }
        let v = item_count as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha);
        self.base + v as u64
    }

    /// A draw among all the items (YCSB's `nextValue`).
    pub fn next(&mut self, rng: &mut Rng) -> u64 {
        self.next_in(self.items, rng)
    }
}

/// YCSB's `ScrambledZipfianGenerator` over `min..=max` (constant 0.99):
/// a zipfian draw over [`SCRAMBLED_ITEM_COUNT`] items, FNV-hashed into the
/// range, so popular items are scattered over the key space.
#[derive(Debug, Clone)]
pub struct ScrambledZipfian {
    zipfian: Zipfian,
    min: u64,
    item_count: u64,
}

impl ScrambledZipfian {
    /// Items `min..=max`.
    pub fn new(min: u64, max: u64) -> ScrambledZipfian {
        ScrambledZipfian {
            zipfian: Zipfian::with_zetan(
                0,
                SCRAMBLED_ITEM_COUNT,
                ZIPFIAN_CONSTANT,
                SCRAMBLED_ZETAN,
            ),
            min,
            item_count: max - min + 1,
        }
    }

    /// The next item, in `min..=max`.
    pub fn next(&mut self, rng: &mut Rng) -> u64 {
        self.min + fnv_hash64(self.zipfian.next(rng)) % self.item_count
    }
}

/// YCSB's `SkewedLatestGenerator`: `last - zipfian(last)`, where `last` is
/// the highest acknowledged insert, so the newest records are the most
/// popular. Built from the counter's value at the start (O(records) zeta,
/// so build one before the clock starts and clone it per thread).
#[derive(Debug, Clone)]
pub struct SkewedLatest {
    zipfian: Zipfian,
}

impl SkewedLatest {
    /// A generator for a counter whose last value is now `last`.
    pub fn new(last: u64) -> SkewedLatest {
        SkewedLatest {
            zipfian: Zipfian::new(0, last.max(1) - 1, ZIPFIAN_CONSTANT),
        }
    }

    /// The next item, in `0..=last`.
    pub fn next(&mut self, last: u64, rng: &mut Rng) -> u64 {
        last - self.zipfian.next_in(last, rng).min(last)
    }
}

/// Slots of [`AckCounter`]'s window (YCSB's `WINDOW_SIZE`, 2^20).
const WINDOW: u64 = 1 << 20;

/// YCSB's `AcknowledgedCounterGenerator`: hands out insert numbers from
/// `start` on; [`AckCounter::last`] is the highest number below which
/// every number handed out has been acknowledged (its insert finished).
#[derive(Debug)]
pub struct AckCounter {
    next: AtomicU64,
    /// One more than the highest contiguously acknowledged number.
    limit: AtomicU64,
    window: Box<[AtomicBool]>,
    lock: Mutex<()>,
}

impl AckCounter {
    /// A counter whose first number is `start` (so `last() == start - 1`);
    /// `start` must be at least 1.
    pub fn new(start: u64) -> AckCounter {
        AckCounter {
            next: AtomicU64::new(start),
            limit: AtomicU64::new(start),
            window: (0..WINDOW).map(|_| AtomicBool::new(false)).collect(),
            lock: Mutex::new(()),
        }
    }

    /// A new insert number.
    pub fn next(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// Numbers handed out so far plus the start (the next number).
    pub fn issued(&self) -> u64 {
        self.next.load(Ordering::Acquire)
    }

    /// The highest number every insert up to which has been acknowledged.
    pub fn last(&self) -> u64 {
        self.limit.load(Ordering::Acquire).saturating_sub(1)
    }

    /// Marks `value`'s insert finished; advances [`AckCounter::last`] when
    /// no other thread is advancing it (as YCSB's `tryLock`).
    pub fn acknowledge(&self, value: u64) -> Result<()> {
        let slot = (value & (WINDOW - 1)) as usize;
        if self.window[slot].swap(true, Ordering::AcqRel) {
            bail!("too many unacknowledged insertion keys (window of {WINDOW})");
        }
        if let Some(_g) = self.lock.try_lock() {
            self.advance();
        }
        Ok(())
    }

    /// Advances the limit over every acknowledged number, waiting for the
    /// lock: for the end of a workload, when no insert is in flight.
    pub fn settle(&self) {
        let _g = self.lock.lock();
        self.advance();
    }

    /// With the lock held: moves the limit over contiguous acknowledgements.
    fn advance(&self) {
        let start = self.limit.load(Ordering::Acquire);
        let mut at = start;
        while at < start + WINDOW {
            let slot = (at & (WINDOW - 1)) as usize;
            if !self.window[slot].load(Ordering::Acquire) {
                break;
            }
            self.window[slot].store(false, Ordering::Release);
            at += 1;
        }
        self.limit.store(at, Ordering::Release);
    }
}

/// An operation of the YCSB core workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    /// Read a whole record.
    Read,
    /// Overwrite a record with a whole new value.
    Update,
    /// Insert a new record (extends the key space).
    Insert,
    /// Seek to a record and read the following ones.
    Scan,
    /// Read a record, then overwrite it.
    ReadModifyWrite,
}

impl Op {
    /// Every operation, in YCSB's order.
    pub const ALL: [Op; 5] = [
        Op::Read,
        Op::Update,
        Op::Insert,
        Op::Scan,
        Op::ReadModifyWrite,
    ];

    /// Its label in result names and JSON (`ycsb_a.read`, ...).
    pub fn label(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Update => "update",
            Op::Insert => "insert",
            Op::Scan => "scan",
            Op::ReadModifyWrite => "rmw",
        }
    }

    /// Its index in [`Op::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// YCSB's `DiscreteGenerator` of operations: weights in the order given.
#[derive(Debug, Clone)]
pub struct OpChooser {
    ops: Vec<(f64, Op)>,
    sum: f64,
}

impl OpChooser {
    /// A chooser over `(proportion, op)` pairs; zero proportions are left out.
    pub fn new(mix: &[(f64, Op)]) -> OpChooser {
        let ops: Vec<(f64, Op)> = mix.iter().copied().filter(|(w, _)| *w > 0.0).collect();
        let sum = ops.iter().map(|(w, _)| w).sum();
        OpChooser { ops, sum }
    }

    /// The next operation.
    pub fn next(&self, rng: &mut Rng) -> Op {
        let mut val = next_f64(rng);
        for &(w, op) in &self.ops {
            let pw = w / self.sum;
            if val < pw {
                return op;
            }
            val -= pw;
        }
        // Rounding left `val` a hair above the last share: the last op.
        self.ops.last().map_or(Op::Read, |&(_, op)| op)
    }
}

/// YCSB's `UniformLongGenerator(min, max)`: a scan length in `min..=max`.
pub fn uniform_in(min: u64, max: u64, rng: &mut Rng) -> u64 {
    min + rng.below(max - min + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_matches_ycsb() {
        // Values from YCSB's Utils.fnvhash64 (Java long arithmetic).
        assert_eq!(fnv_hash64(0), 6_284_781_860_667_377_211);
        assert_eq!(fnv_hash64(1), 8_517_097_267_634_966_620);
        assert_eq!(fnv_hash64(999), 2_071_219_101_098_386_137);
    }

    /// Item 0 and 1 come out exactly as often as Zipf's law says (Gray's
    /// algorithm is exact for them), and buckets further out within the
    /// algorithm's approximation (under 2 points for n = 1000).
    #[test]
    fn zipfian_matches_theory_for_1000_items() {
        let n = 1000u64;
        let theta = 0.99;
        let mut z = Zipfian::new(0, n - 1, theta);
        let mut rng = Rng::new(11);
        let draws = 400_000u64;
        let mut count = vec![0u64; n as usize];
        for _ in 0..draws {
            let v = z.next(&mut rng);
            assert!(v < n, "{v} out of range");
            count[v as usize] += 1;
        }
        let zn = zeta(0, n, theta, 0.0);
        let pmf = |i: u64| 1.0 / ((i + 1) as f64).powf(theta) / zn;
        let freq = |lo: u64, hi: u64| {
            count[lo as usize..hi as usize].iter().sum::<u64>() as f64 / draws as f64
        };
        for i in [0, 1] {
            let p = pmf(i);
            let sigma = (p * (1.0 - p) / draws as f64).sqrt();
            let f = freq(i, i + 1);
            assert!(
                (f - p).abs() < 5.0 * sigma,
                "item {i}: {f} vs {p} (sigma {sigma})"
            );
        }
        assert!((freq(0, 1) - 0.1294).abs() < 0.003, "p(0) = 1/zeta(1000)");
        for (lo, hi) in [(2, 10), (10, 100), (100, 1000)] {
            let p: f64 = (lo..hi).map(pmf).sum();
            let f = freq(lo, hi);
            assert!((f - p).abs() < 0.025, "items {lo}..{hi}: {f} vs {p}");
        }
        // Popularity falls with rank.
        assert!(count[0] > count[1] && count[1] > count[2] && count[2] > count[10]);
    }

    #[test]
    fn zipfian_grows_its_zeta_incrementally() {
        let mut a = Zipfian::new(0, 99, ZIPFIAN_CONSTANT);
        let mut rng = Rng::new(1);
        for _ in 0..1000 {
            assert!(a.next_in(200, &mut rng) < 200);
        }
        assert!((a.zetan - zeta(0, 200, ZIPFIAN_CONSTANT, 0.0)).abs() < 1e-9);
    }

    #[test]
    fn scrambled_keys_stay_in_range_and_spread() {
        let mut rng = Rng::new(5);
        for (min, max) in [(0u64, 0u64), (0, 9), (100, 1099), (0, 999_999)] {
            let mut g = ScrambledZipfian::new(min, max);
            for _ in 0..20_000 {
                let v = g.next(&mut rng);
                assert!((min..=max).contains(&v), "{v} outside {min}..={max}");
            }
        }
        // The most popular item is not item 0 (the hash moves it), and
        // the head is skewed: the top item takes a few percent of draws.
        let mut g = ScrambledZipfian::new(0, 9999);
        let mut count = vec![0u32; 10_000];
        for _ in 0..100_000 {
            count[g.next(&mut rng) as usize] += 1;
        }
        let (top, &hits) = count
            .iter()
            .enumerate()
            .max_by_key(|(_, c)| **c)
            .expect("non-empty");
        assert_eq!(top as u64, fnv_hash64(0) % 10_000);
        assert!(hits > 2_000, "top item drawn {hits} times of 100000");
    }

    #[test]
    fn latest_skews_to_the_newest() {
        let mut rng = Rng::new(9);
        let last = 999u64;
        let mut g = SkewedLatest::new(last);
        let (mut newest, mut top_percent, draws) = (0u32, 0u32, 100_000u32);
        for _ in 0..draws {
            let v = g.next(last, &mut rng);
            assert!(v <= last);
            newest += u32::from(v == last);
            top_percent += u32::from(v + 10 > last);
        }
        // P(newest) = 1/zeta(999) ~ 12.9%; P(newest 10) ~ 40%.
        assert!(newest > draws / 10, "newest drawn {newest} of {draws}");
        assert!(top_percent > draws / 3, "newest 1% drawn {top_percent}");
        // As the counter grows, draws follow the new newest.
        let v: Vec<u64> = (0..1000).map(|_| g.next(5000, &mut rng)).collect();
        assert!(v.iter().all(|&x| x <= 5000));
        // Newest 10 of 5001: ~16% (Zipf's law says 31%, but YCSB keeps
        // eta from the item count it was built with, 999; uniform: 0.2%).
        let newest10 = v.iter().filter(|&&x| x > 4990).count();
        assert!(newest10 > 100, "newest 10 drawn {newest10} of 1000");
    }

    #[test]
    fn ack_counter_advances_over_contiguous_acks() {
        let c = AckCounter::new(10);
        assert_eq!(c.last(), 9);
        let (a, b, d) = (c.next(), c.next(), c.next());
        assert_eq!((a, b, d), (10, 11, 12));
        c.acknowledge(b).expect("ack");
        assert_eq!(c.last(), 9, "10 is still in flight");
        c.acknowledge(a).expect("ack");
        assert_eq!(c.last(), 11);
        c.acknowledge(d).expect("ack");
        c.settle();
        assert_eq!(c.last(), 12);
        assert_eq!(c.issued(), 13);
    }

    #[test]
    fn scan_lengths_are_uniform_1_to_100() {
        let mut rng = Rng::new(3);
        let mut count = [0u32; 101];
        let draws = 200_000;
        for _ in 0..draws {
            let v = uniform_in(1, 100, &mut rng);
            assert!((1..=100).contains(&v));
            count[v as usize] += 1;
        }
        assert_eq!(count[0], 0);
        // Each length ~2000 times; sigma ~44.
        for (len, &c) in count.iter().enumerate().skip(1) {
            assert!((1700..2300).contains(&c), "length {len}: {c}");
        }
    }

    #[test]
    fn op_mix_follows_proportions() {
        let mut rng = Rng::new(4);
        let chooser = OpChooser::new(&[(0.95, Op::Scan), (0.05, Op::Insert), (0.0, Op::Read)]);
        let draws = 100_000;
        let mut count = [0u32; 5];
        for _ in 0..draws {
            count[chooser.next(&mut rng).index()] += 1;
        }
        assert_eq!(count[Op::Read.index()], 0);
        let scans = f64::from(count[Op::Scan.index()]) / f64::from(draws);
        assert!((scans - 0.95).abs() < 0.005, "scan share {scans}");
        let half = OpChooser::new(&[(0.5, Op::Read), (0.5, Op::Update)]);
        let reads = (0..draws)
            .filter(|_| half.next(&mut rng) == Op::Read)
            .count();
        assert!((reads as f64 / f64::from(draws) - 0.5).abs() < 0.01);
    }
}
