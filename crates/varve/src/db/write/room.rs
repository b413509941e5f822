//! Room for a write: the graded stalls (one short delay near a stop), the
//! stops (too many immutable memtables, too many L0 files), the memtable
//! switch that also starts a new WAL file, and [`restart_log`], the switch
//! `Db::resume` makes after a failure.
//!
//! Thread-safety: [`make_room`], [`switch_memtable`], [`prepare_switch`]
//! and [`restart_log`] run under the write path's `switching` mutex (one
//! switcher at a time).
//! The switch takes the write gate exclusively: every writer that took a
//! sequence number has inserted into the old memtable and placed its record
//! in the old log before the gate is granted. Invariants: the old log is
//! fully written and fdatasync'ed before the new log takes over, so a power
//! loss can never keep a newer log *with records* while losing the end of
//! an older one (a log made ahead by [`prepare_switch`] holds no record
//! until it takes over, and recovery knows such logs); a
//! log that failed is first cut to its stop point (a record boundary) and
//! fdatasync'ed, so it is a complete log too, never a non-final log with a
//! torn tail; a new log whose creation failed is removed, so no stray
//! newer log is left for recovery to read.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::super::DbInner;
use super::super::memtables::{Mem, SuperVersion};
use super::super::stats::Counters;
use super::wal_log::WalLog;
use crate::error::{Error, Result};
use crate::filenames::wal_path;
use crate::internal_iter::InternalIterator;
use crate::keys::parse_internal_key;
use crate::memtable::MemTable;

/// Longest `restart_log` waits for the writers of a failed log to report
/// their lost records (they are only finishing their error path).
const LOST_REPORT_WAIT: Duration = Duration::from_secs(10);

/// One short delay per write while a stop is near (LevelDB's slowdown):
/// L0 at the slowdown trigger, or one immutable memtable short of the stop.
pub(super) fn slowdown(db: &DbInner) {
    let o = &db.options;
    let (l0, imms) = super::super::inner::unpack_write_pressure(
        db.write_pressure.load(std::sync::atomic::Ordering::Acquire),
    );
    let counter = if l0 >= o.l0_slowdown_writes_trigger {
        &db.counters.stall_slowdowns_l0
    } else if o.max_immutable_memtables >= 2 && imms + 1 >= o.max_immutable_memtables {
        &db.counters.stall_slowdowns_memtables
    } else {
        return;
    };
    Counters::add(counter, 1);
    Counters::add(&db.counters.stall_micros, 1000);
    std::thread::sleep(Duration::from_millis(1));
}

/// Waits out stops and switches memtables until the current log's memtable
/// has room for `charge` bytes and pointers to `blob` more bytes of blob
/// values (`Options::max_memtable_blob_bytes`).
pub(super) fn make_room(db: &DbInner, charge: usize, blob: u64) -> Result<()> {
    let _one = db.writes.switching.lock();
    let o = &db.options;
    loop {
        db.check_writable()?;
        if db.writes.current().has_room(charge, blob) {
            return Ok(());
        }
        let sv = db.super_version();
        let l0 = sv.max_l0_files();
        let stop = if sv.max_imms() >= o.max_immutable_memtables {
            Some(&db.counters.stall_stops_memtables)
        } else if l0 >= o.l0_stop_writes_trigger {
            Some(&db.counters.stall_stops_l0)
        } else if sv
            .trees()
            .any(|(_, t)| blob_garbage_outran_gc(db, &t.version))
        {
            Some(&db.counters.stall_stops_blob_garbage)
        } else {
            None
        };
        drop(sv);
        match stop {
            Some(counter) => {
                Counters::add(counter, 1);
                let start = Instant::now();
                db.bg.kick();
                db.bg.wait_progress(Duration::from_millis(100));
                Counters::add(
                    &db.counters.stall_micros,
                    start.elapsed().as_micros() as u64,
                );
            }
            None => {
                switch_memtable(db, charge)?;
                // Other writers may fill the fresh memtable first (the caller
                // then simply retries), but it must be able to hold the batch.
                if !db.writes.current().could_hold(charge) {
                    // A fresh memtable is sized for the batch; never loop
                    // creating logs if that ever fails to hold.
                    return Err(Error::InvalidArgument(format!(
                        "a write batch needing {charge} memtable bytes does not fit a fresh memtable"
                    )));
                }
                return Ok(());
            }
        }
    }
}

