//! Table properties and the encoding of the properties block (see
//! `docs/sst-format.md`): ten varint64 fields in a fixed order, then the
//! smallest and largest internal keys, length-prefixed, then (only for a
//! keyspace other than the default one) its id as a varint32.
//! `format_version` and
//! `file_size` are not stored: they come from the footer and the file.
//!
//! Plain data; thread-safe. Invariant: decoding consumes the block exactly
//! and never panics.

use crate::util::coding::{
    decode_length_prefixed, decode_varint64, put_length_prefixed, put_varint64,
};

/// What a table holds, written by the builder and read back on open.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableProperties {
    /// The table format version (from the footer).
    pub format_version: u32,
    /// Number of entries (values and tombstones).
    pub num_entries: u64,
    /// Number of tombstones.
    pub num_deletions: u64,
    /// Sum of the internal key lengths.
    pub raw_key_bytes: u64,
    /// Sum of the value lengths.
    pub raw_value_bytes: u64,
    /// Bytes of data blocks on disk, trailers included.
    pub data_bytes: u64,
    /// Bytes of the index block on disk, trailer included.
    pub index_bytes: u64,
    /// Bytes of the filter block on disk, trailer included (0: no filter).
    pub filter_bytes: u64,
    /// Number of data blocks.
    pub num_data_blocks: u64,
    /// The smallest internal key (empty for an empty table).
    pub smallest_key: Vec<u8>,
    /// The largest internal key (empty for an empty table).
    pub largest_key: Vec<u8>,
    /// The smallest sequence number (0 for an empty table).
    pub smallest_seq: u64,
    /// The largest sequence number (0 for an empty table).
    pub largest_seq: u64,
    /// Size of the table file.
    pub file_size: u64,
    /// The keyspace the table belongs to (0: the default keyspace), so
    /// that repair can put it back there.
    pub keyspace: u32,
}

impl TableProperties {
    fn fields(&self) -> [u64; 10] {
        [
            self.num_entries,
            self.num_deletions,
            self.raw_key_bytes,
            self.raw_value_bytes,
            self.data_bytes,
            self.index_bytes,
            self.filter_bytes,
            self.num_data_blocks,
            self.smallest_seq,
            self.largest_seq,
        ]
    }

    /// Encodes the properties block contents.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + self.smallest_key.len() + self.largest_key.len());
        for v in self.fields() {
            put_varint64(&mut out, v);
        }
        put_length_prefixed(&mut out, &self.smallest_key);
        put_length_prefixed(&mut out, &self.largest_key);
        if self.keyspace != 0 {
            put_varint64(&mut out, u64::from(self.keyspace));
        }
        out
    }

    /// Decodes properties block contents; `Err(reason)` if malformed.
    /// `format_version` and `file_size` are left 0 for the caller to fill.
    pub fn decode(src: &[u8]) -> Result<TableProperties, String> {
        let mut pos = 0;
        let mut f = [0u64; 10];
        for (i, slot) in f.iter_mut().enumerate() {
            let (v, n) =
                decode_varint64(&src[pos..]).ok_or_else(|| format!("bad property field {i}"))?;
            *slot = v;
            pos += n;
        }
        let mut key = || -> Result<Vec<u8>, String> {
            let (k, n) = decode_length_prefixed(&src[pos..]).ok_or("bad property key")?;
            pos += n;
            Ok(k.to_vec())
        };
        let smallest_key = key()?;
        let largest_key = key()?;
        let mut keyspace = 0;
        if pos < src.len() {
            let (v, n) = decode_varint64(&src[pos..]).ok_or("bad keyspace property")?;
            keyspace = u32::try_from(v)
                .ok()
                .filter(|&k| k != 0)
                .ok_or_else(|| format!("bad keyspace property {v}"))?;
            pos += n;
        }
        if pos != src.len() {
            return Err("trailing bytes in properties block".into());
        }
        let [
            num_entries,
            num_deletions,
            raw_key_bytes,
            raw_value_bytes,
            data_bytes,
            index_bytes,
            filter_bytes,
            num_data_blocks,
            smallest_seq,
            largest_seq,
        ] = f;
        Ok(TableProperties {
            format_version: 0,
            num_entries,
            num_deletions,
            raw_key_bytes,
            raw_value_bytes,
            data_bytes,
            index_bytes,
            filter_bytes,
            num_data_blocks,
            smallest_key,
            largest_key,
            smallest_seq,
            largest_seq,
            file_size: 0,
            keyspace,
        })
    }

    /// Bytes held in memory.
    pub fn memory(&self) -> usize {
        std::mem::size_of::<Self>() + self.smallest_key.capacity() + self.largest_key.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_and_truncation() {
        let p = TableProperties {
            num_entries: 5,
            num_deletions: 2,
            raw_key_bytes: 300,
            raw_value_bytes: u64::MAX,
            data_bytes: 4096,
            index_bytes: 40,
            filter_bytes: 9,
            num_data_blocks: 1,
            smallest_key: b"a\0\0\0\0\0\0\0\0".to_vec(),
            largest_key: b"zz".to_vec(),
            smallest_seq: 1,
            largest_seq: 1 << 50,
            keyspace: 3,
            ..Default::default()
        };
        let enc = p.encode();
        assert_eq!(TableProperties::decode(&enc).unwrap(), p);
        // Every cut fails, except the one that drops the whole optional
        // keyspace field (the block's checksum guards against that).
        let without_keyspace = TableProperties {
            keyspace: 0,
            ..p.clone()
        }
        .encode();
        for cut in 0..enc.len() {
            let decoded = TableProperties::decode(&enc[..cut]);
            if cut == without_keyspace.len() {
                assert_eq!(decoded.map(|d| d.keyspace), Ok(0));
            } else {
                assert!(decoded.is_err(), "cut {cut}");
            }
        }
        let mut long = enc.clone();
        long.push(0);
        assert!(TableProperties::decode(&long).is_err());
    }
}
