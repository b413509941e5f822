//! [`FaultInjectingFs`]: a file system wrapper that fails on command, for
//! tests of the error paths (a failing WAL append or fdatasync, a full disk)
//! and of durability (a simulated power loss).
//!
//! Faults are switched on and off at run time through the shared handle, so
//! a test can open a database normally, then make the next append fail.
//! Everything not failed is passed to the wrapped file system unchanged.
//!
//! A full disk: [`FaultInjectingFs::set_free_space`] is a byte quota for
//! writes (ENOSPC once spent), optionally only for files whose name
//! contains a pattern ([`FaultInjectingFs::limit_space_of`]: the WAL, the
//! tables, the manifest), and with [`FaultInjectingFs::short_writes`] a
//! write that does not fit writes the part that fits first, as a kernel
//! does, leaving a torn tail.
//!
//! Power loss: the wrapper remembers, for every file it created, how many
//! bytes were fdatasync'ed and whether its directory entry was made durable
//! (a directory fsync after the create); for a file written in place
//! (`open_in_place`: shared mappings, direct and positional writes, the
//! production write paths) the bytes its last fdatasync left
//! (`fault_in_place.rs`). [`FaultInjectingFs::crash`] makes every later
//! mutation fail, as if the machine stopped;
//! [`FaultInjectingFs::apply_power_loss`] then rewrites the files on disk to
//! what a power loss may leave: synced bytes kept, each unsynced 4 KiB page
//! kept or lost on its own, never-synced new files gone; and it counts as
//! a reboot (a new [`boot_id`](FileSystem::boot_id)).
//! Reads of chosen files can be made to fail or panic (`fault_read`).
//! Thread-safe: the switches are atomics shared by every file it opened.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::Mutex;

use super::fault_files::{CountingRandomAccess, FaultyLog, FaultyWritable};
use super::fault_in_place::{FaultyInPlace, power_cut_file, read_all};
use super::fault_read::{FaultyRandomAccess, ReadFault, ReadFaults};
use super::fault_switches::{Durability, ReadRecord, Switches, injected};
use super::fs::{
    FileLock, FileSystem, InPlaceFile, LogFile, RandomAccessFile, SequentialFile, WritableFile,
};
use crate::error::{Error, Result};

/// Wraps a [`FileSystem`] and injects failures into writable files.
#[derive(Debug, Clone)]
pub struct FaultInjectingFs {
    inner: Arc<dyn FileSystem>,
    switches: Arc<Switches>,
    reads: Arc<ReadFaults>,
}

impl FaultInjectingFs {
    /// Wraps `inner` with every fault off.
    pub fn new(inner: Arc<dyn FileSystem>) -> Self {
        FaultInjectingFs {
            inner,
            switches: Arc::new(Switches {
                appends_left: AtomicU64::new(u64::MAX),
                fail_syncs: AtomicBool::new(false),
                space_left: AtomicU64::new(u64::MAX),
                space_scope: Mutex::new(None),
                short_writes: AtomicBool::new(false),
                appends: AtomicU64::new(0),
                syncs: AtomicU64::new(0),
                crashed: AtomicBool::new(false),
                refuse_direct: AtomicBool::new(false),
                plain_files_only: AtomicBool::new(false),
                sst_append_delay_micros: AtomicU64::new(0),
                reads: AtomicU64::new(0),
                read_bytes: AtomicU64::new(0),
                read_log: Mutex::new(None),
                tracked: Mutex::new(HashMap::new()),
                images: Mutex::new(HashMap::new()),
                boots: AtomicU64::new(0),
            }),
            reads: Arc::new(ReadFaults::default()),
        }
    }

    /// Makes every later read of the file named `file_name` (in any
    /// directory, opened through this wrapper) fail or panic; `None` heals it.
    pub fn fault_reads_of(&self, file_name: &str, fault: Option<ReadFault>) {
        self.reads.set(file_name, fault);
    }

    /// [`in_flight_reads`](super::in_flight_reads) of the thread where a
    /// read fault last fired, taken as it fired.
    pub fn in_flight_at_last_read_fault(&self) -> usize {
        self.reads.in_flight_at_fault()
    }

