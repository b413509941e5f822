//! The manifest files: `MANIFEST-nnnnnn` (version edits in WAL framing, see
//! `docs/manifest-format.md`) and `CURRENT` (names the live manifest).
//!
//! [`ManifestWriter`] appends edits to one manifest; [`read_manifest`]
//! replays one; [`read_current`] / [`write_current`] handle `CURRENT`.
//! Thread-safety: the writer needs `&mut self` (the version set serialises
//! it); the functions own their file handles. Invariants: a manifest is the
//! WAL framing of log number = manifest number; its first record is the
//! manifest header (magic + format version), its second a snapshot edit, and
//! it is synced before `CURRENT` is switched to it; `CURRENT` is only ever
//! replaced by rename of a synced temporary file, followed by a directory
//! sync, so it always names a complete manifest.

use std::path::{Path, PathBuf};

use super::edit::VersionEdit;
use crate::error::{Error, Result};
use crate::io::FileSystem;
use crate::util::coding::decode_fixed32;
use crate::wal::{self, LogWriter, TailStatus};

/// Name of the file naming the live manifest.
pub(crate) const CURRENT: &str = "CURRENT";

/// The manifest format version this build writes and the newest it reads.
/// Version 2 added the clean-close field (edit tag 7), version 3 the blob
/// file fields (tags 8-11), version 4 range tombstones (tags 12-13);
/// version 5 keyspaces (tags 16-19, and records holding several edits);
/// version 6 blob files of keyspaces other than the default one (blob
/// fields in a keyspace's part are that keyspace's: a build that knew
/// only version 5 would not look for them there); version 7 time samples
/// in milliseconds (tag 20; tag 15's whole seconds are read as the end of
/// their second) and each keyspace's expiry floor (tag 21); older
/// manifests are read as they are.
pub(crate) const MANIFEST_FORMAT_VERSION: u32 = 7;

/// The oldest manifest format version this build reads.
pub(crate) const MIN_MANIFEST_FORMAT_VERSION: u32 = 1;

/// First 8 bytes of the manifest-header record.
pub(crate) const MANIFEST_MAGIC: &[u8; 8] = b"varveMAN";

/// Longest `CURRENT` accepted when reading.
const MAX_CURRENT_LEN: usize = 4096;

/// Path of `MANIFEST-nnnnnn`.
pub(crate) fn manifest_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(manifest_name(number))
}

/// File name `MANIFEST-nnnnnn` of manifest `number`.
pub(crate) fn manifest_name(number: u64) -> String {
    format!("MANIFEST-{number:06}")
}

/// Path of `CURRENT`.
pub(crate) fn current_path(dir: &Path) -> PathBuf {
    dir.join(CURRENT)
}

/// Path of the temporary file used to replace `CURRENT` with manifest `number`.
pub(crate) fn current_temp_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("CURRENT.{number:06}.tmp"))
}

/// The manifest-header record payload: magic | format version (u32 LE).
fn header_payload() -> Vec<u8> {
    let mut p = MANIFEST_MAGIC.to_vec();
    p.extend_from_slice(&MANIFEST_FORMAT_VERSION.to_le_bytes());
    p
}

/// Appends version edits to one manifest file.
#[derive(Debug)]
pub(crate) struct ManifestWriter {
    log: LogWriter,
    number: u64,
}

impl ManifestWriter {
    /// Creates `MANIFEST-<number>` in `dir`, writes the header record and
    /// `snapshot`, and syncs the file. `CURRENT` is not touched.
    pub(crate) fn create(
        fs: &dyn FileSystem,
        dir: &Path,
        number: u64,
        snapshot: &[VersionEdit],
    ) -> Result<ManifestWriter> {
        let file = fs.create_writable(&manifest_path(dir, number))?;
        let mut log = LogWriter::new(file, number)?;
        log.add_record(&header_payload())?;
        log.add_record(&VersionEdit::encode_group(snapshot))?;
        log.sync()?;
        Ok(ManifestWriter { log, number })
    }

    /// Appends `edit` and makes it durable (fdatasync).
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn append(&mut self, edit: &VersionEdit) -> Result<()> {
        self.append_group(std::slice::from_ref(edit))
    }

    /// Appends `edits` as one record (all or nothing, see
    /// [`VersionEdit::encode_group`]) and makes it durable (fdatasync).
    pub(crate) fn append_group(&mut self, edits: &[VersionEdit]) -> Result<()> {
        self.log.add_record(&VersionEdit::encode_group(edits))?;
        self.log.sync()
    }

    /// Bytes in the manifest so far.
    pub(crate) fn file_size(&self) -> u64 {
        self.log.file_size()
    }

    /// This manifest's number.
    pub(crate) fn number(&self) -> u64 {
        self.number
    }
}

