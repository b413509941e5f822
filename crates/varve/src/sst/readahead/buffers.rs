//! Chunk buffers of [`Readahead`]: the current buffer, spares for
//! background chunks, retired buffers that blocks still borrow, and a
//! per-thread pool that read-ahead states of one thread pass on to each
//! other (a scan cut into many short ranges would otherwise allocate and
//! zero its growing buffers again for every range).
//!
//! A buffer is rewritten only when no block refers to it (`Arc` unique);
//! otherwise it is retired and a spare (or pooled, or new) one takes its
//! place, so a served block's bytes never change. Single-threaded: the
//! pool is thread-local.

use std::path::Path;
use std::sync::Arc;

#[allow(clippy::wildcard_imports)]
use super::*;

/// Most spare buffers kept for background chunks.
pub(super) const SPARE_KEEP: usize = 4;

/// Chunk buffers a thread keeps between read-ahead states, and their total
/// bytes: a scan cut into many short ranges (`par_count` chunks, bounded
/// iterators) would otherwise allocate and zero its growing chunk buffers
/// again for every range.
pub(super) const POOL_KEEP: usize = 8;
pub(super) const POOL_BYTES: usize = 16 << 20;

thread_local! {
    pub(super) static CHUNK_POOL: std::cell::RefCell<Vec<AlignedBuf>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// A pooled buffer of this thread holding at least `len` bytes.
pub(crate) fn pool_take(len: usize) -> Option<AlignedBuf> {
    CHUNK_POOL
        .try_with(|pool| {
            let mut pool = pool.try_borrow_mut().ok()?;
            let i = pool.iter().position(|b| b.capacity() >= len)?;
            Some(pool.swap_remove(i))
        })
        .ok()
        .flatten()
}

/// Gives `buf` to this thread's pool if it is within the bounds (else it
/// is freed).
pub(crate) fn pool_give(buf: AlignedBuf) {
    let _ = CHUNK_POOL.try_with(|pool| {
        if let Ok(mut pool) = pool.try_borrow_mut() {
            let total: usize = pool.iter().map(AlignedBuf::capacity).sum();
            if buf.capacity() >= MIN_READAHEAD
                && pool.len() < POOL_KEEP
                && total + buf.capacity() <= POOL_BYTES
            {
                pool.push(buf);
            }
        }
    });
}

impl Readahead {
    /// Keeps `buf` for a later chunk: at most [`SPARE_KEEP`] spares of at
    /// most two full-size chunks' bytes together (the memory bound of
    /// `docs/readahead.md`), preferring the larger buffers (chunks grow,
    /// rarely shrink); the rest are freed.
    pub(super) fn keep_spare(&mut self, buf: AlignedBuf) {
        // A budgeted state's buffers are never rounded up to a learned
        // piece (`take_spare`), so its spares stay within two of its own
        // chunks (`memory_bound`).
        let largest = if self.gauge.is_some() {
            self.chunk_cap()
        } else {
            self.max.max(LEARNED_PIECE_MAX)
        };
        let budget = 2 * (largest + (16 << 10));
        let cap = buf.capacity();
        if cap > budget {
            return;
        }
        let mut total: usize = self.spare.iter().map(|b| b.capacity()).sum();
        // Make room by dropping smaller spares; a buffer no larger than
        // every spare is the one dropped.
        while self.spare.len() >= SPARE_KEEP || total + cap > budget {
            let Some((i, small)) = self
                .spare
                .iter()
                .enumerate()
                .min_by_key(|(_, b)| b.capacity())
                .map(|(i, b)| (i, b.capacity()))
            else {
                break;
            };
            if small >= cap {
                return;
            }
            self.spare.swap_remove(i);
            total -= small;
        }
        self.spare.push(buf);
    }

    /// Keeps the replaced chunk buffer `old` for reuse: a spare now if no
    /// block refers to it, else once none does (at most [`SPARE_KEEP`]
    /// wait; older ones are left to their blocks).
    pub(super) fn retire(&mut self, old: Arc<AlignedBuf>) {
        match Arc::try_unwrap(old) {
            Ok(buf) => self.keep_spare(buf),
            Err(old) => {
                if self.retired.len() >= SPARE_KEEP {
                    self.retired.remove(0);
                }
                self.retired.push(old);
            }
        }
    }

    /// A buffer for a chunk of `len` bytes: a spare that holds it without
    /// reallocating if there is one (retired buffers no block refers to
    /// any more count), else a new one of at least [`LEARNED_PIECE_MAX`]
    /// (so pieces growing to that size do not reallocate).
    pub(super) fn take_spare(&mut self, len: usize) -> AlignedBuf {
        self.reclaim_retired();
        self.debug_check_bound();
        match self.spare.iter().position(|b| b.capacity() >= len) {
            Some(i) => self.spare.swap_remove(i),
            // A budgeted state neither takes a thread's pooled buffers
            // (which may be larger than its bound allows) nor rounds a
            // buffer past its own `max`.
            None if self.gauge.is_some() => {
                AlignedBuf::new(len.max(LEARNED_PIECE_MAX.min(self.chunk_cap())))
            }
            None => pool_take(len).unwrap_or_else(|| AlignedBuf::new(len.max(LEARNED_PIECE_MAX))),
        }
    }

    /// Retired buffers no block refers to any more become spares.
    pub(super) fn reclaim_retired(&mut self) {
        let mut i = 0;
        while i < self.retired.len() {
            if Arc::strong_count(&self.retired[i]) == 1 {
                let old = self.retired.swap_remove(i);
                if let Ok(buf) = Arc::try_unwrap(old) {
                    self.keep_spare(buf);
                }
            } else {
                i += 1;
            }
        }
    }

    /// The current chunk buffer, `len` bytes long, for a new read: the same
    /// allocation when no block refers to it, else a spare or a new one.
    pub(super) fn writable_buf(
        &mut self,
        len: usize,
        path: &Path,
        offset: u64,
    ) -> Result<&mut [u8]> {
        // Borrowed by a block, or too small (chunks grow): take a spare or
        // pooled buffer rather than allocating and zeroing a new one.
        let replace = Arc::get_mut(&mut self.buf).is_none_or(|b| b.capacity() < len);
        if replace {
            let fresh = Arc::new(self.take_spare(len));
            let old = std::mem::replace(&mut self.buf, fresh);
            self.retire(old);
        }
        match Arc::get_mut(&mut self.buf) {
            Some(b) => {
                b.resize(len);
                Ok(b.as_mut_slice())
            }
            // Unreachable: the buffer was just made unique.
            None => Err(Error::corruption(path, offset, "read-ahead buffer in use")),
        }
    }
}