    fn faulty_reads(&self, inner: Arc<dyn RandomAccessFile>) -> Arc<dyn RandomAccessFile> {
        Arc::new(FaultyRandomAccess {
            inner,
            faults: Arc::clone(&self.reads),
        })
    }

    /// After `n` more successful appends, every append fails with EIO.
    pub fn fail_appends_after(&self, n: u64) {
        self.switches.appends_left.store(n, Ordering::SeqCst);
    }

    /// Makes every `sync_data` fail with EIO (or succeed again).
    pub fn fail_syncs(&self, on: bool) {
        self.switches.fail_syncs.store(on, Ordering::SeqCst);
    }

    /// Leaves `bytes` of free space: an append that does not fit fails with
    /// ENOSPC and writes nothing (or, with [`short_writes`](Self::short_writes),
    /// the part that fits).
    pub fn set_free_space(&self, bytes: u64) {
        self.switches.space_left.store(bytes, Ordering::SeqCst);
    }

    /// [`set_free_space`](Self::set_free_space) for the files whose name
    /// contains `pattern` only (e.g. `".sst"`, `"MANIFEST"`, `".log"`):
    /// other files neither spend nor run out of it. Healing lifts it.
    pub fn limit_space_of(&self, pattern: &str, bytes: u64) {
        *self.switches.space_scope.lock() = Some(pattern.to_string());
        self.set_free_space(bytes);
    }

    /// Makes a write that does not fit the free space write the part that
    /// fits before it fails with ENOSPC (what `write(2)` does), instead of
    /// writing nothing.
    pub fn short_writes(&self, on: bool) {
        self.switches.short_writes.store(on, Ordering::SeqCst);
    }

    /// Refuses in-place files ([`FileSystem::open_in_place`]) as
    /// unsupported, so the engine writes every file by appends, as on a
    /// file system without OS files (the paths before the production ones
    /// were modelled here; tests of those fallbacks use it).
    pub fn plain_files_only(&self, on: bool) {
        self.switches.plain_files_only.store(on, Ordering::SeqCst);
    }

    /// Makes O_DIRECT opens fail with EINVAL, like a file system without
    /// direct IO.
    pub fn refuse_direct_io(&self, on: bool) {
        self.switches.refuse_direct.store(on, Ordering::SeqCst);
    }

    fn check_direct(&self, path: &Path) -> Result<()> {
        if self.switches.refuse_direct.load(Ordering::SeqCst) {
            return Err(Error::io(
                path,
                std::io::Error::from_raw_os_error(libc::EINVAL),
            ));
        }
        Ok(())
    }

    /// Turns every fault off.
    pub fn heal(&self) {
        self.fail_appends_after(u64::MAX);
        self.fail_syncs(false);
        self.set_free_space(u64::MAX);
        *self.switches.space_scope.lock() = None;
    }

    /// Simulates the machine stopping: from now on every write, sync,
    /// create, rename, truncate and remove fails. Reads keep working.
    pub fn crash(&self) {
        self.switches.crashed.store(true, Ordering::SeqCst);
    }

    /// True after [`crash`](Self::crash).
    pub fn crashed(&self) -> bool {
        self.switches.crashed.load(Ordering::SeqCst)
    }

