//! [`Keyspace`]: a handle to one ordered key space of a database, and the
//! [`Db`] calls that create, open, list and drop keyspaces
//! (`docs/keyspaces.md`).
//!
//! Every keyspace has its own memtables, levels, compactions and
//! [`KeyspaceOptions`]; all share the database's WAL, sequence numbers,
//! snapshots, caches and background threads, so a [`WriteBatch`] that
//! writes to several keyspaces is atomic and a snapshot is one view of all
//! of them. The default keyspace (id 0, name `"default"`) is the one the
//! [`Db`] methods use.
//!
//! Thread-safety: a `Keyspace` is `Clone + Send + Sync` (an `Arc` of the
//! database and one of the keyspace's state). Creating and dropping run
//! under the write path's switch lock, one at a time, each as one manifest
//! edit followed by a memtable switch, so every keyspace that exists has a
//! memtable in the current WAL. Invariant: a dropped keyspace's handles
//! fail with [`Error::KeyspaceNotFound`]; its id is never used again.

use std::ops::RangeBounds;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::keyspace_state::KeyspaceState;
use super::read::anchors::{self, Anchors, KeyRange};
use super::read::par_scan::{self, ChunkInfo};
use super::read::{self, Tree, multi_get};
use super::{Db, DbInner, DbIterator, write};
use crate::batch::WriteBatch;
use crate::error::{Error, Result};
use crate::options::{KeyspaceOptions, ReadOptions, WriteOptions};
use crate::version::{DEFAULT_KEYSPACE_NAME, VersionEdit};

/// Longest keyspace name, in bytes.
pub const MAX_KEYSPACE_NAME: usize = 255;

/// A handle to one keyspace of an open database: every read and write of
/// [`Db`] exists on it. Cheap to clone; it keeps the database's memory
/// alive (as an iterator does), not the database open.
///
/// ```
/// # fn main() -> varve::Result<()> {
/// let dir = tempfile::tempdir().expect("temp dir");
/// let db = varve::Db::open(dir.path(), varve::Options::default())?;
/// let users = db.keyspace("users", varve::KeyspaceOptions::default())?;
/// let index = db.keyspace("by_email", varve::KeyspaceOptions::default())?;
/// let mut batch = varve::WriteBatch::new();
/// batch.put_in(&users, b"u1", b"Ada");
/// batch.put_in(&index, b"ada@example.com", b"u1");
/// db.write(batch)?; // both or neither
/// assert_eq!(users.get(b"u1")?, Some(b"Ada".to_vec()));
/// assert_eq!(db.get(b"u1")?, None); // the default keyspace is another one
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Keyspace {
    db: Arc<DbInner>,
    state: Arc<KeyspaceState>,
}

impl std::fmt::Debug for Keyspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keyspace")
            .field("name", &self.state.name)
            .field("id", &self.state.id)
            .finish()
    }
}

impl Db {
    /// The keyspace `name`, created (empty, with `options`) if it does not
    /// exist. An existing keyspace takes `options` from now on: they are
    /// not stored, so give the same ones each time the database is opened
    /// (until then a keyspace runs with the database's [`Options`](crate::Options)).
    /// The name `"default"` is the default keyspace, whose options are the
    /// database's: use [`Db::default_keyspace`].
    ///
    /// Errors: `InvalidArgument` for an empty or too long name, bad
    /// options or `"default"`; `ReadOnly` to create one in a read-only
    /// database; an IO error from the manifest (which poisons the
    /// database, like any failed manifest write).
    pub fn keyspace(&self, name: &str, options: KeyspaceOptions) -> Result<Keyspace> {
        open_keyspace(&self.inner, name, options)
    }

    /// The default keyspace: the one the `Db` methods read and write.
    pub fn default_keyspace(&self) -> Keyspace {
        let state = self
            .inner
            .keyspace_state(0)
            .unwrap_or_else(unreachable_default);
        Keyspace {
            db: Arc::clone(&self.inner),
            state,
        }
    }

    /// The names of every keyspace, `"default"` first, then by creation.
    pub fn keyspaces(&self) -> Vec<String> {
        self.inner
            .keyspaces
            .read()
            .values()
            .map(|k| k.name.clone())
            .collect()
    }

    /// Drops keyspace `name`: its data is gone for every reader from now on
    /// (iterators already open keep reading theirs), its handles fail with
    /// [`Error::KeyspaceNotFound`], and its files are deleted once no
    /// iterator needs them. A keyspace created later under the same name
    /// is a new, empty one.
    ///
    /// Errors: `KeyspaceNotFound`; `InvalidArgument` for `"default"`;
    /// `ReadOnly`; an IO error from the manifest.
    pub fn drop_keyspace(&self, name: &str) -> Result<()> {
        drop_keyspace(&self.inner, name)
    }
}

