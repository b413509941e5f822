//! Repair: rebuild a database from the tables and WALs in its directory,
//! keeping only what checksums prove good, when its manifest (or
//! `CURRENT`) is lost or damaged.
//!
//! Steps (under `LOCK`, so never on an open database):
//! 1. every `nnnnnn.sst` is read end to end (every block checksum); a bad
//!    or empty one is moved to `lost/`, and so is one that the readable
//!    part of the old manifest retired (a compaction input not yet
//!    deleted: merging it could resurrect keys);
//! 2. every `nnnnnn.log` is replayed into memtables; one damaged in the
//!    middle contributes the records before the damage and is moved to
//!    `lost/`;
//! 3. all good tables and replayed WALs are merged into new tables in the
//!    bottom level: per user key only the newest entry survives, and
//!    tombstones are dropped (everything the database holds is in the
//!    merge, so nothing older can show through); an entry covered by a
//!    range tombstone (from the replayed WALs, or recorded by the readable
//!    part of the old manifest) is dropped too; an empty WAL is created
//!    for the next open;
//! 4. the old `MANIFEST-*`, `CURRENT` and `CURRENT.*.tmp` are moved to
//!    `lost/` and a new manifest names the merged tables, with the new WAL
//!    as its log number;
//! 5. only then are the merged tables and WALs removed: the new tables hold
//!    everything they held.
//!
//! Blob files (`docs/blob-files.md`) are not rewritten: the merge reads
//! the value of every surviving pointer and checks it against the
//! pointer's CRC. A key whose value is missing or damaged is dropped and
//! reported (`blob_keys_lost`): the merge keeps only the newest entry of a
//! key, so no older value can take its place. Blob files that surviving
//! keys point into are listed in the new manifest (sealed with their
//! footer's counts and the garbage the merge found, or, without a valid
//! footer, as closed after a crash); the others are moved to `lost/`.
//!
//! Keyspaces: every table records its keyspace in its properties, and
//! every WAL record names the keyspace of each operation, so each
//! keyspace is merged on its own into its own bottom level. The names come
//! from the readable part of the old manifest; a keyspace it does not name
//! comes back as `recovered-<id>`, and tables of a keyspace it dropped go
//! to `lost/`.
//!
//! Why merge instead of listing the old tables in L0: a point read takes
//! the first L0 table (newest by `largest_seq`) that holds the key, which is
//! right only when L0 tables hold disjoint sequence ranges. Tables of
//! different levels do not (a deeper table may hold both an old version of
//! one key and the newest write of another), and a WAL that was not yet
//! retired repeats entries a table holds, so listing them as found could
//! return an older version of a key, or one whose tombstone sits in a
//! table. The merge costs one full rewrite, which repair can afford.
//!
//! A crash at any step leaves either the old state (steps 1–3: the new
//! tables and WAL are unreferenced), a directory without `CURRENT` that
//! repair handles again (step 4; repairing twice merges the same entries
//! twice, which the merge deduplicates), or the repaired database.
//! Single-threaded.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::replay_buffer::ReplayBuffer;
use crate::batch::WriteBatch;
use crate::blob::reader::PointerCheck;
use crate::blob::stage::apply_stage;
use crate::compaction::filter::VersionFilter;
use crate::compaction::output::{OutputConfig, TableOutputs};
use crate::error::{Error, Result};
use crate::filenames::{self, FileKind, LOCK, LOST_DIR, wal_path};
use crate::internal_iter::InternalIterator;
use crate::io::FileSystem;
use crate::iter::merging::MergingIterator;
use crate::keys::{self, ValueKind};
use crate::memtable::MemTable;
use crate::options::Options;
use crate::range_del::{RangeTombstone, RangeTombstones};
use crate::sst::{Table, verify_table};
use crate::version::{BlobFileEdit, FileMetaData, NUM_LEVELS, VersionEdit, VersionSet, manifest};
use crate::wal;

