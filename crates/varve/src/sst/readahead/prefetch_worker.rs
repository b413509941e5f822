//! [`ReaderPool`]: threads that read read-ahead chunks in the background,
//! and [`Worker`], one read-ahead state's handle on a pool.
//!
//! Jobs (a file, an offset and a buffer moved to a thread) go on the
//! pool's one queue, each with the sender of its state's answer channel;
//! finished jobs come back on that channel in the order they complete (the
//! consumer puts them back in job order). A pool has a fixed number of
//! threads (by default four per core, 8 to 64), started on its first job,
//! so the number of threads stays bounded however many iterators are open.
//! A database owns one (or shares one it was given); every worker holds
//! the pool, so its threads stop (they are joined) when the last database
//! and iterator using it are gone. One thread
//! at a time waits on the queue and takes every job queued when it wakes
//! up and, when there are several and io_uring is usable, reads them
//! concurrently on fibers of its own thread (`fiber::run_tasks`, the
//! machinery of `multi_get`); meanwhile the next job goes to another
//! thread, so a steady scan has two chunks at the disk. Jobs whose id is
//! below their state's "cancel below" mark when they would start are
//! skipped (answered with 0 bytes). A job that carries its table's block
//! bounds has the checksums of the blocks it holds whole verified here
//! (`chunk_check`), on another core, while the consumer decodes the chunk
//! before it; a piece of a short scan (`Job::early`) is answered as soon as
//! it is read and verified block by block while the consumer already
//! decodes its first blocks (a shared watermark says how far).
//!
//! Thread-safety: nothing is shared with a consumer but the channels, the
//! answered chunk (read-only from then on: an `Arc` both hold while the
//! thread verifies it), its verification watermark and
//! its state's atomic (the threads share the queue's lock); buffers move
//! with their job (no `unsafe`). Invariant: every job sent gets exactly
//! one `Done` back, unless the consumer has gone (its answer is then
//! dropped, and the thread goes on).

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, mpsc};
use std::thread::JoinHandle;

use super::chunk_check::{Progress, Verified};
use crate::error::Result;
use crate::io::{AlignedBuf, IoEngine, RandomAccessFile};

/// Most jobs read concurrently in one batch.
pub(crate) const BATCH_MAX: usize = 16;

/// One read for the worker thread; the buffer travels with it (no sharing).
pub(crate) struct Job {
    pub id: u64,
    pub file: Arc<dyn RandomAccessFile>,
    pub start: u64,
    pub buf: AlignedBuf,
    /// Where the file's data blocks start (and the last ends): when given,
    /// the thread verifies the blocks the chunk holds whole
    /// ([`Progress::verify`]), off the consumer's thread.
    pub bounds: Option<Arc<[u64]>>,
    /// Answer as soon as the chunk is read and verify it afterwards, while
    /// the consumer already serves its first blocks (a piece of a short
    /// scan, whose consumer is waiting for it). Else verify first: a long
    /// scan's consumer is busy with the chunk before, and would only catch
    /// up with the check and wait on it.
    pub early: bool,
    /// The memory budget's reservation of the state that sent the job:
    /// held until the read is done, so the state's buffers stay counted
    /// even if the state is dropped first.
    pub _memory: Option<Arc<crate::util::memory::Reservation>>,
}

/// A finished [`Job`].
#[derive(Debug)]
pub(crate) struct Done {
    pub id: u64,
    /// The chunk; its reader holds a second reference while it verifies
    /// the chunk's blocks (the bytes never change once read).
    pub buf: Arc<AlignedBuf>,
    pub got: Result<usize>,
    /// How far the reader has verified the chunk's blocks (none without
    /// `bounds`); it keeps rising after the chunk arrived.
    pub verified: Verified,
}

/// One read-ahead state's handle on the reader pool (see the module docs).
#[derive(Debug)]
pub(crate) struct Worker {
    queue: mpsc::Sender<Envelope>,
    /// Keeps the pool's threads running while this handle exists.
    _pool: Arc<ReaderPool>,
    /// Cloned into every job sent, so answers come back on `done`.
    reply: mpsc::Sender<Done>,
    pub done: mpsc::Receiver<Done>,
    /// Jobs with a smaller id were abandoned: the worker skips them if it
    /// has not started them yet (and replies with 0 bytes).
    pub cancel_below: Arc<AtomicU64>,
}