/// Whether the next memtable must wait for blob garbage collection in the
/// keyspace of version `v`: with collection on,
/// `blob_garbage_collection_force_threshold` of its sealed value bytes are
/// garbage and a compaction can still reduce that (one is
/// running, or the picker's idle blob work has something: an L0 table that
/// hides garbage, or a file to collect). Checked only at a
/// memtable switch, and `Options::max_memtable_blob_bytes` bounds the blob
/// bytes each switch lets through, so a sustained overwrite writes no
/// faster than its garbage is collected: the space it takes stays bounded.
/// A share that no compaction can reduce never stops writes.
fn blob_garbage_outran_gc(db: &DbInner, v: &crate::version::Version) -> bool {
    let o = &db.options;
    if db.blob_lanes.is_empty() || !o.enable_blob_garbage_collection {
        return false;
    }
    if crate::compaction::blob_gc::garbage_share(v) < o.blob_garbage_collection_force_threshold {
        return false;
    }
    let busy = db.bg.being_compacted.lock().clone();
    let policy = super::super::bg::gc_policy(db);
    !busy.is_empty() || crate::compaction::picker::pick_idle_blob_work(v, &policy, &busy).is_some()
}

/// Makes the memtable immutable, starts a fresh one (at least `need`
/// bytes) and a fresh WAL for it, and wakes the flush thread. Call with
/// `switching` held.
pub(super) fn switch_memtable(db: &DbInner, need: usize) -> Result<()> {
    switch_keyspaces(db, need, None)
}

/// The keyspaces the next WAL has memtables for (besides the default
/// keyspace), and the version of each one new to the read state.
pub(crate) type KeyspaceSet<'a> = (Vec<u32>, &'a dyn Fn(u32) -> Arc<crate::version::Version>);

/// [`switch_memtable`] for every keyspace at once; with `keyspaces`, the
/// new log has memtables for exactly those ids (besides the default
/// keyspace's): a keyspace just created (whose version `version_of`
/// gives) or just dropped switches this way. Call with `switching` held.
pub(crate) fn switch_keyspaces(
    db: &DbInner,
    need: usize,
    keyspaces: Option<KeyspaceSet<'_>>,
) -> Result<()> {
    // The next log is the one made ahead at the old log's high-water mark
    // (`prepare_switch`) if it still fits; otherwise the old log is synced
    // and the next one created here, still before the writers are held
    // (`switching` keeps the current log current meanwhile). Either way
    // the sync under the gate has only the old log's tail left: under a
    // disk busy with blob chunks, syncing it all and creating the next
    // log took 3-130 ms each with every writer waiting.
    let asked = Instant::now();
    let current = db.writes.current();
    let ids: Vec<u32> = match &keyspaces {
        Some((ids, _)) => ids.clone(),
        None => current.keyspace_mems.iter().map(|(id, _)| *id).collect(),
    };
    let ready = db.writes.prepared.lock().take();
    let (log, mem, made_ahead) = match ready {
        Some(p) if p.after == current.number && p.ids == ids && p.log.could_hold(need) => {
            (p.log, p.mem, true)
        }
        stale => {
            if let Some(p) = stale {
                discard(db, p);
            }
            super::sync_log(db, &current)?;
            match create_log(db, need, &ids) {
                Ok((log, mem)) => (log, mem, false),
                Err(e) => {
                    db.poison_err("creating a WAL failed", &e);
                    return Err(e);
                }
            }
        }
    };
    let prepared = asked.elapsed();
    let mut gate = db.writes.gate.write();
    let granted = asked.elapsed();
    let old = Arc::clone(&gate);
    debug_assert!(
        Arc::ptr_eq(&old, &current),
        "the current log changes only under `switching`"
    );
    let old_blob_bytes = old.blob_bytes();
    if let Err(e) = super::sync_log(db, &old) {
        // The new log never takes over: no stray newer log for recovery.
        let path = log.path().to_path_buf();
        drop(log);
        let _ = db.fs.remove_file(&path);
        return Err(e);
    }
    let (number, path) = (log.number, log.path().to_path_buf());
    let fresh: Vec<(u32, Mem)> = log
        .keyspace_mems
        .iter()
        .map(|(id, table)| {
            (
                *id,
                Mem {
                    table: Arc::clone(table),
                    wal: number,
                },
            )
        })
        .collect();
    let empty = |_: u32| Arc::new(crate::version::Version::new());
    let version_of: &dyn Fn(u32) -> Arc<crate::version::Version> = match &keyspaces {
        Some((_, f)) => *f,
        None => &empty,
    };
    db.install_unordered(|sv| {
        sv.switched_all(
            Mem {
                table: mem,
                wal: number,
            },
            fresh,
            version_of,
        )
    });
    *gate = Arc::new(log);
    drop(gate);
    let held = asked.elapsed() - granted;
    let next = db.super_version();
    let (garbage, values) = crate::compaction::blob_gc::garbage_and_values(&next.version);
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    db.info_log.log(format!(
        "memtable switch: {} immutable memtables (the last pointing to {} bytes of blob values), {} L0 tables, sealed blob values {} bytes of which {} garbage, new WAL {} ({}); writers held {:.1} ms (the old WAL's tail synced) after {:.1} ms for the gate",
        next.imms.len(),
        old_blob_bytes,
        next.version.num_files(0),
        values,
        garbage,
        path.display(),
        if made_ahead {
            "made ahead".to_string()
        } else {
            format!("old WAL synced and new WAL made in {:.1} ms", ms(prepared))
        },
        ms(held),
        ms(granted - prepared),
    ));
    db.bg.kick();
    Ok(())
}

