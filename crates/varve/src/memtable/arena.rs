//! The memtable arena: one zeroed, 16-byte-aligned heap allocation of a
//! fixed capacity, handed out front to back by a lock-free bump pointer and
//! addressed by `u32` offsets.
//!
//! Thread-safety: [`Arena::alloc`] may be called from many threads at once;
//! each call returns a range no other call returns, so the caller owns it
//! exclusively until it publishes it. Memory is never freed or reused before
//! the arena is dropped, so bytes once written and published stay valid and
//! unchanged for the arena's lifetime.
//!
//! Two kinds of access exist and must never overlap: 4-byte *words* read and
//! written atomically through [`Arena::word`] (skiplist links and node
//! headers), and plain *bytes* written once through [`Arena::write`] before
//! publication and read through [`Arena::slice`] after it.
//!
//! Under `--cfg loom` the words do not live in the arena memory but in a side
//! table of loom atomics (one per 4-byte word of the arena), so that loom can
//! model their memory ordering; the plain bytes still live in the arena.
//!
//! Invariants: `used <= capacity <= MAX_CAPACITY` (so every offset and every
//! end of a range fits in `u32`); `used` only grows; `used` is exactly the
//! number of bytes handed out, alignment padding included.

use std::alloc::{self, Layout};
use std::ptr::NonNull;

use crate::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

/// Largest arena capacity: every offset and range end must fit in a `u32`.
pub(crate) const MAX_CAPACITY: usize = u32::MAX as usize;

/// Alignment of the arena's base address. 16 (the allocator's natural
/// alignment) lets `alloc_zeroed` use calloc, whose large allocations come
/// from mmap already zeroed and are backed by memory only as they are
/// touched: a 64 MiB memtable costs nothing until it fills. A larger
/// alignment makes Rust memset the whole arena up front.
const BASE_ALIGN: usize = 16;

/// A fixed-size bump allocator over one heap allocation.
pub(crate) struct Arena {
    /// Start of the allocation of `layout`.
    base: NonNull<u8>,
    layout: Layout,
    /// Bytes handed out so far (the bump pointer).
    used: AtomicUsize,
    /// Under loom: the atomic words, one per 4 bytes of the arena.
    #[cfg(loom)]
    words: Box<[AtomicU32]>,
}

// SAFETY: the arena owns its allocation (like a `Box<[u8]>`); all shared
// mutation goes through atomics (`used`, the words) or through the unsafe
// `write`, whose contract forbids concurrent access to the written range.
unsafe impl Send for Arena {}
// SAFETY: see `Send`; `&Arena` hands out only atomics and, via `slice`,
// shared views of bytes that the contracts of `write`/`slice` keep immutable.
unsafe impl Sync for Arena {}

impl Arena {
    /// An arena of `capacity` bytes, clamped to `1..=MAX_CAPACITY`.
    pub(crate) fn new(capacity: usize) -> Arena {
        let capacity = capacity.clamp(1, MAX_CAPACITY);
        let layout = Layout::from_size_align(capacity, BASE_ALIGN)
            .expect("capacity <= u32::MAX and a power-of-two alignment form a valid layout");
        // SAFETY: `layout` has a non-zero size (capacity >= 1).
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let Some(base) = NonNull::new(raw) else {
            alloc::handle_alloc_error(layout)
        };
        Arena {
            base,
            layout,
            used: AtomicUsize::new(0),
            #[cfg(loom)]
            words: (0..capacity / 4).map(|_| AtomicU32::new(0)).collect(),
        }
    }

    /// Total bytes of the arena.
    pub(crate) fn capacity(&self) -> usize {
        self.layout.size()
    }

    /// Bytes handed out so far, alignment padding included.
    pub(crate) fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// Reserves `size` bytes at an offset that is a multiple of `align` (a
    /// power of two, at most 64). `None`, with nothing changed, when they do
    /// not fit. The returned range is zeroed and owned by the caller.
    pub(crate) fn alloc(&self, size: usize, align: usize) -> Option<u32> {
        debug_assert!(align.is_power_of_two() && align <= BASE_ALIGN);
        let mut cur = self.used.load(Ordering::Relaxed);
        loop {
            let start = cur.checked_add(align - 1)? & !(align - 1);
            let end = start.checked_add(size)?;
            if end > self.capacity() {
                return None;
            }
            // Relaxed suffices: the RMW's atomicity alone makes the ranges
            // disjoint, and the bytes were zeroed before any thread ran.
            match self
                .used
                .compare_exchange_weak(cur, end, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return Some(u32::try_from(start).expect("start < capacity <= u32::MAX")),
                Err(now) => cur = now,
            }
        }
    }

