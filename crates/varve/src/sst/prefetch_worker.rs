//! [`Worker`]: the helper threads that read read-ahead chunks in the
//! background for one [`Readahead`](super::Readahead) state.
//!
//! Jobs (a file, an offset and a buffer moved to a thread) arrive on one
//! channel; finished jobs go back on another, in the order they complete
//! (the consumer puts them back in job order). [`PREFETCH_DEPTH`] threads
//! share the job queue: one at a time waits on it and takes every job
//! queued when it wakes up and, when there are several and io_uring is
//! usable, reads them concurrently on fibers of its own thread
//! (`fiber::run_tasks`, the machinery of `multi_get`), so the pieces of a
//! predicted run are in the disk's queue together; meanwhile the next job
//! goes to another thread, so a steady scan has two chunks at the disk.
//! Jobs whose id is below the shared "cancel below" mark when they would
//! start are skipped (answered with 0 bytes). A job that carries its
//! table's block bounds has the checksums of the blocks it holds whole
//! verified here, after the read (`chunk_check`): on a second core, while
//! the consumer decodes the chunk before it.
//!
//! Thread-safety: nothing is shared with the consumer but the channels
//! and one atomic (the threads share the job queue's lock); buffers move
//! with their job (no `unsafe`). The threads end when the owner drops its
//! sender (after finishing the jobs they hold). Invariant: every job sent
//! gets exactly one `Done` back, unless the consumer has gone.
//!
//! [`PREFETCH_DEPTH`]: super::readahead::PREFETCH_DEPTH

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};

use super::chunk_check::{Verified, check_chunk};
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
    /// Where the file's data blocks start (and the last ends): when given,
    /// the thread verifies the blocks the chunk holds whole
    /// ([`check_chunk`]), off the consumer's thread.
    pub bounds: Option<Arc<[u64]>>,
}

/// A finished [`Job`].
#[derive(Debug)]
pub struct Done {
    pub id: u64,
    pub buf: AlignedBuf,
    pub got: Result<usize>,
    /// The blocks of the chunk whose checksums matched (none without
    /// `bounds`).
    pub verified: Verified,
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
    let verified = match (&job.bounds, &got) {
        (Some(bounds), Ok(n)) => match job.buf.as_slice().get(..*n) {
            Some(bytes) => check_chunk(bounds, bytes, job.start),
            None => Verified::none(),
        },
        _ => Verified::none(),
    };
    Done {
        id: job.id,
        buf: job.buf,
        got,
        verified,
    }
}

