//! [`StateMachine`]: openraft's `RaftStateMachine` on the `sm_data`,
//! `sm_meta` and `sm_snapshot` keyspaces, and its [`SnapshotBuilder`].
//!
//! Applying a run of entries is one write batch: the data they change, the
//! last applied log id and (if one of them is a membership entry) the
//! membership. A crash therefore leaves the state machine at the end of
//! some applied run, never inside one, and openraft re-applies from the
//! last applied id. A snapshot is built from a varve snapshot (one
//! sequence number), so the data, the last applied id and the membership
//! it records are of the same moment while applying goes on. Installing a
//! snapshot replaces the data, the applied state and the stored snapshot
//! in one batch.
//!
//! Thread-safety: `Clone + Send + Sync`; openraft applies from one task
//! and builds snapshots on another, which the varve snapshot keeps apart.
//! Invariant: `sm_meta` always describes exactly the data in `sm_data`.

use std::io::Cursor;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use openraft::storage::{RaftStateMachine, Snapshot};
use openraft::{
    BasicNode, Entry, EntryPayload, LogId, RaftSnapshotBuilder, SnapshotMeta, StorageError,
    StoredMembership,
};
use varve::{Db, Keyspace, ReadOptions, WriteBatch, WriteOptions};

use crate::codec::{
    SnapshotWriter, from_json, snapshot_pairs, split_stored_snapshot, stored_snapshot, to_json,
};
use crate::error::{self, OpenError};
use crate::types::{NodeId, Request, Response, TypeConfig};

const LAST_APPLIED: &[u8] = b"last_applied";
const MEMBERSHIP: &[u8] = b"membership";
const CURRENT: &[u8] = b"current";

/// Past every key a `String` can be: UTF-8 never holds the byte 0xff.
const END_OF_KEYS: &[u8] = &[0xff];

type Membership = StoredMembership<NodeId, BasicNode>;

/// The replicated key-value state machine and its snapshots.
#[derive(Clone)]
pub struct StateMachine {
    db: Arc<Db>,
    data: Keyspace,
    meta: Keyspace,
    snapshots: Keyspace,
    /// Snapshots built by this process, for unique snapshot ids.
    built: Arc<AtomicU64>,
}

impl std::fmt::Debug for StateMachine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateMachine")
            .field("db", &self.db.path())
            .finish()
    }
}

/// Builds snapshots of a [`StateMachine`] (a clone of it).
#[derive(Clone, Debug)]
pub struct SnapshotBuilder(StateMachine);

impl StateMachine {
    pub(crate) fn new(
        db: Arc<Db>,
        data: Keyspace,
        meta: Keyspace,
        snapshots: Keyspace,
    ) -> Result<StateMachine, OpenError> {
        let sm = StateMachine {
            db,
            data,
            meta,
            snapshots,
            built: Arc::new(AtomicU64::new(0)),
        };
        // Refuse at open what could not be read later.
        sm.applied(&ReadOptions::default())
            .map_err(OpenError::Decode)?;
        Ok(sm)
    }

    /// The counters of the database under the store (the log's writes and
    /// fdatasyncs among them).
    pub fn db_stats(&self) -> varve::DbStats {
        self.db.stats()
    }

    /// The value of `key` in the state machine (read locally: a read that
    /// must be linearizable asks the leader first, `docs/raft.md`).
    pub fn get(&self, key: &str) -> Result<Option<String>, varve::Error> {
        Ok(self
            .data
            .get(key)?
            .map(|v| String::from_utf8_lossy(&v).into_owned()))
    }

    /// Up to `limit` pairs with keys in `[start, end)` (`end` `None`: to
    /// the last key), in key order.
    pub fn scan(
        &self,
        start: &str,
        end: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, String)>, varve::Error> {
        let end = end.map_or(END_OF_KEYS, str::as_bytes);
        let mut out = Vec::new();
        for kv in self.data.range(start.as_bytes()..end).take(limit) {
            let (k, v) = kv?;
            out.push((
                String::from_utf8_lossy(&k).into_owned(),
                String::from_utf8_lossy(&v).into_owned(),
            ));
        }
        Ok(out)
    }

    /// The last applied log id and membership as of `opts`.
    fn applied(&self, opts: &ReadOptions) -> Result<(Option<LogId<NodeId>>, Membership), String> {
        let read = |key: &[u8]| self.meta.get_opt(key, opts).map_err(|e| e.to_string());
        let last = match read(LAST_APPLIED)? {
            Some(b) => from_json("last applied log id", &b)?,
            None => None,
        };
        let membership = match read(MEMBERSHIP)? {
            Some(b) => from_json("membership", &b)?,
            None => Membership::default(),
        };
        Ok((last, membership))
    }