/// What [`repair`](crate::Db::repair) did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepairReport {
    /// Tables that verified and were merged (file numbers).
    pub tables: Vec<u64>,
    /// WALs whose records were merged (file numbers).
    pub wals: Vec<u64>,
    /// WALs damaged in the middle whose good prefix was merged:
    /// (number, records kept).
    pub wals_salvaged: Vec<(u64, u64)>,
    /// Files moved to `lost/`, each with the reason.
    pub lost: Vec<(String, String)>,
    /// The merged tables written (file numbers), all in the bottom level.
    pub outputs: Vec<u64>,
    /// Entries in the merged tables.
    pub entries: u64,
    /// Number of the new manifest.
    pub manifest_number: u64,
    /// Largest sequence number found in the tables and WALs.
    pub last_sequence: u64,
    /// Blob files kept (file numbers): surviving keys point into them.
    pub blob_files: Vec<u64>,
    /// Keys dropped because their blob value was missing or damaged, each
    /// with the reason.
    pub blob_keys_lost: Vec<(Vec<u8>, String)>,
    /// Range tombstones the merge applied (from the replayed WALs and the
    /// readable part of the old manifest). One recorded only in an
    /// unreadable part of the manifest is lost, and the keys it deleted
    /// that are still in tables come back (`docs/range-deletes.md`).
    pub range_tombstones: u64,
    /// The keyspaces other than the default one in the repaired database.
    pub keyspaces: Vec<String>,
}

