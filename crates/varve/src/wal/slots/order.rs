//! [`LogOrder`]: the log-order bookkeeping of the pool. Every byte range of
//! the log (a closed slot's buffer or a direct-path record) is reserved here
//! as a *piece*, in log order; pieces are completed in any order; the
//! written position is the end of the longest prefix of completed pieces.
//!
//! Plain data, not thread-safe: the pool keeps it under its switch lock,
//! which is taken once per slot switch / direct record / slot write, never
//! per joined record. Invariants: pieces are contiguous (each starts where
//! the previous ended) and `written <= reserved_end`; `written` only grows.

use std::collections::VecDeque;

/// Reserved log ranges awaiting their writes, in log order.
#[derive(Debug)]
pub(super) struct LogOrder {
    /// End offset and "written" flag of each outstanding piece, oldest first.
    pieces: VecDeque<(u64, bool)>,
    /// Id of `pieces[0]`; ids count up from 0 in log order.
    first_id: u64,
    /// End of the last reserved piece: where the next one starts.
    reserved_end: u64,
    /// End of the written prefix.
    written: u64,
}

impl LogOrder {
    /// Nothing reserved; the log continues at `start`.
    pub(super) fn new(start: u64) -> Self {
        LogOrder {
            pieces: VecDeque::new(),
            first_id: 0,
            reserved_end: start,
            written: start,
        }
    }

    /// Reserves the next `len` bytes; returns the piece id and its start.
    pub(super) fn push(&mut self, len: u64) -> (u64, u64) {
        let start = self.reserved_end;
        self.reserved_end = start.checked_add(len).expect("log offset overflows u64");
        let id = self.first_id + self.pieces.len() as u64;
        self.pieces.push_back((self.reserved_end, false));
        (id, start)
    }

    /// Marks piece `id` written; returns the (possibly advanced) written
    /// position. Panics on an unknown or already completed piece.
    pub(super) fn complete(&mut self, id: u64) -> u64 {
        let idx = id
            .checked_sub(self.first_id)
            .and_then(|i| usize::try_from(i).ok())
            .filter(|&i| i < self.pieces.len())
            .expect("completing an unknown log piece");
        let done = &mut self.pieces[idx].1;
        assert!(!*done, "log piece {id} completed twice");
        *done = true;
        while let Some(&(end, true)) = self.pieces.front() {
            self.pieces.pop_front();
            self.first_id += 1;
            self.written = end;
        }
        self.written
    }

    /// Where the next piece will start.
    pub(super) fn reserved_end(&self) -> u64 {
        self.reserved_end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_advances_only_over_a_complete_prefix() {
        let mut o = LogOrder::new(10);
        assert_eq!(o.push(5), (0, 10));
        assert_eq!(o.push(0), (1, 15));
        assert_eq!(o.push(7), (2, 15));
        assert_eq!(o.reserved_end(), 22);
        assert_eq!(o.complete(2), 10, "out of order: nothing written yet");
        assert_eq!(o.complete(1), 10);
        assert_eq!(o.complete(0), 22, "prefix complete: all of it");
        assert_eq!(o.push(3), (3, 22));
        assert_eq!(o.complete(3), 25);
    }

    #[test]
    #[should_panic(expected = "twice")]
    fn double_complete_panics() {
        let mut o = LogOrder::new(0);
        o.push(1);
        o.push(1);
        o.complete(1);
        o.complete(1);
    }

    #[test]
    #[should_panic(expected = "unknown")]
    fn unknown_piece_panics() {
        let mut o = LogOrder::new(0);
        o.push(1);
        o.complete(0);
        o.complete(0);
    }
}
