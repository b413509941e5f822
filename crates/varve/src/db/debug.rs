//! [`DbDebug`]: a read-only view of a database's internals
//! ([`Db::debug`](crate::Db::debug)): the table files of each level, the
//! latest visible sequence number, live snapshots, memtable usage and what
//! recovery did at open. For tools, tests and diagnosis; nothing here is
//! needed to use the database. Borrows the database; thread-safe.

use super::DbInner;
use super::recovery::RecoveryReport;

/// Internals of an open database (see [`Db::debug`](crate::Db::debug)).
#[derive(Clone, Copy)]
pub struct DbDebug<'a> {
    db: &'a DbInner,
}

impl std::fmt::Debug for DbDebug<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DbDebug")
            .field("path", &self.db.dir)
            .finish()
    }
}

impl<'a> DbDebug<'a> {
    pub(crate) fn new(db: &'a DbInner) -> Self {
        DbDebug { db }
    }

    /// Numbers of the table files in each level of the current version
    /// (index = level), with their sizes in bytes.
    pub fn live_tables(self) -> Vec<Vec<(u64, u64)>> {
        let v = self.db.super_version().version.clone();
        (0..crate::version::NUM_LEVELS)
            .map(|l| v.files(l).iter().map(|f| (f.number, f.file_size)).collect())
            .collect()
    }

    /// Entries (every version of every key, tombstones included) in the
    /// table files of the current version.
    pub fn table_entries(self) -> u64 {
        let v = self.db.super_version().version.clone();
        (0..crate::version::NUM_LEVELS)
            .flat_map(|l| v.files(l).iter().map(|f| f.num_entries))
            .sum()
    }

    /// The highest sequence number visible to reads.
    pub fn latest_sequence(self) -> u64 {
        self.db.writes.visible_sequence(&self.db.last_sequence)
    }

    /// Number of live snapshots (including those iterators hold).
    pub fn live_snapshots(self) -> usize {
        self.db.snapshots.len()
    }

    /// The clock time (unix milliseconds of `Options::clock`) through which
    /// the sync thread has taken its `Options::ttl` samples and raised the
    /// expiry floors (tests wait for it after moving a manual clock).
    #[doc(hidden)]
    pub fn ttl_stepped_through(self) -> u64 {
        super::ttl::stepped_through(self.db)
    }

    /// What recovery found when this database was opened.
    pub fn recovery_report(self) -> &'a RecoveryReport {
        &self.db.recovery
    }

    /// Bytes of memtable arena in use.
    pub fn memtable_usage(self) -> usize {
        self.db.super_version().memtable_usage()
    }
}