    /// Rewrites the files created or written in place through this wrapper
    /// to a state a power loss may leave: files whose directory entry was
    /// never fsynced are removed; others keep their synced bytes, and each
    /// 4 KiB page written after the last sync (appended, stored through a
    /// mapping, written directly) is kept or lost on its own (chosen from
    /// `seed`; a lost page reads as it was at the last sync, zeros past the
    /// synced end). Then the machine is back: writes are taken again, with
    /// a new [`boot_id`](FileSystem::boot_id), so recovery must reopen
    /// through this file system. Call after [`crash`](Self::crash) and
    /// after dropping the database. Returns how many bytes differ from
    /// what the engine had written.
    pub fn apply_power_loss(&self, seed: u64) -> Result<u64> {
        let mut rng = seed | 1;
        let mut coin = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng & 1 == 1
        };
        let mut dropped = 0;
        let tracked = std::mem::take(&mut *self.switches.tracked.lock());
        let mut images = std::mem::take(&mut *self.switches.images.lock());
        // A reboot: staging files written before it are from another boot,
        // and the machine takes writes again (reopen through this file
        // system: it is the restarted machine).
        self.switches.boots.fetch_add(1, Ordering::SeqCst);
        self.switches.crashed.store(false, Ordering::SeqCst);
        let mut paths: Vec<PathBuf> = tracked.keys().chain(images.keys()).cloned().collect();
        paths.sort();
        paths.dedup();
        for path in &paths {
            if !self.inner.exists(path)? {
                continue;
            }
            let d = tracked.get(path);
            if d.is_some_and(|d| !d.entry_durable) {
                dropped += self.inner.file_size(path)?;
                self.inner.remove_file(path)?;
                continue;
            }
            let cur = read_all(path)?;
            // What the last fdatasync left: the image of a file written in
            // place, the synced prefix of an appended one.
            let image = match (images.remove(path.as_path()), d) {
                (Some(image), _) => image,
                (None, Some(d)) => cur[..(d.synced_len as usize).min(cur.len())].to_vec(),
                (None, None) => continue,
            };
            let out = power_cut_file(&cur, &image, &mut coin);
            if out == cur {
                continue;
            }
            let lost = cur
                .iter()
                .zip(out.iter().chain(std::iter::repeat(&0)))
                .filter(|(a, b)| a != b)
                .count();
            dropped += lost as u64;
            std::fs::write(path, &out).map_err(|e| Error::io(path, e))?;
        }
        Ok(dropped)
    }

    /// The boot id staging files are stamped with: the machine's, changed
    /// by every simulated power cut (a reboot).
    fn simulated_boot_id(&self) -> [u8; 36] {
        let mut id = self.inner.boot_id();
        let boots = self.switches.boots.load(Ordering::SeqCst);
        if boots > 0 {
            let tag = format!("{boots:012x}");
            id[24..36].copy_from_slice(&tag.as_bytes()[tag.len() - 12..]);
        }
        id
    }

    fn wrap_new(
        &self,
        path: &Path,
        create: impl FnOnce(&Path) -> Result<Box<dyn WritableFile>>,
    ) -> Result<Box<dyn WritableFile>> {
        self.check_alive(path)?;
        self.track_new(path)?;
        Ok(Box::new(FaultyWritable {
            inner: create(path)?,
            switches: Arc::clone(&self.switches),
        }))
    }

    /// Starts tracking the durability of a file about to be (re)created.
    fn track_new(&self, path: &Path) -> Result<()> {
        // A re-created file keeps its durable directory entry.
        let entry_durable = self.inner.exists(path)?
            && self
                .switches
                .tracked
                .lock()
                .get(path)
                .is_none_or(|d| d.entry_durable);
        self.switches.tracked.lock().insert(
            path.to_path_buf(),
            Durability {
                entry_durable,
                ..Durability::default()
            },
        );
        Ok(())
    }

    fn check_alive(&self, path: &Path) -> Result<()> {
        if self.crashed() {
            return Err(injected(path, std::io::ErrorKind::Other, "simulated crash"));
        }
        Ok(())
    }

    /// Successful appends so far (all files).
    pub fn appends(&self) -> u64 {
        self.switches.appends.load(Ordering::SeqCst)
    }

    /// Makes every append to a table file (`*.sst`) sleep `delay` first:
    /// a slow flush and compaction, for stall tests. Zero turns it off.
    pub fn delay_table_appends(&self, delay: std::time::Duration) {
        let micros = u64::try_from(delay.as_micros()).unwrap_or(u64::MAX);
        self.switches
            .sst_append_delay_micros
            .store(micros, Ordering::SeqCst);
    }

    /// Successful syncs so far (all files).
    pub fn syncs(&self) -> u64 {
        self.switches.syncs.load(Ordering::SeqCst)
    }

    fn counting(&self, inner: Arc<dyn RandomAccessFile>) -> Arc<dyn RandomAccessFile> {
        Arc::new(CountingRandomAccess {
            inner,
            switches: Arc::clone(&self.switches),
        })
    }

    /// Positional reads so far (all files opened for random access).
    pub fn reads(&self) -> u64 {
        self.switches.reads.load(Ordering::SeqCst)
    }

    /// Bytes returned by positional reads so far.
    pub fn read_bytes(&self) -> u64 {
        self.switches.read_bytes.load(Ordering::SeqCst)
    }

    /// Starts (with an empty log) or stops logging every positional read.
    pub fn record_reads(&self, on: bool) {
        *self.switches.read_log.lock() = on.then(Vec::new);
    }

    /// The reads logged since recording started (the log is emptied).
    pub fn take_read_log(&self) -> Vec<ReadRecord> {
        self.switches
            .read_log
            .lock()
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }
}

