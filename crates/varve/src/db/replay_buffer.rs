//! [`ReplayBuffer`]: the write batches an open (or a repair) replays from
//! the WALs, gathered a memtable's worth at a time and inserted in key
//! order.
//!
//! Inserted in the order they were logged, a crashed writer's random keys
//! send every insert down a cold path of the skiplist: that was 45% of an
//! open that replayed 369k records. Sorted, each insert follows the path
//! the one before it just warmed. The memtables hold the same entries
//! either way (sequence numbers are unique, so the order of insertion
//! cannot change what a read or a flush sees).
//!
//! Single-threaded (recovery and repair run on one thread). Invariants:
//! the memtables hold exactly the entries of the batches pushed, each with
//! its sequence number; a group's memtable has room for every entry of
//! the group (the charges are those the memtable itself counts); groups
//! are cut in push order, so older memtables hold older batches.

use std::sync::Arc;

use super::memtables::batch_charge;
use crate::batch::{BatchOp, WriteBatch};
use crate::keys::{SequenceNumber, ValueKind};
use crate::memtable::MemTable;

/// One replayed entry, borrowed from its batch.
struct Entry<'a> {
    /// The key's first 8 bytes, big-endian (zero-padded): comparing it
    /// orders most keys without a `memcmp`.
    prefix: u64,
    key: &'a [u8],
    seq: SequenceNumber,
    kind: ValueKind,
    value: &'a [u8],
}

/// The first 8 bytes of `key` as a big-endian word, zero-padded: words
/// compare as the keys' first 8 bytes do (a shorter key pads with zeros,
/// and ties go on to the whole key).
fn prefix(key: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    let n = key.len().min(8);
    w[..n].copy_from_slice(&key[..n]);
    u64::from_be_bytes(w)
}

/// Replayed batches on their way into memtables; see the module docs.
pub(crate) struct ReplayBuffer {
    write_buffer_size: usize,
    /// The keyspace whose records this buffer takes (others are skipped).
    keyspace: u32,
    /// Batches of the group being gathered, in replay order.
    batches: Vec<WriteBatch>,
    /// Their memtable charge.
    charge: usize,
    /// Memtables of the groups already inserted, oldest first.
    memtables: Vec<Arc<MemTable>>,
}

impl ReplayBuffer {
    /// Memtables of `write_buffer_size` bytes (larger for one batch that
    /// does not fit in that).
    #[cfg(test)]
    pub(crate) fn new(write_buffer_size: usize) -> ReplayBuffer {
        Self::for_keyspace(write_buffer_size, 0)
    }

    /// A buffer that takes only the records of keyspace `keyspace`.
    pub(crate) fn for_keyspace(write_buffer_size: usize, keyspace: u32) -> ReplayBuffer {
        ReplayBuffer {
            keyspace,
            write_buffer_size,
            batches: Vec::new(),
            charge: 0,
            memtables: Vec::new(),
        }
    }

    /// Adds a replayed batch; a full group goes into its memtable first.
    pub(crate) fn push(&mut self, batch: WriteBatch) -> Result<(), String> {
        let charge = batch_charge(&batch);
        if !self.batches.is_empty() && self.charge + charge > self.write_buffer_size {
            self.seal()?;
        }
        self.charge += charge;
        self.batches.push(batch);
        Ok(())
    }

    /// The memtables of every batch pushed, oldest first (none empty).
    pub(crate) fn finish(mut self) -> Result<Vec<Arc<MemTable>>, String> {
        self.seal()?;
        Ok(self.memtables)
    }