/// Repairs the database in `dir` (see the module docs), writing tables
/// with `options` (block size, filter, compression, target file size).
pub(crate) fn repair(dir: &Path, options: &Options) -> Result<RepairReport> {
    let fs = Arc::clone(&options.fs);
    if !fs.is_dir(dir)? {
        return Err(Error::NotFound(dir.to_path_buf()));
    }
    let lock_path = dir.join(LOCK);
    let _lock = super::lock::take_lock(fs.as_ref(), dir, &lock_path)?;
    let mut report = RepairReport::default();
    let mut names = fs.list_dir(dir)?;
    names.sort_by_key(|n| (filenames::parse(n).and_then(file_number), n.clone()));
    let lost = dir.join(LOST_DIR);
    let move_to_lost = |name: &str, why: String, report: &mut RepairReport| -> Result<()> {
        fs.create_dir_all(&lost)?;
        fs.rename(&dir.join(name), &lost.join(name))?;
        report.lost.push((name.to_string(), why));
        Ok(())
    };

    // Tables that the readable part of the old manifest retired, and the
    // range tombstones it recorded (the merge applies them).
    let old = read_old_manifest(fs.as_ref(), dir, &names);
    let retired = &old.retired;

    // 1 and 2: what is good, read-only; tables and replayed writes by
    // keyspace.
    let mut tables: BTreeMap<u32, Vec<Arc<Table>>> = BTreeMap::new();
    let mut merged_tables: Vec<String> = Vec::new();
    let mut replayed: BTreeMap<u32, ReplayBuffer> = BTreeMap::new();
    let mut merged_wals: Vec<String> = Vec::new();
    let mut damaged: Vec<(String, String)> = Vec::new();
    let mut blob_names: Vec<(u64, String)> = Vec::new();
    let mut max_number = 0u64;
    for name in &names {
        let kind = filenames::parse(name);
        if let Some(n) = kind.and_then(file_number) {
            max_number = max_number.max(n);
        }
        match kind {
            Some(FileKind::Table(n)) if retired.contains(&n) => {
                damaged.push((
                    name.clone(),
                    "retired by a compaction the manifest records (its deletion had not \
                     happened yet): merging it could bring back deleted or overwritten keys"
                        .into(),
                ));
            }
            Some(FileKind::Table(n)) => match verify_table(fs.as_ref(), &dir.join(name)) {
                Ok(table) if table.properties().num_entries == 0 => {
                    damaged.push((name.clone(), "empty table".into()));
                }
                Ok(table) if old.dropped.contains(&table.properties().keyspace) => {
                    damaged.push((
                        name.clone(),
                        format!(
                            "belongs to keyspace {}, which the manifest dropped",
                            table.properties().keyspace
                        ),
                    ));
                }
                Ok(table) => {
                    report.last_sequence = report.last_sequence.max(table.properties().largest_seq);
                    report.tables.push(n);
                    tables
                        .entry(table.properties().keyspace)
                        .or_default()
                        .push(table);
                    merged_tables.push(name.clone());
                }
                Err(e) => damaged.push((name.clone(), e.to_string())),
            },
            Some(FileKind::Blob(n)) => blob_names.push((n, name.clone())),
            Some(FileKind::Wal(n)) => {
                let (records, last_seq, error) =
                    replay_wal(fs.as_ref(), dir, n, options, &old.dropped, &mut replayed)?;
                report.last_sequence = report.last_sequence.max(last_seq);
                report.wals.push(n);
                match error {
                    None => merged_wals.push(name.clone()),
                    Some(error) => {
                        report.wals_salvaged.push((n, records));
                        damaged.push((name.clone(), error));
                    }
                }
            }
            _ => {}
        }
    }

    let mut memtables: BTreeMap<u32, Vec<Arc<MemTable>>> = BTreeMap::new();
    for (id, buffer) in replayed {
        let mems = buffer
            .finish()
            .map_err(|reason| Error::corruption(dir, 0, reason))?;
        memtables.insert(id, mems);
    }

    // 3: the merge, into new files numbered above everything present.
    let next = AtomicU64::new(max_number + 1);
    let new_number = || next.fetch_add(1, Ordering::Relaxed);
    // Values a crash left in a write lane's staging area belong in their
    // blob file (see `blob::stage`).
    for (n, name) in &blob_names {
        apply_stage(fs.as_ref(), &dir.join(name), *n)?;
    }
    let mut blobs = RepairBlobs {
        pointers: PointerCheck::new(fs.as_ref(), dir),
        kept: HashMap::new(),
        owner: HashMap::new(),
        keys_lost: Vec::new(),
    };
    // Every keyspace with tables or replayed writes, the default first.
    let ids: BTreeSet<u32> = std::iter::once(0)
        .chain(tables.keys().copied())
        .chain(memtables.keys().copied())
        .collect();
    let mut edits: Vec<VersionEdit> = Vec::new();
    for &id in &ids {
        let mut range_tombstones: Vec<RangeTombstone> = old
            .range_tombstones
            .iter()
            .filter(|(k, _)| *k == id)
            .map(|(_, t)| t.clone())
            .collect();
        let mems = memtables.remove(&id).unwrap_or_default();
        for m in &mems {
            if let Some(r) = m.range_tombstones() {
                range_tombstones.extend(r.tombstones().iter().cloned());
            }
        }
        range_tombstones.sort_by_key(|t| t.seq);
        range_tombstones.dedup_by_key(|t| t.seq);
        report.range_tombstones += range_tombstones.len() as u64;
        let ranges = Arc::new(RangeTombstones::new(range_tombstones));
        let ks_tables = tables.remove(&id).unwrap_or_default();
        let (outputs, entries) = merge(
            dir,
            options,
            id,
            (&ks_tables, &mems),
            ranges,
            &new_number,
            &mut blobs,
        )?;
        report.outputs.extend(outputs.iter().map(|f| f.number));
        report.entries += entries;
        let mut edit = VersionEdit {
            keyspace: id,
            ..VersionEdit::default()
        };
        for f in outputs {
            edit.add_file(NUM_LEVELS - 1, f);
        }
        edits.push(edit);
    }
    // The keyspaces, named as the old manifest did (or `recovered-<id>`),
    // are created by the first edit.
    let mut next_keyspace_id = old.next_keyspace_id;
    for &id in ids.iter().filter(|&&id| id != 0) {
        let name = old
            .keyspaces
            .get(&id)
            .cloned()
            .unwrap_or_else(|| format!("recovered-{id}"));
        report.keyspaces.push(name.clone());
        edits[0].created_keyspaces.push((id, name));
        next_keyspace_id = next_keyspace_id.max(id.saturating_add(1));
    }
    // Keyspaces the old manifest names that hold nothing come back empty.
    for (&id, name) in &old.keyspaces {
        if !ids.contains(&id) {
            report.keyspaces.push(name.clone());
            edits[0].created_keyspaces.push((id, name.clone()));
            edits.push(VersionEdit {
                keyspace: id,
                ..VersionEdit::default()
            });
        }
    }
    if next_keyspace_id > 1 {
        edits[0].next_keyspace_id = Some(next_keyspace_id);
    }
    report.blob_keys_lost = std::mem::take(&mut blobs.keys_lost);
    for (n, name) in blob_names {
        match blobs.kept_file(fs.as_ref(), dir, n) {
            Some((file, garbage)) => {
                report.blob_files.push(n);
                // Listed in the version of the keyspace that points into it.
                let owner = blobs.owner.get(&n).copied().unwrap_or(0);
                let Some(edit) = edits.iter_mut().find(|e| e.keyspace == owner) else {
                    debug_assert!(false, "a keyspace with pointers has an edit");
                    continue;
                };
                edit.blob_files.push(file);
                edit.blob_garbage.extend(garbage);
            }
            None => damaged.push((name, "no surviving key points into it".into())),
        }
    }
    let log_number = new_number();
    let mut wal_file = fs.create_writable(&wal_path(dir, log_number))?;
    wal::write_log(wal_file.as_mut(), log_number, &[])?;
    wal_file.sync_data()?;
    drop(wal_file);
    fs.sync_dir(dir)?;
    drop(tables);

    // 4: the new manifest, after the old one is out of the way.
    for (name, why) in damaged {
        move_to_lost(&name, why, &mut report)?;
    }
    for name in &names {
        if let Some(FileKind::Manifest(_) | FileKind::Current | FileKind::Temp) =
            filenames::parse(name)
        {
            move_to_lost(name, "replaced by repair".into(), &mut report)?;
        }
    }
    fs.sync_dir(dir)?;
    let versions = VersionSet::create_with(
        Arc::clone(&fs),
        dir,
        edits,
        Some(log_number),
        report.last_sequence,
    )?;
    report.manifest_number = versions.manifest_number();

    // 5: what was merged is no longer needed.
    for name in merged_tables.iter().chain(&merged_wals) {
        fs.remove_file(&dir.join(name))?;
    }
    fs.sync_dir(dir)?;
    Ok(report)
}

