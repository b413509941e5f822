//! Iterator workloads: readseq, readreverse, seekrandom, count.
//!
//! Each thread owns one cursor for the whole workload (as db_bench keeps one
//! iterator per thread). readseq/readreverse visit up to `--reads` entries
//! from the first/last key; seekrandom seeks to a random key in `0..num`,
//! counts it found when the cursor lands exactly on it, then reads
//! `--seek_nexts` following entries; count visits every key once. The
//! engine's cursors read ahead as `--readahead_size` says (varve: scan
//! read-ahead, `docs/readahead.md`).

use anyhow::Result;

use super::{Ctx, Outcome, run_threads};
use crate::keygen::make_key;
use crate::stats::Limit;

/// readseq (`reverse == false`) or readreverse.
pub fn read_seq(ctx: &Ctx<'_>, reverse: bool) -> Result<Outcome> {
    let f = ctx.flags;
    let stats = run_threads(ctx, f.threads, |_tid, st| {
        let mut c = ctx.engine.cursor()?;
        if reverse {
            c.seek_to_last()?;
        } else {
            c.seek_to_first()?;
        }
        let max = f.reads();
        let mut i = 0;
        while i < max && c.valid() {
            st.bytes += (c.key().len() + c.value().len()) as u64;
            st.finished_ops(1);
            i += 1;
            if reverse {
                c.prev()?;
            } else {
                c.next()?;
            }
        }
        Ok(())
    })?;
    let name = if reverse { "readreverse" } else { "readseq" };
    Ok(Outcome::new(name, stats, "read", f.threads))
}

/// seekrandom with `--seek_nexts`.
pub fn seek_random(ctx: &Ctx<'_>) -> Result<Outcome> {
    let f = ctx.flags;
    let stats = run_threads(ctx, f.threads, |_tid, st| {
        let mut rng = ctx.thread_rng();
        let mut c = ctx.engine.cursor()?;
        let mut key = Vec::with_capacity(f.key_size);
        let mut limit = Limit::new(f.duration, f.reads());
        let (mut reads, mut found) = (0u64, 0u64);
        while !limit.done(1) {
            make_key(rng.below(f.num()), f.key_size, &mut key);
            c.seek(&key)?;
            reads += 1;
            if c.valid() && c.key() == &key[..] {
                found += 1;
            }
            let mut j = 0;
            while j < f.seek_nexts && c.valid() {
                st.bytes += (c.key().len() + c.value().len()) as u64;
                c.next()?;
                j += 1;
            }
            st.finished_ops(1);
        }
        st.found = found;
        st.reads = Some(reads);
        Ok(())
    })?;
    Ok(Outcome::new("seekrandom", stats, "seek", f.threads))
}

/// count: every key, once — through the engine's parallel-scan API on
/// `--scan_threads` threads when it has one (varve's `par_count`; values are
/// not copied, so no MB/s), else with one cursor.
pub fn count(ctx: &Ctx<'_>) -> Result<Outcome> {
    let f = ctx.flags;
    let threads = f.scan_threads.max(1);
    let parallel = std::sync::atomic::AtomicBool::new(false);
    let stats = run_threads(ctx, 1, |_tid, st| {
        if let Some(n) = ctx.engine.par_count(threads)? {
            parallel.store(true, std::sync::atomic::Ordering::Relaxed);
            st.finished_ops(n);
            st.add_message(&format!("({n} keys)"));
            return Ok(());
        }
        let mut c = ctx.engine.cursor()?;
        c.seek_to_first()?;
        let mut n = 0u64;
        while c.valid() {
            st.bytes += (c.key().len() + c.value().len()) as u64;
            n += 1;
            st.finished_ops(1);
            c.next()?;
        }
        st.add_message(&format!("({n} keys)"));
        Ok(())
    })?;
    let parallel = parallel.into_inner();
    let mut out = Outcome::new("count", stats, "op", if parallel { threads } else { 1 });
    if parallel {
        out.notes.push(format!(
            "count: parallel-scan API (par_count) on {threads} threads"
        ));
    } else if threads > 1 {
        out.notes.push(format!(
            "count: --scan_threads={threads} ignored: this engine has no parallel-scan API; \
             one iterator counted"
        ));
    }
    Ok(out)
}