    /// Inserts the gathered group into a new memtable, in key order.
    fn seal(&mut self) -> Result<(), String> {
        let batches = std::mem::take(&mut self.batches);
        let charge = std::mem::take(&mut self.charge);
        let mut entries: Vec<Entry<'_>> =
            Vec::with_capacity(batches.iter().map(WriteBatch::len).sum());
        let mut range_dels = Vec::new();
        for b in &batches {
            for (seq, (id, op)) in (b.sequence()..).zip(b.iter_in()) {
                if id != self.keyspace {
                    continue;
                }
                let (key, kind, value) = match op {
                    BatchOp::Put { key, value } => (key, ValueKind::Value, value),
                    BatchOp::Delete { key } => (key, ValueKind::Deletion, &[][..]),
                    BatchOp::PutBlob { key, pointer } => (key, ValueKind::BlobIndex, pointer),
                    BatchOp::DeleteRange { start, end } => {
                        range_dels.push((seq, start, end));
                        continue;
                    }
                };
                entries.push(Entry {
                    prefix: prefix(key),
                    key,
                    seq,
                    kind,
                    value,
                });
            }
        }
        if entries.is_empty() && range_dels.is_empty() {
            return Ok(());
        }
        // Internal key order: user key ascending (its first 8 bytes as one
        // big-endian word first), then newest first.
        entries.sort_unstable_by(|a, b| {
            a.prefix
                .cmp(&b.prefix)
                .then_with(|| a.key.cmp(b.key))
                .then(b.seq.cmp(&a.seq))
        });
        let mem = MemTable::new(self.write_buffer_size.max(charge));
        for &Entry {
            key,
            seq,
            kind,
            value,
            ..
        } in &entries
        {
            mem.add(seq, kind, key, value)
                .map_err(|_| "memtable rejected a replayed entry".to_string())?;
        }
        for (seq, start, end) in range_dels {
            mem.add_range_deletion(seq, start, end);
        }
        debug_assert_eq!(mem.len(), entries.len(), "every entry inserted");
        self.memtables.push(Arc::new(mem));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::internal_iter::InternalIterator;
    use crate::keys;

    fn batch(first_seq: u64, ops: &[(&[u8], Option<&[u8]>)]) -> WriteBatch {
        let mut b = WriteBatch::new();
        for (k, v) in ops {
            match v {
                Some(v) => b.put(k, v),
                None => b.delete(k),
            }
        }
        b.set_sequence(first_seq);
        b
    }

    /// What a memtable holds, in iteration order.
    fn contents(mem: &Arc<MemTable>) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut it = mem.iter();
        it.seek_to_first();
        let mut out = Vec::new();
        while it.valid() {
            out.push((it.key().to_vec(), it.value().to_vec()));
            it.next();
        }
        out
    }

    #[test]
    fn the_memtables_hold_what_the_batches_said_in_groups() {
        let mut buf = ReplayBuffer::new(4096);
        let mut expected: Vec<(Vec<u8>, u64, ValueKind, Vec<u8>)> = Vec::new();
        for i in 0..300u64 {
            let seq = i + 1;
            // Keys in a scattered order, some written twice, some deleted.
            let k = format!("key{:05}", (i * 7919) % 211).into_bytes();
            let v = format!("value{i}").into_bytes();
            let b = if i % 5 == 0 {
                expected.push((k.clone(), seq, ValueKind::Deletion, Vec::new()));
                batch(seq, &[(&k, None)])
            } else {
                expected.push((k.clone(), seq, ValueKind::Value, v.clone()));
                batch(seq, &[(&k, Some(&v))])
            };
            buf.push(b).expect("push");
        }
        let mems = buf.finish().expect("finish");
        assert!(mems.len() > 1, "groups cut at the write buffer size");
        let mut got = Vec::new();
        let mut last_max = 0;
        for m in &mems {
            let c = contents(m);
            let (mut lo, mut hi) = (u64::MAX, 0);
            for (ik, v) in c {
                let p = keys::parse_internal_key(&ik).expect("internal key");
                lo = lo.min(p.seq);
                hi = hi.max(p.seq);
                got.push((p.user_key.to_vec(), p.seq, p.kind, v));
            }
            assert!(lo > last_max, "an older memtable holds only older batches");
            last_max = hi;
        }
        got.sort_by_key(|e| e.1);
        assert_eq!(got, expected);
    }

    #[test]
    fn prefixes_order_as_the_keys_do() {
        let keys: [&[u8]; 8] = [
            b"",
            b"\0",
            b"\0\0",
            b"a",
            b"a\0",
            b"abcdefgh",
            b"abcdefgh\0",
            b"b",
        ];
        for a in keys {
            for b in keys {
                let by_prefix = prefix(a).cmp(&prefix(b)).then_with(|| a.cmp(b));
                assert_eq!(by_prefix, a.cmp(b), "{a:?} {b:?}");
            }
        }
    }

    #[test]
    fn a_batch_larger_than_the_write_buffer_gets_a_memtable_of_its_own() {
        let mut buf = ReplayBuffer::new(1024);
        let big = vec![7u8; 5000];
        buf.push(batch(1, &[(b"a", Some(b"1"))])).expect("push");
        buf.push(batch(2, &[(b"big", Some(&big)), (b"c", Some(b"3"))]))
            .expect("push");
        buf.push(batch(4, &[(b"d", Some(b"4"))])).expect("push");
        let mems = buf.finish().expect("finish");
        assert_eq!(mems.len(), 3);
        assert_eq!(mems[1].len(), 2);
        assert_eq!(
            mems[1].get(b"big", keys::MAX_SEQUENCE),
            Some((ValueKind::Value, &big[..]))
        );
        assert!(ReplayBuffer::new(1024).finish().expect("empty").is_empty());
    }
}
