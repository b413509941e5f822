//! Point-read workloads: readrandom and multireadrandom.
//!
//! Each thread does `--reads` (default `--num`) lookups of keys drawn
//! uniformly from `0..num` (or runs `--duration` seconds), counting found keys
//! and key+value bytes of hits, as db_bench's `ReadRandom` does.
//! multireadrandom looks keys up `--batch_size` at a time with the engine's
//! MultiGet (one latency sample per batch); an engine without one loops `get`
//! and the outcome says so.

use anyhow::Result;

use super::{Ctx, Outcome, run_threads};
use crate::keygen::make_key;
use crate::stats::Limit;

/// db_bench's readrandom.
pub fn read_random(ctx: &Ctx<'_>) -> Result<Outcome> {
    let f = ctx.flags;
    let stats = run_threads(ctx, f.threads, |_tid, st| {
        let mut rng = ctx.thread_rng();
        let mut key = Vec::with_capacity(f.key_size);
        let mut limit = Limit::new(f.duration, f.reads());
        let (mut reads, mut found) = (0u64, 0u64);
        while !limit.done(1) {
            make_key(rng.below(f.num()), f.key_size, &mut key);
            reads += 1;
            if let Some(len) = ctx.engine.get(&key)? {
                found += 1;
                st.bytes += (key.len() + len) as u64;
            }
            st.finished_ops(1);
        }
        st.found = found;
        st.reads = Some(reads);
        Ok(())
    })?;
    Ok(Outcome::new("readrandom", stats, "read", f.threads))
}

/// db_bench's multireadrandom: batches of `--batch_size` keys.
pub fn multi_read_random(ctx: &Ctx<'_>) -> Result<Outcome> {
    let f = ctx.flags;
    let batch = f.batch_size.max(1);
    let stats = run_threads(ctx, f.threads, |_tid, st| {
        let mut rng = ctx.thread_rng();
        let mut bufs: Vec<Vec<u8>> = vec![Vec::with_capacity(f.key_size); batch];
        let mut limit = Limit::new(f.duration, f.reads());
        let (mut reads, mut found) = (0u64, 0u64);
        loop {
            let n = limit.next_batch(batch as u64) as usize;
            if n == 0 || limit.done(n as u64) {
                break;
            }
            for b in bufs.iter_mut().take(n) {
                make_key(rng.below(f.num()), f.key_size, b);
            }
            let keys: Vec<&[u8]> = bufs[..n].iter().map(|b| &b[..]).collect();
            let got = ctx.engine.multi_get(&keys)?;
            reads += n as u64;
            for (k, g) in keys.iter().zip(&got) {
                if let Some(len) = g {
                    found += 1;
                    st.bytes += (k.len() + len) as u64;
                }
            }
            st.finished_ops(n as u64);
        }
        st.found = found;
        st.reads = Some(reads);
        Ok(())
    })?;
    let mut out = Outcome::new("multireadrandom", stats, "read", f.threads);
    if !ctx.engine.native_multi_get() {
        out.notes
            .push("multireadrandom: this engine has no MultiGet; a loop of get was timed".into());
    }
    Ok(out)
}
