//! The WAL written through io_uring (`Options::wal_io_uring`): one thread
//! owns the ring; `write_at` and `sync_data` become requests to it.
//!
//! The ring thread takes every request waiting, turns them into one
//! submission in arrival order — a write is an `IORING_OP_WRITE` of an owned
//! copy of the bytes, a sync an `IORING_OP_FSYNC` with `DATASYNC` — and links
//! each write to the entry after it with `IO_LINK`, so writes and the
//! fdatasync behind them go to the kernel as one chain (the
//! `IOSQE_IO_LINK` write + fsync pattern of the io_uring-in-RocksDB
//! experiments).
//! It then reaps exactly as many completions as it submitted (every CQE is
//! consumed) and only then answers the callers and frees the buffers: a
//! buffer lives until its completion is reaped. A short write (part of the
//! bytes taken, as on a nearly full disk) is resubmitted for the rest, so a
//! full disk is reported with its real errno (ENOSPC, naming the file), and
//! an entry cancelled because an earlier link failed (`ECANCELED`) is
//! resubmitted on its own; a write is acknowledged only when every byte was
//! written, and a failed write is never acknowledged (the WAL poisons the
//! database).
//!
//! Thread-safety: `UringLog` is `Send + Sync`; callers block on their own
//! reply channel. Invariants: the ring is touched only by its thread; a
//! submitted buffer is owned by the batch until its CQE is reaped; requests
//! are submitted in the order they arrived, so writes the slot sink issues in
//! log order reach the kernel in log order.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::JoinHandle;

use io_uring::{IoUring, opcode, squeue, types};
use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::io::LogFile;

/// Submission queue entries of the ring (and most requests per batch).
const RING_ENTRIES: u32 = 64;

/// One request to the ring thread.
enum Request {
    Write {
        offset: u64,
        data: Vec<u8>,
        reply: Sender<Result<()>>,
    },
    Sync {
        reply: Sender<Result<()>>,
    },
}

/// A log file whose writes and fdatasyncs go through a ring owned by one
/// thread (see the module docs).
#[cfg_attr(not(feature = "testing"), allow(unreachable_pub))]
pub struct UringLog {
    requests: Mutex<Option<Sender<Request>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    path: PathBuf,
}

impl std::fmt::Debug for UringLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UringLog")
            .field("path", &self.path)
            .finish()
    }
}

impl UringLog {
    /// Writes `file` (at `path`) through a new ring and its thread. Fails if
    /// io_uring cannot be set up here (the caller falls back).
    #[cfg_attr(not(feature = "testing"), allow(unreachable_pub))]
    pub fn new(file: File, path: &Path) -> Result<UringLog> {
        let ring = IoUring::new(RING_ENTRIES).map_err(|e| Error::io(path, e))?;
        let (tx, rx) = channel();
        let file = Arc::new(file);
        let thread_path = path.to_path_buf();
        let thread = std::thread::Builder::new()
            .name("varve-wal-uring".into())
            .spawn(move || ring_thread(ring, file, thread_path, rx))
            .map_err(|e| Error::io(path, e))?;
        Ok(UringLog {
            requests: Mutex::new(Some(tx)),
            thread: Mutex::new(Some(thread)),
            path: path.to_path_buf(),
        })
    }

    fn call(&self, make: impl FnOnce(Sender<Result<()>>) -> Request) -> Result<()> {
        let (reply, answer) = channel();
        let sent = match self.requests.lock().as_ref() {
            Some(tx) => tx.send(make(reply)).is_ok(),
            None => false,
        };
        let gone = || {
            Error::io(
                &self.path,
                std::io::Error::other("the WAL's io_uring thread has stopped"),
            )
        };
        if !sent {
            return Err(gone());
        }
        answer.recv().map_err(|_| gone())?
    }
}

impl LogFile for UringLog {
    fn write_at(&self, offset: u64, data: &[u8]) -> Result<()> {
        if u32::try_from(data.len()).is_err() {
            return Err(Error::InvalidArgument(format!(
                "{}: WAL write of {} bytes is too large for one io_uring write",
                self.path.display(),
                data.len()
            )));
        }
        self.call(|reply| Request::Write {
            offset,
            data: data.to_vec(),
            reply,
        })
    }

