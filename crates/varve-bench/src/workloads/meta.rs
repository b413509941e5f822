//! Meta workloads: flush, compact, waitforcompaction, stats, deleterange.
//!
//! `deleterange` deletes the middle tenth of the key space (key numbers
//! `num * 45 / 100 .. num * 55 / 100`) with one range delete.
//!
//! Each is one timed call on the engine (reported as 1 operation); when the
//! engine does something other than asked (varve has no compaction yet and
//! flushes instead), the engine's note travels with the outcome. `stats`
//! carries the engine's statistics text for the runner to print.

use anyhow::Result;

use super::{Ctx, Outcome, run_threads};

/// Runs one meta workload.
pub fn run(ctx: &Ctx<'_>, name: &str) -> Result<Outcome> {
    let note = std::sync::Mutex::new(None);
    let stats = run_threads(ctx, 1, |_tid, st| {
        let n = match name {
            "flush" => ctx.engine.flush()?,
            "compact" => ctx.engine.compact()?,
            "waitforcompaction" => ctx.engine.wait_for_compaction()?,
            "deleterange" => {
                let (mut a, mut b) = (Vec::new(), Vec::new());
                let num = ctx.flags.num();
                crate::keygen::make_key(num * 45 / 100, ctx.flags.key_size, &mut a);
                crate::keygen::make_key(num * 55 / 100, ctx.flags.key_size, &mut b);
                ctx.engine.delete_range(&a, &b)?;
                Some(format!(
                    "deleted key numbers {}..{} (the middle tenth)",
                    num * 45 / 100,
                    num * 55 / 100
                ))
            }
            _ => None,
        };
        st.finished_ops(1);
        *note.lock().expect("not poisoned") = n;
        Ok(())
    })?;
    let mut out = Outcome::new(name, stats, "op", 1);
    if let Some(n) = note.into_inner().expect("not poisoned") {
        out.notes.push(format!("{name}: {n}"));
    }
    if name == "stats" {
        out.text = Some(ctx.engine.stats());
    }
    Ok(out)
}
