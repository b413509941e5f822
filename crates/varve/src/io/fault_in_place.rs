//! In-place files of [`FaultInjectingFs`](super::FaultInjectingFs)
//! ([`FaultyInPlace`]) and the page model of a power cut
//! ([`power_cut_file`]).
//!
//! A `FaultyInPlace` is the real OS file (so the engine's stores through a
//! shared mapping of it and its io_uring direct writes run exactly as in
//! production) with the wrapper's switches on every call it sees
//! (positional writes, allocation, length changes: crash, EIO, the space
//! quota; syncs: crash, EIO). Because stores into a mapping and io_uring
//! writes are not calls it sees, durability is tracked by content: each
//! `sync_data` records the file's bytes as they are then (its *image*:
//! what a power cut must leave), read back through the page cache.
//!
//! [`power_cut_file`] models what Linux can leave after a power cut: every
//! 4 KiB page whose bytes differ from the image (written through a
//! mapping, by a buffered write, or by a direct write, and not fdatasynced
//! since) is kept or lost independently; a lost page has its image's bytes
//! (zeros past the image's end), and the file ends at the image's length
//! or at the end of the last page kept beyond it. Appended files are the
//! same model with the image implicit: their synced prefix.
//!
//! Thread-safety: as the wrapper's (atomics and locks in the shared
//! switches). Invariant: an image is only ever replaced by a later read of
//! the file taken after a successful fdatasync returned (reads and records
//! happen under the images' lock, so a later read is recorded later).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::fault_switches::Switches;
use super::fault_switches::injected;
use super::fs::{InPlaceFile, Preallocate};
use crate::error::{Error, Result};

/// The page a power cut keeps or loses as a whole.
const PAGE: usize = 4096;

/// An in-place file of the wrapper.
#[derive(Debug)]
pub(super) struct FaultyInPlace {
    pub(super) inner: Arc<dyn InPlaceFile>,
    pub(super) switches: Arc<Switches>,
}

impl FaultyInPlace {
    fn alive(&self) -> Result<()> {
        if self.switches.crashed.load(Ordering::SeqCst) {
            return Err(injected(
                self.inner.path(),
                std::io::ErrorKind::Other,
                "simulated crash",
            ));
        }
        Ok(())
    }
}

/// Every byte of the file at `path`, read through the page cache (a
/// handle of its own: the engine's may be `O_DIRECT`).
pub(super) fn read_all(path: &Path) -> Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let len = f.metadata().map_err(|e| Error::io(path, e))?.len();
    let mut out = vec![0u8; usize::try_from(len).unwrap_or(usize::MAX)];
    let mut at = 0;
    while at < out.len() {
        match f.read_at(&mut out[at..], at as u64) {
            Ok(0) => break,
            Ok(n) => at += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io(path, e)),
        }
    }
    out.truncate(at);
    Ok(out)
}

impl InPlaceFile for FaultyInPlace {
    fn path(&self) -> &Path {
        self.inner.path()
    }

    fn os_file(&self) -> &std::fs::File {
        self.inner.os_file()
    }

    fn is_direct(&self) -> bool {
        self.inner.is_direct()
    }