    /// The atomic word at `offset`.
    ///
    /// # Safety
    /// `offset` is a multiple of 4 with `offset + 4 <= capacity`, inside a
    /// range returned by `alloc`, and the word is never accessed through
    /// [`Arena::write`] or [`Arena::slice`].
    #[inline]
    pub(crate) unsafe fn word(&self, offset: u32) -> &AtomicU32 {
        debug_assert!(offset.is_multiple_of(4) && offset as usize + 4 <= self.capacity());
        #[cfg(not(loom))]
        {
            // SAFETY: by the contract the word is in bounds and 4-aligned (the
            // base is 16-aligned), lives as long as `self`, and is only ever
            // accessed atomically, which is what `from_ptr` requires.
            unsafe { AtomicU32::from_ptr(self.base.as_ptr().add(offset as usize).cast::<u32>()) }
        }
        #[cfg(loom)]
        {
            &self.words[offset as usize / 4]
        }
    }

    /// Copies `src` to `offset`.
    ///
    /// # Safety
    /// `offset..offset + src.len()` lies inside a range returned by `alloc`
    /// that the caller owns exclusively (not yet published to other threads),
    /// and no word of it is accessed through [`Arena::word`].
    #[inline]
    pub(crate) unsafe fn write(&self, offset: u32, src: &[u8]) {
        debug_assert!(offset as usize + src.len() <= self.capacity());
        // SAFETY: by the contract the destination is in bounds and nobody
        // else reads or writes it now; `src` cannot overlap it because the
        // caller holds no other reference into this fresh range.
        unsafe {
            std::ptr::copy_nonoverlapping(
                src.as_ptr(),
                self.base.as_ptr().add(offset as usize),
                src.len(),
            );
        }
    }

    /// The bytes `offset..offset + len`.
    ///
    /// # Safety
    /// The range lies inside a range returned by `alloc`, was completely
    /// written by [`Arena::write`] before a release operation that the
    /// current thread has acquired (or by the current thread itself), and is
    /// never written again.
    #[inline]
    pub(crate) unsafe fn slice(&self, offset: u32, len: u32) -> &[u8] {
        debug_assert!(offset as usize + len as usize <= self.capacity());
        // SAFETY: in bounds by the contract; the bytes are initialized (the
        // arena is zeroed and they were written before a happens-before
        // edge), and immutable for the arena's lifetime, which bounds the
        // returned borrow.
        unsafe { std::slice::from_raw_parts(self.base.as_ptr().add(offset as usize), len as usize) }
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        // SAFETY: `base` was allocated with `layout` by `alloc_zeroed` and is
        // freed only here, once.
        unsafe { alloc::dealloc(self.base.as_ptr(), self.layout) }
    }
}

impl std::fmt::Debug for Arena {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Arena")
            .field("capacity", &self.capacity())
            .field("used", &self.used())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn bump_allocation_and_alignment() {
        let a = Arena::new(100);
        assert_eq!(a.capacity(), 100);
        assert_eq!(a.alloc(3, 1), Some(0));
        assert_eq!(a.alloc(4, 4), Some(4));
        assert_eq!(a.used(), 8);
        assert_eq!(a.alloc(93, 1), None);
        assert_eq!(a.used(), 8, "a failed alloc changes nothing");
        assert_eq!(a.alloc(92, 1), Some(8));
        assert_eq!(a.used(), 100);
        assert_eq!(a.alloc(0, 8), None, "padding past the end does not fit");
        assert_eq!(a.alloc(usize::MAX, 1), None);
    }

    #[test]
    fn words_and_bytes() {
        let a = Arena::new(64);
        let off = a.alloc(16, 4).expect("fits");
        // SAFETY: fresh range owned by this thread; word 0 and bytes 4..16
        // are disjoint.
        unsafe {
            a.word(off).store(7, Ordering::Relaxed);
            a.write(off + 4, b"hello");
            assert_eq!(a.word(off).load(Ordering::Relaxed), 7);
            assert_eq!(a.slice(off + 4, 5), b"hello");
            assert_eq!(a.slice(off + 9, 3), &[0, 0, 0], "the arena is zeroed");
        }
    }

    #[test]
    fn clamps_capacity() {
        assert_eq!(Arena::new(0).capacity(), 1);
    }
}

/// Returned by `MemTable::add` (and the skiplist and arena under it)
/// when the arena has no room left.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("memtable is full")]
pub(crate) struct MemTableFull;
