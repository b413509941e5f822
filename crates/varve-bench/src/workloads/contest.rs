//! The PolarDB 2018 engine contest's phases (8-byte keys, 4 KiB values,
//! `--threads` threads), run in one process each by `contest`
//! ([`crate::contest_run`]) or all in this process by `contest_inprocess`.
//!
//! Key number `k` (`0..num`) is the 8 big-endian bytes of [`key_of`]`(k)`,
//! a bijective mix of `k`: keys spread evenly over the 64-bit space, like
//! the contest's random 8-byte keys, and no two numbers share a key. Its
//! value is [`value_of`]`(k)`, 4096 bytes that depend on `k` and on their
//! position, so a value read back is checked byte for byte. `--threads` threads each
//! own the keys `k` with `k % threads == t`:
//! - **write** writes them in a per-thread random order;
//! - **verify** counts every key (the engine's parallel count where it has
//!   one, else one iterator) and fails unless all `num` are there;
//! - **read** reads them back in another random order and checks each
//!   value's content;
//! - **range** has every thread scan the whole database in key order
//!   twice, checking that keys rise strictly, that each is the key of a
//!   number below `num` (so with the count, the keys are exactly the
//!   written ones), the count, and each value's length.
//!
//! A phase fails (an error naming the key) on any missing, extra, reordered
//! or wrong entry.

use anyhow::{Result, ensure};

use super::{Ctx, Outcome, run_threads};
use crate::engine::WriteOpts;
use crate::keygen::Rng;
use crate::stats::Stats;

/// Key bytes.
pub const KEY: usize = 8;
/// Value bytes.
pub const VALUE: usize = 4096;
/// Full scans per thread in the range phase.
pub const PASSES: u64 = 2;

const K1: u64 = 0xBF58_476D_1CE4_E5B9;
const K2: u64 = 0x94D0_49BB_1331_11EB;

/// The inverse of odd `a` modulo 2^64 (Newton's iteration).
const fn inverse(a: u64) -> u64 {
    let mut x = a;
    let mut i = 0;
    while i < 6 {
        x = x.wrapping_mul(2u64.wrapping_sub(a.wrapping_mul(x)));
        i += 1;
    }
    x
}

/// The 64-bit key of key number `k`: xor-shifts by 33 (each its own
/// inverse) and multiplications by odd constants, so it is a bijection.
pub fn key_of(k: u64) -> u64 {
    let mut x = k;
    x ^= x >> 33;
    x = x.wrapping_mul(K1);
    x ^= x >> 33;
    x = x.wrapping_mul(K2);
    x ^ (x >> 33)
}

/// The key number whose key is `key` ([`key_of`]'s inverse).
pub fn number_of(key: u64) -> u64 {
    let mut x = key;
    x ^= x >> 33;
    x = x.wrapping_mul(inverse(K2));
    x ^= x >> 33;
    x = x.wrapping_mul(inverse(K1));
    x ^ (x >> 33)
}

/// Writes key number `k`'s 8 bytes into `buf`.
fn contest_key(k: u64, buf: &mut Vec<u8>) {
    buf.clear();
    buf.extend_from_slice(&key_of(k).to_be_bytes());
}

