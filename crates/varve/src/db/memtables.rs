//! The set of memtables a read must consult: the mutable one and the
//! immutable ones waiting to be flushed (newest first).
//!
//! A [`MemSet`] is immutable once published; the writer publishes a new one
//! (under `Db`'s lock) when it switches memtables, and readers take an
//! `Arc` clone, so a read never sees a half-switched state. Every entry of
//! the mutable memtable is newer than every entry of the immutables, and
//! immutables are ordered newest first.

use std::sync::Arc;

use crate::WriteBatch;
use crate::batch::BatchOp;
use crate::iter::InternalIterator;
use crate::keys::{SequenceNumber, ValueKind};
use crate::memtable::{MemTable, MemTableFull};

/// The memtables of one moment.
#[derive(Debug, Clone)]
pub struct MemSet {
    /// The memtable receiving writes.
    pub mem: Arc<MemTable>,
    /// Full memtables, newest first.
    pub imms: Vec<Arc<MemTable>>,
}

/// What a point lookup found in the memtables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemLookup {
    /// The newest visible entry is a value.
    Value(Vec<u8>),
    /// The newest visible entry is a tombstone.
    Deleted,
    /// No memtable has the key.
    Missing,
}

impl MemSet {
    /// A set with one empty memtable of `capacity` bytes.
    pub fn new(capacity: usize) -> MemSet {
        MemSet {
            mem: Arc::new(MemTable::new(capacity)),
            imms: Vec::new(),
        }
    }

    /// Looks `user_key` up at `seq`, newest memtable first.
    pub fn get(&self, user_key: &[u8], seq: SequenceNumber) -> MemLookup {
        for table in std::iter::once(&self.mem).chain(self.imms.iter()) {
            if let Some((kind, value)) = table.get(user_key, seq) {
                return match kind {
                    ValueKind::Value => MemLookup::Value(value.to_vec()),
                    ValueKind::Deletion => MemLookup::Deleted,
                };
            }
        }
        MemLookup::Missing
    }

    /// One iterator per memtable, newest first.
    pub fn iterators(&self) -> Vec<Box<dyn InternalIterator>> {
        std::iter::once(&self.mem)
            .chain(self.imms.iter())
            .map(|t| Box::new(t.iter()) as Box<dyn InternalIterator>)
            .collect()
    }

    /// A new set where the current memtable became immutable and `fresh`
    /// receives writes (an empty current memtable is simply replaced).
    pub fn switched(&self, fresh: Arc<MemTable>) -> MemSet {
        if self.mem.is_empty() {
            return MemSet {
                mem: fresh,
                imms: self.imms.clone(),
            };
        }
        let mut imms = Vec::with_capacity(self.imms.len() + 1);
        imms.push(Arc::clone(&self.mem));
        imms.extend(self.imms.iter().cloned());
        MemSet { mem: fresh, imms }
    }

    /// Bytes of arena in use across all memtables.
    pub fn memory_usage(&self) -> usize {
        self.mem.memory_usage() + self.imms.iter().map(|m| m.memory_usage()).sum::<usize>()
    }
}

/// Upper bound of the memtable bytes `batch` needs.
pub fn batch_charge(batch: &WriteBatch) -> usize {
    batch
        .iter()
        .map(|op| match op {
            BatchOp::Put { key, value } => MemTable::entry_charge(key.len(), value.len()),
            BatchOp::Delete { key } => MemTable::entry_charge(key.len(), 0),
        })
        .sum()
}

/// Inserts the operations of `batch` with sequence numbers from `first_seq`.
pub fn insert_batch(
    mem: &MemTable,
    batch: &WriteBatch,
    first_seq: SequenceNumber,
) -> Result<(), MemTableFull> {
    for (seq, op) in (first_seq..).zip(batch.iter()) {
        match op {
            BatchOp::Put { key, value } => mem.add(seq, ValueKind::Value, key, value)?,
            BatchOp::Delete { key } => mem.add(seq, ValueKind::Deletion, key, &[])?,
        }
    }
    Ok(())
}
