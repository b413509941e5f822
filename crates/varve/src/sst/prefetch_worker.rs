//! [`Worker`]: the helper thread that reads read-ahead chunks in the
//! background for one [`Readahead`](super::Readahead) state.
//!
//! Jobs (a file, an offset and a buffer moved to the thread) arrive on a
//! channel; finished jobs go back on another, in the order they complete.
//! The thread takes every job queued when it wakes up and, when there are
//! several and io_uring is usable, reads them concurrently on fibers of its
//! own thread (`fiber::run_tasks`, the machinery of `multi_get`), so the
//! pieces of a predicted run are in the disk's queue together instead of
//! one after another; otherwise it reads them in order. Jobs whose id is
//! below the shared "cancel below" mark when they would start are skipped
//! (answered with 0 bytes).
//!
//! Thread-safety: nothing is shared with the consumer but the channels
//! and one atomic; buffers move with their job (no `unsafe`). The thread
//! ends when the owner drops its sender (after finishing the jobs it
//! holds). Invariant: every job sent gets exactly one `Done` back, unless
//! the consumer has gone.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, mpsc};

use crate::Result;
use crate::io::{AlignedBuf, RandomAccessFile};

/// Most jobs read concurrently in one batch.
pub const BATCH_MAX: usize = 16;

/// One read for the worker thread; the buffer travels with it (no sharing).
pub struct Job {
    pub id: u64,
    pub file: Arc<dyn RandomAccessFile>,
    pub start: u64,
    pub buf: AlignedBuf,
}

/// A finished [`Job`].
#[derive(Debug)]
pub struct Done {
    pub id: u64,
    pub buf: AlignedBuf,
    pub got: Result<usize>,
}

/// A thread that reads chunks ahead of the consumer (see the module docs).
#[derive(Debug)]
pub struct Worker {
    pub jobs: mpsc::Sender<Job>,
    pub done: mpsc::Receiver<Done>,
    /// Jobs with a smaller id were abandoned: the worker skips them if it
    /// has not started them yet (and replies with 0 bytes).
    pub cancel_below: Arc<AtomicU64>,
}

fn run(mut job: Job, cancel: &AtomicU64) -> Done {
    let got = if job.id < cancel.load(Ordering::Acquire) {
        Ok(0)
    } else {
        job.file.read_at(job.buf.as_mut_slice(), job.start)
    };
    Done {
        id: job.id,
        buf: job.buf,
        got,
    }
}

impl Worker {
    /// Starts the thread; `None` if the OS refuses one.
    pub fn spawn() -> Option<Worker> {
        let (jobs, job_rx) = mpsc::channel::<Job>();
        let (done_tx, done) = mpsc::channel::<Done>();
        let cancel_below = Arc::new(AtomicU64::new(0));
        let cancel = Arc::clone(&cancel_below);
        std::thread::Builder::new()
            .name("varve-readahead".into())
            .spawn(move || {
                while let Ok(first) = job_rx.recv() {
                    let mut batch = vec![first];
                    while batch.len() < BATCH_MAX
                        && let Ok(job) = job_rx.try_recv()
                    {
                        batch.push(job);
                    }
                    if batch.len() == 1 {
                        for job in batch {
                            if done_tx.send(run(job, &cancel)).is_err() {
                                return;
                            }
                        }
                        continue;
                    }
                    let n = batch.len();
                    let cells: Vec<RefCell<Option<Job>>> =
                        batch.into_iter().map(|j| RefCell::new(Some(j))).collect();
                    let task = |i: usize| {
                        // Task `i` alone takes job `i`: the borrow never fails.
                        let job = cells
                            .get(i)
                            .and_then(|c| c.try_borrow_mut().ok())
                            .and_then(|mut c| c.take());
                        if let Some(job) = job {
                            // A gone consumer is noticed at the next recv.
                            let _ = done_tx.send(run(job, &cancel));
                        }
                    };
                    crate::fiber::run_tasks(n, n, &task);
                }
            })
            .ok()?;
        Some(Worker {
            jobs,
            done,
            cancel_below,
        })
    }
}