/// Tables that edits of the old manifest (the one `CURRENT` names, else
/// the newest present) deleted and did not add back, read up to the first
/// damaged record. Such a table is the input of a finished compaction (or
/// an older copy) that was not deleted yet; its entries are older than
/// what replaced them, and the tombstones that hid some of them may be
/// gone, so the merge must not see it. What the damaged part of the
/// manifest retired cannot be known: repair is best effort there. Also
/// every range tombstone those edits recorded.
fn read_old_manifest(fs: &dyn FileSystem, dir: &Path, names: &[String]) -> OldManifest {
    let newest = names
        .iter()
        .filter_map(|n| match filenames::parse(n) {
            Some(FileKind::Manifest(m)) => Some(m),
            _ => None,
        })
        .max();
    let mut old = OldManifest {
        next_keyspace_id: 1,
        ..OldManifest::default()
    };
    let Some(number) = manifest::read_current(fs, dir).ok().or(newest) else {
        return old;
    };
    let (mut live, mut deleted) = (HashSet::new(), HashSet::new());
    let mut ranges = std::collections::BTreeMap::new();
    // Whatever the error, the edits before it were applied in order.
    let _ = manifest::read_manifest(fs, dir, number, |edit, _| {
        for (id, name) in &edit.created_keyspaces {
            old.keyspaces.insert(*id, name.clone());
            old.next_keyspace_id = old.next_keyspace_id.max(id.saturating_add(1));
        }
        for id in &edit.dropped_keyspaces {
            old.keyspaces.remove(id);
            old.dropped.insert(*id);
        }
        if let Some(n) = edit.next_keyspace_id {
            old.next_keyspace_id = old.next_keyspace_id.max(n);
        }
        for (_, n) in &edit.deleted_files {
            live.remove(n);
            deleted.insert(*n);
        }
        for (_, f) in &edit.new_files {
            live.insert(f.number);
        }
        // A pruned tombstone is only removed once nothing it hides is
        // left; keeping every one ever recorded is also right.
        for t in &edit.range_tombstones {
            ranges.insert((edit.keyspace, t.seq), t.clone());
        }
        Ok(())
    });
    old.retired = deleted.difference(&live).copied().collect();
    old.range_tombstones = ranges.into_iter().map(|((k, _), t)| (k, t)).collect();
    old
}