    fn sync_data(&self) -> Result<()> {
        self.call(|reply| Request::Sync { reply })
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for UringLog {
    fn drop(&mut self) {
        // Closing the channel ends the thread after its current batch.
        self.requests.lock().take();
        if let Some(t) = self.thread.lock().take() {
            let _ = t.join();
        }
    }
}

/// The ring thread: batches requests, submits, reaps every completion, then
/// answers. Ends when every sender is gone.
fn ring_thread(mut ring: IoUring, file: Arc<File>, path: PathBuf, rx: Receiver<Request>) {
    let fd = types::Fd(file.as_raw_fd());
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < RING_ENTRIES as usize {
            match rx.try_recv() {
                Ok(r) => batch.push(r),
                Err(_) => break,
            }
        }
        let results = run_batch(&mut ring, fd, &path, &batch);
        // Buffers are freed here, after every completion was reaped.
        for (req, result) in batch.into_iter().zip(results) {
            let reply = match req {
                Request::Write { reply, .. } | Request::Sync { reply } => reply,
            };
            let _ = reply.send(result);
        }
    }
}

/// Rounds in a row in which nothing moved (no byte written, no request
/// answered) after which the open requests fail instead of looping.
const MAX_IDLE_ROUNDS: u32 = 3;

/// Runs `batch` to the end and returns one result per request.
///
/// A write completes only when all its bytes are written: a short write
/// (the file system took part of it, as on a nearly full disk) is
/// resubmitted for the rest in the next round, and that attempt reports the
/// real errno (ENOSPC) if there is no room at all. An entry cancelled
/// because an earlier link of its chain was short or failed (`ECANCELED`)
/// is resubmitted too, so a sync is never failed for another request's
/// error: it runs after the writes before it settled and syncs what they
/// wrote.
fn run_batch(ring: &mut IoUring, fd: types::Fd, path: &Path, batch: &[Request]) -> Vec<Result<()>> {
    let err = |e: std::io::Error| Error::io(path, e);
    let mut results: Vec<Option<Result<()>>> = (0..batch.len()).map(|_| None).collect();
    let mut written = vec![0usize; batch.len()];
    let mut idle = 0;
    loop {
        let open: Vec<usize> = (0..batch.len()).filter(|&i| results[i].is_none()).collect();
        if open.is_empty() {
            break;
        }
        if idle >= MAX_IDLE_ROUNDS {
            for i in open {
                results[i] = Some(Err(err(std::io::Error::new(
                    std::io::ErrorKind::WriteZero,
                    "io_uring made no progress on a WAL request (zero-byte writes)",
                ))));
            }
            break;
        }
        let progressed = run_round(ring, fd, path, batch, &open, &mut written, &mut results);
        idle = if progressed { 0 } else { idle + 1 };
    }
    results
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err(err(std::io::Error::other("no io_uring completion")))))
        .collect()
}

