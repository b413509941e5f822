//! [`KeyspaceState`]: what the database keeps in memory about each live
//! keyspace besides its memtables and version (those are in the
//! `SuperVersion` and the version set): its name, its options and its
//! TTL floor. The default keyspace (id 0) has one too, built from
//! `Options`.
//!
//! Thread-safety: shared through `Arc`; the options are replaced whole
//! under their lock (`Db::keyspace` with new options), the floor is an
//! atomic that only grows. Invariant: ids are never reused (the version
//! set hands them out), so a state found by id is that keyspace's.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::RwLock;

use crate::compaction::picker::LevelTargets;
use crate::options::KeyspaceOptions;
use crate::sst::TableBuilderOptions;

/// One live keyspace's name, options and TTL floor.
#[derive(Debug)]
pub(crate) struct KeyspaceState {
    pub(crate) id: u32,
    pub(crate) name: String,
    options: RwLock<Arc<KeyspaceOptions>>,
    /// Entries of this keyspace with a sequence number below this are
    /// expired (0: none); only grows (`db/ttl.rs`).
    pub(crate) ttl_floor: AtomicU64,
    /// Set once the keyspace is dropped: handles to it fail.
    pub(crate) dropped: AtomicBool,
}

impl KeyspaceState {
    pub(crate) fn new(id: u32, name: String, options: KeyspaceOptions) -> KeyspaceState {
        KeyspaceState {
            id,
            name,
            options: RwLock::new(Arc::new(options)),
            ttl_floor: AtomicU64::new(0),
            dropped: AtomicBool::new(false),
        }
    }

    /// The keyspace's options now.
    pub(crate) fn options(&self) -> Arc<KeyspaceOptions> {
        Arc::clone(&self.options.read())
    }

    /// Replaces the options (they apply to work that starts afterwards).
    pub(crate) fn set_options(&self, options: KeyspaceOptions) {
        *self.options.write() = Arc::new(options);
    }

    /// The expiry floor (0: nothing expired).
    pub(crate) fn ttl_floor(&self) -> u64 {
        self.ttl_floor.load(Ordering::Acquire)
    }

    /// Table-building options of this keyspace.
    pub(crate) fn table_options(&self) -> TableBuilderOptions {
        let o = self.options();
        TableBuilderOptions {
            block_size: o.block_size,
            bloom_bits_per_key: o.bloom_bits_per_key,
            compression: o.compression,
            keyspace: self.id,
            ..TableBuilderOptions::default()
        }
    }

    /// Level targets of this keyspace's compactions.
    pub(crate) fn level_targets(&self) -> LevelTargets {
        let o = self.options();
        LevelTargets {
            l0_compaction_trigger: o.l0_compaction_trigger,
            max_bytes_for_level_base: o.max_bytes_for_level_base,
            max_bytes_for_level_multiplier: o.max_bytes_for_level_multiplier,
        }
    }
}

/// Every live keyspace's state by id, the default keyspace's included.
pub(crate) type KeyspaceStates = BTreeMap<u32, Arc<KeyspaceState>>;
