//! Write workloads: fillseq, fillrandom, filluniquerandom, overwrite, fillsync.
//!
//! db_bench's `DoWrite`: each thread does `--writes` (default `--num`) writes
//! over the key space `0..num`, grouped into batches of `--batch_size`, one
//! latency sample per batch. Random mode honours `--duration` (then the count
//! is ignored). A key space other than `--num` (fillsync's num/1000) is noted
//! as `(N ops)` like db_bench does.

use anyhow::Result;

use super::{Ctx, Outcome, run_threads};
use crate::engine::WriteOpts;
use crate::keygen::{KeyGen, WriteMode, make_key};
use crate::stats::Limit;
use crate::valuegen::ValueGen;

/// Writes `--writes` keys per thread from key space `0..num` in `mode` order.
pub fn fill(
    ctx: &Ctx<'_>,
    name: &str,
    mode: WriteMode,
    num: u64,
    wo: WriteOpts,
    threads: usize,
) -> Result<Outcome> {
    let f = ctx.flags;
    let ops = f.writes();
    let batch = f.batch_size.max(1);
    let duration = if mode == WriteMode::Random {
        f.duration
    } else {
        0
    };
    // Build the shared value buffer before the clock starts.
    drop(ValueGen::new(f.value_size, f.compression_ratio));
    let stats = run_threads(ctx, threads, |_tid, st| {
        let mut rng = ctx.thread_rng();
        let mut keys = KeyGen::new(mode, num, &mut rng);
        let mut values = ValueGen::new(f.value_size, f.compression_ratio);
        let mut key_bufs: Vec<Vec<u8>> = vec![Vec::with_capacity(f.key_size); batch];
        let mut offsets = vec![0usize; batch];
        let mut limit = Limit::new(duration, ops);
        loop {
            let n = limit.next_batch(batch as u64) as usize;
            if n == 0 || limit.done(n as u64) {
                break;
            }
            for i in 0..n {
                make_key(keys.next(&mut rng), f.key_size, &mut key_bufs[i]);
                offsets[i] = values.next_offset(f.value_size);
            }
            let data = values.data();
            let pairs: Vec<(&[u8], &[u8])> = (0..n)
                .map(|i| {
                    (
                        &key_bufs[i][..],
                        &data[offsets[i]..offsets[i] + f.value_size],
                    )
                })
                .collect();
            ctx.engine.write(&pairs, wo)?;
            st.bytes += (n * (f.key_size + f.value_size)) as u64;
            st.finished_ops(n as u64);
        }
        if num != f.num() {
            st.add_message(&format!("({num} ops)"));
        }
        Ok(())
    })?;
    Ok(Outcome::new(name, stats, "write", threads))
}