/// Submits the `open` requests of `batch` (in order; each write linked to
/// the entry after it, so writes reach the file in order and a sync after
/// writes runs after them) and reaps every completion. Records finished
/// requests in `results` and bytes written in `written`. Returns whether
/// anything moved.
fn run_round(
    ring: &mut IoUring,
    fd: types::Fd,
    path: &Path,
    batch: &[Request],
    open: &[usize],
    written: &mut [usize],
    results: &mut [Option<Result<()>>],
) -> bool {
    let err = |e: std::io::Error| Error::io(path, e);
    let mut progressed = false;
    let mut submitted = 0;
    {
        let mut sq = ring.submission();
        for (k, &i) in open.iter().enumerate() {
            let entry = match &batch[i] {
                Request::Write { offset, data, .. } => {
                    let rest = &data[written[i]..];
                    debug_assert!(!rest.is_empty(), "a finished write is not open");
                    // `write_at` checked the length fits in u32.
                    let len = u32::try_from(rest.len()).unwrap_or(u32::MAX);
                    let e = opcode::Write::new(fd, rest.as_ptr(), len)
                        .offset(*offset + written[i] as u64)
                        .build();
                    if k + 1 < open.len() {
                        e.flags(squeue::Flags::IO_LINK)
                    } else {
                        e
                    }
                }
                Request::Sync { .. } => opcode::Fsync::new(fd)
                    .flags(types::FsyncFlags::DATASYNC)
                    .build(),
            }
            .user_data(i as u64);
            // SAFETY: the entry points into `data`, a buffer owned by
            // `batch`, which the caller keeps (and does not move or drop)
            // until every round has reaped all its completions (this
            // function returns only after reaping this round's); the fd is
            // kept open by the thread's `Arc<File>`. The queue has room: a
            // batch is at most RING_ENTRIES requests and the queue is empty
            // at the start of every round.
            if unsafe { sq.push(&entry) }.is_err() {
                results[i] = Some(Err(err(std::io::Error::other(
                    "io_uring submission queue full",
                ))));
                progressed = true;
            } else {
                submitted += 1;
            }
        }
    }
    let mut reaped = 0;
    while reaped < submitted {
        match ring.submit_and_wait(submitted - reaped) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                // The kernel may still own buffers: never return (and free
                // them) with completions outstanding.
                eprintln!(
                    "varve: io_uring_enter failed with WAL writes in flight on {}: {e}",
                    path.display()
                );
                std::process::abort();
            }
        }
        for cqe in ring.completion() {
            reaped += 1;
            let Some(i) = usize::try_from(cqe.user_data())
                .ok()
                .filter(|&i| i < batch.len())
            else {
                continue;
            };
            let res = cqe.result();
            if res == -libc::ECANCELED {
                // An earlier link was short or failed: submitted again.
                continue;
            }
            match &batch[i] {
                Request::Write { data, .. } => {
                    if res < 0 {
                        results[i] = Some(Err(err(std::io::Error::from_raw_os_error(-res))));
                        progressed = true;
                    } else if res > 0 {
                        // A short write leaves the request open: the next
                        // round writes the rest (or learns the errno).
                        written[i] += res as usize;
                        debug_assert!(written[i] <= data.len(), "wrote past the buffer");
                        if written[i] >= data.len() {
                            results[i] = Some(Ok(()));
                        }
                        progressed = true;
                    }
                }
                Request::Sync { .. } => {
                    results[i] = Some(if res < 0 {
                        Err(err(std::io::Error::from_raw_os_error(-res)))
                    } else {
                        Ok(())
                    });
                    progressed = true;
                }
            }
        }
    }
    progressed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log_at(dir: &Path, name: &str) -> Option<UringLog> {
        let path = dir.join(name);
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .expect("create");
        match UringLog::new(file, &path) {
            Ok(l) => Some(l),
            Err(e) => {
                crate::io::uring::skip_or_fail("the io_uring WAL test", &e.to_string());
                None
            }
        }
    }

    #[test]
    fn writes_and_syncs_from_two_threads_land_in_order() {
        let dir = tempfile::tempdir().expect("tmp");
        let Some(log) = log_at(dir.path(), "000001.log") else {
            return;
        };
        let log = Arc::new(log);
        let syncer = {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                for _ in 0..50 {
                    log.sync_data().expect("sync");
                }
            })
        };
        let mut expect = Vec::new();
        for i in 0..3000u32 {
            let rec = i.to_le_bytes().repeat(1 + (i as usize % 7));
            log.write_at(expect.len() as u64, &rec).expect("write");
            expect.extend_from_slice(&rec);
        }
        syncer.join().expect("syncer");
        log.sync_data().expect("final sync");
        drop(log);
        let got = std::fs::read(dir.path().join("000001.log")).expect("read");
        assert_eq!(got, expect);
    }

    #[test]
    fn a_failed_write_is_an_error_never_an_ack() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("000002.log");
        std::fs::write(&path, b"").expect("create");
        // Opened read-only: every write fails (EBADF) and must say so.
        let file = std::fs::File::open(&path).expect("open");
        let log = match UringLog::new(file, &path) {
            Ok(l) => l,
            Err(e) => {
                crate::io::uring::skip_or_fail("the io_uring WAL failure test", &e.to_string());
                return;
            }
        };
        let err = log.write_at(0, b"record").expect_err("write must fail");
        assert!(err.to_string().contains("000002.log"), "{err}");
        // A sync linked behind the failing write is not acknowledged either.
        let (a, b) = std::thread::scope(|s| {
            let w = s.spawn(|| log.write_at(0, b"again"));
            let y = s.spawn(|| log.sync_data());
            (w.join().expect("w"), y.join().expect("y"))
        });
        assert!(a.is_err());
        // The sync alone may succeed (nothing to sync) or be cancelled by the
        // link; either way the failed write was never reported as done.
        let _ = b;
        drop(log);
        assert_eq!(std::fs::read(&path).expect("read"), b"");
    }

    #[test]
    fn dropping_the_log_stops_its_thread() {
        let dir = tempfile::tempdir().expect("tmp");
        let Some(log) = log_at(dir.path(), "000003.log") else {
            return;
        };
        log.write_at(0, b"x").expect("write");
        drop(log); // joins the ring thread; a hang here fails the test run
        assert_eq!(
            std::fs::read(dir.path().join("000003.log")).expect("read"),
            b"x"
        );
    }
}
