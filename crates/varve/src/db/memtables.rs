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

/// Memtables and tables of one moment.
#[derive(Debug, Clone)]
pub(crate) struct SuperVersion {
    /// The memtable receiving writes.
    pub mem: Mem,
    /// Full memtables, newest first.
    pub imms: Vec<Mem>,
    /// The table files.
    pub version: Arc<Version>,
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
        }
    }

    /// Bytes of arena in use across all memtables.
    pub(crate) fn memtable_usage(&self) -> usize {
        self.mem.table.memory_usage()
            + self
                .imms
                .iter()
                .map(|m| m.table.memory_usage())
                .sum::<usize>()
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

/// Inserts the operations of `batch` with sequence numbers from `first_seq`.
pub(super) fn insert_batch(
    mem: &MemTable,
    batch: &WriteBatch,
    first_seq: SequenceNumber,
) -> Result<(), MemTableFull> {
    for (seq, op) in (first_seq..).zip(batch.iter()) {
        match op {
            BatchOp::Put { key, value } => mem.add(seq, ValueKind::Value, key, value)?,
            BatchOp::Delete { key } => mem.add(seq, ValueKind::Deletion, key, &[])?,
            BatchOp::PutBlob { key, pointer } => {
                mem.add(seq, ValueKind::BlobIndex, key, pointer)?
            }
            BatchOp::DeleteRange { start, end } => mem.add_range_deletion(seq, start, end),
        }
    }
    Ok(())
}
