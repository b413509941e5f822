//! [`SlotBuf`]: a fixed-capacity byte buffer that several threads fill at
//! disjoint offsets at the same time, with no lock.
//!
//! This is the only `unsafe` of the slot pool. The buffer hands out no
//! references of its own; its two accessors are `unsafe fn`s whose contract
//! is the slot protocol's guarantee: a writer owns the byte range it joined
//! (ranges handed out by the JOINED counter never overlap), and the buffer is
//! read only after every joined range has been released (the release/acquire
//! on the slot's state word orders all copies before the read) and before the
//! slot is reused. Under loom each byte is a checked `loom` cell, so the model
//! checker itself verifies that copies are disjoint and happen-before the read.

use super::shim::UnsafeCell;

/// A slot's byte buffer; see the module docs for the access contract.
pub(super) struct SlotBuf {
    cells: Box<[UnsafeCell<u8>]>,
}

// SAFETY: all access to the cells goes through `write` and `with_prefix`,
// whose callers guarantee that no byte is written by one thread while another
// thread reads or writes it. With that guarantee sharing across threads is no
// different from sharing disjoint `&mut [u8]` chunks.
unsafe impl Sync for SlotBuf {}

impl std::fmt::Debug for SlotBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SlotBuf")
            .field("capacity", &self.cells.len())
            .finish_non_exhaustive()
    }
}

impl SlotBuf {
    /// A zeroed buffer of `capacity` bytes (one zeroed allocation; the
    /// kernel supplies zero pages lazily).
    #[cfg(not(loom))]
    pub(super) fn new(capacity: usize) -> Self {
        let bytes: Box<[u8]> = vec![0u8; capacity].into_boxed_slice();
        let raw = Box::into_raw(bytes) as *mut [UnsafeCell<u8>];
        // SAFETY: `UnsafeCell<u8>` is `repr(transparent)` over `u8` (same
        // size, alignment and bit validity), so the allocation of a boxed
        // `[u8]` of `capacity` bytes is a valid boxed `[UnsafeCell<u8>]` of
        // the same length and layout; ownership moves from `bytes` to the
        // new box, which frees it with the same layout.
        let cells = unsafe { Box::from_raw(raw) };
        SlotBuf { cells }
    }

    /// A zeroed buffer of `capacity` loom-checked cells.
    #[cfg(loom)]
    pub(super) fn new(capacity: usize) -> Self {
        SlotBuf {
            cells: (0..capacity).map(|_| UnsafeCell::new(0u8)).collect(),
        }
    }

    /// The buffer's size in bytes.
    pub(super) fn capacity(&self) -> usize {
        self.cells.len()
    }

    /// Copies `src` to `[at, at + src.len())`. Panics if that is out of bounds.
    ///
    /// # Safety
    /// While this runs, no other thread reads or writes any byte of
    /// `[at, at + src.len())`.
    pub(super) unsafe fn write(&self, at: usize, src: &[u8]) {
        let end = at.checked_add(src.len()).expect("slot range overflows");
        assert!(
            end <= self.cells.len(),
            "slot write {at}..{end} out of bounds"
        );
        #[cfg(not(loom))]
        {
            // SAFETY: `at <= end <= len`, so the pointer stays in (or one past)
            // the allocation. `UnsafeCell<u8>` is `repr(transparent)`, so the
            // cells are `src.len()` contiguous bytes, and writing through
            // `raw_get` of a shared cell pointer is permitted interior
            // mutation. The caller guarantees nobody else touches these bytes
            // meanwhile, and `src` cannot alias them (it is a shared borrow
            // while these bytes are exclusively ours).
            unsafe {
                let dst = UnsafeCell::raw_get(self.cells.as_ptr().add(at));
                std::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len());
            }
        }
        #[cfg(loom)]
        for (cell, &b) in self.cells[at..end].iter().zip(src) {
            // SAFETY: exclusive access per the caller's contract; loom checks it.
            cell.with_mut(|p| unsafe { *p = b });
        }
    }

    /// Calls `f` with the first `len` bytes. Panics if `len` is out of bounds.
    ///
    /// # Safety
    /// While this runs, no thread writes any byte of `[0, len)`, and every
    /// earlier write to those bytes happens-before this call.
    pub(super) unsafe fn with_prefix<R>(&self, len: usize, f: impl FnOnce(&[u8]) -> R) -> R {
        assert!(len <= self.cells.len(), "slot prefix {len} out of bounds");
        #[cfg(not(loom))]
        {
            // SAFETY: in bounds (checked above); `UnsafeCell<u8>` has the
            // layout of `u8`; no thread writes these bytes while the shared
            // slice lives (caller's contract), and the slice does not escape
            // `f`'s call.
            let bytes =
                unsafe { std::slice::from_raw_parts(self.cells.as_ptr().cast::<u8>(), len) };
            f(bytes)
        }
        #[cfg(loom)]
        {
            let copy: Vec<u8> = self.cells[..len]
                .iter()
                // SAFETY: no concurrent writer per the caller's contract; loom checks it.
                .map(|cell| cell.with(|p| unsafe { *p }))
                .collect();
            f(&copy)
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn disjoint_concurrent_writes_then_read() {
        let buf = SlotBuf::new(64);
        assert_eq!(buf.capacity(), 64);
        std::thread::scope(|s| {
            for t in 0..8u8 {
                let buf = &buf;
                s.spawn(move || {
                    let chunk = [t; 8];
                    // SAFETY: thread t alone owns bytes [8t, 8t + 8).
                    unsafe { buf.write(usize::from(t) * 8, &chunk) };
                });
            }
        });
        // SAFETY: the scope joined every writer: their writes happen-before.
        let got = unsafe { buf.with_prefix(64, <[u8]>::to_vec) };
        let want: Vec<u8> = (0..8u8).flat_map(|t| [t; 8]).collect();
        assert_eq!(got, want);
        // SAFETY: single-threaded here.
        unsafe { buf.write(64, &[]) };
        // SAFETY: single-threaded here.
        assert_eq!(unsafe { buf.with_prefix(0, <[u8]>::len) }, 0);
    }

    #[test]
    #[should_panic(expected = "out of bounds")]
    fn write_past_end_panics() {
        let buf = SlotBuf::new(4);
        // SAFETY: single-threaded; the call panics before touching memory.
        unsafe { buf.write(2, &[1, 2, 3]) };
    }
}
