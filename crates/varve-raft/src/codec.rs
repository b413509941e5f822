//! Encodings of what varve-raft stores (`docs/raft.md`, "On disk"): log
//! keys, entries and metadata values (JSON through serde, as openraft's
//! own stores), and the snapshot data format (version 1).
//!
//! Pure functions; no state. Invariant: every decoder refuses what its
//! encoder cannot have written (a wrong length, an unknown version, bytes
//! left over) with a message naming what was wrong.

use serde::Serialize;
use serde::de::DeserializeOwned;

/// The key of log index `index`: big-endian, so key order is index order.
pub(crate) fn log_key(index: u64) -> [u8; 8] {
    index.to_be_bytes()
}

/// The index a log key names.
pub(crate) fn log_index(key: &[u8]) -> Result<u64, String> {
    let b: [u8; 8] = key
        .try_into()
        .map_err(|_| format!("a log key of {} bytes, not 8", key.len()))?;
    Ok(u64::from_be_bytes(b))
}

pub(crate) fn to_json<T: Serialize>(v: &T) -> Result<Vec<u8>, String> {
    serde_json::to_vec(v).map_err(|e| format!("encode: {e}"))
}

pub(crate) fn from_json<T: DeserializeOwned>(what: &str, b: &[u8]) -> Result<T, String> {
    serde_json::from_slice(b).map_err(|e| format!("{what}: {e}"))
}

/// Version of the snapshot data format this build writes and reads.
pub(crate) const SNAPSHOT_FORMAT_VERSION: u32 = 1;
const SNAPSHOT_MAGIC: &[u8; 8] = b"varvesnp";

/// The snapshot data of `pairs` (key order): magic, version (u32 LE),
/// count (u64 LE), then each key and value as a u32 LE length and its
/// bytes.
pub(crate) struct SnapshotWriter {
    out: Vec<u8>,
    count: u64,
}

impl SnapshotWriter {
    pub(crate) fn new() -> SnapshotWriter {
        let mut out = Vec::with_capacity(64 << 10);
        out.extend_from_slice(SNAPSHOT_MAGIC);
        out.extend_from_slice(&SNAPSHOT_FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&0u64.to_le_bytes());
        SnapshotWriter { out, count: 0 }
    }

    pub(crate) fn add(&mut self, key: &[u8], value: &[u8]) -> Result<(), String> {
        for part in [key, value] {
            let len = u32::try_from(part.len())
                .map_err(|_| format!("a key or value of {} bytes (at most 4 GiB)", part.len()))?;
            self.out.extend_from_slice(&len.to_le_bytes());
            self.out.extend_from_slice(part);
        }
        self.count += 1;
        Ok(())
    }

    pub(crate) fn finish(mut self) -> Vec<u8> {
        self.out[12..20].copy_from_slice(&self.count.to_le_bytes());
        self.out
    }
}

/// Key-value pairs borrowed from snapshot data.
pub(crate) type Pairs<'a> = Vec<(&'a [u8], &'a [u8])>;

/// The pairs of snapshot data `data`, in order.
pub(crate) fn snapshot_pairs(data: &[u8]) -> Result<Pairs<'_>, String> {
    if data.len() < 20 || &data[..8] != SNAPSHOT_MAGIC {
        return Err("not varve-raft snapshot data (bad magic or shorter than its header)".into());
    }
    let version = u32::from_le_bytes([data[8], data[9], data[10], data[11]]);
    if version != SNAPSHOT_FORMAT_VERSION {
        return Err(format!(
            "snapshot data format version {version}; this build reads version \
             {SNAPSHOT_FORMAT_VERSION}"
        ));
    }
    let mut count_bytes = [0u8; 8];
    count_bytes.copy_from_slice(&data[12..20]);
    let count = u64::from_le_bytes(count_bytes);
    let mut at = 20usize;
    let part = |at: &mut usize| -> Result<&[u8], String> {
        let len_end = at
            .checked_add(4)
            .filter(|&e| e <= data.len())
            .ok_or("snapshot data cut inside a length")?;
        let len = u32::from_le_bytes([data[*at], data[*at + 1], data[*at + 2], data[*at + 3]]);
        let end = len_end
            .checked_add(len as usize)
            .filter(|&e| e <= data.len())
            .ok_or("snapshot data cut inside a key or value")?;
        let out = &data[len_end..end];
        *at = end;
        Ok(out)
    };
    let mut pairs = Vec::with_capacity(usize::try_from(count.min(1 << 20)).unwrap_or(0));
    for _ in 0..count {
        let k = part(&mut at)?;
        let v = part(&mut at)?;
        pairs.push((k, v));
    }
    if at != data.len() {
        return Err(format!(
            "{} bytes after the last of {count} pairs of snapshot data",
            data.len() - at
        ));
    }
    Ok(pairs)
}

/// A stored snapshot: its metadata (JSON) and data, `[u32 LE meta
/// length][meta][data]`.
pub(crate) fn stored_snapshot(meta: &[u8], data: &[u8]) -> Result<Vec<u8>, String> {
    let len = u32::try_from(meta.len()).map_err(|_| "snapshot metadata over 4 GiB".to_string())?;
    let mut out = Vec::with_capacity(4 + meta.len() + data.len());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(meta);
    out.extend_from_slice(data);
    Ok(out)
}

/// The metadata and data of a stored snapshot.
pub(crate) fn split_stored_snapshot(b: &[u8]) -> Result<(&[u8], &[u8]), String> {
    let len = b
        .get(..4)
        .map(|l| u32::from_le_bytes([l[0], l[1], l[2], l[3]]) as usize)
        .ok_or("a stored snapshot shorter than its header")?;
    let meta_end = 4usize
        .checked_add(len)
        .filter(|&e| e <= b.len())
        .ok_or("a stored snapshot cut inside its metadata")?;
    Ok((&b[4..meta_end], &b[meta_end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_keys_sort_by_index() {
        assert!(log_key(255) < log_key(256));
        assert_eq!(log_index(&log_key(u64::MAX - 3)), Ok(u64::MAX - 3));
        assert!(log_index(b"short").is_err());
    }

    #[test]
    fn snapshot_data_round_trips_and_refuses_damage() {
        let mut w = SnapshotWriter::new();
        w.add(b"a", b"1").expect("add");
        w.add(b"", b"").expect("add");
        w.add(b"key", &[7u8; 300]).expect("add");
        let data = w.finish();
        let pairs = snapshot_pairs(&data).expect("decode");
        assert_eq!(pairs.len(), 3);
        assert_eq!(pairs[2], (&b"key"[..], &[7u8; 300][..]));
        // Cut anywhere, or a byte too many: refused.
        for cut in 0..data.len() {
            assert!(snapshot_pairs(&data[..cut]).is_err(), "cut at {cut}");
        }
        let mut long = data.clone();
        long.push(0);
        assert!(snapshot_pairs(&long).is_err());
        let mut v2 = data.clone();
        v2[8] = 2;
        assert!(snapshot_pairs(&v2).expect_err("v2").contains("version 2"));
        let stored = stored_snapshot(b"{}", &data).expect("store");
        assert_eq!(split_stored_snapshot(&stored), Ok((&b"{}"[..], &data[..])));
        assert!(split_stored_snapshot(&stored[..3]).is_err());
    }
}
