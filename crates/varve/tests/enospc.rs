//! Full disks: every WAL mode reports ENOSPC as an IO error naming the
//! file, the database is poisoned (writes refused with a message that names
//! the full disk, reads go on), no acknowledged write is lost, no failed
//! write is visible after `Db::resume`, and `Db::resume` brings writes back
//! once space is freed — without a reopen, and with a reopen afterwards
//! finding everything. A write that failed is not visible to any read
//! made after its error came back, while poisoned as after `resume`.
//!
//! Two kinds of full disk:
//!
//! - A real one: the test re-executes its own binary as a child process
//!   (`enospc_full_disk_child`, which does nothing unless
//!   `VARVE_ENOSPC_CHILD` names a file system and a mode); the child enters
//!   a private mount namespace, mounts a 24 MiB tmpfs (or a 48 MiB ext4
//!   image through a loop device), fills it with a ballast file and writes
//!   from four threads (single puts and batches, half of them `sync`) until
//!   the disk is full, once per WAL mode: memory-mapped (`fallocate`),
//!   mapped over zero-filled space, io_uring, plain `pwrite`; then checks
//!   that `resume` fails while the disk is still full, frees the ballast,
//!   resumes, writes more, reopens. Mounting needs root (and, for ext4,
//!   `mkfs.ext4` and a loop device); where it is impossible the test
//!   fails, unless `VARVE_SKIP_MOUNT_TESTS=1` (then it says it skipped).
//! - The fault-injecting file system's byte quota (`limit_space_of`, with
//!   short writes): a full WAL, table writes of a flush or compaction, and
//!   manifest writes, each followed by `resume`; a resume refused for other
//!   failures; a reopen after a resume that cut a WAL but could not flush.

mod common;

use std::ffi::CString;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use varve::fs::PosixFs;
use varve::testing::FaultInjectingFs;
use varve::{Db, Error, Options, WriteBatch, WriteOptions};

const CHILD_ENV: &str = "VARVE_ENOSPC_CHILD";
const SKIP_ENV: &str = "VARVE_SKIP_MOUNT_TESTS";
const NO_MOUNT: &str = "ENOSPC-CHILD-CANNOT-MOUNT";
const CHILD_OK: &str = "ENOSPC-CHILD-OK";
/// The writers give up (and the test fails) if the disk never fills.
const WRITE_LIMIT: u64 = 256 << 20;

// ---------------------------------------------------------------------------
// The workload and its checks (shared by both kinds of full disk)

