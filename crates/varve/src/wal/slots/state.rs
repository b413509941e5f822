//! The slot state word: pure functions that pack and unpack one `u64`
//! holding a slot's lifecycle state, its JOINED byte count and its RELEASED
//! byte count (WiredTiger's `slot_state`, from its log slots).
//!
//! Layout, most significant bit first:
//!
//! ```text
//!  63 62 | 61 ............ 31 | 30 ............. 0
//!  state |  JOINED (31 bits)  |  RELEASED (31 bits)
//! ```
//!
//! Because all three live in one word, "the slot is CLOSED and every joined
//! byte has been released" is decided by one atomic read-modify-write.
//! Limits: JOINED and RELEASED are below 2^31, so a slot buffer holds at most
//! [`MAX_CAPACITY`] bytes. The pool never lets JOINED exceed the buffer
//! capacity, and RELEASED never exceeds JOINED, so adding to RELEASED with a
//! plain `fetch_add` can never carry into JOINED or the state bits.
//!
//! No shared state, no `unsafe`: everything here is a `const fn` on `u64`.

/// Number of bits for each byte counter.
pub(crate) const COUNT_BITS: u32 = 31;
/// Largest slot buffer the word can describe (2^31 - 1 bytes).
pub(crate) const MAX_CAPACITY: usize = (1 << COUNT_BITS) - 1;
/// Mask of one counter after shifting it down.
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;
/// Where JOINED starts.
const JOINED_SHIFT: u32 = COUNT_BITS;
/// Where the state bits start.
const STATE_SHIFT: u32 = 2 * COUNT_BITS;

/// A slot's lifecycle state (the top two bits of the state word).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Phase {
    /// Not in use; the pool may activate it. Counters are zero.
    Free = 0,
    /// The active slot: writers join it. At most one slot is open.
    Open = 1,
    /// No more joins; waiting for the remaining releases, then for the
    /// buffer to be written. Becomes `Free` when the write is reported.
    Closed = 2,
}

/// The state word of a freshly activated slot: `Open`, nothing joined.
pub(crate) const OPEN_EMPTY: u64 = pack(Phase::Open, 0, 0);
/// The state word of a free slot.
pub(crate) const FREE: u64 = pack(Phase::Free, 0, 0);

/// Builds a state word. `joined` and `released` must be `<= MAX_CAPACITY`.
pub(crate) const fn pack(phase: Phase, joined: u32, released: u32) -> u64 {
    debug_assert!(joined as u64 <= COUNT_MASK && released as u64 <= COUNT_MASK);
    ((phase as u64) << STATE_SHIFT)
        | ((joined as u64 & COUNT_MASK) << JOINED_SHIFT)
        | (released as u64 & COUNT_MASK)
}

/// The lifecycle state encoded in `word` (the value 3 is never written; it
/// decodes as `Closed` so a corrupt word can never look joinable).
pub(crate) const fn phase(word: u64) -> Phase {
    match word >> STATE_SHIFT {
        0 => Phase::Free,
        1 => Phase::Open,
        _ => Phase::Closed,
    }
}

/// Bytes joined so far (the next writer's offset while open).
pub(crate) const fn joined(word: u64) -> u32 {
    ((word >> JOINED_SHIFT) & COUNT_MASK) as u32
}

/// Bytes released (copied in and handed back) so far.
pub(crate) const fn released(word: u64) -> u32 {
    (word & COUNT_MASK) as u32
}

/// `word` with `len` more bytes joined. Caller guarantees
/// `joined(word) + len <= MAX_CAPACITY`.
pub(crate) const fn add_joined(word: u64, len: u32) -> u64 {
    debug_assert!(joined(word) as u64 + len as u64 <= COUNT_MASK);
    word + ((len as u64) << JOINED_SHIFT)
}

/// The increment that adds `len` released bytes (for `fetch_add`).
pub(crate) const fn released_delta(len: u32) -> u64 {
    len as u64
}

/// `word` with its state replaced by `phase`, counters unchanged.
pub(crate) const fn with_phase(word: u64, phase: Phase) -> u64 {
    (word & !(0b11 << STATE_SHIFT)) | ((phase as u64) << STATE_SHIFT)
}

/// True when the slot is closed and every joined byte has been released:
/// the buffer is complete and may be written.
pub(crate) const fn is_complete(word: u64) -> bool {
    matches!(phase(word), Phase::Closed) && joined(word) == released(word)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_extremes() {
        let max = MAX_CAPACITY as u32;
        for phase_ in [Phase::Free, Phase::Open, Phase::Closed] {
            for (j, r) in [(0, 0), (max, 0), (0, max), (max, max), (12345, 678)] {
                let w = pack(phase_, j, r);
                assert_eq!(phase(w), phase_);
                assert_eq!(joined(w), j);
                assert_eq!(released(w), r);
            }
        }
        assert_eq!(FREE, 0);
        assert_eq!(phase(u64::MAX), Phase::Closed);
    }

    #[test]
    fn counters_do_not_carry() {
        let max = MAX_CAPACITY as u32;
        let w = add_joined(pack(Phase::Open, max - 5, 3), 5);
        assert_eq!((phase(w), joined(w), released(w)), (Phase::Open, max, 3));
        let w = w + released_delta(max - 3);
        assert_eq!((phase(w), joined(w), released(w)), (Phase::Open, max, max));
    }

    #[test]
    fn phase_changes_keep_counters() {
        let w = pack(Phase::Open, 70, 30);
        let c = with_phase(w, Phase::Closed);
        assert_eq!((phase(c), joined(c), released(c)), (Phase::Closed, 70, 30));
        assert!(!is_complete(c));
        assert!(is_complete(c + released_delta(40)));
        // Equal counters while open are not "complete": more joins may come.
        assert!(!is_complete(pack(Phase::Open, 9, 9)));
        assert_eq!(with_phase(c, Phase::Free), pack(Phase::Free, 70, 30));
    }
}