/// The next log, made ahead of the switch away from log `after` (whose
/// records up to then were written and synced), with fresh memtables for
/// keyspaces `ids`.
#[derive(Debug)]
pub(crate) struct Prepared {
    after: u64,
    ids: Vec<u32>,
    log: WalLog,
    mem: Arc<MemTable>,
}

/// Makes the switch away from `log` cheap before it is due: writes and
/// syncs what `log` holds so far and creates the next log (file,
/// preallocation, directory entry) while the writers go on filling the
/// last eighth of it; the switch then holds them only while it syncs the
/// tail. Under a disk busy with blob chunks, holding them for the whole
/// sync and creation took 5-150 ms per switch. Called by the writer that
/// took `log` past its high-water mark, after its write; does nothing if a
/// switch is under way (it would wait for it) or already passed `log`, or
/// the next log is made already. A failed sync poisons the database as at
/// the switch; a failed creation is left to the switch, which tries again.
pub(crate) fn prepare_switch(db: &DbInner, log: &Arc<WalLog>) {
    let Some(_one) = db.writes.switching.try_lock() else {
        return;
    };
    // A close sets `closed` before it discards a prepared log under
    // `switching`: none is made after that (`check_writable` fails once
    // `closed` is set). A poisoned database writes nothing more either.
    if db.check_writable().is_err() {
        return;
    }
    let current = db.writes.current();
    if !Arc::ptr_eq(&current, log) || db.writes.prepared.lock().is_some() {
        return;
    }
    if super::sync_log(db, &current).is_err() {
        return;
    }
    let ids: Vec<u32> = current.keyspace_mems.iter().map(|(id, _)| *id).collect();
    match create_log(db, 0, &ids) {
        Ok((next, mem)) => {
            *db.writes.prepared.lock() = Some(Prepared {
                after: current.number,
                ids,
                log: next,
                mem,
            });
        }
        Err(e) => db.info_log.log(format!(
            "making the next WAL ahead of the switch failed (the switch tries again): {e}"
        )),
    }
}

/// Removes the next log made ahead of a switch, if any. Call with
/// `switching` held.
pub(crate) fn discard_prepared(db: &DbInner) {
    if let Some(p) = db.writes.prepared.lock().take() {
        discard(db, p);
    }
}

/// Removes a log made ahead that will not be used (it holds no record).
fn discard(db: &DbInner, p: Prepared) {
    let path = p.log.path().to_path_buf();
    drop(p);
    if let Err(e) = db.fs.remove_file(&path) {
        db.info_log.log(format!(
            "removing the unused WAL {} failed: {e}",
            path.display()
        ));
    }
}