/// Reads `job` and, if it carries block bounds, verifies the chunk's
/// blocks, then answers it; an `early` job is answered first and verified
/// while the consumer already serves it (the check stops if the consumer
/// lets go of the chunk).
fn run(mut job: Job, cancel: &AtomicU64, reply: &mpsc::Sender<Done>) {
    let got = if job.id < cancel.load(Ordering::Acquire) {
        Ok(0)
    } else {
        job.file.read_at(job.buf.as_mut_slice(), job.start)
    };
    let progress = match (&job.bounds, &got) {
        (Some(bounds), Ok(n)) if *n > 0 => {
            Some((Arc::new(Progress::new(Arc::clone(bounds), job.start)), *n))
        }
        _ => None,
    };
    let buf = Arc::new(job.buf);
    let check = |go_on: &dyn Fn() -> bool| {
        if let Some((progress, n)) = &progress {
            let chunk = buf.as_slice().get(..*n).unwrap_or(&[]);
            progress.verify(chunk, job.start, go_on);
        }
    };
    if !job.early {
        check(&|| true);
    }
    let answer = Done {
        id: job.id,
        buf: Arc::clone(&buf),
        got,
        verified: progress
            .as_ref()
            .map_or_else(Verified::none, |(p, _)| Verified::by(Arc::clone(p))),
    };
    // A consumer that has gone gets no answer, and nothing is verified.
    if reply.send(answer).is_err() {
        return;
    }
    if job.early {
        // Go on while the consumer still holds the chunk.
        check(&|| Arc::strong_count(&buf) > 1);
    }
}

/// What the pool's queue carries: a read job, with where its answer goes
/// and the cancel mark of the state that sent it, or a task of its own
/// (a shared scan chunk read ahead, [`ReaderPool::spawn`]).
enum Envelope {
    Read {
        job: Job,
        reply: mpsc::Sender<Done>,
        cancel: Arc<AtomicU64>,
    },
    Task(Box<dyn FnOnce() + Send>),
}

impl Envelope {
    /// Reads the job and answers it (a consumer that has gone is ignored),
    /// or runs the task.
    fn answer(self) {
        match self {
            Envelope::Read { job, reply, cancel } => run(job, &cancel, &reply),
            Envelope::Task(task) => task(),
        }
    }
}

/// Reader threads of a default pool: four per core, at least 8 and at
/// most 64. A state has at most 16 chunks queued (the pieces of a learned
/// run) and usually two, so a few scans at once keep their chunks at the
/// disk together, while the thread count stays bounded however many
/// iterators are open.
pub(crate) fn default_reader_threads() -> usize {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    (4 * cores).clamp(8, 64)
}

/// Threads that read scans' read-ahead chunks in the background
/// (`Options::reader_pool`). Threads start
/// on the first job and stop when the pool is dropped: when the last
/// database and iterator holding it are gone.
pub struct ReaderPool {
    threads: usize,
    engine: IoEngine,
    started: OnceLock<Option<Started>>,
}

struct Started {
    queue: mpsc::Sender<Envelope>,
    handles: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for ReaderPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReaderPool")
            .field("threads", &self.threads)
            .field("engine", &self.engine)
            .field("started", &self.started.get().is_some())
            .finish()
    }
}

impl ReaderPool {
    /// A pool of `threads` reader threads (0: four per core, 8 to 64),
    /// started on its first job. Its batches use io_uring where the
    /// process has it.
    pub fn new(threads: usize) -> Arc<ReaderPool> {
        ReaderPool::with_engine(threads, IoEngine::IoUring)
    }

    /// [`ReaderPool::new`] whose batches read with `engine`.
    pub(crate) fn with_engine(threads: usize, engine: IoEngine) -> Arc<ReaderPool> {
        let threads = if threads == 0 {
            default_reader_threads()
        } else {
            threads.min(1024)
        };
        Arc::new(ReaderPool {
            threads,
            engine,
            started: OnceLock::new(),
        })
    }

    /// The number of reader threads.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Runs `task` on one of the pool's threads (with io_uring, a task
    /// batched with others runs on a fiber, so its reads go through the
    /// ring); false if the pool has no thread (the task is dropped unrun).
    pub(crate) fn spawn(&self, task: Box<dyn FnOnce() + Send>) -> bool {
        self.queue()
            .is_some_and(|q| q.send(Envelope::Task(task)).is_ok())
    }

    /// The queue, starting the threads on first use; `None` if the OS
    /// refused every thread (read-ahead then stays on the consumer).
    fn queue(&self) -> Option<&mpsc::Sender<Envelope>> {
        self.started
            .get_or_init(|| {
                let (tx, rx) = mpsc::channel::<Envelope>();
                let rx = Arc::new(Mutex::new(rx));
                let engine = self.engine;
                let handles: Vec<JoinHandle<()>> = (0..self.threads)
                    .filter_map(|_| {
                        let rx = Arc::clone(&rx);
                        std::thread::Builder::new()
                            .name("varve-readahead".into())
                            .spawn(move || reader_loop(&rx, engine))
                            .ok()
                    })
                    .collect();
                (!handles.is_empty()).then_some(Started { queue: tx, handles })
            })
            .as_ref()
            .map(|s| &s.queue)
    }
}

impl Drop for ReaderPool {
    /// Closes the queue (no worker holds a sender any more: each holds the
    /// pool) and joins the threads, which finish the batch they hold.
    fn drop(&mut self) {
        if let Some(Some(started)) = self.started.take() {
            drop(started.queue);
            for h in started.handles {
                let _ = h.join();
            }
        }
    }
}