/// The value written for `key`: 100 B - 2 KiB, one key in 40 about 150 KiB
/// (longer than a slot takes, so it goes through the WAL's direct path).
fn value_of(key: &str) -> Vec<u8> {
    let base = common::value_for(key.as_bytes());
    let h = key
        .bytes()
        .fold(7u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
    let len = if h % 40 == 0 {
        150_000 + (h % 1000) as usize
    } else {
        100 + (h % 1900) as usize
    };
    let seed = if base.is_empty() { vec![h as u8] } else { base };
    seed.iter().copied().cycle().take(len).collect()
}

/// What the writers saw.
#[derive(Debug, Default)]
struct Outcome {
    /// Keys of acknowledged writes (each holds `value_of(key)`).
    acked: Vec<String>,
    /// Keys of writes that returned an error.
    failed: Vec<String>,
    /// The errors, as displayed.
    errors: Vec<String>,
    /// Some writer got the IO error itself (`Error::Io`, ENOSPC).
    io_enospc: Vec<String>,
}

impl Outcome {
    fn merge(mut self, other: Outcome) -> Outcome {
        self.acked.extend(other.acked);
        self.failed.extend(other.failed);
        self.errors.extend(other.errors);
        self.io_enospc.extend(other.io_enospc);
        self
    }
}

/// One write of `keys` (a put, or a batch of all of them).
fn write_keys(db: &Db, keys: &[String], opts: &WriteOptions) -> varve::Result<()> {
    if let [key] = keys {
        return db.put_opt(key, value_of(key), opts);
    }
    let mut b = WriteBatch::new();
    for k in keys {
        b.put(k, value_of(k));
    }
    db.write_opt(b, opts)
}

/// Four threads write (every fourth write a batch of three keys; threads 0
/// and 2 with `sync`) until each has seen two errors.
fn write_until_full(db: &Db, tag: &str) -> Outcome {
    let total = AtomicU64::new(0);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..4u32)
            .map(|t| {
                let total = &total;
                s.spawn(move || {
                    let mut o = Outcome::default();
                    let opts = WriteOptions {
                        sync: t % 2 == 0,
                        ..WriteOptions::default()
                    };
                    for i in 0u64.. {
                        if total.load(Ordering::Relaxed) > WRITE_LIMIT {
                            break;
                        }
                        let key = format!("{tag}-t{t}-{i:06}");
                        let keys = if i % 4 == 3 {
                            vec![key.clone(), format!("{key}-a"), format!("{key}-b")]
                        } else {
                            vec![key]
                        };
                        let bytes: usize = keys.iter().map(|k| value_of(k).len()).sum();
                        total.fetch_add(bytes as u64, Ordering::Relaxed);
                        match write_keys(db, &keys, &opts) {
                            Ok(()) => o.acked.extend(keys),
                            Err(e) => {
                                if e.is_no_space() {
                                    o.io_enospc.push(e.to_string());
                                }
                                o.errors.push(e.to_string());
                                o.failed.extend(keys);
                                if o.errors.len() == 2 {
                                    break;
                                }
                            }
                        }
                    }
                    o
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("writer thread"))
            .fold(Outcome::default(), Outcome::merge)
    })
}

/// Every acknowledged write is there with its value; no failed one is.
fn check(db: &Db, o: &Outcome, when: &str) {
    for k in &o.acked {
        let got = db.get(k).expect("get");
        assert!(
            got.as_deref() == Some(&value_of(k)[..]),
            "{when}: acknowledged {k} is {}",
            got.map_or("missing".to_string(), |v| format!("{} bytes", v.len()))
        );
    }
    for k in &o.failed {
        assert_eq!(
            db.get(k).expect("get"),
            None,
            "{when}: failed write {k} is visible"
        );
    }
}

/// A full scan (forward, then backward) has every acknowledged key with
/// its value and no failed one.
fn check_scans(db: &Db, o: &Outcome, when: &str) {
    for reverse in [false, true] {
        let mut seen = std::collections::HashMap::new();
        let entries: Vec<(Vec<u8>, Vec<u8>)> = if reverse {
            db.iter().rev().collect::<varve::Result<_>>()
        } else {
            db.iter().collect::<varve::Result<_>>()
        }
        .expect("scan");
        for (k, v) in entries {
            seen.insert(k, v);
        }
        for k in &o.acked {
            let got = seen.get(k.as_bytes());
            assert!(
                got.map(Vec::as_slice) == Some(&value_of(k)[..]),
                "{when} (reverse {reverse}): acknowledged {k} is {}",
                got.map_or("missing".to_string(), |v| format!("{} bytes", v.len()))
            );
        }
        for k in &o.failed {
            assert!(
                !seen.contains_key(k.as_bytes()),
                "{when}: failed write {k} is visible"
            );
        }
    }
}

/// Whether an error message says the disk is full.
fn names_full_disk(text: &str) -> bool {
    text.to_lowercase().contains("no space left on device")
}

/// The writes failed because the disk filled, and said so.
fn check_full_disk_errors(o: &Outcome, wal_failed: bool) {
    assert!(
        !o.errors.is_empty(),
        "the disk never filled ({} writes acknowledged)",
        o.acked.len()
    );
    for e in &o.errors {
        assert!(
            names_full_disk(e),
            "an error does not name the full disk: {e}"
        );
    }
    if wal_failed {
        // The file that filled the disk: the WAL, or the blob file the
        // large values go to.
        assert!(
            o.io_enospc
                .iter()
                .any(|e| e.contains(".log") || e.contains(".blob")),
            "no writer got the ENOSPC of the WAL or a blob file as an IO error naming the \
             file: {:?}",
            o.errors
        );
    }
}

/// The database refuses writes with a message that points at `resume`,
/// and reads go on.
fn check_poisoned(db: &Db, o: &Outcome) {
    let err = db.put(b"probe", b"x").expect_err("poisoned");
    assert!(matches!(err, Error::Poisoned(_)), "{err}");
    let text = err.to_string();
    assert!(names_full_disk(&text) && text.contains("resume"), "{text}");
    if let Some(k) = o.acked.first() {
        assert_eq!(db.get(k).expect("reads go on"), Some(value_of(k)));
    }
    assert!(common::count_keys(db, &Default::default()) >= o.acked.len() as u64);
}

/// After `resume`: everything as acknowledged, then more writes, close,
/// reopen with `opts`, everything again (and nothing else).
fn resume_write_reopen(db: Db, dir: &Path, opts: Options, mut o: Outcome) {
    db.resume().expect("resume after space was freed");
    check(&db, &o, "after resume");
    let more = write_more(&db, "after");
    o.acked.extend(more);
    db.close().expect("close");
    let db = Db::open(dir, opts).expect("reopen");
    check(&db, &o, "after reopen");
    assert_eq!(
        common::count_keys(&db, &Default::default()),
        o.acked.len() as u64,
        "after reopen: keys other than the acknowledged ones"
    );
    db.close().expect("close");
}

/// 300 writes (half `sync`) that must all succeed.
fn write_more(db: &Db, tag: &str) -> Vec<String> {
    let mut keys = Vec::new();
    for i in 0..300u32 {
        let k = format!("{tag}-{i:04}");
        let opts = WriteOptions {
            sync: i % 2 == 0,
            ..WriteOptions::default()
        };
        db.put_opt(&k, value_of(&k), &opts)
            .unwrap_or_else(|e| panic!("write {k} after resume: {e}"));
        keys.push(k);
    }
    keys
}

// ---------------------------------------------------------------------------
// A real full disk: tmpfs in a private mount namespace, in a child process

/// Moves this thread (and the threads it starts later) into a new mount
/// namespace whose mounts do not propagate back.
fn enter_private_mount_namespace() -> Result<(), String> {
    // SAFETY: unshare takes no pointers; it changes only this thread's
    // namespace membership.
    if unsafe { libc::unshare(libc::CLONE_NEWNS) } != 0 {
        return Err(format!(
            "unshare(CLONE_NEWNS): {}",
            std::io::Error::last_os_error()
        ));
    }
    let root = CString::new("/").map_err(|e| e.to_string())?;
    // SAFETY: `root` is a valid C string for the duration of the call; the
    // other pointers may be null for a propagation change.
    let rc = unsafe {
        libc::mount(
            std::ptr::null(),
            root.as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        return Err(format!(
            "mount(/, MS_REC|MS_PRIVATE): {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// Mounts a tmpfs of `size` (e.g. "24m") on `at`.
fn mount_tmpfs(at: &Path, size: &str) -> Result<(), String> {
    let c = |s: &str| CString::new(s).map_err(|e| e.to_string());
    let (source, fstype) = (c("tmpfs")?, c("tmpfs")?);
    let target = c(&at.to_string_lossy())?;
    let data = c(&format!("size={size}"))?;
    // SAFETY: every pointer is a valid C string that outlives the call.
    let rc = unsafe {
        libc::mount(
            source.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            0,
            data.as_ptr().cast(),
        )
    };
    if rc != 0 {
        return Err(format!(
            "mount -t tmpfs -o size={size} {}: {}",
            at.display(),
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// Detaches the tmpfs at `at` (so its mount point can be removed).
fn unmount(at: &Path) {
    if let Ok(target) = CString::new(at.to_string_lossy().as_bytes()) {
        // SAFETY: a valid C string that outlives the call.
        unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) };
    }
}

/// Fills the file system of `path` with a ballast file, then frees
/// `leave` bytes of it.
fn fill_leaving(path: &Path, leave: u64) {
    use std::io::Write;
    let mut f = std::fs::File::create(path).expect("ballast");
    let chunk = vec![0x5au8; 64 << 10];
    loop {
        match f.write(&chunk) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => break,
            Err(e) => panic!("ballast: {e}"),
        }
    }
    let len = f.metadata().expect("stat").len();
    f.set_len(len.saturating_sub(leave)).expect("free some");
}

fn full_disk_options(mode: &str) -> Options {
    Options {
        wal_writer: match mode {
            "mmap" => varve::WalWriter::Mapped,
            "zero_fill" => varve::WalWriter::MappedZeroFilled,
            "io_uring" => varve::WalWriter::IoUring,
            _ => varve::WalWriter::Plain,
        },
        // One memtable outgrows the free space: the WAL is what fills it.
        write_buffer_size: 8 << 20,
        ..Options::default()
    }
}

/// Makes an ext4 file system in a `size`-byte image file `image` and
/// mounts it on `at` through a loop device (`mkfs.ext4`, `mount -o loop`).
fn mount_ext4(image: &Path, at: &Path, size: u64) -> Result<(), String> {
    let f = std::fs::File::create(image).map_err(|e| format!("{}: {e}", image.display()))?;
    f.set_len(size)
        .map_err(|e| format!("{}: {e}", image.display()))?;
    drop(f);
    let run = |cmd: &mut Command| -> Result<(), String> {
        let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{cmd:?}: {}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    };
    run(Command::new("mkfs.ext4").args(["-q", "-F"]).arg(image))?;
    // A process started from this thread is in its mount namespace.
    run(Command::new("mount")
        .args(["-o", "loop"])
        .arg(image)
        .arg(at))
}

/// The child's scenario for one WAL mode, on the file system mounted at
/// `root`.
fn full_disk(root: &Path, mode: &str) {
    if mode == "io_uring" {
        // Without io_uring the mode falls back to plain pwrite; that must
        // not pass as a test of the io_uring WAL where it is required.
        let _ = varve::testing::require_uring("the full-disk test of the io_uring WAL");
    }
    let dir = root.join("db");
    let db = Db::open(&dir, full_disk_options(mode)).expect("open");
    let before = write_more(&db, "before");
    let ballast = root.join("ballast");
    fill_leaving(&ballast, 2_500_000);
    let mut o = write_until_full(&db, mode);
    println!(
        "{mode}: {} writes acknowledged, {} failed; first error: {}",
        o.acked.len(),
        o.failed.len(),
        o.errors.first().map_or("none", String::as_str)
    );
    check_full_disk_errors(&o, true);
    o.acked.extend(before);
    check_poisoned(&db, &o);
    // Still full: resume fails and the database stays poisoned.
    let err = db.resume().expect_err("the disk is still full");
    assert!(names_full_disk(&err.to_string()), "{err}");
    check_poisoned(&db, &o);
    std::fs::remove_file(&ballast).expect("free the ballast");
    resume_write_reopen(db, &dir, full_disk_options(mode), o);
}

/// io_uring on a nearly full tmpfs: the first completion of a write is
/// short; the rest is resubmitted and reports ENOSPC, naming the file.
fn uring_short_write(root: &Path) {
    let small = root.join("small");
    std::fs::create_dir(&small).expect("mkdir");
    mount_tmpfs(&small, "1m").expect("a second tmpfs");
    let result = std::panic::catch_unwind(|| {
        fill_leaving(&small.join("ballast"), 8192);
        let path = small.join("000001.log");
        let file = std::fs::File::create(&path).expect("create");
        let log = match varve::testing::UringLog::new(file, &path) {
            Ok(log) => log,
            Err(e) => {
                varve::testing::skip_or_fail("the io_uring short-write test", &e.to_string());
                return;
            }
        };
        let data: Vec<u8> = (0..23_842u32).map(|i| (i % 251) as u8).collect();
        let err = varve::fs::LogFile::write_at(&log, 0, &data).expect_err("no room");
        let text = err.to_string();
        assert!(err.is_no_space(), "not ENOSPC: {text}");
        assert!(text.contains("000001.log"), "the file is not named: {text}");
        assert!(
            text.contains("No space left on device"),
            "not the OS's message: {text}"
        );
        let landed = std::fs::metadata(&path).expect("stat").len();
        assert!(
            landed > 0 && landed < data.len() as u64,
            "the first attempt should have been short ({landed} bytes landed)"
        );
        std::fs::remove_file(small.join("ballast")).expect("free");
        varve::fs::LogFile::write_at(&log, landed, &data[landed as usize..])
            .expect("the rest fits now");
        varve::fs::LogFile::sync_data(&log).expect("sync");
        drop(log);
        assert_eq!(std::fs::read(&path).expect("read"), data);
    });
    unmount(&small);
    if let Err(p) = result {
        std::panic::resume_unwind(p);
    }
}

/// The child process: does nothing unless `VARVE_ENOSPC_CHILD` names a
/// file system and a mode, as `tmpfs:mmap` (so it passes, doing nothing,
/// in an ordinary test run).
#[test]
#[ignore = "child-process entry point: the full-disk tests run it in a private mount namespace"]
fn enospc_full_disk_child() {
    let Ok(what) = std::env::var(CHILD_ENV) else {
        return;
    };
    let (fs, mode) = what.split_once(':').unwrap_or(("tmpfs", what.as_str()));
    let mnt = tempfile::tempdir().expect("mount point");
    let images = tempfile::tempdir().expect("image directory");
    let mounted = enter_private_mount_namespace().and_then(|()| match fs {
        "ext4" => mount_ext4(&images.path().join("ext4.img"), mnt.path(), 48 << 20),
        _ => mount_tmpfs(mnt.path(), "24m"),
    });
    if let Err(why) = mounted {
        println!("{NO_MOUNT}: {why}");
        return;
    }
    let result = std::panic::catch_unwind(|| match mode {
        "uring_short_write" => uring_short_write(mnt.path()),
        mode => full_disk(mnt.path(), mode),
    });
    unmount(mnt.path());
    if let Err(p) = result {
        std::panic::resume_unwind(p);
    }
    println!("{CHILD_OK} {what}");
}

/// Runs the child for `mode` on a full `fs` ("tmpfs" or "ext4") and checks
/// what it said.
fn run_full_disk_child(fs: &str, mode: &str) {
    if std::env::var(CHILD_ENV).is_ok() {
        return; // this is a child; only `enospc_full_disk_child` runs here
    }
    let mode = format!("{fs}:{mode}");
    let mode = mode.as_str();
    let exe = std::env::current_exe().expect("test binary");
    let out = Command::new(exe)
        .args([
            "enospc_full_disk_child",
            "--exact",
            "--ignored",
            "--test-threads=1",
            "--nocapture",
        ])
        .env(CHILD_ENV, mode)
        .output()
        .expect("run the child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // libtest prints "test name ... " in front of the child's first line.
    if let Some(at) = stdout.find(NO_MOUNT) {
        let line = stdout[at..].lines().next().unwrap_or(NO_MOUNT);
        if std::env::var(SKIP_ENV).as_deref() == Ok("1") {
            eprintln!("SKIPPED the real full-disk test ({mode}), {SKIP_ENV}=1: {line}");
            return;
        }
        panic!(
            "the real full-disk test ({mode}) needs to mount a file system in a private mount \
             namespace (root, CAP_SYS_ADMIN; for ext4 also mkfs.ext4 and a loop device) and \
             could not: {line}\nSet {SKIP_ENV}=1 to skip it where that is impossible."
        );
    }
    assert!(
        out.status.success() && stdout.contains(&format!("{CHILD_OK} {mode}")),
        "child for {mode} failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    let (_, bare) = mode.split_once(':').unwrap_or(("", mode));
    for line in stdout
        .lines()
        .filter(|l| l.starts_with(bare) || l.starts_with("note"))
    {
        eprintln!("{line}");
    }
}

#[test]
fn full_tmpfs_with_mapped_wal() {
    run_full_disk_child("tmpfs", "mmap");
}

#[test]
fn full_tmpfs_with_zero_filled_mapped_wal() {
    run_full_disk_child("tmpfs", "zero_fill");
}

#[test]
fn full_tmpfs_with_io_uring_wal() {
    run_full_disk_child("tmpfs", "io_uring");
}

#[test]
fn full_tmpfs_with_plain_wal() {
    run_full_disk_child("tmpfs", "plain");
}

#[test]
fn io_uring_short_write_on_a_full_tmpfs_reports_enospc() {
    run_full_disk_child("tmpfs", "uring_short_write");
}

/// ext4 (a loop-mounted image): `fallocate` leaves unwritten extents that
/// the mapping's stores and fdatasync must convert, and delayed allocation
/// reserves space at `write` time; a full disk must still be a clean error
/// (never a SIGBUS) in every mode.
#[test]
fn full_ext4_with_mapped_wal() {
    run_full_disk_child("ext4", "mmap");
}

#[test]
fn full_ext4_with_zero_filled_mapped_wal() {
    run_full_disk_child("ext4", "zero_fill");
}

#[test]
fn full_ext4_with_io_uring_wal() {
    run_full_disk_child("ext4", "io_uring");
}

#[test]
fn full_ext4_with_plain_wal() {
    run_full_disk_child("ext4", "plain");
}

// ---------------------------------------------------------------------------
// The fault-injecting file system's quota

fn faulty(base: Options) -> (FaultInjectingFs, Options) {
    let fs = FaultInjectingFs::new(Arc::new(PosixFs));
    let opts = Options {
        fs: Arc::new(fs.clone()),
        ..base
    };
    (fs, opts)
}

/// Table files in `dir` that no level of `db` holds.
fn stray_tables(db: &Db, dir: &Path) -> Vec<String> {
    let live: std::collections::HashSet<u64> = db
        .debug()
        .live_tables()
        .iter()
        .flatten()
        .map(|&(n, _)| n)
        .collect();
    std::fs::read_dir(dir)
        .expect("ls")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| {
            n.strip_suffix(".sst")
                .and_then(|s| s.parse::<u64>().ok())
                .is_some_and(|n| !live.contains(&n))
        })
        .collect()
}

#[test]
fn full_wal_with_short_writes_then_resume() {
    let dir = common::fast_tempdir();
    let (fs, opts) = faulty(Options::default());
    let db = Db::open(dir.path(), opts.clone()).expect("open");
    let before = write_more(&db, "before");
    fs.short_writes(true);
    fs.limit_space_of(".log", 400_000);
    let mut o = write_until_full(&db, "w");
    check_full_disk_errors(&o, true);
    o.acked.extend(before);
    check_poisoned(&db, &o);
    check(&db, &o, "while poisoned");
    check_scans(&db, &o, "while poisoned");
    let err = db.resume().expect_err("still full");
    assert!(err.is_no_space(), "{err}");
    fs.heal();
    resume_write_reopen(db, dir.path(), opts, o);
}

/// Blob files fill the disk (the WAL has room): the puts of large values
/// fail before they have a sequence number, the lane gives its file up
/// with the values it holds, and resume writes them out and closes it.
#[test]
fn full_blob_files_then_resume() {
    full_blob_files_then_resume_with(Options {
        min_blob_size: Some(1000),
        ..Options::default()
    });
}

/// The same with shared scan chunks: the pool must not read a failed
/// lane's file (its last values may be only in its staging area) as if it
/// were sealed; the scans while poisoned see every acknowledged value.
#[test]
fn full_blob_files_with_shared_scan_chunks_then_resume() {
    full_blob_files_then_resume_with(Options {
        min_blob_size: Some(1000),
        shared_scan_bytes: 8 << 20,
        ..Options::default()
    });
}

fn full_blob_files_then_resume_with(opts: Options) {
    let dir = common::fast_tempdir();
    let (fs, opts) = faulty(opts);
    let db = Db::open(dir.path(), opts.clone()).expect("open");
    let before = write_more(&db, "before");
    fs.short_writes(true);
    fs.limit_space_of(".blob", 300_000);
    let mut o = write_until_full(&db, "w");
    check_full_disk_errors(&o, true);
    assert!(
        o.io_enospc.iter().any(|e| e.contains(".blob")),
        "the blob files filled the disk: {:?}",
        o.io_enospc
    );
    o.acked.extend(before);
    check_poisoned(&db, &o);
    check(&db, &o, "while poisoned");
    check_scans(&db, &o, "while poisoned");
    // Still full: the lane cannot open its next file, so resume fails.
    let err = db.resume().expect_err("still full");
    assert!(err.is_no_space(), "{err}");
    check_poisoned(&db, &o);
    fs.heal();
    resume_write_reopen(db, dir.path(), opts, o);
}

#[test]
fn full_disk_when_starting_the_next_wal_then_resume() {
    let dir = common::fast_tempdir();
    let (fs, opts) = faulty(Options::default());
    let db = Db::open(dir.path(), opts.clone()).expect("open");
    let keys = write_more(&db, "k");
    let logs_before = common::wal_files(dir.path());
    // The memtable switch of a flush writes the next WAL's header: no room.
    fs.limit_space_of(".log", 0);
    let err = db.flush().expect_err("no room for the next WAL");
    assert!(
        err.is_no_space() && err.to_string().contains(".log"),
        "{err}"
    );
    let poisoned = db.put(b"x", b"y").expect_err("poisoned");
    assert!(
        poisoned.to_string().contains("creating a WAL"),
        "{poisoned}"
    );
    assert_eq!(
        common::wal_files(dir.path()),
        logs_before,
        "the WAL that could not be started was left behind"
    );
    let o = Outcome {
        acked: keys,
        ..Outcome::default()
    };
    check_poisoned(&db, &o);
    fs.heal();
    resume_write_reopen(db, dir.path(), opts, o);
}

#[test]
fn full_wal_with_small_memtables_then_resume() {
    // Memtable switches and flushes all along: the disk fills in a WAL
    // append or while starting the next WAL, with immutable memtables
    // waiting for the flush.
    let dir = common::fast_tempdir();
    let (fs, opts) = faulty(Options {
        write_buffer_size: 256 << 10,
        ..Options::default()
    });
    let db = Db::open(dir.path(), opts.clone()).expect("open");
    fs.short_writes(true);
    fs.limit_space_of(".log", 3 << 20);
    let o = write_until_full(&db, "w");
    check_full_disk_errors(&o, false);
    check_poisoned(&db, &o);
    check(&db, &o, "while poisoned");
    check_scans(&db, &o, "while poisoned");
    fs.heal();
    resume_write_reopen(db, dir.path(), opts, o);
}

#[test]
fn resume_keeps_writes_made_without_the_wal() {
    let dir = common::fast_tempdir();
    // Plain WAL appends: each one meets the quota (a mapped log spends its
    // space when it grows; the full-disk tests on real file systems cover
    // that).
    let (fs, opts) = faulty(Options {
        wal_writer: varve::WalWriter::Plain,
        ..Options::default()
    });
    let db = Db::open(dir.path(), opts.clone()).expect("open");
    let no_wal = WriteOptions {
        disable_wal: true,
        ..WriteOptions::default()
    };
    for i in 0..50 {
        db.put_opt(format!("nowal-{i}"), b"v", &no_wal)
            .expect("put");
        db.put(format!("wal-{i}"), b"v").expect("put");
    }
    fs.limit_space_of(".log", 0);
    db.put(b"fails", b"v").expect_err("full");
    fs.heal();
    db.resume().expect("resume");
    for i in 0..50 {
        assert_eq!(
            db.get(format!("nowal-{i}")).expect("get"),
            Some(b"v".to_vec())
        );
        assert_eq!(
            db.get(format!("wal-{i}")).expect("get"),
            Some(b"v".to_vec())
        );
    }
    assert_eq!(db.get(b"fails").expect("get"), None);
    // resume flushed: the writes without a WAL are in a table now.
    drop(db);
    let db = Db::open(dir.path(), opts).expect("reopen");
    assert_eq!(db.get(b"nowal-7").expect("get"), Some(b"v".to_vec()));
}

#[test]
fn full_disk_under_a_flush_then_resume() {
    let dir = common::fast_tempdir();
    let (fs, opts) = faulty(Options::default());
    let db = Db::open(dir.path(), opts.clone()).expect("open");
    let keys = write_more(&db, "k");
    fs.short_writes(true);
    fs.limit_space_of(".sst", 5000);
    let err = db.flush().expect_err("the table does not fit");
    let text = err.to_string();
    assert!(
        text.contains("flush failed") && names_full_disk(&text),
        "{text}"
    );
    assert!(
        stray_tables(&db, dir.path()).is_empty(),
        "a partial table was left"
    );
    let o = Outcome {
        acked: keys,
        ..Outcome::default()
    };
    check_poisoned(&db, &o);
    check(&db, &o, "poisoned by the flush");
    fs.heal();
    db.resume().expect("resume");
    assert!(
        db.debug().live_tables()[0].len() == 1,
        "resume flushed: {:?}",
        db.debug().live_tables()
    );
    resume_write_reopen(db, dir.path(), opts, o);
}

#[test]
fn full_disk_under_a_compaction_then_resume() {
    let dir = common::fast_tempdir();
    let base = Options {
        l0_compaction_trigger: 100,
        l0_slowdown_writes_trigger: 200,
        l0_stop_writes_trigger: 300,
        ..Options::default()
    };
    let (fs, opts) = faulty(base);
    let db = Db::open(dir.path(), opts.clone()).expect("open");
    let mut keys = Vec::new();
    for round in 0..3 {
        keys.extend(write_more(&db, &format!("r{round}")));
        db.flush().expect("flush");
    }
    assert_eq!(db.debug().live_tables()[0].len(), 3);
    fs.short_writes(true);
    fs.limit_space_of(".sst", 20_000);
    let err = db
        .compact_range(None, None)
        .expect_err("no room for the output");
    assert!(
        names_full_disk(&err.to_string()) && err.to_string().contains(".sst"),
        "{err}"
    );
    assert!(
        stray_tables(&db, dir.path()).is_empty(),
        "a partial output was left"
    );
    assert_eq!(
        db.debug().live_tables()[0].len(),
        3,
        "the inputs are untouched"
    );
    let o = Outcome {
        acked: keys,
        ..Outcome::default()
    };
    check_poisoned(&db, &o);
    check(&db, &o, "poisoned by the compaction");
    fs.heal();
    db.resume().expect("resume");
    db.compact_range(None, None).expect("compaction runs again");
    assert!(
        db.debug().live_tables()[0].is_empty(),
        "{:?}",
        db.debug().live_tables()
    );
    resume_write_reopen(db, dir.path(), opts, o);
}

#[test]
fn full_disk_under_the_manifest_then_resume() {
    let dir = common::fast_tempdir();
    let (fs, opts) = faulty(Options::default());
    let db = Db::open(dir.path(), opts.clone()).expect("open");
    let keys = write_more(&db, "k");
    let manifests = || {
        std::fs::read_dir(dir.path())
            .expect("ls")
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("MANIFEST-"))
            .collect::<Vec<_>>()
    };
    let before = manifests();
    fs.short_writes(true);
    fs.limit_space_of("MANIFEST", 10);
    let err = db.flush().expect_err("the edit does not fit");
    assert!(names_full_disk(&err.to_string()), "{err}");
    let o = Outcome {
        acked: keys,
        ..Outcome::default()
    };
    check_poisoned(&db, &o);
    // The new manifest does not fit either.
    let err = db.resume().expect_err("still full");
    assert!(err.is_no_space(), "{err}");
    assert_eq!(manifests(), before, "the failed attempt left a manifest");
    fs.heal();
    db.resume().expect("resume");
    let after = manifests();
    assert_eq!(after.len(), 1, "{after:?}");
    assert_ne!(after, before, "a new manifest took over");
    assert!(
        stray_tables(&db, dir.path()).is_empty(),
        "the table of the failed edit was not removed"
    );
    resume_write_reopen(db, dir.path(), opts, o);
}

#[test]
fn a_reopen_after_resume_cut_the_log_finds_clean_logs() {
    let dir = common::fast_tempdir();
    let (fs, opts) = faulty(Options::default());
    let db = Db::open(dir.path(), opts.clone()).expect("open");
    let before = write_more(&db, "before");
    fs.short_writes(true);
    fs.limit_space_of(".log", 200_000);
    let mut o = write_until_full(&db, "w");
    check_full_disk_errors(&o, true);
    o.acked.extend(before);
    // Room for the WAL again, none for tables: resume cuts the old log and
    // starts a new one, then its flush fails.
    fs.heal();
    fs.limit_space_of(".sst", 0);
    let err = db.resume().expect_err("the flush has no room");
    assert!(names_full_disk(&err.to_string()), "{err}");
    check(&db, &o, "after a resume whose flush failed");
    // The old log, now followed by a newer one, was cut at a record
    // boundary: paranoid recovery accepts it.
    drop(db);
    fs.heal();
    let db = Db::open(dir.path(), opts.clone()).expect("reopen with paranoid checks");
    assert!(
        db.debug().recovery_report().truncated.is_empty(),
        "{:?}",
        db.debug().recovery_report()
    );
    check(&db, &o, "after reopen");
    db.close().expect("close");
}

#[test]
fn a_second_resume_finishes_what_the_first_could_not() {
    let dir = common::fast_tempdir();
    let (fs, opts) = faulty(Options::default());
    let db = Db::open(dir.path(), opts.clone()).expect("open");
    fs.limit_space_of(".log", 100_000);
    let o = write_until_full(&db, "w");
    check_full_disk_errors(&o, true);
    fs.heal();
    fs.limit_space_of(".sst", 0);
    db.resume().expect_err("the flush has no room");
    let err = db.put(b"x", b"y").expect_err("poisoned again");
    assert!(err.to_string().contains("resume"), "{err}");
    fs.heal();
    resume_write_reopen(db, dir.path(), opts, o);
}

#[test]
fn resume_refuses_failures_that_are_not_a_full_disk() {
    for sync_failure in [false, true] {
        let dir = common::fast_tempdir();
        // Plain WAL appends, so that the failed append is the WAL's.
        let (fs, opts) = faulty(Options {
            wal_writer: varve::WalWriter::Plain,
            ..Options::default()
        });
        let db = Db::open(dir.path(), opts).expect("open");
        db.put(b"a", b"1").expect("put");
        if sync_failure {
            fs.fail_syncs(true);
        } else {
            fs.fail_appends_after(0);
        }
        db.put_opt(b"b", b"2", &WriteOptions::sync())
            .expect_err("fails");
        fs.heal();
        let err = db.resume().expect_err("refused");
        assert!(
            matches!(err, Error::Poisoned(_)) && err.to_string().contains("reopen"),
            "{err}"
        );
        let err = db.put(b"c", b"3").expect_err("still poisoned");
        assert!(err.to_string().contains("reopen"), "{err}");
        assert!(!err.to_string().contains("resume()"), "{err}");
        assert_eq!(db.get(b"a").expect("get"), Some(b"1".to_vec()));
    }
}

#[test]
fn resume_on_a_healthy_database_does_nothing() {
    let dir = common::fast_tempdir();
    let db = Db::open(dir.path(), Options::default()).expect("open");
    db.put(b"a", b"1").expect("put");
    db.resume().expect("nothing to resume");
    db.put(b"b", b"2").expect("still writable");
    assert!(
        db.debug().live_tables().iter().all(Vec::is_empty),
        "no flush"
    );
    db.close().expect("close");
}

// ---------------------------------------------------------------------------
// Range deletions across a resume

/// Keys `a-000..a-099` and `b-000..b-099`, value `v`.
fn write_two_ranges(db: &Db) {
    for i in 0..100 {
        for side in ["a", "b"] {
            db.put(format!("{side}-{i:03}"), b"v").expect("put");
        }
    }
}

/// `a-010..a-050` deleted (acknowledged), every `b-` key there (its
/// range deletion failed), no `c-new` (a put in the failed batch): by
/// gets and by full scans both ways (`common::after_crash::everything`).
fn check_range_deletions(db: &Db, when: &str) {
    let mut want = std::collections::BTreeMap::new();
    for i in 0..100 {
        let a = format!("a-{i:03}");
        let deleted = (10..50).contains(&i);
        assert_eq!(
            db.get(&a).expect("get"),
            (!deleted).then(|| b"v".to_vec()),
            "{when}: {a}"
        );
        if !deleted {
            want.insert(a.into_bytes(), b"v".to_vec());
        }
        want.insert(format!("b-{i:03}").into_bytes(), b"v".to_vec());
    }
    assert_eq!(db.get(b"c-new").expect("get"), None, "{when}: c-new");
    let mut seen = common::after_crash::everything(db)
        .remove("")
        .expect("the default keyspace");
    seen.retain(|k, _| k.starts_with(b"a-") || k.starts_with(b"b-") || k.starts_with(b"c-"));
    assert_eq!(seen, want, "{when}: scans");
}

/// A failed batch of a range deletion, an empty one and a put: hidden
/// while poisoned, dropped by resume (which counts the empty one too),
/// while the acknowledged range deletion before it keeps its keys
/// deleted through the resume's copy of the memtable, a flush and a
/// reopen.
#[test]
fn resume_keeps_acknowledged_range_deletions_and_drops_failed_ones() {
    let dir = common::fast_tempdir();
    // Plain WAL appends meet the quota at once (see the test above).
    let (fs, opts) = faulty(Options {
        wal_writer: varve::WalWriter::Plain,
        ..Options::default()
    });
    let db = Db::open(dir.path(), opts.clone()).expect("open");
    write_two_ranges(&db);
    db.delete_range("a-010".."a-050").expect("acknowledged");
    fs.limit_space_of(".log", 0);
    let mut batch = WriteBatch::new();
    batch.delete_range("b-010".."b-050");
    batch.delete_range("q".."q");
    batch.put("c-new", "v");
    let err = db.write(batch).expect_err("full");
    assert!(err.is_no_space(), "{err}");
    check_range_deletions(&db, "while poisoned");
    fs.heal();
    db.resume().expect("resume");
    check_range_deletions(&db, "after resume");
    db.put(b"d-after", b"v").expect("writes are back");
    drop(db);
    let db = Db::open(dir.path(), opts.clone()).expect("reopen");
    check_range_deletions(&db, "after reopen");
    db.flush().expect("flush");
    drop(db);
    let db = Db::open(dir.path(), opts).expect("reopen");
    check_range_deletions(&db, "after a flush and a reopen");
    assert_eq!(db.get(b"d-after").expect("get"), Some(b"v".to_vec()));
}

/// The same acknowledged range deletion on the mapped WAL production
/// runs, with the log filled by short writes until the disk is full.
#[test]
fn resume_on_the_mapped_wal_keeps_acknowledged_range_deletions() {
    let dir = common::fast_tempdir();
    let (fs, opts) = faulty(Options::default());
    let db = Db::open(dir.path(), opts.clone()).expect("open");
    write_two_ranges(&db);
    db.delete_range("a-010".."a-050").expect("acknowledged");
    fs.short_writes(true);
    fs.limit_space_of(".log", 400_000);
    let o = write_until_full(&db, "w");
    check_full_disk_errors(&o, true);
    check_range_deletions(&db, "while poisoned");
    fs.heal();
    db.resume().expect("resume");
    check_range_deletions(&db, "after resume");
    check(&db, &o, "after resume");
    drop(db);
    let db = Db::open(dir.path(), opts).expect("reopen");
    check_range_deletions(&db, "after reopen");
    check(&db, &o, "after reopen");
}
