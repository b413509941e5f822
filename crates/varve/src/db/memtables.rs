//! The read state of the database: the memtables (the mutable one and the
//! immutable ones waiting to be flushed, newest first, each with the WAL
//! that holds its entries) and the current [`Version`] of the table files.
//!
//! A [`SuperVersion`] is immutable once published; writers publish a new one
//! (under `Db`'s state lock) when they switch memtables, flushes and
//! compactions when they install a version, and readers take an `Arc`
//! clone, so a read never sees a half-done change and the files it needs
//! stay alive (pinned) while it holds the clone. Every entry of a memtable is
//! newer than every entry of older memtables and of the tables.

use std::sync::Arc;

use crate::batch::BatchOp;
use crate::batch::WriteBatch;
use crate::internal_iter::InternalIterator;
use crate::keys::{SequenceNumber, ValueKind};
use crate::memtable::{MemTable, MemTableFull};
use crate::range_del::RangeView;
use crate::version::Version;

/// A memtable and the number of the WAL that holds its entries.
#[derive(Debug, Clone)]
pub(crate) struct Mem {
    /// The table.
    pub table: Arc<MemTable>,
    /// Its WAL.
    pub wal: u64,
}

/// Memtables and tables of one moment, of one keyspace. The database's
/// (the default keyspace's) also holds every other keyspace's, so one
/// swap publishes a change to any of them, and all switch memtables at
/// once: the memtables of every keyspace at one position of `imms` (by
/// `wal`) came from one WAL.
#[derive(Debug, Clone)]
pub(crate) struct SuperVersion {
    /// The memtable receiving writes.
    pub mem: Mem,
    /// Full memtables, newest first.
    pub imms: Vec<Mem>,
    /// The table files.
    pub version: Arc<Version>,
    /// The other keyspaces' states, by id (empty in those states).
    pub keyspaces: Vec<(u32, Arc<SuperVersion>)>,
}

/// What a point lookup found in the memtables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum MemLookup {
    /// The newest visible entry is a value.
    Value(Vec<u8>),
    /// The newest visible entry is a value in a blob file (its pointer).
    Pointer(Vec<u8>),
    /// The newest visible entry is a tombstone.
    Deleted,
    /// No memtable has the key.
    Missing,
}

impl SuperVersion {
    /// Looks `user_key` up at `seq` in the memtables, newest first. An
    /// entry older than `floor` (from [`SuperVersion::range_floor`]) is
    /// deleted by a range tombstone.
    pub(crate) fn get_from_memtables(
        &self,
        user_key: &[u8],
        seq: SequenceNumber,
        floor: SequenceNumber,
    ) -> MemLookup {
        for m in std::iter::once(&self.mem).chain(self.imms.iter()) {
            if let Some((kind, value, found)) = m.table.get_entry(user_key, seq) {
                if found < floor {
                    return MemLookup::Deleted;
                }
                return match kind {
                    ValueKind::Value => MemLookup::Value(value.to_vec()),
                    ValueKind::BlobIndex => MemLookup::Pointer(value.to_vec()),
                    ValueKind::Deletion => MemLookup::Deleted,
                };
            }
        }
        MemLookup::Missing
    }

    /// The newest range tombstone over `user_key` a reader at `seq` sees
    /// (0: none), across the memtables and the version: every entry of
    /// the key older than it is deleted for that reader.
    pub(crate) fn range_floor(&self, user_key: &[u8], seq: SequenceNumber) -> SequenceNumber {
        let mut floor = self.version.range_tombstones().covering(user_key, seq);
        for m in std::iter::once(&self.mem).chain(self.imms.iter()) {
            floor = floor.max(m.table.range_floor(user_key, seq));
        }
        floor
    }

    /// Every range tombstone of the memtables and the version, for an
    /// iterator.
    pub(crate) fn range_view(&self) -> RangeView {
        RangeView::new(
            std::iter::once(&self.mem)
                .chain(self.imms.iter())
                .filter_map(|m| m.table.range_tombstones())
                .chain([Arc::clone(self.version.range_tombstones())]),
        )
    }

    /// One iterator per memtable, newest first.
    pub(crate) fn memtable_iterators(&self) -> Vec<Box<dyn InternalIterator>> {
        std::iter::once(&self.mem)
            .chain(self.imms.iter())
            .map(|m| Box::new(m.table.iter()) as Box<dyn InternalIterator>)
            .collect()
    }

    /// The same state where the current memtable became immutable and
    /// `fresh` receives writes (an empty current memtable is replaced).
    /// Other keyspaces are left as they are.
    pub(crate) fn switched(&self, fresh: Mem) -> SuperVersion {
        let mut imms = Vec::with_capacity(self.imms.len() + 1);
        if !self.mem.table.is_empty() {
            imms.push(self.mem.clone());
        }
        imms.extend(self.imms.iter().cloned());
        SuperVersion {
            mem: fresh,
            imms,
            version: Arc::clone(&self.version),
            keyspaces: self.keyspaces.clone(),
        }
    }