/// What repair learns from the readable part of the old manifest.
#[derive(Debug, Default)]
struct OldManifest {
    /// Tables retired by edits (see [`read_old_manifest`]).
    retired: HashSet<u64>,
    /// Every range tombstone recorded, with its keyspace.
    range_tombstones: Vec<(u32, RangeTombstone)>,
    /// The live keyspaces other than the default one, by id.
    keyspaces: BTreeMap<u32, String>,
    /// Keyspaces dropped (their tables and records are not merged).
    dropped: HashSet<u32>,
    /// Above every keyspace id used.
    next_keyspace_id: u32,
}

fn file_number(kind: FileKind) -> Option<u64> {
    match kind {
        FileKind::Wal(n) | FileKind::Table(n) | FileKind::Blob(n) | FileKind::Manifest(n) => {
            Some(n)
        }
        _ => None,
    }
}

/// Merges `tables` and `memtables` into new bottom-level tables: the
/// newest entry of each user key, tombstones dropped. Returns the tables
/// and the number of entries written.
fn merge(
    dir: &Path,
    options: &Options,
    keyspace: u32,
    (tables, memtables): (&[Arc<Table>], &[Arc<MemTable>]),
    ranges: Arc<RangeTombstones>,
    new_number: &(dyn Fn() -> u64 + Sync),
    blobs: &mut RepairBlobs<'_>,
) -> Result<(Vec<FileMetaData>, u64)> {
    let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
    for t in tables {
        children.push(Box::new(t.iter()));
    }
    for m in memtables {
        children.push(Box::new(m.iter()));
    }
    let mut input = MergingIterator::new(children);
    let mut out = TableOutputs::new(
        OutputConfig {
            dir,
            fs: options.fs.as_ref(),
            table_options: crate::sst::TableBuilderOptions {
                keyspace,
                ..super::table_options(options)
            },
            target_file_size: options.target_file_size,
            direct_writes: options.use_direct_io_for_flush_and_compaction,
        },
        new_number,
    );
    // No snapshots, and nothing outside the merge: the newest entry of a
    // key is all any reader could see, and a newest tombstone hides
    // nothing that is left; an entry a range tombstone covers goes, and
    // the tombstone with it.
    let mut filter = VersionFilter::new(Vec::new()).with_range_tombstones(Some(ranges));
    let mut entries = 0u64;
    input.seek_to_first();
    while input.valid() {
        let keep = filter.keep(input.key(), |_| true)
            && match keys::parse_internal_key(input.key()) {
                Some(p) if p.kind == ValueKind::BlobIndex => {
                    blobs.check(keyspace, p.user_key, input.value())
                }
                _ => true,
            };
        if keep {
            out.add(input.key(), input.value())?;
            entries += 1;
        }
        input.next();
    }
    input.status()?;
    let (files, _bytes) = out.finish()?;
    Ok((files, entries))
}