/// The default keyspace's state exists from open to drop of the `DbInner`.
#[cold]
fn unreachable_default() -> Arc<KeyspaceState> {
    // Never reached: `open` always registers id 0. A stand-in keeps the
    // handle usable rather than panicking on a broken invariant.
    debug_assert!(false, "the default keyspace has no state");
    Arc::new(KeyspaceState::new(
        0,
        DEFAULT_KEYSPACE_NAME.to_string(),
        KeyspaceOptions::default(),
    ))
}

fn check_name(name: &str) -> Result<()> {
    if name.is_empty() || name.len() > MAX_KEYSPACE_NAME {
        return Err(Error::InvalidArgument(format!(
            "keyspace name {name:?} must be 1..={MAX_KEYSPACE_NAME} bytes"
        )));
    }
    if name == DEFAULT_KEYSPACE_NAME {
        return Err(Error::InvalidArgument(
            "\"default\" is the default keyspace: use Db::default_keyspace (its options are \
             the database's)"
                .into(),
        ));
    }
    Ok(())
}

fn find(db: &DbInner, name: &str) -> Option<Arc<KeyspaceState>> {
    db.keyspaces
        .read()
        .values()
        .find(|k| k.name == name)
        .cloned()
}

fn open_keyspace(db: &Arc<DbInner>, name: &str, options: KeyspaceOptions) -> Result<Keyspace> {
    check_name(name)?;
    options.validate()?;
    if db.closed.load(Ordering::Acquire) {
        return Err(Error::Closed);
    }
    let handle = |state: Arc<KeyspaceState>| Keyspace {
        db: Arc::clone(db),
        state,
    };
    if let Some(k) = find(db, name) {
        configure_blob_lanes(db, k.id, options.min_blob_size);
        k.set_options(options);
        // Its TTL may be new: expiry catches up now.
        super::ttl::options_changed(db);
        return Ok(handle(k));
    }
    db.check_writable()?;
    let _one = db.writes.switching();
    if let Some(k) = find(db, name) {
        configure_blob_lanes(db, k.id, options.min_blob_size);
        k.set_options(options);
        super::ttl::options_changed(db);
        return Ok(handle(k));
    }
    let (id, version) = {
        let mut vs = db.versions.lock();
        let id = vs.next_keyspace_id();
        let next = id.checked_add(1).ok_or_else(|| {
            Error::InvalidArgument("every keyspace id has been used (2^32 creations)".into())
        })?;
        let edit = VersionEdit {
            created_keyspaces: vec![(id, name.to_string())],
            next_keyspace_id: Some(next),
            ..VersionEdit::default()
        };
        vs.log_and_apply(edit)
            .inspect_err(|e| db.poison_err("manifest write failed", e))?;
        let version = vs
            .current_of(id)
            .ok_or_else(|| Error::Poisoned("a created keyspace has no version".into()))?;
        (id, version)
    };
    configure_blob_lanes(db, id, options.min_blob_size);
    let state = Arc::new(KeyspaceState::new(id, name.to_string(), options));
    db.keyspaces.write().insert(id, Arc::clone(&state));
    // Its memtable comes with a new WAL (every keyspace has one in each).
    let mut ids = live_ids(db);
    if !ids.contains(&id) {
        ids.push(id);
        ids.sort_unstable();
    }
    write::switch_keyspaces(db, 0, Some((ids, &|_| Arc::clone(&version))))?;
    db.info_log
        .log(format!("created keyspace {name:?} (id {id})"));
    super::ttl::options_changed(db);
    Ok(handle(state))
}

/// Gives keyspace `id` write lanes for values of at least `min` bytes, or
/// sets the threshold of the lanes it has (`None`: every value from now on
/// stays inline; its lanes keep their open files until sealed). A
/// read-only database has no lanes.
fn configure_blob_lanes(db: &DbInner, id: u32, min: Option<usize>) {
    if db.read_only {
        return;
    }
    db.blob_lanes.configure(id, min, |min| {
        super::open::blob_lanes(&db.options, &db.dir, min, db.blob_lanes.room())
    });
}

/// The ids of the keyspaces other than the default one in the current
/// read state.
fn live_ids(db: &DbInner) -> Vec<u32> {
    db.super_version()
        .keyspaces
        .iter()
        .map(|(id, _)| *id)
        .collect()
}