    /// [`switched`](Self::switched) for every keyspace: `fresh` has the new
    /// memtable of each keyspace that lives on (a keyspace missing from
    /// it was dropped and leaves; one new to it starts with `version_of`
    /// its id).
    pub(crate) fn switched_all(
        &self,
        fresh: Mem,
        fresh_keyspaces: Vec<(u32, Mem)>,
        version_of: impl Fn(u32) -> Arc<Version>,
    ) -> SuperVersion {
        let mut next = self.switched(fresh);
        next.keyspaces = fresh_keyspaces
            .into_iter()
            .map(|(id, mem)| {
                let sv = match self.keyspace(id) {
                    Some(old) => old.switched(mem),
                    None => SuperVersion {
                        mem,
                        imms: Vec::new(),
                        version: version_of(id),
                        keyspaces: Vec::new(),
                    },
                };
                (id, Arc::new(sv))
            })
            .collect();
        next
    }

    /// The state of keyspace `id` (`None`: no such keyspace). Not for the
    /// default keyspace (this state is its own).
    pub(crate) fn keyspace(&self, id: u32) -> Option<&Arc<SuperVersion>> {
        debug_assert!(id != 0, "the default keyspace's state is the database's");
        self.keyspaces
            .binary_search_by_key(&id, |(k, _)| *k)
            .ok()
            .map(|i| &self.keyspaces[i].1)
    }

    /// Every keyspace's state with its id, the default keyspace first.
    pub(crate) fn trees(&self) -> impl Iterator<Item = (u32, &SuperVersion)> {
        std::iter::once((0, self)).chain(self.keyspaces.iter().map(|(id, sv)| (*id, &**sv)))
    }

    /// The same state with keyspace `id`'s replaced by `f` of it (the
    /// default keyspace's for 0). Unchanged if there is no such keyspace.
    pub(crate) fn map_tree(
        &self,
        id: u32,
        f: impl FnOnce(&SuperVersion) -> SuperVersion,
    ) -> SuperVersion {
        if id == 0 {
            let mut next = f(self);
            next.keyspaces = self.keyspaces.clone();
            return next;
        }
        let mut next = self.clone();
        if let Some(slot) = next.keyspaces.iter_mut().find(|(k, _)| *k == id) {
            slot.1 = Arc::new(f(&slot.1));
        }
        next
    }

    /// The WAL of the oldest immutable memtable of any keyspace.
    pub(crate) fn oldest_imm_wal(&self) -> Option<u64> {
        self.trees()
            .filter_map(|(_, t)| t.imms.last().map(|m| m.wal))
            .min()
    }

    /// Whether any keyspace has an immutable memtable.
    pub(crate) fn has_imms(&self) -> bool {
        self.trees().any(|(_, t)| !t.imms.is_empty())
    }

    /// Most immutable memtables of one keyspace.
    pub(crate) fn max_imms(&self) -> usize {
        self.trees().map(|(_, t)| t.imms.len()).max().unwrap_or(0)
    }

    /// Most L0 tables of one keyspace.
    pub(crate) fn max_l0_files(&self) -> usize {
        self.trees()
            .map(|(_, t)| t.version.num_files(0))
            .max()
            .unwrap_or(0)
    }

    /// Whether no keyspace's current memtable holds anything.
    pub(crate) fn mems_empty(&self) -> bool {
        self.trees().all(|(_, t)| t.mem.table.is_empty())
    }

    /// Bytes of arena in use across all memtables of every keyspace.
    pub(crate) fn memtable_usage(&self) -> usize {
        self.trees()
            .map(|(_, t)| {
                t.mem.table.memory_usage()
                    + t.imms.iter().map(|m| m.table.memory_usage()).sum::<usize>()
            })
            .sum()
    }
}

/// Upper bound of the memtable bytes `batch` needs.
pub(super) fn batch_charge(batch: &WriteBatch) -> usize {
    batch
        .iter()
        .map(|op| match op {
            BatchOp::Put { key, value } => MemTable::entry_charge(key.len(), value.len()),
            BatchOp::Delete { key } => MemTable::entry_charge(key.len(), 0),
            BatchOp::PutBlob { key, pointer } => MemTable::entry_charge(key.len(), pointer.len()),
            // Kept beside the arena: charged as an entry, an upper bound.
            BatchOp::DeleteRange { start, end } => MemTable::entry_charge(start.len(), end.len()),
        })
        .sum()
}

/// Inserts the operations of `batch` with sequence numbers from
/// `first_seq`, each into the memtable `mem_of` its keyspace (the caller
/// checked that every keyspace of the batch has one).
pub(super) fn insert_batch<'m>(
    mem_of: impl Fn(u32) -> Option<&'m MemTable>,
    batch: &WriteBatch,
    first_seq: SequenceNumber,
) -> Result<(), MemTableFull> {
    if !batch.has_keyspaces() {
        let mem = mem_of(0).ok_or(MemTableFull)?;
        for (seq, op) in (first_seq..).zip(batch.iter()) {
            insert_op(mem, seq, op)?;
        }
        return Ok(());
    }
    for (seq, (id, op)) in (first_seq..).zip(batch.iter_in()) {
        insert_op(mem_of(id).ok_or(MemTableFull)?, seq, op)?;
    }
    Ok(())
}

fn insert_op(mem: &MemTable, seq: SequenceNumber, op: BatchOp<'_>) -> Result<(), MemTableFull> {
    match op {
        BatchOp::Put { key, value } => mem.add(seq, ValueKind::Value, key, value),
        BatchOp::Delete { key } => mem.add(seq, ValueKind::Deletion, key, &[]),
        BatchOp::PutBlob { key, pointer } => mem.add(seq, ValueKind::BlobIndex, key, pointer),
        BatchOp::DeleteRange { start, end } => {
            mem.add_range_deletion(seq, start, end);
            Ok(())
        }
    }
}