/// Creates the next WAL (fresh memtables of at least `need` bytes behind
/// it: the default keyspace's and one for each of `keyspaces`) and makes
/// its directory entry durable. On failure the file is removed: a stray
/// log newer than the current one would be replayed, and one with a torn
/// header followed by newer logs is corruption.
fn create_log(db: &DbInner, need: usize, keyspaces: &[u32]) -> Result<(WalLog, Arc<MemTable>)> {
    let number = db.versions.lock().new_file_number();
    let path = wal_path(&db.dir, number);
    let size = db.options.write_buffer_size.max(need);
    let mem = Arc::new(MemTable::new(size));
    let others: Vec<(u32, Arc<MemTable>)> = keyspaces
        .iter()
        .map(|&id| (id, Arc::new(MemTable::new(size))))
        .collect();
    // Each keyspace's own write buffer (below the database's, if set).
    let limits: Vec<usize> = keyspaces
        .iter()
        .map(|&id| {
            db.keyspace_state(id)
                .and_then(|k| k.options().write_buffer_size)
                .unwrap_or(usize::MAX)
        })
        .collect();
    let log = WalLog::create(
        db.fs.as_ref(),
        &path,
        db.options.wal_writer,
        number,
        Arc::clone(&mem),
    )
    .map(|log| {
        log.with_blob_budget(db.options.max_memtable_blob_bytes)
            .with_keyspace_mems(others)
            .with_keyspace_limits(limits)
    })
    .and_then(|log| db.fs.sync_dir(&db.dir).map(|()| log));
    match log {
        Ok(log) => Ok((log, mem)),
        Err(e) => {
            if db.fs.exists(&path).unwrap_or(false) {
                let _ = db.fs.remove_file(&path);
            }
            Err(e)
        }
    }
}

/// `Db::resume`'s switch (call with `switching` held, the database
/// poisoned by a resumable failure): ends the current log and starts a
/// fresh one, making every memtable immutable so the flush that follows
/// retires the old logs through a normal manifest edit. Clears the poison
/// while it still holds the write gate, so no write reaches the new log
/// before that.
///
/// A log that still works is written and fdatasync'ed as at any switch. A
/// log that stopped on a failed write is cut to its stop point and
/// fdatasync'ed (every record below it was acknowledged, or will be: its
/// writers still wait for `durable`), and its memtable is rebuilt without
/// the sequence ranges its failed writers reported, so a write that failed
/// never becomes durable or visible after this. The same goes for writes
/// whose blob values could not be synced (`failed_writes`, their records
/// in a log that still works): their entries must all be in the current
/// memtable, or resume gives up (reopen). Fails (changing nothing the next
/// attempt depends on) if a step hits the full disk again.
pub(crate) fn restart_log(db: &DbInner) -> Result<()> {
    discard_prepared(db);
    let mut gate = db.writes.gate.write();
    let old = Arc::clone(&gate);
    let survivors = match old.stopped_at() {
        None => {
            match old.flush_and_sync() {
                Ok(true) => Counters::add(&db.counters.wal_syncs, 1),
                Ok(false) => {}
                Err(e) => return Err(e),
            }
            None
        }
        Some(at) => {
            if old.sync_failed() {
                return Err(Error::Poisoned(format!(
                    "an fdatasync of {} failed, so what it holds is unknown; resume cannot \
                     recover from that, reopen the database",
                    old.path().display()
                )));
            }
            if let Some(e) = old.failure().filter(|e| !e.is_no_space()) {
                return Err(Error::Poisoned(format!(
                    "WAL write failed: {e}; resume recovers only from a full disk \
                     (ENOSPC/EDQUOT): reopen the database"
                )));
            }
            let lost = old.lost_ranges(LOST_REPORT_WAIT)?;
            // Everything below the stop point reached the file; cut what a
            // short write left after it, and make the prefix durable for the
            // sync writers still waiting on it.
            old.wait_written(at)?;
            db.fs.truncate(old.path(), at)?;
            old.sync()?;
            Some((at, lost))
        }
    };
    // In memory only: done before the new log exists, so a failure here
    // leaves no file behind.
    let failed = db.writes.failed_writes.lock().clone();
    // Each keyspace's memtable of the old log, copied without the failed
    // writes' entries (`None`: nothing to drop).
    let kept: Option<Vec<(u32, Vec<Arc<MemTable>>)>> = if survivors.is_some() || !failed.is_empty()
    {
        let mut dropped: Vec<(u64, u64)> = failed.clone();
        if let Some((_, lost)) = &survivors {
            dropped.extend_from_slice(lost);
        }
        let mut count = 0;
        let mut kept = Vec::new();
        let mems =
            std::iter::once((0, &old.mem)).chain(old.keyspace_mems.iter().map(|(id, m)| (*id, m)));
        for (id, mem) in mems {
            let (copies, n) = without_sequences(mem, &dropped, db.options.write_buffer_size)?;
            count += n;
            kept.push((id, copies));
        }
        let expected: u64 = dropped.iter().map(|&(first, last)| last - first + 1).sum();
        if count != expected {
            return Err(Error::Poisoned(format!(
                "of {expected} entries of failed writes only {count} are in the current \
                     memtables (the others went to an older one): resume cannot take them out, \
                     reopen the database"
            )));
        }
        Some(kept)
    } else {
        None
    };
    let ids: Vec<u32> = old.keyspace_mems.iter().map(|(id, _)| *id).collect();
    let (log, mem) = create_log(db, 0, &ids)?;
    let (number, path) = (log.number, log.path().to_path_buf());
    let fresh_of = |table: Arc<MemTable>| Mem { table, wal: number };
    let fresh = fresh_of(mem);
    let fresh_keyspaces: Vec<(u32, Mem)> = log
        .keyspace_mems
        .iter()
        .map(|(id, t)| (*id, fresh_of(Arc::clone(t))))
        .collect();
    match kept {
        None => db.install_unordered(|sv| {
            sv.switched_all(fresh, fresh_keyspaces, |_| {
                Arc::new(crate::version::Version::new())
            })
        }),
        Some(kept) => {
            db.install_unordered(|sv| {
                debug_assert!(
                    Arc::ptr_eq(&sv.mem.table, &old.mem),
                    "the gate's log feeds sv.mem"
                );
                // The copies replace the old log's memtables, which are
                // each tree's current memtable.
                let replace = |t: &SuperVersion, copies: &[Arc<MemTable>], fresh: Mem| {
                    let mut imms: Vec<Mem> = copies
                        .iter()
                        .rev()
                        .filter(|m| !m.is_empty())
                        .map(|table| Mem {
                            table: Arc::clone(table),
                            wal: old.number,
                        })
                        .collect();
                    imms.extend(t.imms.iter().cloned());
                    SuperVersion {
                        mem: fresh,
                        imms,
                        version: Arc::clone(&t.version),
                        keyspaces: Vec::new(),
                    }
                };
                let mut next = sv.clone();
                for (id, copies) in &kept {
                    let fresh = if *id == 0 {
                        fresh.clone()
                    } else {
                        match fresh_keyspaces.iter().find(|(k, _)| k == id) {
                            Some((_, m)) => m.clone(),
                            None => continue,
                        }
                    };
                    next = next.map_tree(*id, |t| replace(t, copies, fresh));
                }
                next
            });
        }
    }
    *gate = Arc::new(log);
    db.writes.failed_writes.lock().clear();
    db.clear_poison(&old);
    drop(gate);
    if !failed.is_empty() {
        db.info_log.log(format!(
            "resume: dropped {} writes whose blob values failed to sync from the memtable",
            failed.len()
        ));
    }
    match survivors {
        None => db.info_log.log(format!(
            "resume: new WAL {}, every memtable is being flushed",
            path.display()
        )),
        Some((at, lost)) => db.info_log.log(format!(
            "resume: cut {} at {at}, dropped {} failed writes from its memtable, new WAL {}",
            old.path().display(),
            lost.len(),
            path.display()
        )),
    }
    db.bg.kick();
    Ok(())
}