/// One reader thread: takes the queued jobs (up to [`BATCH_MAX`]) and reads
/// them, several at once on fibers when io_uring is usable; ends when the
/// sender is gone or the consumer stops listening.
fn reader_loop(
    job_rx: &Mutex<mpsc::Receiver<Job>>,
    done_tx: &mpsc::Sender<Done>,
    cancel: &AtomicU64,
) {
    loop {
        let batch = {
            let Ok(rx) = job_rx.lock() else {
                return;
            };
            let Ok(first) = rx.recv() else {
                return;
            };
            let mut batch = vec![first];
            while batch.len() < BATCH_MAX
                && let Ok(job) = rx.try_recv()
            {
                batch.push(job);
            }
            batch
        };
        if batch.len() == 1 {
            for job in batch {
                if done_tx.send(run(job, cancel)).is_err() {
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
                let _ = done_tx.send(run(job, cancel));
            }
        };
        crate::fiber::run_tasks(n, n, &task);
    }
}

impl Worker {
    /// Starts `threads` (at least one) reader threads; `None` if the OS
    /// refuses every one. One at a time waits on the queue and takes the
    /// jobs queued when it wakes, so while one thread
    /// waits for a chunk the next job already goes to the disk on another:
    /// with one thread a steady scan, which queues one chunk whenever it
    /// finishes one, had a single 2 MiB read at the disk at a time (fio on
    /// the test machine: 1,362 MiB/s at depth 1, 1,618 at depth 2).
    pub fn spawn(threads: usize) -> Option<Worker> {
        let (jobs, job_rx) = mpsc::channel::<Job>();
        let job_rx = Arc::new(Mutex::new(job_rx));
        let (done_tx, done) = mpsc::channel::<Done>();
        let cancel_below = Arc::new(AtomicU64::new(0));
        let mut started = 0;
        for _ in 0..threads.max(1) {
            let cancel = Arc::clone(&cancel_below);
            let (job_rx, done_tx) = (Arc::clone(&job_rx), done_tx.clone());
            let spawned = std::thread::Builder::new()
                .name("varve-readahead".into())
                .spawn(move || reader_loop(&job_rx, &done_tx, &cancel));
            if spawned.is_ok() {
                started += 1;
            }
        }
        if started == 0 {
            return None;
        }
        Some(Worker {
            jobs,
            done,
            cancel_below,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};
    use std::time::Duration;

    use super::*;

    /// A file of `data` whose reads at `slow_at` take 200 ms.
    #[derive(Debug)]
    struct SlowAt {
        data: Vec<u8>,
        slow_at: u64,
        path: PathBuf,
    }

    impl RandomAccessFile for SlowAt {
        fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<usize> {
            if offset == self.slow_at {
                std::thread::sleep(Duration::from_millis(200));
            }
            Ok(crate::sst::tests::read_from(&self.data, buf, offset))
        }

        fn path(&self) -> &Path {
            &self.path
        }
    }

    /// With two threads, a job queued while another thread is stuck in a
    /// slow read is read at once (it completes first), and both replies
    /// carry their own bytes.
    #[test]
    fn a_second_thread_reads_while_the_first_waits() {
        let data: Vec<u8> = (0..8192u32).map(|i| (i % 251) as u8).collect();
        let file: Arc<dyn RandomAccessFile> = Arc::new(SlowAt {
            data: data.clone(),
            slow_at: 0,
            path: PathBuf::from("slow"),
        });
        let w = Worker::spawn(2).expect("threads");
        let job = |id: u64, start: u64| Job {
            id,
            file: Arc::clone(&file),
            start,
            buf: AlignedBuf::new(4096),
            bounds: None,
        };
        w.jobs.send(job(0, 0)).expect("send 0");
        // Let a thread take job 0 alone and block in its read.
        std::thread::sleep(Duration::from_millis(50));
        w.jobs.send(job(1, 4096)).expect("send 1");
        let first = w.done.recv().expect("first reply");
        let second = w.done.recv().expect("second reply");
        assert_eq!((first.id, second.id), (1, 0), "job 1 waited for job 0");
        for d in [first, second] {
            let at = d.id as usize * 4096;
            assert_eq!(d.got.as_ref().ok(), Some(&4096));
            assert_eq!(d.buf.as_slice(), &data[at..at + 4096], "job {}", d.id);
        }
    }

    /// A job below the cancel mark is answered with 0 bytes, unread.
    #[test]
    fn cancelled_jobs_are_answered_empty() {
        let file: Arc<dyn RandomAccessFile> = Arc::new(SlowAt {
            data: vec![7; 4096],
            slow_at: u64::MAX,
            path: PathBuf::from("f"),
        });
        let w = Worker::spawn(2).expect("threads");
        w.cancel_below.store(5, Ordering::Release);
        for id in [3u64, 5] {
            w.jobs
                .send(Job {
                    id,
                    file: Arc::clone(&file),
                    start: 0,
                    buf: AlignedBuf::new(4096),
                    bounds: None,
                })
                .expect("send");
        }
        let mut got: Vec<(u64, usize)> = (0..2)
            .map(|_| {
                let d = w.done.recv().expect("reply");
                (d.id, d.got.expect("read"))
            })
            .collect();
        got.sort_unstable();
        assert_eq!(got, vec![(3, 0), (5, 4096)]);
    }
}