/// Points `CURRENT` at manifest `number`: writes `CURRENT.nnnnnn.tmp`, syncs
/// it, renames it over `CURRENT`, syncs the directory. The temporary file is
/// removed (best effort) if a step before the rename fails.
pub(crate) fn write_current(fs: &dyn FileSystem, dir: &Path, number: u64) -> Result<()> {
    let tmp = current_temp_path(dir, number);
    let r = (|| {
        let mut f = fs.create_writable(&tmp)?;
        f.append(format!("{}\n", manifest_name(number)).as_bytes())?;
        f.sync_data()?;
        fs.rename(&tmp, &current_path(dir))
    })();
    if let Err(e) = r {
        let _ = fs.remove_file(&tmp);
        return Err(e);
    }
    fs.sync_dir(dir)
}

/// Reads `CURRENT` and returns the manifest number it names. A missing or
/// malformed `CURRENT` is `Error::Corruption` naming it.
pub(crate) fn read_current(fs: &dyn FileSystem, dir: &Path) -> Result<u64> {
    let path = current_path(dir);
    if !fs.exists(&path)? {
        return Err(Error::corruption(
            &path,
            0,
            "CURRENT is missing, so the live manifest is unknown",
        ));
    }
    let mut file = fs.open_sequential(&path)?;
    let mut data = Vec::new();
    let mut buf = [0u8; 512];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        data.extend_from_slice(&buf[..n]);
        if data.len() > MAX_CURRENT_LEN {
            return Err(Error::corruption(&path, 0, "CURRENT is implausibly long"));
        }
    }
    let bad = |why: &str| {
        Error::corruption(
            &path,
            0,
            format!("CURRENT {why}; expected \"MANIFEST-nnnnnn\\n\""),
        )
    };
    let text = std::str::from_utf8(&data).map_err(|_| bad("is not UTF-8"))?;
    let name = text
        .strip_suffix('\n')
        .ok_or_else(|| bad("does not end with a newline (torn or foreign)"))?;
    let digits = name
        .strip_prefix("MANIFEST-")
        .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(|| bad(&format!("holds {name:?}")))?;
    digits
        .parse::<u64>()
        .map_err(|_| bad(&format!("holds an out-of-range number {digits:?}")))
}

/// What [`read_manifest`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ManifestReadOutcome {
    /// Edits delivered (not counting the header record).
    pub edits: u64,
    /// How the file ended; a torn tail is ignored (its edit was never
    /// acknowledged because it was not synced).
    pub tail: TailStatus,
}

/// Replays manifest `number` in `dir`: checks the header record, decodes
/// every edit and calls `f(edit, offset)`. A bad edit, a missing header, a
/// manifest with no edit, or mid-file damage is `Error::Corruption` naming
/// the manifest and offset; an unknown format version is
/// `Error::UnsupportedVersion`; a torn tail ends the replay normally. An
/// error string from `f` becomes `Corruption` at that edit's offset.
pub(crate) fn read_manifest(
    fs: &dyn FileSystem,
    dir: &Path,
    number: u64,
    mut f: impl FnMut(VersionEdit, u64) -> Result<(), String>,
) -> Result<ManifestReadOutcome> {
    let path = manifest_path(dir, number);
    if !fs.exists(&path)? {
        return Err(Error::corruption(
            &path,
            0,
            "the manifest named by CURRENT is missing",
        ));
    }
    let mut records = 0u64;
    let outcome = wal::replay(fs, &path, number, |payload, offset| {
        records += 1;
        if records == 1 {
            return check_header(&path, payload, offset);
        }
        let edits = VersionEdit::decode_group(payload)
            .map_err(|why| Error::corruption(&path, offset, format!("bad version edit: {why}")))?;
        for edit in edits {
            f(edit, offset).map_err(|why| Error::corruption(&path, offset, why))?;
        }
        Ok(())
    })?;
    if records < 2 {
        return Err(Error::corruption(
            &path,
            outcome.valid_len,
            if records == 0 {
                "manifest has no header record"
            } else {
                "manifest has no snapshot edit"
            },
        ));
    }
    Ok(ManifestReadOutcome {
        edits: records - 1,
        tail: outcome.tail,
    })
}

fn check_header(path: &Path, payload: &[u8], offset: u64) -> Result<()> {
    if payload.get(..8) != Some(&MANIFEST_MAGIC[..]) {
        return Err(Error::corruption(
            path,
            offset,
            "first record is not a manifest header (wrong magic)",
        ));
    }
    let version = decode_fixed32(&payload[8..])
        .ok_or_else(|| Error::corruption(path, offset, "manifest header is too short"))?;
    if !(MIN_MANIFEST_FORMAT_VERSION..=MANIFEST_FORMAT_VERSION).contains(&version) {
        return Err(Error::UnsupportedVersion {
            file: path.to_path_buf(),
            found: version,
            supported: MANIFEST_FORMAT_VERSION,
        });
    }
    if payload.len() != 12 {
        return Err(Error::corruption(
            path,
            offset,
            format!("manifest header of {} bytes, expected 12", payload.len()),
        ));
    }
    Ok(())
}
