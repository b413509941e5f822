//! [`BlockBytes`]: the uncompressed contents of one block, either owned
//! (a block read on its own, decompressed, or copied for the block cache)
//! or a range of a shared read-ahead chunk, so a scan that reads a chunk
//! serves its blocks without copying each one out.
//!
//! A shared range keeps its chunk alive (`Arc`): the read-ahead state only
//! reuses a chunk buffer when no block refers to it any more
//! (`Arc::get_mut` / `Arc::try_unwrap`), otherwise it allocates a new one,
//! so a block's bytes never change under it. The range is checked once,
//! when the value is made. Blocks that go into the block cache are owned
//! copies ([`BlockBytes::to_owned`]): a cached block never pins a chunk,
//! so the cache's charge is the memory it holds. Immutable; `Send + Sync`.

use std::sync::Arc;

use crate::io::AlignedBuf;

/// Contents of a block (see the module docs).
#[derive(Debug, Clone)]
pub struct BlockBytes(Repr);

#[derive(Debug, Clone)]
enum Repr {
    Owned(Vec<u8>),
    Shared {
        chunk: Arc<AlignedBuf>,
        start: usize,
        len: usize,
    },
}

impl BlockBytes {
    /// `len` bytes of `chunk` from `start`; `None` if that range is not
    /// inside the chunk.
    pub(crate) fn shared(chunk: &Arc<AlignedBuf>, start: usize, len: usize) -> Option<BlockBytes> {
        let end = start.checked_add(len)?;
        if end > chunk.as_slice().len() {
            return None;
        }
        Some(BlockBytes(Repr::Shared {
            chunk: Arc::clone(chunk),
            start,
            len,
        }))
    }

    /// The bytes.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        match &self.0 {
            Repr::Owned(v) => v,
            // In range by construction; `get` keeps it panic-free anyway.
            Repr::Shared { chunk, start, len } => {
                chunk.as_slice().get(*start..*start + *len).unwrap_or(&[])
            }
        }
    }

    /// True when the bytes are a range of a shared chunk.
    pub fn is_shared(&self) -> bool {
        matches!(self.0, Repr::Shared { .. })
    }

    /// An owned copy (the same value when already owned).
    pub fn to_owned(&self) -> BlockBytes {
        match &self.0 {
            Repr::Owned(v) => BlockBytes(Repr::Owned(v.clone())),
            Repr::Shared { .. } => BlockBytes(Repr::Owned(self.as_slice().to_vec())),
        }
    }

    /// Heap bytes this value accounts for: an owned buffer's capacity, a
    /// shared range's length (the chunk belongs to the read-ahead state).
    pub fn heap_size(&self) -> usize {
        match &self.0 {
            Repr::Owned(v) => v.capacity(),
            Repr::Shared { len, .. } => *len,
        }
    }
}

impl From<Vec<u8>> for BlockBytes {
    fn from(v: Vec<u8>) -> BlockBytes {
        BlockBytes(Repr::Owned(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(n: usize) -> Arc<AlignedBuf> {
        let mut b = AlignedBuf::new(n);
        for (i, x) in b.as_mut_slice().iter_mut().enumerate() {
            *x = i as u8;
        }
        Arc::new(b)
    }

    #[test]
    fn shared_ranges_are_checked_and_keep_the_chunk_alive() {
        let c = chunk(8192);
        assert!(BlockBytes::shared(&c, 8000, 193).is_none());
        assert!(BlockBytes::shared(&c, usize::MAX, 2).is_none());
        let b = BlockBytes::shared(&c, 100, 50).expect("in range");
        assert!(b.is_shared());
        // The read-ahead state gives up its reference (the chunk is
        // replaced); the block still reads the same bytes.
        let mut c = c;
        assert!(Arc::get_mut(&mut c).is_none(), "a block refers to it");
        drop(c);
        let want: Vec<u8> = (100..150).map(|i| i as u8).collect();
        assert_eq!(b.as_slice(), &want[..]);
        let owned = b.to_owned();
        assert!(!owned.is_shared());
        drop(b);
        assert_eq!(owned.as_slice(), &want[..]);
    }

    #[test]
    fn owned_bytes_round_trip() {
        let b = BlockBytes::from(vec![1, 2, 3]);
        assert!(!b.is_shared());
        assert_eq!(b.as_slice(), &[1, 2, 3]);
        assert!(b.heap_size() >= 3);
    }
}