    fn current_snapshot(&self) -> Result<Option<Snapshot<TypeConfig>>, String> {
        let Some(stored) = self.snapshots.get(CURRENT).map_err(|e| e.to_string())? else {
            return Ok(None);
        };
        let (meta, data) = split_stored_snapshot(&stored)?;
        let meta: SnapshotMeta<NodeId, BasicNode> = from_json("snapshot metadata", meta)?;
        Ok(Some(Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(data.to_vec())),
        }))
    }
}

impl RaftSnapshotBuilder<TypeConfig> for SnapshotBuilder {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError<NodeId>> {
        let sm = &self.0;
        // One sequence number for everything the snapshot records.
        let at = ReadOptions {
            snapshot: Some(sm.db.snapshot()),
            ..ReadOptions::default()
        };
        let (last_log_id, last_membership) = sm.applied(&at).map_err(error::read_sm)?;
        let mut w = SnapshotWriter::new();
        for kv in sm.data.iter_opt(&at) {
            let (k, v) = kv.map_err(error::read_sm)?;
            w.add(&k, &v).map_err(error::read_sm)?;
        }
        let data = w.finish();
        let n = sm.built.fetch_add(1, Ordering::Relaxed);
        let snapshot_id = match &last_log_id {
            Some(l) => format!("{}-{}-{n}", l.leader_id, l.index),
            None => format!("--{n}"),
        };
        let meta = SnapshotMeta {
            last_log_id,
            last_membership,
            snapshot_id,
        };
        let stored = to_json(&meta)
            .and_then(|m| stored_snapshot(&m, &data))
            .map_err(error::write_snapshot)?;
        sm.snapshots
            .put(CURRENT, stored)
            .map_err(error::write_snapshot)?;
        Ok(Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(data)),
        })
    }
}

impl RaftStateMachine<TypeConfig> for StateMachine {
    type SnapshotBuilder = SnapshotBuilder;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<LogId<NodeId>>, Membership), StorageError<NodeId>> {
        self.applied(&ReadOptions::default())
            .map_err(error::read_sm)
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<Response>, StorageError<NodeId>>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + openraft::OptionalSend,
        I::IntoIter: openraft::OptionalSend,
    {
        let mut batch = WriteBatch::new();
        let mut responses = Vec::new();
        let mut last = None;
        let mut membership = None;
        for e in entries {
            last = Some(e.log_id);
            responses.push(match e.payload {
                EntryPayload::Blank => Response::default(),
                EntryPayload::Normal(Request::Set { key, value }) => {
                    batch.put_in(&self.data, &key, &value);
                    Response { value: Some(value) }
                }
                EntryPayload::Normal(Request::Delete { key }) => {
                    batch.delete_in(&self.data, &key);
                    Response::default()
                }
                EntryPayload::Membership(m) => {
                    membership = Some(Membership::new(Some(e.log_id), m));
                    Response::default()
                }
            });
        }
        let Some(last) = last else {
            return Ok(responses);
        };
        batch.put_in(
            &self.meta,
            LAST_APPLIED,
            to_json(&Some(last)).map_err(error::write_sm)?,
        );
        if let Some(m) = membership {
            batch.put_in(
                &self.meta,
                MEMBERSHIP,
                to_json(&m).map_err(error::write_sm)?,
            );
        }
        // Not synced: the log is durable, and a crash that takes back some
        // applied runs leaves an earlier applied id that openraft applies
        // from again.
        self.db.write(batch).map_err(error::write_sm)?;
        Ok(responses)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        SnapshotBuilder(self.clone())
    }

    async fn begin_receiving_snapshot(
        &mut self,
    ) -> Result<Box<Cursor<Vec<u8>>>, StorageError<NodeId>> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<NodeId, BasicNode>,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<(), StorageError<NodeId>> {
        let data = snapshot.into_inner();
        let pairs = snapshot_pairs(&data).map_err(error::read_snapshot)?;
        // The old data, the new data, the applied state and the stored
        // snapshot change in one batch: all of it or none.
        let mut batch = WriteBatch::new();
        batch.delete_range_in(&self.data, &b""[..]..END_OF_KEYS);
        for (k, v) in pairs {
            batch.put_in(&self.data, k, v);
        }
        batch.put_in(
            &self.meta,
            LAST_APPLIED,
            to_json(&meta.last_log_id).map_err(error::write_snapshot)?,
        );
        batch.put_in(
            &self.meta,
            MEMBERSHIP,
            to_json(&meta.last_membership).map_err(error::write_snapshot)?,
        );
        let stored = to_json(meta)
            .and_then(|m| stored_snapshot(&m, &data))
            .map_err(error::write_snapshot)?;
        batch.put_in(&self.snapshots, CURRENT, stored);
        let sync = WriteOptions {
            sync: true,
            disable_wal: false,
        };
        self.db
            .write_opt(batch, &sync)
            .map_err(error::write_snapshot)
    }

    async fn get_current_snapshot(
        &mut self,
    ) -> Result<Option<Snapshot<TypeConfig>>, StorageError<NodeId>> {
        self.current_snapshot().map_err(error::read_snapshot)
    }
}