/// A blob file the repaired manifest lists, and its garbage
/// `(number, values, bytes)` if it has some.
type KeptBlobFile = (BlobFileEdit, Option<(u64, u64, u64)>);

/// The blob files a repair reads, and what survived in each.
struct RepairBlobs<'a> {
    pointers: PointerCheck<'a>,
    /// Pointers kept per file: (count, bytes).
    kept: HashMap<u64, (u64, u64)>,
    /// The keyspace whose tables point into each file: the one whose
    /// version lists it (a blob file belongs to one keyspace).
    owner: HashMap<u64, u32>,
    keys_lost: Vec<(Vec<u8>, String)>,
}

impl RepairBlobs<'_> {
    /// Whether the newest entry of `key` in keyspace `keyspace`, the
    /// pointer `value`, names a value that reads back with its CRC, in a
    /// blob file no other keyspace points into; a key that fails is
    /// recorded.
    fn check(&mut self, keyspace: u32, key: &[u8], value: &[u8]) -> bool {
        match self.pointers.check(value) {
            Ok(p) if *self.owner.entry(p.file_number).or_insert(keyspace) != keyspace => {
                self.keys_lost.push((
                    key.to_vec(),
                    format!(
                        "points into blob file {}, which keyspace {} points into",
                        p.file_number, self.owner[&p.file_number]
                    ),
                ));
                false
            }
            Ok(p) => {
                let e = self.kept.entry(p.file_number).or_default();
                e.0 += 1;
                e.1 += u64::from(p.length);
                true
            }
            Err(why) => {
                self.keys_lost.push((key.to_vec(), why));
                false
            }
        }
    }

    /// The new manifest's record of blob file `n`, if a surviving key
    /// points into it: sealed with its footer's counts and the values no
    /// key points to as garbage, or (no valid footer) closed as after a
    /// crash.
    fn kept_file(&self, fs: &dyn FileSystem, dir: &Path, n: u64) -> Option<KeptBlobFile> {
        let &(count, bytes) = self.kept.get(&n)?;
        let reader = self.pointers.reader(n)?;
        let size = fs.file_size(&filenames::blob_file_path(dir, n)).ok()?;
        let footer = reader.chunks(false).ok().and_then(|w| w.footer);
        let exact = footer.filter(|f| count <= f.value_count && bytes <= f.value_bytes);
        Some(match exact {
            Some(f) => (
                BlobFileEdit {
                    number: n,
                    sealed: true,
                    size,
                    value_count: f.value_count,
                    value_bytes: f.value_bytes,
                    crash_closed: false,
                },
                (count < f.value_count).then_some((
                    n,
                    f.value_count - count,
                    f.value_bytes - bytes,
                )),
            ),
            None => (
                BlobFileEdit {
                    number: n,
                    sealed: true,
                    size,
                    value_count: 0,
                    value_bytes: size.saturating_sub(crate::blob::format::PAGE as u64),
                    crash_closed: true,
                },
                None,
            ),
        })
    }
}

