//! [`LogStore`]: openraft's `RaftLogStorage` and `RaftLogReader` on the
//! `raft_log` and `raft_meta` keyspaces.
//!
//! An append writes its entries in one batch with `sync = false` (readable
//! at once, as openraft requires) and hands openraft's flush callback to
//! the store's sync thread, which calls `Db::sync_wal` once for every
//! callback waiting and only then reports them flushed: many appends share
//! one fdatasync, and none is acknowledged before it is durable. The vote
//! is written with `sync = true` before `save_vote` returns.
//!
//! Thread-safety: `Clone + Send + Sync` (clones share the database and the
//! sync thread). Invariants: the log holds consecutive indexes from the
//! last purged one + 1 to the last one (truncate deletes a suffix, purge a
//! prefix, both as range deletes); a flush callback runs after a
//! `sync_wal` that started after its append's write returned.

use std::fmt::Debug;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;
use std::sync::mpsc;

use openraft::storage::{LogFlushed, LogState, RaftLogStorage};
use openraft::{Entry, LogId, OptionalSend, RaftLogReader, StorageError, Vote};
use varve::{Db, Keyspace, WriteBatch, WriteOptions};

use crate::codec::{from_json, log_index, log_key, to_json};
use crate::error;
use crate::types::{NodeId, TypeConfig};

const VOTE: &[u8] = b"vote";
const COMMITTED: &[u8] = b"committed";
const LAST_PURGED: &[u8] = b"last_purged";

/// Ranges of at most this many entries are read with point lookups.
const POINT_READS: u64 = 64;

/// The Raft log and its metadata (vote, committed and last purged ids).
#[derive(Clone)]
pub struct LogStore {
    db: Arc<Db>,
    log: Keyspace,
    meta: Keyspace,
    syncer: Arc<Syncer>,
}

impl Debug for LogStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogStore")
            .field("db", &self.db.path())
            .finish()
    }
}

/// The thread that makes appends durable and reports them flushed.
struct Syncer {
    tx: mpsc::Sender<LogFlushed<TypeConfig>>,
}

impl Syncer {
    fn start(db: Arc<Db>) -> Syncer {
        let (tx, rx) = mpsc::channel::<LogFlushed<TypeConfig>>();
        std::thread::Builder::new()
            .name("varve-raft-sync".into())
            .spawn(move || {
                // Every callback waiting shares one sync; the thread ends
                // when every store handle is gone.
                while let Ok(first) = rx.recv() {
                    let mut waiting = vec![first];
                    waiting.extend(rx.try_iter());
                    let synced = db.sync_wal().map_err(std::io::Error::other);
                    for cb in waiting {
                        cb.log_io_completed(match &synced {
                            Ok(()) => Ok(()),
                            Err(e) => Err(std::io::Error::other(e.to_string())),
                        });
                    }
                }
            })
            .map(|_| ())
            .unwrap_or_else(|e| panic!("varve-raft: cannot start the log sync thread: {e}"));
        Syncer { tx }
    }
}

impl LogStore {
    pub(crate) fn new(db: Arc<Db>, log: Keyspace, meta: Keyspace) -> LogStore {
        let syncer = Arc::new(Syncer::start(Arc::clone(&db)));
        LogStore {
            db,
            log,
            meta,
            syncer,
        }
    }

    fn get_meta<T: serde::de::DeserializeOwned>(&self, key: &[u8]) -> Result<Option<T>, String> {
        match self.meta.get(key).map_err(|e| e.to_string())? {
            None => Ok(None),
            Some(b) => from_json(&String::from_utf8_lossy(key), &b).map(Some),
        }
    }
}

fn bound_key(b: Bound<&u64>) -> Bound<[u8; 8]> {
    match b {
        Bound::Included(&i) => Bound::Included(log_key(i)),
        Bound::Excluded(&i) => Bound::Excluded(log_key(i)),
        Bound::Unbounded => Bound::Unbounded,
    }
}

