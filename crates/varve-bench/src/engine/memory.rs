//! The `memory` engine: a `BTreeMap` behind a read-write lock.
//!
//! Not a storage engine: it measures the harness itself (key and value
//! generation, timing, dispatch), so a result near it means the harness, not
//! the engine, is the limit. It keeps nothing on disk and ignores every
//! storage flag, saying so. Cursors copy the current entry out under the lock.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::Path;

use anyhow::Result;
use parking_lot::RwLock;

use super::{Cursor, Engine, Opened, WriteOpts};
use crate::flags::Flags;

type Map = BTreeMap<Vec<u8>, Vec<u8>>;

/// The in-memory reference engine.
#[derive(Default)]
pub struct Memory {
    map: RwLock<Map>,
}

/// Opens an empty in-memory map.
pub fn open(flags: &Flags, _path: &Path) -> Result<Opened> {
    anyhow::ensure!(
        flags.keyspaces == 1,
        "--keyspaces={}: not supported by the memory engine",
        flags.keyspaces
    );
    Ok(Opened {
        engine: Box::new(Memory::default()),
        ignored: vec![
            "all storage flags (cache_size, bloom_bits, direct IO, compression, sync, \
             disable_wal, write_buffer_size, level0_file_num_compaction_trigger, blob files): the memory engine keeps nothing \
             on disk"
                .into(),
        ],
        options: vec!["a BTreeMap behind a lock: nothing to configure".into()],
    })
}

impl Engine for Memory {
    fn write(&self, batch: &[(&[u8], &[u8])], _opts: WriteOpts) -> Result<()> {
        let mut m = self.map.write();
        for (k, v) in batch {
            m.insert(k.to_vec(), v.to_vec());
        }
        Ok(())
    }

    fn delete_range(&self, start: &[u8], end: &[u8]) -> Result<()> {
        let mut m = self.map.write();
        let doomed: Vec<Vec<u8>> = m
            .range::<[u8], _>((Bound::Included(start), Bound::Excluded(end)))
            .map(|(k, _)| k.clone())
            .collect();
        for k in doomed {
            m.remove(&k);
        }
        Ok(())
    }

    fn get(&self, key: &[u8]) -> Result<Option<usize>> {
        Ok(self.map.read().get(key).map(Vec::len))
    }

    fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool> {
        Ok(self.map.read().get(key).map(|v| f(v)).is_some())
    }

    fn cursor(&self) -> Result<Box<dyn Cursor + '_>> {
        Ok(Box::new(MemCursor {
            map: &self.map,
            cur: None,
        }))
    }

    fn flush(&self) -> Result<Option<String>> {
        Ok(Some("memory engine: nothing to flush".into()))
    }

    fn compact(&self) -> Result<Option<String>> {
        Ok(Some("memory engine: nothing to compact".into()))
    }

    fn wait_for_compaction(&self) -> Result<Option<String>> {
        Ok(None)
    }

    fn stats(&self) -> String {
        format!("memory engine: {} keys\n", self.map.read().len())
    }

    fn close(self: Box<Self>) -> Result<()> {
        Ok(())
    }

    fn version(&self) -> String {
        "memory (BTreeMap)".into()
    }
}

struct MemCursor<'a> {
    map: &'a RwLock<Map>,
    cur: Option<(Vec<u8>, Vec<u8>)>,
}

impl MemCursor<'_> {
    fn set(&mut self, e: Option<(&Vec<u8>, &Vec<u8>)>) {
        self.cur = e.map(|(k, v)| (k.clone(), v.clone()));
    }
}

impl Cursor for MemCursor<'_> {
    fn seek_to_first(&mut self) -> Result<()> {
        let m = self.map.read();
        self.set(m.iter().next());
        Ok(())
    }
    fn seek_to_last(&mut self) -> Result<()> {
        let m = self.map.read();
        self.set(m.iter().next_back());
        Ok(())
    }
    fn seek(&mut self, key: &[u8]) -> Result<()> {
        let m = self.map.read();
        self.set(
            m.range::<[u8], _>((Bound::Included(key), Bound::Unbounded))
                .next(),
        );
        Ok(())
    }
    fn valid(&self) -> bool {
        self.cur.is_some()
    }
    fn key(&self) -> &[u8] {
        self.cur.as_ref().map_or(&[], |c| &c.0)
    }
    fn value(&self) -> &[u8] {
        self.cur.as_ref().map_or(&[], |c| &c.1)
    }
    fn next(&mut self) -> Result<()> {
        if let Some((k, _)) = self.cur.take() {
            let m = self.map.read();
            self.set(
                m.range::<[u8], _>((Bound::Excluded(&k[..]), Bound::Unbounded))
                    .next(),
            );
        }
        Ok(())
    }
    fn prev(&mut self) -> Result<()> {
        if let Some((k, _)) = self.cur.take() {
            let m = self.map.read();
            self.set(
                m.range::<[u8], _>((Bound::Unbounded, Bound::Excluded(&k[..])))
                    .next_back(),
            );
        }
        Ok(())
    }
}
