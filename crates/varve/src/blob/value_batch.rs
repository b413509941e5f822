//! [`read_values`]: many blob values read at once, the way `multi_get`
//! reads its blob values: each read a task of the calling thread's fiber
//! pool (`io/fiber/`), so they go to io_uring together and their
//! latencies overlap (`docs/blob-files.md`, "Short scans").
//!
//! Values that lie next to each other in one file (their aligned spans
//! touch or overlap: values in key order after relocation) are read with
//! one read of their pages together, never a byte more than the values'
//! own pages; every other value is one aligned read, as for `get`. A
//! value still staged in a write lane, or whose pointer cannot be read
//! as a span, goes through [`BlobReaders::value_of`] on its own. Without
//! io_uring (or with `IoEngine::Sync`, or called on a fiber) the same
//! reads run one after another, with the same results.
//!
//! Per call, on the calling thread; the only shared state is the
//! database's [`BatchCounters`](super::batch_counters::BatchCounters).
//! Invariants: every value is checked against its pointer's CRC; each
//! pointer gets exactly one result, in input order; an error of one read
//! is only its values' result.

use std::cell::{Cell, RefCell};

use super::cache::BlobReaders;
use super::format::{BlobPointer, PAGE};
use crate::error::Result;
use crate::io::IoEngine;
use crate::io::fiber;

/// Largest span read for values next to each other (a read of several
/// values is no larger than a shared scan chunk).
const MAX_SPAN: u64 = 1 << 20;

/// One file read of a batch: the values `members` (indices into the
/// batch), all inside `start..end` of file `file`.
#[derive(Debug)]
struct Read {
    file: u64,
    start: u64,
    end: u64,
    members: Vec<usize>,
    /// Read through `BlobReaders::value_of` (one value, staged or odd).
    alone: bool,
}

/// What [`read_values`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct BatchRead {
    /// File reads issued.
    pub(crate) reads: usize,
    /// Bytes they asked for (each value's pages, once).
    pub(crate) bytes: u64,
    /// The most of them in flight at once.
    pub(crate) in_flight: usize,
}

/// The aligned span of `p`, when it is one a span read can cover: a
/// non-empty value after the header page whose end does not overflow.
fn span_of(p: &BlobPointer) -> Option<(u64, u64)> {
    let end = p.offset.checked_add(u64::from(p.length))?;
    if p.length == 0 || p.offset < PAGE as u64 || end > u64::MAX - PAGE as u64 {
        return None;
    }
    let (start, len) = p.aligned_span();
    Some((start, start + len as u64))
}

/// The reads that fetch `ps`: values of one file whose spans touch or
/// overlap share one read (up to [`MAX_SPAN`]); in file order.
fn plan(readers: &BlobReaders, ps: &[BlobPointer]) -> Vec<Read> {
    let mut order: Vec<usize> = (0..ps.len()).collect();
    order.sort_by_key(|&i| (ps[i].file_number, ps[i].offset));
    let mut reads: Vec<Read> = Vec::new();
    for i in order {
        let p = &ps[i];
        let aligned = span_of(p);
        let span = aligned.filter(|_| !readers.is_being_written(p.file_number));
        let Some((start, end)) = span else {
            let whole = (p.offset, p.offset.saturating_add(u64::from(p.length)));
            let (start, end) = aligned.unwrap_or(whole);
            reads.push(Read {
                file: p.file_number,
                start,
                end,
                members: vec![i],
                alone: true,
            });
            continue;
        };
        if let Some(last) = reads.last_mut()
            && !last.alone
            && last.file == p.file_number
            && start <= last.end
            && end.max(last.end) - last.start <= MAX_SPAN
        {
            last.end = last.end.max(end);
            last.members.push(i);
            continue;
        }
        reads.push(Read {
            file: p.file_number,
            start,
            end,
            members: vec![i],
            alone: false,
        });
    }
    reads
}

/// The values `ps` name, one result per pointer in input order, read on
/// at most `depth` fibers at once (see the module docs); the batch is
/// counted in `readers`' batch counters.
pub(crate) fn read_values(
    readers: &BlobReaders,
    engine: IoEngine,
    depth: usize,
    ps: &[BlobPointer],
) -> (Vec<Result<Vec<u8>>>, BatchRead) {
    let reads = plan(readers, ps);
    let results: Vec<RefCell<Option<Result<Vec<u8>>>>> =
        ps.iter().map(|_| RefCell::new(None)).collect();
    let concurrent = engine == IoEngine::IoUring && reads.len() > 1;
    let most = Cell::new(0usize);
    let task = |t: usize| {
        let r = &reads[t];
        if r.alone || r.members.len() == 1 {
            let i = r.members[0];
            *results[i].borrow_mut() = Some(readers.value_of(&ps[i]));
        } else {
            let members: Vec<BlobPointer> = r.members.iter().map(|&i| ps[i]).collect();
            let got = match readers.reader(r.file) {
                Ok(reader) => reader.get_span(&members, r.start, (r.end - r.start) as usize),
                Err(e) => members.iter().map(|_| Err(e.duplicate())).collect(),
            };
            for (&i, v) in r.members.iter().zip(got) {
                *results[i].borrow_mut() = Some(v);
            }
        }
        // This read is collected; the batch's others that the reactor
        // still holds were at the disk with it.
        let others = if concurrent {
            crate::io::uring::with_reactor(|x| x.in_flight()).unwrap_or(0)
        } else {
            0
        };
        most.set(most.get().max(others + 1).min(reads.len()));
    };
    fiber::run_tasks_on(engine, reads.len(), depth.max(1), &task);
    let done = BatchRead {
        reads: reads.len(),
        bytes: reads.iter().map(|r| r.end - r.start).sum(),
        in_flight: most.get(),
    };
    readers
        .batches
        .record(ps.len(), done.reads, done.bytes, done.in_flight);
    let out = results
        .into_iter()
        .zip(ps)
        .map(|(r, p)| {
            // Every read ran (`run_tasks_on` returns when all tasks did,
            // and resumes a task's panic instead).
            r.into_inner().unwrap_or_else(|| readers.value_of(p))
        })
        .collect();
    (out, done)
}

#[cfg(test)]
mod tests;
