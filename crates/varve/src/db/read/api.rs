//! The read side of [`Db`]'s API: point reads, `multi_get`, snapshots,
//! iterators (whole, ranges, prefixes), anchors and parallel scans. Each
//! method hands over to the module of its stage (`read`, `multi_get`,
//! `db_iter`, `anchors`, `par_scan`). Thread-safe, like `Db`.

use std::ops::{Bound, RangeBounds};

use super::anchors::{self, Anchors, KeyRange};
use super::multi_get;
use super::par_scan::{self, ChunkInfo};
use crate::db::Db;
use crate::db::{DbIterator, Snapshot};
use crate::error::{Error, Result};
use crate::options::ReadOptions;

impl Db {
    /// The default keyspace, for the read functions.
    fn tree(&self) -> super::Tree<'_> {
        super::Tree {
            db: &self.inner,
            id: 0,
        }
    }

    /// The value of `key`, or `None`.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.get_opt(key, &ReadOptions::default())
    }

    /// The value of `key` with explicit read options (e.g. a snapshot).
    pub fn get_opt(&self, key: impl AsRef<[u8]>, opts: &ReadOptions) -> Result<Option<Vec<u8>>> {
        super::get(&self.inner, 0, key.as_ref(), opts)
    }

    /// Looks up many keys as of one sequence number (the snapshot's, or the
    /// latest): one result per key, in input order. A lookup's error is that
    /// key's result only.
    ///
    /// With [`ReadOptions::async_io`], the keys missing from the memtables
    /// are looked up in the tables concurrently: each runs the ordinary
    /// lookup of [`get`](Self::get) on a fiber of this thread, and their file
    /// reads go through io_uring together, at most
    /// [`ReadOptions::async_queue_depth`] at once, so a cold batch keeps the
    /// disk's queue full. Without io_uring (old kernel, seccomp,
    /// `VARVE_IO=sync`) or when called from inside such a fiber, the lookups
    /// run one after another with the same results.
    ///
    /// ```
    /// # fn main() -> varve::Result<()> {
    /// let dir = tempfile::tempdir().expect("temp dir");
    /// let db = varve::Db::open(dir.path(), varve::Options::default())?;
    /// db.put(b"a", b"1")?;
    /// let opts = varve::ReadOptions { async_io: true, ..Default::default() };
    /// let got = db.multi_get(&opts, &[&b"a"[..], b"b"]);
    /// assert_eq!(got[0].as_ref().ok(), Some(&Some(b"1".to_vec())));
    /// assert_eq!(got[1].as_ref().ok(), Some(&None));
    /// # Ok(())
    /// # }
    /// ```
    pub fn multi_get<K: AsRef<[u8]>>(
        &self,
        opts: &ReadOptions,
        keys: &[K],
    ) -> Vec<Result<Option<Vec<u8>>>> {
        multi_get::multi_get(&self.inner, 0, opts, keys)
    }

    /// A consistent view of the database as of now, released on drop.
    pub fn snapshot(&self) -> Snapshot {
        self.inner.snapshots.acquire(
            self.inner
                .writes
                .visible_sequence(&self.inner.last_sequence),
        )
    }

    /// An iterator over all keys in order, starting at the first.
    pub fn iter(&self) -> DbIterator {
        self.iter_opt(&ReadOptions::default())
    }

    /// An iterator with explicit read options (snapshot, bounds).
    pub fn iter_opt(&self, opts: &ReadOptions) -> DbIterator {
        super::iter(&self.inner, 0, opts)
    }

    /// An iterator over the keys in `range` (any Rust range of byte
    /// strings: `a..b`, `a..=b`, `a..`, `..b`), double-ended:
    /// `db.range(a..b).rev()` walks it backward.
    ///
    /// ```no_run
    /// # fn main() -> varve::Result<()> {
    /// # let db = varve::Db::open("/tmp/doc-range", varve::Options::default())?;
    /// for entry in db.range(b"apple".as_slice()..b"cherry".as_slice()).rev() {
    ///     let (key, value) = entry?;
    ///     println!("{key:?} = {value:?}");
    /// }
    /// # Ok(()) }
    /// ```
    pub fn range<K: ?Sized + AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> DbIterator {
        self.range_opt(range, &ReadOptions::default())
    }

    /// [`range`](Self::range) with read options; the range is intersected
    /// with the options' bounds.
    pub fn range_opt<K: ?Sized + AsRef<[u8]>, R: RangeBounds<K>>(
        &self,
        range: R,
        opts: &ReadOptions,
    ) -> DbIterator {
        self.iter_opt(&bounded(range, opts))
    }

    /// An iterator over the keys that start with `prefix`, double-ended.
    pub fn prefix(&self, prefix: impl AsRef<[u8]>) -> DbIterator {
        self.prefix_opt(prefix, &ReadOptions::default())
    }

    /// [`prefix`](Self::prefix) with read options.
    pub fn prefix_opt(&self, prefix: impl AsRef<[u8]>, opts: &ReadOptions) -> DbIterator {
        let p = prefix.as_ref();
        match prefix_end(p) {
            Some(end) => self.range_opt(p..end.as_slice(), opts),
            None => self.range_opt(p.., opts),
        }
    }

    /// Anchor keys of `range`: sorted, distinct keys strictly inside it
    /// (after its start, before its end), at most `max_anchors`, each with
    /// the approximate bytes since the previous anchor, plus the bytes after
    /// the last one. Sampled from the index of every overlapping table on
    /// every level and from the memtables; no data block is read.
    ///
    /// Errors: only if a table cannot be opened.
    pub fn approximate_key_anchors(&self, range: &KeyRange, max_anchors: usize) -> Result<Anchors> {
        anchors::approximate_key_anchors(&self.inner, 0, range, max_anchors)
    }

    /// Cuts `range` into `parts` contiguous sub-ranges of about equal bytes,
    /// at anchor keys: the first starts at `range.start`, the last ends at
    /// `range.end`, each ends where the next starts. Fewer parts (at least
    /// one) when the range has too few anchors, e.g. when it is empty or
    /// small; `parts == 0` counts as 1.
    pub fn split_range(&self, range: &KeyRange, parts: usize) -> Result<Vec<KeyRange>> {
        anchors::split_range(&self.inner, 0, range, parts)
    }

    /// Calls `f(chunk, key, value)` for every key of `range` (intersected
    /// with the bounds of `opts`) visible in one snapshot (`opts.snapshot`
    /// or one taken now), on `threads` threads (0: one per CPU), the
    /// caller's included.
    ///
    /// The range is cut into many more chunks than threads, handed out
    /// largest first from a shared cursor; within a chunk keys come in
    /// order, chunks run concurrently. The first error (the engine's,
    /// converted with `From`, or the callback's) stops every thread and is
    /// returned.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use varve::{Db, KeyRange, Options, ReadOptions};
    ///
    /// # fn main() -> varve::Result<()> {
    /// let dir = tempfile::tempdir().expect("temp dir");
    /// let db = Db::open(dir.path(), Options::default())?;
    /// for i in 0..1000u32 {
    ///     db.put(format!("key{i:04}"), i.to_le_bytes())?;
    /// }
    /// let sum = AtomicU64::new(0);
    /// let range = KeyRange::new("key0100", "key0200");
    /// db.par_scan(&ReadOptions::default(), &range, 4, |_chunk, _key, value| {
    ///     let v = u32::from_le_bytes(value.try_into().expect("4 bytes"));
    ///     sum.fetch_add(u64::from(v), Ordering::Relaxed);
    ///     Ok::<(), varve::Error>(())
    /// })?;
    /// assert_eq!(sum.into_inner(), (100..200).sum::<u64>());
    /// assert_eq!(db.par_count(&ReadOptions::default(), &range, 4)?, 100);
    /// # Ok(())
    /// # }
    /// ```
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
        par_scan::par_scan(self.tree(), opts, range, threads, f)
    }

    /// [`par_scan`](Self::par_scan) delivering every key in key order to `f`
    /// on the caller's thread, while `threads` workers read chunks ahead (at
    /// most `2 * threads` chunks buffered).
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
        par_scan::par_scan_ordered(self.tree(), opts, range, threads, f)
    }

    /// Number of keys of `range` (intersected with the bounds of `opts`)
    /// visible in one snapshot, counted on `threads` threads like
    /// [`par_scan`](Self::par_scan); values are never copied. A count over
    /// much more data than the block cache holds should pass
    /// `fill_cache: false`: otherwise every block read is inserted and
    /// evicts another (on a hot 10M-key database that churn cost 40% of
    /// the count).
    pub fn par_count(&self, opts: &ReadOptions, range: &KeyRange, threads: usize) -> Result<u64> {
        par_scan::par_count(self.tree(), opts, range, threads)
    }
}