    fn check_write(&self, len: u64) -> Result<()> {
        self.switches
            .admit(self.inner.path(), len)
            .map_err(|r| r.error)?;
        self.switches.appends.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    fn write_at(&self, data: &[u8], offset: u64) -> Result<()> {
        let path = self.inner.path();
        if let Err(refused) = self.switches.admit(path, data.len() as u64) {
            if refused.fit > 0 {
                self.inner.write_at(&data[..refused.fit as usize], offset)?;
            }
            return Err(refused.error);
        }
        self.inner.write_at(data, offset)?;
        self.switches.appends.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    fn allocate(&self, from: u64, len: u64, how: Preallocate) -> Result<()> {
        // Reserving space spends it (a full disk surfaces here, never as a
        // store into the mapping); nothing is partly reserved.
        self.switches
            .admit(self.inner.path(), len.saturating_sub(from))
            .map_err(|r| r.error)?;
        self.inner.allocate(from, len, how)
    }

    fn set_len(&self, len: u64) -> Result<()> {
        self.alive()?;
        self.inner.set_len(len)
    }

    fn sync_data(&self) -> Result<()> {
        let path = self.inner.path();
        self.switches.admit_sync(path)?;
        self.inner.sync_data()?;
        // What the file holds now was all written before this sync
        // returned; bytes stored while it ran may be in it too (a real
        // fdatasync may take them as well). Read and recorded under the
        // images' lock: two syncs of one file at once (a lane's sync
        // outside its mutex and a seal's under it) must not record the
        // earlier read last.
        let mut images = self.switches.images.lock();
        self.switches.syncs.fetch_add(1, Ordering::SeqCst);
        // A file removed (or renamed) since the engine's fdatasync began
        // (an old WAL a racing sync writer still held): the sync succeeded
        // and there is nothing left under this name to keep an image of.
        if !path.exists() {
            return Ok(());
        }
        let image = read_all(path)?;
        // Admitted before any crash, so it counts even if the crash came
        // while it ran (its caller is told it succeeded).
        images.insert(path.to_path_buf(), image);
        Ok(())
    }
}

/// The bytes a power cut leaves of a file that holds `cur` now and held
/// `image` at its last fdatasync (see the module docs); `coin` decides, for
/// each page that differs, whether it is kept.
pub(super) fn power_cut_file(cur: &[u8], image: &[u8], mut coin: impl FnMut() -> bool) -> Vec<u8> {
    let mut out = image.to_vec();
    // A file cut shorter since its last sync: the cut may not have reached
    // the disk.
    if cur.len() < image.len() && coin() {
        out.truncate(cur.len());
    }
    if out.len() < cur.len() {
        out.resize(cur.len(), 0);
    }
    let mut end = image.len().min(out.len());
    for p in 0..cur.len().div_ceil(PAGE) {
        let (from, to) = (p * PAGE, ((p + 1) * PAGE).min(cur.len()));
        let had = image.get(from..to.min(image.len())).unwrap_or(&[]);
        let now = &cur[from..to];
        if had == now || (to > out.len()) {
            continue;
        }
        if coin() {
            out[from..to].copy_from_slice(now);
            end = end.max(to);
        }
    }
    out.truncate(end.max(image.len().min(out.len())));
    debug_assert!(out.len() <= cur.len().max(image.len()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Synced bytes always stay; each unsynced page is kept whole or not at
    /// all; a lost page reads as the image (zeros past its end), and the
    /// file ends at the last page kept.
    #[test]
    fn each_unsynced_page_is_kept_or_lost_whole() {
        let image: Vec<u8> = vec![1; 2 * PAGE + 100];
        let mut cur = image.clone();
        cur[10] = 9; // page 0 changed in place
        cur.resize(5 * PAGE + 7, 7); // pages 2 (partly) to 5 are new
        for mask in 0u32..64 {
            let mut bit = 0;
            let out = power_cut_file(&cur, &image, || {
                let keep = mask & (1 << bit) != 0;
                bit += 1;
                keep
            });
            let kept = |p: usize| {
                // The order pages are decided in: 0, 2, 3, 4, 5.
                let i = [0, usize::MAX, 1, 2, 3, 4][p];
                i != usize::MAX && mask & (1 << i) != 0
            };
            assert_eq!(out[10], if kept(0) { 9 } else { 1 }, "mask {mask:b}");
            assert_eq!(&out[PAGE..2 * PAGE], &image[PAGE..2 * PAGE]);
            let last = (2..=5).rev().find(|&p| kept(p));
            let want_len = match last {
                Some(5) => cur.len(),
                Some(p) => (p + 1) * PAGE,
                None => image.len(),
            };
            assert_eq!(out.len(), want_len, "mask {mask:b}");
            for p in 2..=5 {
                let (from, to) = (p * PAGE, ((p + 1) * PAGE).min(out.len()));
                if from >= out.len() {
                    continue;
                }
                let want: Vec<u8> = if kept(p) {
                    cur[from..to].to_vec()
                } else {
                    (from..to)
                        .map(|i| image.get(i).copied().unwrap_or(0))
                        .collect()
                };
                assert_eq!(&out[from..to], &want[..], "page {p} mask {mask:b}");
            }
        }
    }

    #[test]
    fn a_synced_file_is_left_as_it_is() {
        let image: Vec<u8> = (0..3 * PAGE + 5).map(|i| i as u8).collect();
        let out = power_cut_file(&image, &image, || panic!("nothing to decide"));
        assert_eq!(out, image);
    }
}
