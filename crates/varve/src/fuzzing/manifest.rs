//! Fuzz targets for the manifest: the version-edit decoder applied to a version, and whole-manifest recovery.

#[allow(clippy::wildcard_imports)]
use super::*;

/// A version edit decoded as manifest replay decodes it; it must
/// round-trip, and is applied (as recovery applies edits) to a version
/// builder holding a few files, whose result is then queried.
pub fn manifest_edit(data: &[u8]) {
    // Group records decode part by part; a single edit round-trips alone.
    if let Ok(group) = VersionEdit::decode_group(data) {
        assert_eq!(
            VersionEdit::decode_group(&VersionEdit::encode_group(&group)).as_ref(),
            Ok(&group),
            "a decoded group round-trips"
        );
    }
    let Ok(edit) = VersionEdit::decode(data) else {
        return;
    };
    assert_eq!(
        VersionEdit::decode(&edit.encode()).as_ref(),
        Ok(&edit),
        "a decoded edit round-trips"
    );
    let mut builder = crate::version::Builder::new(&base_version());
    if builder.apply(&edit).is_err() {
        return;
    }
    let v = builder.finish();
    let _ = v.check_invariants();
    let mut keys: Vec<&[u8]> = Vec::new();
    for (_, f) in &edit.new_files {
        keys.push(f.smallest_user_key());
        keys.push(f.largest_user_key());
    }
    for (_, k) in &edit.compact_pointers {
        keys.push(user_key(k));
    }
    for k in keys.iter().take(SAMPLE_KEYS) {
        let _ = v.files_for_get(k).count();
        for level in 0..NUM_LEVELS {
            let _ = v.overlapping_files(level, Some(k), None);
            let _ = v.overlapping_files(level, None, Some(k));
        }
    }
    let _ = v.live_file_numbers().count();
}

/// The version the edits of `manifest_edit` apply to: files 1-2 in L0,
/// 3-4 in L1, 5 in L2 (the seeds delete and move them).
pub(super) fn base_version() -> Version {
    let mut edit = VersionEdit::default();
    for (level, number, a, b) in [
        (0, 1, "a", "m"),
        (0, 2, "c", "z"),
        (1, 3, "a", "f"),
        (1, 4, "g", "p"),
        (2, 5, "b", "y"),
    ] {
        edit.add_file(level, file_meta(number, a, b, number));
    }
    let mut builder = crate::version::Builder::new(&Version::new());
    builder
        .apply(&edit)
        .expect("the base edit is valid by construction");
    builder.finish()
}

pub(super) fn file_meta(number: u64, a: &str, b: &str, seq: u64) -> FileMetaData {
    FileMetaData {
        number,
        file_size: 1000 + number,
        smallest: make_internal_key(a.as_bytes(), seq, ValueKind::Value),
        largest: make_internal_key(b.as_bytes(), seq, ValueKind::Deletion),
        smallest_seq: seq,
        largest_seq: seq,
        num_entries: 10,
        oldest_blob_file: 0,
        range_cleared_seq: 0,
    }
}

/// A whole manifest file (`MANIFEST-000007`, named by `CURRENT`) recovered
/// as `Db::open` recovers it (`VersionSet::recover_read_only`: header
/// record, edits applied in order, counters checked).
pub fn manifest(data: &[u8]) {
    let (flags, body) = split_flags(data);
    let mut file = with_header(flags, body, format::FORMAT_VERSION);
    if flags & FLAG_FIX_CHECKSUMS != 0 {
        fix_v1_checksums(&mut file);
    }
    let fs = MemFs::default();
    fs.put("/fuzz/db/CURRENT", b"MANIFEST-000007\n".to_vec());
    fs.put("/fuzz/db/MANIFEST-000007", file);
    let fs: Arc<dyn FileSystem> = Arc::new(fs);
    if let Ok(vs) = VersionSet::recover_read_only(fs, Path::new("/fuzz/db")) {
        let v = vs.current();
        assert!(v.check_invariants().is_ok(), "a recovered version is valid");
        let _ = vs.next_file_number();
        let _ = vs.last_sequence();
        let _ = vs.live_files();
    }
}