impl FileSystem for FaultInjectingFs {
    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn list_dir(&self, dir: &Path) -> Result<Vec<String>> {
        self.inner.list_dir(dir)
    }
    fn exists(&self, path: &Path) -> Result<bool> {
        self.inner.exists(path)
    }
    fn is_dir(&self, path: &Path) -> Result<bool> {
        self.inner.is_dir(path)
    }
    fn create_writable(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.wrap_new(path, |p| self.inner.create_writable(p))
    }
    fn create_writable_direct(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.check_direct(path)?;
        self.wrap_new(path, |p| self.inner.create_writable_direct(p))
    }
    fn open_random_access_direct(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.check_direct(path)?;
        let inner = self.faulty_reads(self.inner.open_random_access_direct(path)?);
        Ok(self.counting(inner))
    }
    fn create_log_file(&self, path: &Path) -> Result<Arc<dyn LogFile>> {
        self.check_alive(path)?;
        self.track_new(path)?;
        Ok(Arc::new(FaultyLog {
            inner: self.inner.create_log_file(path)?,
            switches: Arc::clone(&self.switches),
        }))
    }
    fn open_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>> {
        self.inner.open_sequential(path)
    }
    fn open_random_access(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let inner = self.faulty_reads(self.inner.open_random_access(path)?);
        Ok(self.counting(inner))
    }
    fn file_size(&self, path: &Path) -> Result<u64> {
        self.inner.file_size(path)
    }
    fn remove_file(&self, path: &Path) -> Result<()> {
        self.check_alive(path)?;
        self.switches.tracked.lock().remove(path);
        // Under the images' lock: a sync of this file running now records
        // its image either before the removal (dropped here) or finds the
        // file gone (and records nothing), never an image of a removed file.
        let mut images = self.switches.images.lock();
        images.remove(path);
        self.inner.remove_file(path)
    }
    fn remove_dir(&self, dir: &Path) -> Result<()> {
        self.inner.remove_dir(dir)
    }
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.check_alive(from)?;
        let mut tracked = self.switches.tracked.lock();
        if let Some(mut d) = tracked.remove(from) {
            // The new name is durable only after a directory fsync.
            d.entry_durable = false;
            tracked.insert(to.to_path_buf(), d);
        }
        drop(tracked);
        // Under the images' lock, as `remove_file`: a sync running now
        // records under the old name before the move, or finds it gone.
        let mut images = self.switches.images.lock();
        if let Some(image) = images.remove(from) {
            images.insert(to.to_path_buf(), image);
        }
        self.inner.rename(from, to)
    }
    fn hard_link(&self, src: &Path, dst: &Path) -> Result<()> {
        self.check_alive(dst)?;
        self.inner.hard_link(src, dst)?;
        // The data is the source's; the new name is durable after a
        // directory fsync, like any new entry.
        let len = self.inner.file_size(dst)?;
        let synced = self
            .switches
            .tracked
            .lock()
            .get(src)
            .map_or(len, |d| d.synced_len);
        self.switches.tracked.lock().insert(
            dst.to_path_buf(),
            Durability {
                len,
                synced_len: synced,
                entry_durable: false,
            },
        );
        Ok(())
    }
    fn truncate(&self, path: &Path, len: u64) -> Result<()> {
        self.check_alive(path)?;
        if let Some(d) = self.switches.tracked.lock().get_mut(path) {
            d.len = len;
            d.synced_len = len;
        }
        self.inner.truncate(path, len)?;
        // `truncate` syncs: what the file holds now is durable.
        let mut images = self.switches.images.lock();
        if images.contains_key(path) {
            images.insert(path.to_path_buf(), read_all(path)?);
        }
        Ok(())
    }
    fn sync_dir(&self, dir: &Path) -> Result<()> {
        self.check_alive(dir)?;
        self.inner.sync_dir(dir)?;
        for (path, d) in self.switches.tracked.lock().iter_mut() {
            if path.parent() == Some(dir) {
                d.entry_durable = true;
            }
        }
        Ok(())
    }
    fn open_in_place(
        &self,
        path: &Path,
        create: bool,
        direct: bool,
    ) -> Result<Arc<dyn InPlaceFile>> {
        self.check_alive(path)?;
        if self.switches.plain_files_only.load(Ordering::SeqCst) {
            return Err(Error::unsupported(
                path,
                "in-place files turned off (FaultInjectingFs::plain_files_only)",
            ));
        }
        if direct {
            self.check_direct(path)?;
        }
        let existed = self.inner.exists(path)?;
        let inner = self.inner.open_in_place(path, create, direct)?;
        if create {
            self.track_new(path)?;
            // A new file: a power cut before its first sync leaves it empty.
            let mut images = self.switches.images.lock();
            images.insert(path.to_path_buf(), Vec::new());
            if let (true, Some(d)) = (existed, self.switches.tracked.lock().get_mut(path)) {
                // Truncated, not created: its entry was durable already.
                d.len = 0;
                d.synced_len = 0;
            }
        } else if !self.switches.images.lock().contains_key(path) {
            // Opened to be written in place from now on: what it holds now
            // is durable if it was synced (or older than this wrapper's
            // tracking).
            let cur = read_all(path)?;
            let image = match self.switches.tracked.lock().get(path) {
                Some(d) => cur[..(d.synced_len as usize).min(cur.len())].to_vec(),
                None => cur,
            };
            self.switches
                .images
                .lock()
                .insert(path.to_path_buf(), image);
        }
        Ok(Arc::new(FaultyInPlace {
            inner,
            switches: Arc::clone(&self.switches),
        }))
    }
    fn boot_id(&self) -> [u8; 36] {
        self.simulated_boot_id()
    }
    fn try_lock(&self, path: &Path) -> Result<Option<Box<dyn FileLock>>> {
        self.inner.try_lock(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::PosixFs;

    #[test]
    fn switches_work() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fs = FaultInjectingFs::new(Arc::new(PosixFs));
        let mut f = fs.create_writable(&dir.path().join("f")).expect("create");
        fs.fail_appends_after(1);
        f.append(b"ok").expect("first append passes");
        let e = f.append(b"no").expect_err("second fails");
        assert!(e.to_string().contains("injected"), "{e}");
        fs.heal();
        fs.set_free_space(3);
        assert!(f.append(b"1234").is_err());
        f.append(b"123").expect("fits");
        fs.fail_syncs(true);
        assert!(f.sync_data().is_err());
        fs.heal();
        f.sync_data().expect("sync");
        assert_eq!(f.len(), 5);
        assert_eq!(fs.appends(), 2);
    }

    #[test]
    fn a_scoped_quota_spares_other_files_and_short_writes_write_what_fits() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fs = FaultInjectingFs::new(Arc::new(PosixFs));
        let sst_path = dir.path().join("000005.sst");
        let mut sst = fs.create_writable(&sst_path).expect("create");
        let mut log = fs
            .create_writable(&dir.path().join("000006.log"))
            .expect("create");
        fs.limit_space_of(".sst", 10);
        log.append(&[1u8; 100])
            .expect("other files are not limited");
        sst.append(b"12345678").expect("fits");
        let full = |e: Error| match e {
            Error::Io { ref source, .. } => {
                assert_eq!(source.kind(), std::io::ErrorKind::StorageFull, "{e}");
                assert!(e.to_string().contains("000005.sst"), "{e}");
            }
            other => panic!("expected ENOSPC, got {other}"),
        };
        full(sst.append(b"abcd").expect_err("does not fit"));
        assert_eq!(sst.len(), 8, "a refused write writes nothing");
        fs.short_writes(true);
        full(sst.append(b"abcd").expect_err("does not fit"));
        assert_eq!(sst.len(), 10, "a short write writes what fits");
        full(sst.append(b"x").expect_err("nothing left"));
        assert_eq!(std::fs::read(&sst_path).expect("read"), b"12345678ab");
        fs.heal();
        sst.append(b"x").expect("healed");
        log.append(b"y").expect("still fine");
    }

    #[test]
    fn power_loss_keeps_synced_bytes_and_durable_entries() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fs = FaultInjectingFs::new(Arc::new(PosixFs));
        let a = dir.path().join("a");
        let b = dir.path().join("b");
        let mut fa = fs.create_writable(&a).expect("create a");
        fs.sync_dir(dir.path()).expect("sync dir");
        fa.append(b"synced").expect("append");
        fa.sync_data().expect("sync");
        fa.append(b"-unsynced-tail").expect("append");
        let mut fb = fs
            .create_writable(&b)
            .expect("create b (entry never synced)");
        fb.append(b"data").expect("append");
        fb.sync_data().expect("sync");
        fs.crash();
        assert!(fa.append(b"x").is_err(), "writes fail after the crash");
        assert!(fs.create_writable(&dir.path().join("c")).is_err());
        drop((fa, fb));
        fs.apply_power_loss(42).expect("power loss");
        let left = std::fs::read(&a).expect("a survives");
        assert!(left.starts_with(b"synced"), "synced bytes kept");
        assert!(
            b"synced-unsynced-tail".starts_with(&left[..]),
            "only a prefix of the tail may survive"
        );
        assert!(
            !b.exists(),
            "a file whose directory entry was never synced is gone"
        );
    }

    #[test]
    fn hard_link_is_a_new_entry_until_the_directory_is_synced() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fs = FaultInjectingFs::new(Arc::new(PosixFs));
        let a = dir.path().join("a");
        let (b, c) = (dir.path().join("b"), dir.path().join("c"));
        let mut f = fs.create_writable(&a).expect("create");
        f.append(b"data").expect("append");
        f.sync_data().expect("sync");
        fs.sync_dir(dir.path()).expect("sync dir");
        fs.hard_link(&a, &b).expect("link");
        fs.sync_dir(dir.path()).expect("sync dir");
        fs.hard_link(&a, &c).expect("link");
        fs.crash();
        assert!(
            fs.hard_link(&a, &dir.path().join("d")).is_err(),
            "no links after the crash"
        );
        drop(f);
        fs.apply_power_loss(7).expect("power loss");
        assert_eq!(std::fs::read(&a).expect("a"), b"data");
        assert_eq!(
            std::fs::read(&b).expect("b survives: its entry was synced"),
            b"data"
        );
        assert!(
            !c.exists(),
            "a link whose directory was never synced is gone"
        );
    }
}