/// A 64-bit mix of `k` (splitmix64's finalizer).
fn mix(k: u64) -> u64 {
    let mut z = k.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The value of key number `k`: each 8-byte word is a mix of `k` xor a
/// multiple of its position, so no two keys' values and no two positions
/// of one value are alike.
pub fn value_of(k: u64, buf: &mut [u8; VALUE]) {
    let h = mix(k);
    // Word i is `h ^ (i + 1) * POSITION`; the multiple is kept as a running
    // sum (the same value mod 2^64) so the loop is additions the compiler
    // vectorizes: the 64 client threads share the engine's two cores.
    let mut m = 0u64;
    for w in buf.chunks_exact_mut(8) {
        m = m.wrapping_add(POSITION);
        w.copy_from_slice(&(h ^ m).to_le_bytes());
    }
}

/// The multiplier of a word's position in [`value_of`].
const POSITION: u64 = 0xD6E8_FEB8_6659_FD93;

/// True if `v` is exactly key number `k`'s value.
pub fn is_value_of(k: u64, v: &[u8]) -> bool {
    let mut want = [0u8; VALUE];
    value_of(k, &mut want);
    v == want
}

/// The key numbers thread `t` of `threads` owns, in a random order.
fn slice_of(num: u64, threads: usize, t: usize, rng: &mut Rng) -> Vec<u64> {
    let mut v: Vec<u64> = (t as u64..num).step_by(threads).collect();
    for i in (1..v.len()).rev() {
        v.swap(i, rng.below(i as u64 + 1) as usize);
    }
    v
}

/// The write phase: every key once, each write acknowledged before the
/// next.
pub fn write(ctx: &Ctx<'_>) -> Result<Stats> {
    let f = ctx.flags;
    let t = f.threads.max(1);
    let num = f.num();
    let wo = WriteOpts {
        sync: f.sync,
        disable_wal: f.disable_wal,
    };
    run_threads(ctx, t, |tid, st| {
        let mut rng = ctx.thread_rng();
        let mut value = [0u8; VALUE];
        let mut key = Vec::with_capacity(KEY);
        for k in slice_of(num, t, tid, &mut rng) {
            contest_key(k, &mut key);
            value_of(k, &mut value);
            ctx.engine.write(&[(&key, &value)], wo)?;
            st.bytes += (KEY + VALUE) as u64;
            st.finished_ops(1);
        }
        Ok(())
    })
}

/// The verify phase: every key is there (after the write phase's kill).
/// Returns the count.
pub fn verify(ctx: &Ctx<'_>) -> Result<u64> {
    let f = ctx.flags;
    let num = f.num();
    let n = match ctx.engine.par_count(f.threads.max(1))? {
        Some(n) => n,
        None => {
            let mut c = ctx.engine.cursor()?;
            c.seek_to_first()?;
            let mut n = 0u64;
            while c.valid() {
                n += 1;
                c.next()?;
            }
            n
        }
    };
    ensure!(
        n == num,
        "contest verify: {n} keys after reopening, {num} were acknowledged"
    );
    Ok(n)
}

/// The read phase: every key, checking each value's content.
pub fn read(ctx: &Ctx<'_>) -> Result<Stats> {
    let f = ctx.flags;
    let t = f.threads.max(1);
    let num = f.num();
    run_threads(ctx, t, |tid, st| {
        let mut rng = ctx.thread_rng();
        let mut key = Vec::with_capacity(KEY);
        let (mut reads, mut found) = (0, 0);
        for k in slice_of(num, t, tid, &mut rng) {
            contest_key(k, &mut key);
            reads += 1;
            let mut good = false;
            let mut len = 0;
            let hit = ctx.engine.get_with(&key, &mut |v| {
                len = v.len();
                good = is_value_of(k, v);
            })?;
            ensure!(hit, "contest read: key {k} is missing");
            ensure!(
                good,
                "contest read: key {k} has a wrong value ({len} bytes; {VALUE} expected)"
            );
            found += 1;
            st.bytes += (KEY + len) as u64;
            st.finished_ops(1);
        }
        st.found = found;
        st.reads = Some(reads);
        Ok(())
    })
}

/// The range phase: every thread scans the whole database in key order
/// [`PASSES`] times.
pub fn range(ctx: &Ctx<'_>) -> Result<Stats> {
    let f = ctx.flags;
    let t = f.threads.max(1);
    let num = f.num();
    run_threads(ctx, t, |tid, st| {
        for pass in 0..PASSES {
            let mut c = ctx.engine.cursor()?;
            c.seek_to_first()?;
            let mut n = 0u64;
            let mut last: Option<u64> = None;
            while c.valid() {
                let bytes: [u8; KEY] = c.key().try_into().map_err(|_| {
                    anyhow::anyhow!(
                        "contest range: entry {n} of pass {pass} (thread {tid}) has a {}-byte key",
                        c.key().len()
                    )
                })?;
                let key = u64::from_be_bytes(bytes);
                ensure!(
                    last.is_none_or(|l| l < key),
                    "contest range: entry {n} of pass {pass} (thread {tid}), key {key:016x}, is \
                     not after the one before"
                );
                ensure!(
                    number_of(key) < num,
                    "contest range: key {key:016x} (thread {tid}) was never written"
                );
                ensure!(
                    c.value().len() == VALUE,
                    "contest range: key {key:016x} has a {}-byte value",
                    c.value().len()
                );
                last = Some(key);
                st.bytes += (KEY + VALUE) as u64;
                n += 1;
                st.finished_ops(1);
                c.next()?;
            }
            ensure!(
                n == num,
                "contest range: pass {pass} (thread {tid}) saw {n} keys, expected {num}"
            );
        }
        Ok(())
    })
    .inspect(|_| {
        // What the shared scan chunks did (loads against the database's
        // chunks, values turned away for lack of room): why a pass read
        // the database more than once.
        for line in ctx.engine.stats().lines() {
            if line.starts_with("Shared scan chunks") || line.starts_with("Shared passes") {
                eprintln!("contest range: {line}");
            }
        }
    })
}

/// `contest_inprocess`: write, read and range in this process.
pub fn run_inprocess(ctx: &Ctx<'_>) -> Result<Vec<Outcome>> {
    let t = ctx.flags.threads.max(1);
    let mut w = Outcome::new("contest.write", write(ctx)?, "write", t);
    w.notes.push(
        "contest: 8-byte keys and 4096-byte values regardless of --key_size/--value_size".into(),
    );
    let r = Outcome::new("contest.read", read(ctx)?, "read", t);
    let s = Outcome::new("contest.range", range(ctx)?, "read", t);
    Ok(vec![w, r, s])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_a_bijection_spread_over_the_key_space() {
        for k in [0u64, 1, 2, 1000, u64::MAX, 0x1234_5678_9abc_def0] {
            assert_eq!(number_of(key_of(k)), k);
        }
        let keys: std::collections::BTreeSet<u64> = (0..10_000).map(key_of).collect();
        assert_eq!(keys.len(), 10_000, "no two numbers share a key");
        // Spread: every sixteenth of the space gets some of 10,000 keys.
        let mut slices = [0u32; 16];
        for k in &keys {
            slices[(k >> 60) as usize] += 1;
        }
        assert!(slices.iter().all(|&n| n > 400), "{slices:?}");
    }

    /// The running sum gives the words the earlier multiply gave, so a
    /// contest database written by an earlier build still verifies.
    #[test]
    fn values_are_the_position_multiples_of_earlier_builds() {
        for k in [0u64, 7, u64::MAX] {
            let mut v = [0u8; VALUE];
            value_of(k, &mut v);
            for (i, w) in v.chunks_exact(8).enumerate() {
                let want = mix(k) ^ (i as u64 + 1).wrapping_mul(POSITION);
                assert_eq!(w, want.to_le_bytes(), "key {k} word {i}");
            }
        }
    }

    #[test]
    fn values_differ_by_key_and_position_and_check_exactly() {
        let (mut a, mut b) = ([0u8; VALUE], [0u8; VALUE]);
        value_of(1, &mut a);
        value_of(2, &mut b);
        assert_ne!(a, b);
        assert!(is_value_of(1, &a));
        assert!(!is_value_of(2, &a));
        let words: std::collections::HashSet<&[u8]> = a.chunks_exact(8).collect();
        assert_eq!(words.len(), VALUE / 8, "no repeated word in a value");
        let mut c = a;
        c[4095] ^= 1;
        assert!(!is_value_of(1, &c), "one flipped bit is caught");
        assert!(!is_value_of(1, &a[..VALUE - 1]), "a short value is caught");
    }
}