/// The smallest key above every key that starts with `prefix`: the prefix
/// with its last byte below 0xff raised by one (and the rest dropped);
/// `None` when every byte is 0xff (no key is above them all).
pub(crate) fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let last = prefix.iter().rposition(|&b| b != 0xff)?;
    let mut end = prefix[..=last].to_vec();
    end[last] += 1;
    Some(end)
}

/// `opts` with its bounds intersected with `range`.
pub(crate) fn bounded<K: ?Sized + AsRef<[u8]>, R: RangeBounds<K>>(
    range: R,
    opts: &ReadOptions,
) -> ReadOptions {
    // The smallest key after `k` is `k` followed by a zero byte.
    let after = |k: &K| {
        let mut v = k.as_ref().to_vec();
        v.push(0);
        v
    };
    let lower = match range.start_bound() {
        Bound::Included(k) => Some(k.as_ref().to_vec()),
        Bound::Excluded(k) => Some(after(k)),
        Bound::Unbounded => None,
    };
    let upper = match range.end_bound() {
        Bound::Included(k) => Some(after(k)),
        Bound::Excluded(k) => Some(k.as_ref().to_vec()),
        Bound::Unbounded => None,
    };
    let mut opts = opts.clone();
    opts.iterate_lower_bound = match (lower, opts.iterate_lower_bound.take()) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };
    opts.iterate_upper_bound = match (upper, opts.iterate_upper_bound.take()) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    opts
}
