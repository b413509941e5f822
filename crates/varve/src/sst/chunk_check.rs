//! [`check_chunk`]: verifies the checksums of the data blocks a read-ahead
//! chunk holds whole, on the background thread that read it, so the
//! consumer does not have to.
//!
//! A table's data blocks tile `[0, data_end)` with no gaps (`Table::open`
//! rejects an index that says otherwise), and the table's in-memory search
//! array keeps where each one starts ([`IndexSearch::bounds`]). Given
//! those bounds, a chunk read at `start` and the bytes it got, every block
//! `[bounds[i], bounds[i + 1])` that lies inside the chunk is checked the
//! way the consumer would check it (masked CRC32C of contents and type
//! byte). The result names the blocks that passed; the consumer serves a
//! block without verifying it again only if it is named there for the
//! very buffer it is served from (`Readahead`), so a block that failed,
//! was cut by the chunk's end or was never looked at is verified as
//! before and damage still surfaces as `Error::Corruption`.
//!
//! Pure functions; thread-safe.
//!
//! [`IndexSearch::bounds`]: super::index_search::IndexSearch::bounds

use super::format::stored_checksums;

/// Blocks of a chunk whose checksums matched: `(offset, end)` in the file,
/// trailer included, in file order.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Verified(Vec<(u64, u64)>);

impl Verified {
    /// Nothing verified.
    pub fn none() -> Verified {
        Verified(Vec::new())
    }

    /// True if the block `[offset, end)` was verified.
    pub fn contains(&self, offset: u64, end: u64) -> bool {
        self.0
            .binary_search_by_key(&offset, |&(o, _)| o)
            .is_ok_and(|i| self.0[i].1 == end)
    }

    /// Number of verified blocks.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True if no block was verified.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The blocks of `chunk` (file bytes from offset `start` on) that lie in it
/// whole according to `bounds` (every data block's start, then the end of
/// the last) and whose checksum matches.
pub fn check_chunk(bounds: &[u64], chunk: &[u8], start: u64) -> Verified {
    let Some(stop) = start.checked_add(chunk.len() as u64) else {
        return Verified::none();
    };
    // The first block that starts at or after `start`.
    let first = bounds.partition_point(|&b| b < start);
    let mut ok = Vec::new();
    for pair in bounds.get(first..).unwrap_or(&[]).windows(2) {
        let (offset, end) = (pair[0], pair[1]);
        if end > stop {
            break;
        }
        let (Ok(s), Ok(e)) = (
            usize::try_from(offset - start),
            usize::try_from(end - start),
        ) else {
            break;
        };
        let Some(stored) = chunk.get(s..e) else {
            break;
        };
        if stored_checksums(stored).is_some_and(|(want, got)| want == got) {
            ok.push((offset, end));
        }
    }
    Verified(ok)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sst::format::put_block_trailer;

    /// Blocks of `sizes` content bytes, stored back to back from offset 0;
    /// returns the file bytes and the bounds.
    fn blocks(sizes: &[usize]) -> (Vec<u8>, Vec<u64>) {
        let mut file = Vec::new();
        let mut bounds = vec![0u64];
        for (i, &n) in sizes.iter().enumerate() {
            let contents: Vec<u8> = (0..n).map(|j| (i * 31 + j) as u8).collect();
            file.extend_from_slice(&contents);
            put_block_trailer(&mut file, &contents, 0);
            bounds.push(file.len() as u64);
        }
        (file, bounds)
    }

    #[test]
    fn names_the_whole_intact_blocks_of_a_chunk() {
        let (file, b) = blocks(&[100, 200, 300, 400]);
        // The whole file.
        let all = check_chunk(&b, &file, 0);
        assert_eq!(all.len(), 4);
        for w in b.windows(2) {
            assert!(all.contains(w[0], w[1]));
        }
        // A chunk from inside block 0 to inside block 3: blocks 1 and 2.
        let (s, e) = (b[0] + 10, b[3] + 10);
        let part = check_chunk(&b, &file[s as usize..e as usize], s);
        assert_eq!(part.len(), 2);
        assert!(part.contains(b[1], b[2]) && part.contains(b[2], b[3]));
        assert!(!part.contains(b[0], b[1]) && !part.contains(b[3], b[4]));
        // A wrong end never matches.
        assert!(!part.contains(b[1], b[2] + 1));
        // A chunk inside one block: nothing.
        assert!(check_chunk(&b, &file[110..200], 110).is_empty());
        // Past the bounds, or an empty chunk: nothing.
        assert!(check_chunk(&b, &[], 0).is_empty());
        assert!(check_chunk(&b, &file[..10], b[4]).is_empty());
    }

    #[test]
    fn a_damaged_block_is_left_out() {
        let (mut file, b) = blocks(&[100, 200, 300]);
        for at in [b[1] + 5, b[2] - 1, b[2] - 5] {
            let mut damaged = file.clone();
            damaged[at as usize] ^= 0x40;
            let v = check_chunk(&b, &damaged, 0);
            assert!(!v.contains(b[1], b[2]), "flip at {at}");
            assert!(v.contains(b[0], b[1]) && v.contains(b[2], b[3]));
        }
        // The type byte counts too.
        file[(b[2] - 5) as usize] = 1;
        assert!(!check_chunk(&b, &file, 0).contains(b[1], b[2]));
    }
}