fn drop_keyspace(db: &DbInner, name: &str) -> Result<()> {
    check_name(name)?;
    db.check_writable()?;
    let _one = db.writes.switching();
    let state = find(db, name).ok_or_else(|| Error::KeyspaceNotFound(name.to_string()))?;
    let id = state.id;
    // Its lanes' open files are sealed while it exists, so that an
    // iterator opened before the drop reads their values from the files.
    if let Some(lanes) = db.blob_lanes.of(id) {
        lanes.seal(&write::blobs::VersionFiles::of(db, id))?;
    }
    db.versions
        .lock()
        .log_and_apply(VersionEdit {
            dropped_keyspaces: vec![id],
            ..VersionEdit::default()
        })
        .inspect_err(|e| db.poison_err("manifest write failed", e))?;
    state.dropped.store(true, Ordering::Release);
    db.keyspaces.write().remove(&id);
    // A file a writer racing the drop opened since is let go: its write
    // fails (the keyspace is gone), and its file left the version with
    // the keyspace.
    if let Some(lanes) = db.blob_lanes.remove(id) {
        lanes.abandon();
    }
    let ids: Vec<u32> = live_ids(db).into_iter().filter(|&k| k != id).collect();
    let empty = |_: u32| Arc::new(crate::version::Version::new());
    write::switch_keyspaces(db, 0, Some((ids, &empty)))?;
    db.info_log
        .log(format!("dropped keyspace {name:?} (id {id})"));
    super::obsolete::delete_obsolete_files(db);
    Ok(())
}

impl Keyspace {
    /// The keyspace's name.
    pub fn name(&self) -> &str {
        &self.state.name
    }

    /// Its id in the database's files (0: the default keyspace).
    pub fn id(&self) -> u32 {
        self.state.id
    }

    /// Fails once the keyspace is dropped or the database closed.
    fn live(&self) -> Result<()> {
        if self.state.dropped.load(Ordering::Acquire) {
            return Err(Error::KeyspaceNotFound(self.state.name.clone()));
        }
        if self.db.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        Ok(())
    }