/// A copy of `mem` without the entries and range deletions whose sequence
/// number lies in one of `lost` (inclusive ranges), oldest memtable first
/// (more than one only if a copy ever needs more room than the original
/// had), and how many operations (entries and range deletions) it left
/// out.
fn without_sequences(
    mem: &Arc<MemTable>,
    lost: &[(u64, u64)],
    write_buffer_size: usize,
) -> Result<(Vec<Arc<MemTable>>, u64)> {
    let mut lost = lost.to_vec();
    lost.sort_unstable();
    let is_lost = |seq: u64| {
        let i = lost.partition_point(|&(first, _)| first <= seq);
        i > 0 && lost[i - 1].1 >= seq
    };
    let mut out = vec![Arc::new(MemTable::new(mem.capacity()))];
    let mut left_out = 0u64;
    let mut it = mem.iter_all();
    it.seek_to_first();
    while it.valid() {
        let parsed = parse_internal_key(it.key()).ok_or_else(|| {
            Error::Poisoned("a memtable entry has an unparsable internal key".into())
        })?;
        if is_lost(parsed.seq) {
            left_out += 1;
        } else {
            let value = it.value();
            let last = out.last().map(Arc::clone);
            let added = last.is_some_and(|m| {
                m.add(parsed.seq, parsed.kind, parsed.user_key, value)
                    .is_ok()
            });
            if !added {
                let charge = MemTable::entry_charge(parsed.user_key.len(), value.len());
                let m = Arc::new(MemTable::new(write_buffer_size.max(charge)));
                m.add(parsed.seq, parsed.kind, parsed.user_key, value)
                    .map_err(|_| {
                        Error::Poisoned("a fresh memtable rejected a memtable entry".into())
                    })?;
                out.push(m);
            }
        }
        it.next();
    }
    it.status()?;
    // Range deletions take no arena space: the acknowledged ones all go
    // to the first copy (a tombstone hides older entries of every
    // memtable alike). Those of failed writes are left out and counted,
    // empty and hidden ones too (a hidden one is already out of
    // `range_tombstones`).
    if let Some(tombstones) = mem.range_tombstones() {
        for t in tombstones.tombstones().iter().filter(|t| !is_lost(t.seq)) {
            out[0].add_range_deletion(t.seq, &t.start, &t.end);
        }
    }
    left_out += mem
        .range_deletion_seqs()
        .into_iter()
        .filter(|&seq| is_lost(seq))
        .count() as u64;
    Ok((out, left_out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::{MAX_SEQUENCE, ValueKind};

    #[test]
    fn the_copy_drops_exactly_the_lost_sequences() {
        let mem = Arc::new(MemTable::new(1 << 20));
        for seq in 1..=12u64 {
            let key = format!("k{:02}", seq % 5);
            let kind = if seq.is_multiple_of(4) {
                ValueKind::Deletion
            } else {
                ValueKind::Value
            };
            mem.add(seq, kind, key.as_bytes(), &seq.to_le_bytes())
                .expect("add");
        }
        let lost = [(8, 8), (3, 4), (11, 12)];
        let (copies, left_out) = without_sequences(&mem, &lost, 1 << 20).expect("copy");
        assert_eq!(left_out, 5, "entries 3, 4, 8, 11 and 12");
        assert_eq!(copies.len(), 1, "fits one memtable");
        let mut seen = Vec::new();
        let mut it = copies[0].iter();
        it.seek_to_first();
        while it.valid() {
            let p = parse_internal_key(it.key()).expect("key");
            assert_eq!(it.value(), p.seq.to_le_bytes().as_slice());
            assert_eq!(p.kind == ValueKind::Deletion, p.seq.is_multiple_of(4));
            seen.push(p.seq);
            it.next();
        }
        seen.sort_unstable();
        assert_eq!(seen, vec![1, 2, 5, 6, 7, 9, 10]);
        // A copy that outgrows the original's capacity spills into more
        // memtables instead of failing.
        let small = Arc::new(MemTable::new(MemTable::entry_charge(3, 8) * 2));
        for seq in 1..=2u64 {
            small
                .add(seq, ValueKind::Value, b"abc", &[0; 8])
                .expect("add");
        }
        let (copies, left_out) = without_sequences(&small, &[], 1 << 10).expect("copy");
        assert_eq!(left_out, 0);
        assert_eq!(copies.iter().map(|m| m.len()).sum::<usize>(), 2);
    }

    #[test]
    fn the_copy_keeps_acknowledged_range_deletions() {
        let mem = Arc::new(MemTable::new(1 << 20));
        for (seq, key) in [(1u64, "a"), (2, "c"), (3, "e"), (4, "g")] {
            mem.add(seq, ValueKind::Value, key.as_bytes(), b"v")
                .expect("add");
        }
        mem.add_range_deletion(5, b"a", b"d"); // acknowledged
        mem.add_range_deletion(6, b"e", b"f"); // failed, hidden
        mem.hide(6, 6);
        mem.add_range_deletion(7, b"g", b"h"); // failed, not hidden
        mem.add_range_deletion(8, b"x", b"x"); // failed, empty
        mem.add_range_deletion(9, b"m", b"m"); // acknowledged, empty
        let (copies, left_out) = without_sequences(&mem, &[(6, 8)], 1 << 20).expect("copy");
        assert_eq!(left_out, 3, "range deletions 6, 7 and 8");
        let t = copies[0].range_tombstones().expect("tombstones");
        let kept: Vec<(u64, &[u8], &[u8])> = t
            .tombstones()
            .iter()
            .map(|t| (t.seq, t.start.as_slice(), t.end.as_slice()))
            .collect();
        assert_eq!(kept, vec![(5, &b"a"[..], &b"d"[..])]);
        assert_eq!(
            copies[0].range_floor(b"c", MAX_SEQUENCE),
            5,
            "c stays deleted"
        );
        assert_eq!(copies[0].range_floor(b"e", MAX_SEQUENCE), 0);
        assert_eq!(copies[0].range_floor(b"g", MAX_SEQUENCE), 0);
        assert_eq!(copies.iter().map(|m| m.len()).sum::<usize>(), 4);
    }
}