/// Replays WAL `n` into `replayed`, checking every batch. Returns the
/// records replayed, the largest sequence number among them and, if the log
/// is damaged in the middle, why (the records before the damage are kept).
fn replay_wal(
    fs: &dyn FileSystem,
    dir: &Path,
    n: u64,
    options: &Options,
    dropped: &HashSet<u32>,
    replayed: &mut BTreeMap<u32, ReplayBuffer>,
) -> Result<(u64, u64, Option<String>)> {
    let path = wal_path(dir, n);
    let (mut records, mut last_seq) = (0u64, 0u64);
    let r = wal::replay(fs, &path, n, |payload, offset| {
        let batch = WriteBatch::from_encoded(payload).map_err(|reason| {
            Error::corruption(&path, offset, format!("bad write batch: {reason}"))
        })?;
        if !batch.is_empty() {
            last_seq = last_seq.max(batch.sequence() + batch.len() as u64 - 1);
        }
        let mut ids: Vec<u32> = batch.iter_in().map(|(id, _)| id).collect();
        ids.sort_unstable();
        ids.dedup();
        for id in ids.into_iter().filter(|id| !dropped.contains(id)) {
            replayed
                .entry(id)
                .or_insert_with(|| ReplayBuffer::for_keyspace(options.write_buffer_size, id))
                .push(batch.clone())
                .map_err(|reason| Error::corruption(&path, offset, reason))?;
        }
        records += 1;
        Ok(())
    });
    match r {
        Ok(_) => Ok((records, last_seq, None)),
        Err(e @ (Error::Corruption { .. } | Error::UnsupportedVersion { .. })) => {
            Ok((records, last_seq, Some(e.to_string())))
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Db, Options};

    fn flip(path: &Path, offset: usize) {
        let mut b = std::fs::read(path).expect("read");
        b[offset] ^= 0x20;
        std::fs::write(path, b).expect("write");
    }

    fn ext_files(dir: &Path, ext: &str) -> Vec<std::path::PathBuf> {
        let mut v: Vec<_> = std::fs::read_dir(dir)
            .expect("dir")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == ext))
            .collect();
        v.sort();
        v
    }

    #[test]
    fn bad_table_goes_to_lost_and_damaged_wal_keeps_its_good_prefix() {
        let tmp = tempfile::tempdir().expect("tmp");
        let dir = tmp.path();
        {
            let db = Db::open(dir, Options::default()).expect("open");
            db.put(b"t1", b"table one").expect("put");
            db.flush().expect("flush");
            db.put(b"t2", b"table two").expect("put");
            db.flush().expect("flush");
            for i in 0..10 {
                db.put(format!("w{i}"), b"wal").expect("put");
            }
            db.close().expect("close");
        }
        let tables = ext_files(dir, "sst");
        assert_eq!(tables.len(), 2);
        flip(&tables[0], 3);
        // Damage the 6th WAL record: five good records before, four after.
        let wal = ext_files(dir, "log").pop().expect("wal");
        let dump = crate::tools::dump_wal(&crate::io::PosixFs, &wal).expect("dump");
        flip(&wal, dump.records[5].offset as usize + 10);

        let r = Db::repair(dir, &Options::default()).expect("repair");
        assert_eq!(r.tables.len(), 1);
        assert_eq!(r.wals_salvaged.len(), 1);
        assert_eq!(r.wals_salvaged[0].1, 5);
        let lost: Vec<&str> = r.lost.iter().map(|(f, _)| f.as_str()).collect();
        assert!(lost.iter().any(|f| f.ends_with(".sst")), "{lost:?}");
        assert!(lost.iter().any(|f| f.ends_with(".log")), "{lost:?}");
        assert!(dir.join(LOST_DIR).join("CURRENT").exists());

        let db = Db::open(dir, Options::default()).expect("open after repair");
        assert_eq!(db.get(b"t1").expect("get"), None, "its table was damaged");
        assert_eq!(db.get(b"t2").expect("get"), Some(b"table two".to_vec()));
        for i in 0..10 {
            let want = (i < 5).then(|| b"wal".to_vec());
            assert_eq!(db.get(format!("w{i}")).expect("get"), want, "w{i}");
        }
        // New writes do not reuse sequence numbers of the kept data.
        db.put(b"t2", b"newer").expect("put");
        assert_eq!(db.get(b"t2").expect("get"), Some(b"newer".to_vec()));
    }

    #[test]
    fn repair_refuses_an_open_database() {
        let tmp = tempfile::tempdir().expect("tmp");
        let db = Db::open(tmp.path(), Options::default()).expect("open");
        let e = Db::repair(tmp.path(), &Options::default()).expect_err("locked");
        assert!(matches!(e, Error::Locked { .. }), "{e}");
        drop(db);
    }
}