    fn tree(&self) -> Tree<'_> {
        Tree {
            db: &self.db,
            id: self.state.id,
        }
    }

    /// The value of `key`, or `None`.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.get_opt(key, &ReadOptions::default())
    }

    /// [`get`](Self::get) with read options (e.g. a snapshot).
    pub fn get_opt(&self, key: impl AsRef<[u8]>, opts: &ReadOptions) -> Result<Option<Vec<u8>>> {
        self.live()?;
        read::get(&self.db, self.state.id, key.as_ref(), opts)
    }

    /// Looks up many keys as of one sequence number; see [`Db::multi_get`].
    pub fn multi_get<K: AsRef<[u8]>>(
        &self,
        opts: &ReadOptions,
        keys: &[K],
    ) -> Vec<Result<Option<Vec<u8>>>> {
        if let Err(e) = self.live() {
            return keys.iter().map(|_| Err(e.duplicate())).collect();
        }
        multi_get::multi_get(&self.db, self.state.id, opts, keys)
    }

    /// Sets `key` to `value`.
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.put_opt(key, value, &WriteOptions::default())
    }

    /// [`put`](Self::put) with write options.
    pub fn put_opt(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        opts: &WriteOptions,
    ) -> Result<()> {
        self.live()?;
        let (key, value) = (key.as_ref(), value.as_ref());
        write::put(&self.db, self.state.id, key, value, opts)
    }

    /// Deletes `key`.
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        self.delete_opt(key, &WriteOptions::default())
    }

    /// [`delete`](Self::delete) with write options.
    pub fn delete_opt(&self, key: impl AsRef<[u8]>, opts: &WriteOptions) -> Result<()> {
        self.live()?;
        let key = key.as_ref();
        let mut batch = WriteBatch::for_one(key.len(), 0);
        batch.delete_to(self.state.id, key);
        write::write(&self.db, batch, opts)
    }

    /// Deletes every key in `range` with one range tombstone; see
    /// [`Db::delete_range`].
    pub fn delete_range<K: AsRef<[u8]>>(&self, range: std::ops::Range<K>) -> Result<()> {
        self.delete_range_opt(range, &WriteOptions::default())
    }

    /// [`delete_range`](Self::delete_range) with write options.
    pub fn delete_range_opt<K: AsRef<[u8]>>(
        &self,
        range: std::ops::Range<K>,
        opts: &WriteOptions,
    ) -> Result<()> {
        self.live()?;
        let mut batch = WriteBatch::new();
        batch.delete_range_in(self, range);
        write::write(&self.db, batch, opts)
    }

    /// An iterator over all keys in order.
    pub fn iter(&self) -> DbIterator {
        self.iter_opt(&ReadOptions::default())
    }

    /// [`iter`](Self::iter) with read options (snapshot, bounds). On a
    /// dropped keyspace it yields the error.
    pub fn iter_opt(&self, opts: &ReadOptions) -> DbIterator {
        let it = read::iter(&self.db, self.state.id, opts);
        match self.live() {
            Ok(()) => it,
            Err(e) => it.with_error(Some(e)),
        }
    }

    /// An iterator over the keys in `range`, double-ended; see [`Db::range`].
    pub fn range<K: ?Sized + AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> DbIterator {
        self.range_opt(range, &ReadOptions::default())
    }

    /// [`range`](Self::range) with read options.
    pub fn range_opt<K: ?Sized + AsRef<[u8]>, R: RangeBounds<K>>(
        &self,
        range: R,
        opts: &ReadOptions,
    ) -> DbIterator {
        self.iter_opt(&super::read::api::bounded(range, opts))
    }

    /// An iterator over the keys that start with `prefix`.
    pub fn prefix(&self, prefix: impl AsRef<[u8]>) -> DbIterator {
        self.prefix_opt(prefix, &ReadOptions::default())
    }

    /// [`prefix`](Self::prefix) with read options.
    pub fn prefix_opt(&self, prefix: impl AsRef<[u8]>, opts: &ReadOptions) -> DbIterator {
        let p = prefix.as_ref();
        match super::read::api::prefix_end(p) {
            Some(end) => self.range_opt(p..end.as_slice(), opts),
            None => self.range_opt(p.., opts),
        }
    }

    /// Anchor keys of `range`; see [`Db::approximate_key_anchors`].
    pub fn approximate_key_anchors(&self, range: &KeyRange, max_anchors: usize) -> Result<Anchors> {
        self.live()?;
        anchors::approximate_key_anchors(&self.db, self.state.id, range, max_anchors)
    }

    /// Cuts `range` into about equal parts; see [`Db::split_range`].
    pub fn split_range(&self, range: &KeyRange, parts: usize) -> Result<Vec<KeyRange>> {
        self.live()?;
        anchors::split_range(&self.db, self.state.id, range, parts)
    }

    /// A parallel scan of `range`; see [`Db::par_scan`].
    pub fn par_scan<E, F>(
        &self,
        opts: &ReadOptions,
        range: &KeyRange,
        threads: usize,
        f: F,
    ) -> std::result::Result<(), E>
    where
        E: From<Error> + Send,
        F: Fn(&ChunkInfo, &[u8], &[u8]) -> std::result::Result<(), E> + Sync,
    {
        self.live()?;
        par_scan::par_scan(self.tree(), opts, range, threads, f)
    }

    /// An ordered parallel scan of `range`; see [`Db::par_scan_ordered`].
    pub fn par_scan_ordered<E, F>(
        &self,
        opts: &ReadOptions,
        range: &KeyRange,
        threads: usize,
        f: F,
    ) -> std::result::Result<(), E>
    where
        E: From<Error> + Send,
        F: FnMut(&ChunkInfo, &[u8], &[u8]) -> std::result::Result<(), E>,
    {
        self.live()?;
        par_scan::par_scan_ordered(self.tree(), opts, range, threads, f)
    }

    /// Counts the keys of `range`; see [`Db::par_count`].
    pub fn par_count(&self, opts: &ReadOptions, range: &KeyRange, threads: usize) -> Result<u64> {
        self.live()?;
        par_scan::par_count(self.tree(), opts, range, threads)
    }

    /// Compacts the keyspace's tables overlapping `[begin, end]`, after a
    /// flush; see [`Db::compact_range`].
    pub fn compact_range(&self, begin: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        self.live()?;
        self.db.writes.flush_memtable(&self.db)?;
        super::admin::compact_range_in(&self.db, self.state.id, begin, end)
    }

    /// The options this keyspace runs with now.
    pub fn options(&self) -> KeyspaceOptions {
        (*self.state.options()).clone()
    }
}

impl WriteBatch {
    /// Adds `key = value` in keyspace `ks` (the batch stays atomic across
    /// keyspaces).
    pub fn put_in(&mut self, ks: &Keyspace, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        self.put_to(ks.id(), key.as_ref(), value.as_ref());
    }

    /// Adds a deletion of `key` in keyspace `ks`.
    pub fn delete_in(&mut self, ks: &Keyspace, key: impl AsRef<[u8]>) {
        self.delete_to(ks.id(), key.as_ref());
    }

    /// Adds a deletion of every key of `range` in keyspace `ks`.
    pub fn delete_range_in<K: AsRef<[u8]>>(&mut self, ks: &Keyspace, range: std::ops::Range<K>) {
        self.delete_range_to(ks.id(), range.start.as_ref(), range.end.as_ref());
    }
}