#[cfg(test)]
mod in_place_tests {
    use super::*;
    use crate::io::{PosixFs, Preallocate, SharedMap};

    /// Stores through a mapping of an in-place file that a sync covered
    /// survive a power cut; the rest is kept or lost by whole pages.
    #[test]
    fn a_synced_mapping_survives_a_power_cut() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fs = FaultInjectingFs::new(Arc::new(PosixFs));
        let path = dir.path().join("000002.log");
        let f = fs.open_in_place(&path, true, false).expect("open");
        fs.sync_dir(dir.path()).expect("sync dir");
        f.allocate(0, 1 << 16, Preallocate::Fallocate)
            .expect("allocate");
        let m = SharedMap::new(f.as_ref(), 1 << 16).expect("map");
        // SAFETY: 64 KiB mapped; this test is its only user.
        unsafe { std::ptr::write_bytes(m.ptr().as_ptr(), 7, 10_000) };
        f.sync_data().expect("sync");
        // SAFETY: as above.
        unsafe { std::ptr::write_bytes(m.ptr().as_ptr().add(10_000), 9, 20_000) };
        fs.crash();
        drop(m);
        drop(f);
        fs.apply_power_loss(3).expect("power loss");
        let got = std::fs::read(&path).expect("read");
        assert!(got.len() >= 10_000, "{}", got.len());
        assert!(got[..10_000].iter().all(|&b| b == 7), "synced bytes kept");
        for page in got[10_000..].chunks(4096) {
            let _ = page;
        }
    }
}