/// One reader thread: takes the queued jobs (up to [`BATCH_MAX`], of any
/// states) and reads them, several at once on fibers when io_uring is
/// usable. Ends when the queue's last sender is gone (the pool dropped).
fn reader_loop(queue: &Mutex<mpsc::Receiver<Envelope>>, engine: IoEngine) {
    loop {
        let batch = {
            let Ok(rx) = queue.lock() else {
                return;
            };
            let Ok(first) = rx.recv() else {
                return;
            };
            let mut batch = vec![first];
            while batch.len() < BATCH_MAX
                && let Ok(more) = rx.try_recv()
            {
                batch.push(more);
            }
            batch
        };
        if batch.len() == 1 {
            batch.into_iter().for_each(Envelope::answer);
            continue;
        }
        let n = batch.len();
        let cells: Vec<RefCell<Option<Envelope>>> =
            batch.into_iter().map(|e| RefCell::new(Some(e))).collect();
        let task = |i: usize| {
            // Task `i` alone takes envelope `i`: the borrow never fails.
            let envelope = cells
                .get(i)
                .and_then(|c| c.try_borrow_mut().ok())
                .and_then(|mut c| c.take());
            if let Some(envelope) = envelope {
                envelope.answer();
            }
        };
        crate::io::fiber::run_tasks_on(engine, n, n, &task);
    }
}

impl Worker {
    /// A handle on `pool` for one read-ahead state; `None` if the pool has
    /// no thread. Several threads take the queue
    /// in turn, so while one waits for a chunk the state's next chunk
    /// already goes to the disk on another: with one thread a steady scan,
    /// which queues one chunk whenever it finishes one, had a single 2 MiB
    /// read at the disk at a time (fio on the test machine: 1,362 MiB/s at
    /// depth 1, 1,618 at depth 2).
    pub(crate) fn new(pool: &Arc<ReaderPool>) -> Option<Worker> {
        let queue = pool.queue()?.clone();
        let (reply, done) = mpsc::channel::<Done>();
        Some(Worker {
            queue,
            _pool: Arc::clone(pool),
            reply,
            done,
            cancel_below: Arc::new(AtomicU64::new(0)),
        })
    }

    /// Queues `job`; its answer arrives on `done`. False if the pool is
    /// gone (its threads all ended).
    pub(crate) fn send(&self, job: Job) -> bool {
        let envelope = Envelope::Read {
            job,
            reply: self.reply.clone(),
            cancel: Arc::clone(&self.cancel_below),
        };
        self.queue.send(envelope).is_ok()
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
        let w = Worker::new(&ReaderPool::new(2)).expect("threads");
        let job = |id: u64, start: u64| Job {
            id,
            file: Arc::clone(&file),
            start,
            buf: AlignedBuf::new(4096),
            bounds: None,
            early: false,
            _memory: None,
        };
        assert!(w.send(job(0, 0)), "send 0");
        // Let a thread take job 0 alone and block in its read.
        std::thread::sleep(Duration::from_millis(50));
        assert!(w.send(job(1, 4096)), "send 1");
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
        let w = Worker::new(&ReaderPool::new(2)).expect("threads");
        w.cancel_below.store(5, Ordering::Release);
        for id in [3u64, 5] {
            assert!(w.send(Job {
                id,
                file: Arc::clone(&file),
                start: 0,
                buf: AlignedBuf::new(4096),
                bounds: None,
                early: false,
                _memory: None,
            }));
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

    /// Many states (iterators) share one pool: each gets its own answers,
    /// from at most the pool's threads, which stop when the pool is gone.
    #[test]
    fn states_share_a_bounded_pool() {
        let data: Vec<u8> = (0..64 * 4096u32).map(|i| (i / 4096) as u8).collect();
        let file: Arc<dyn RandomAccessFile> = Arc::new(SlowAt {
            data,
            slow_at: u64::MAX,
            path: PathBuf::from("shared"),
        });
        let pool = ReaderPool::new(0);
        let workers: Vec<Worker> = (0..64).map(|_| Worker::new(&pool).expect("pool")).collect();
        for (i, w) in workers.iter().enumerate() {
            for id in 0..2u64 {
                assert!(w.send(Job {
                    id,
                    file: Arc::clone(&file),
                    start: i as u64 * 4096,
                    buf: AlignedBuf::new(4096),
                    bounds: None,
                    early: false,
                    _memory: None,
                }));
            }
        }
        for (i, w) in workers.iter().enumerate() {
            for _ in 0..2 {
                let d = w.done.recv().expect("answer");
                assert_eq!(d.got.as_ref().ok(), Some(&4096));
                assert!(d.buf.as_slice().iter().all(|&b| b == i as u8), "state {i}");
            }
            assert!(w.done.try_recv().is_err(), "state {i} got a third answer");
        }
        assert_eq!(pool.threads(), default_reader_threads());
        let started = pool
            .started
            .get()
            .and_then(Option::as_ref)
            .map_or(0, |s| s.handles.len());
        assert!((1..=pool.threads()).contains(&started), "{started} threads");
        // The workers hold the pool; once they and the pool are gone, the
        // threads are joined (the drop returns only after they ended).
        drop(workers);
        let weak = Arc::downgrade(&pool);
        drop(pool);
        assert!(weak.upgrade().is_none());
    }
}