fn decode_entry(key: &[u8], value: &[u8]) -> Result<Entry<TypeConfig>, String> {
    let index = log_index(key)?;
    let entry: Entry<TypeConfig> = from_json("log entry", value)?;
    if entry.log_id.index != index {
        return Err(format!(
            "the entry at key {index} has index {}",
            entry.log_id.index
        ));
    }
    Ok(entry)
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry<TypeConfig>>, StorageError<NodeId>> {
        // A short bounded range (what replication asks for) is read with
        // point lookups, which find the entries in the memtable without
        // building an iterator; anything else is a range scan.
        let bounded = match (range.start_bound(), range.end_bound()) {
            (Bound::Included(&s), Bound::Excluded(&e)) => Some((s, e)),
            (Bound::Included(&s), Bound::Included(&e)) => Some((s, e.saturating_add(1))),
            _ => None,
        };
        if let Some((start, end)) = bounded
            && end.saturating_sub(start) <= POINT_READS
        {
            let mut out = Vec::new();
            for i in start..end {
                match self.log.get(log_key(i)).map_err(error::read_logs)? {
                    Some(v) => out.push(decode_entry(&log_key(i), &v).map_err(error::read_logs)?),
                    // Purged entries come first; after the first present one,
                    // a missing one is the end of the log (it has no holes).
                    None if out.is_empty() => {}
                    None => break,
                }
            }
            return Ok(out);
        }
        let keys = (bound_key(range.start_bound()), bound_key(range.end_bound()));
        let mut out = Vec::new();
        for kv in self.log.range::<[u8; 8], _>(keys) {
            let (k, v) = kv.map_err(error::read_logs)?;
            out.push(decode_entry(&k, &v).map_err(error::read_logs)?);
        }
        Ok(out)
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError<NodeId>> {
        let last_purged_log_id: Option<LogId<NodeId>> =
            self.get_meta(LAST_PURGED).map_err(error::read_logs)?;
        let last = match self.log.iter().next_back() {
            None => None,
            Some(kv) => {
                let (k, v) = kv.map_err(error::read_logs)?;
                Some(decode_entry(&k, &v).map_err(error::read_logs)?.log_id)
            }
        };
        Ok(LogState {
            last_purged_log_id,
            last_log_id: last.or(last_purged_log_id),
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<NodeId>) -> Result<(), StorageError<NodeId>> {
        let v = to_json(vote).map_err(error::write_vote)?;
        let sync = WriteOptions {
            sync: true,
            disable_wal: false,
        };
        self.meta.put_opt(VOTE, v, &sync).map_err(error::write_vote)
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<NodeId>>, StorageError<NodeId>> {
        self.get_meta(VOTE).map_err(error::read_vote)
    }

    async fn save_committed(
        &mut self,
        committed: Option<LogId<NodeId>>,
    ) -> Result<(), StorageError<NodeId>> {
        // Not synced: a committed id that a crash takes back is found
        // again from the leader.
        let v = to_json(&committed).map_err(error::write_logs)?;
        self.meta.put(COMMITTED, v).map_err(error::write_logs)
    }

    async fn read_committed(&mut self) -> Result<Option<LogId<NodeId>>, StorageError<NodeId>> {
        Ok(self
            .get_meta::<Option<LogId<NodeId>>>(COMMITTED)
            .map_err(error::read_logs)?
            .flatten())
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<TypeConfig>,
    ) -> Result<(), StorageError<NodeId>>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut batch = WriteBatch::new();
        for e in entries {
            let v = to_json(&e).map_err(error::write_logs)?;
            batch.put_in(&self.log, log_key(e.log_id.index), v);
        }
        self.db.write(batch).map_err(error::write_logs)?;
        // Readable now; reported flushed once a sync_wal covers it.
        if let Err(mpsc::SendError(cb)) = self.syncer.tx.send(callback) {
            cb.log_io_completed(Err(std::io::Error::other(
                "varve-raft: the log sync thread is gone",
            )));
        }
        Ok(())
    }

    async fn truncate(&mut self, log_id: LogId<NodeId>) -> Result<(), StorageError<NodeId>> {
        // Every entry from log_id.index on: a suffix, so no hole.
        self.log
            .delete_range(log_key(log_id.index)..log_key(u64::MAX))
            .map_err(error::write_logs)?;
        // u64::MAX itself is never an index openraft uses, but be exact.
        self.log
            .delete(log_key(u64::MAX))
            .map_err(error::write_logs)
    }

    async fn purge(&mut self, log_id: LogId<NodeId>) -> Result<(), StorageError<NodeId>> {
        // The last purged id and the deletion of the prefix, in one batch.
        let mut batch = WriteBatch::new();
        batch.put_in(
            &self.meta,
            LAST_PURGED,
            to_json(&log_id).map_err(error::write_logs)?,
        );
        batch.delete_range_in(&self.log, log_key(0)..log_key(log_id.index));
        batch.delete_in(&self.log, log_key(log_id.index));
        self.db.write(batch).map_err(error::write_logs)
    }
}
