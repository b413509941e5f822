//! `contest`: the PolarDB engine-contest shape, in three timed phases.
//!
//! 8-byte keys and 4 KiB values (whatever --key_size/--value_size say).
//! `--threads` threads each own the keys `i` with `i % threads == t` for
//! `i < num`: `contest.write` writes them in a per-thread random order,
//! `contest.read` reads them back in another random order and checks each is
//! found with a 4 KiB value, `contest.range` has every thread scan the whole
//! database forward and checks it saw `num` keys. Runs on a fresh database.

use anyhow::{Result, ensure};

use super::{Ctx, Outcome, run_threads};
use crate::engine::WriteOpts;
use crate::keygen::{Rng, make_key};
use crate::valuegen::ValueGen;

const KEY: usize = 8;
const VALUE: usize = 4096;

fn slice_of(num: u64, threads: usize, t: usize, rng: &mut Rng) -> Vec<u64> {
    let mut v: Vec<u64> = (t as u64..num).step_by(threads).collect();
    for i in (1..v.len()).rev() {
        v.swap(i, rng.below(i as u64 + 1) as usize);
    }
    v
}

/// Runs the three phases.
pub fn run(ctx: &Ctx<'_>) -> Result<Vec<Outcome>> {
    let f = ctx.flags;
    let t = f.threads.max(1);
    let num = f.num();
    let wo = WriteOpts {
        sync: f.sync,
        disable_wal: f.disable_wal,
    };
    let write = run_threads(ctx, t, |tid, st| {
        let mut rng = ctx.thread_rng();
        let mut values = ValueGen::new(VALUE, f.compression_ratio);
        let mut key = Vec::with_capacity(KEY);
        for k in slice_of(num, t, tid, &mut rng) {
            make_key(k, KEY, &mut key);
            ctx.engine.write(&[(&key, values.generate(VALUE))], wo)?;
            st.bytes += (KEY + VALUE) as u64;
            st.finished_ops(1);
        }
        Ok(())
    })?;
    let read = run_threads(ctx, t, |tid, st| {
        let mut rng = ctx.thread_rng();
        let mut key = Vec::with_capacity(KEY);
        let (mut reads, mut found) = (0, 0);
        for k in slice_of(num, t, tid, &mut rng) {
            make_key(k, KEY, &mut key);
            reads += 1;
            if let Some(len) = ctx.engine.get(&key)? {
                ensure!(len == VALUE, "contest.read: key {k} has a {len}-byte value");
                found += 1;
                st.bytes += (KEY + len) as u64;
            }
            st.finished_ops(1);
        }
        st.found = found;
        st.reads = Some(reads);
        Ok(())
    })?;
    let range = run_threads(ctx, t, |_tid, st| {
        let mut c = ctx.engine.cursor()?;
        c.seek_to_first()?;
        let mut n = 0u64;
        while c.valid() {
            st.bytes += (c.key().len() + c.value().len()) as u64;
            n += 1;
            st.finished_ops(1);
            c.next()?;
        }
        ensure!(n == num, "contest.range: scanned {n} keys, expected {num}");
        Ok(())
    })?;
    let mut w = Outcome::new("contest.write", write, "write", t);
    w.notes.push(
        "contest: 8-byte keys and 4096-byte values regardless of --key_size/--value_size".into(),
    );
    Ok(vec![
        w,
        Outcome::new("contest.read", read, "read", t),
        Outcome::new("contest.range", range, "read", t),
    ])
}
