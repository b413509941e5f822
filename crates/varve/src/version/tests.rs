//! Tests of the version set and the manifest on a real file system:
//! recovery round trips, torn tails, corruption, CURRENT errors, fault
//! injection, roll-over.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use super::manifest::{self, ManifestWriter};
use super::*;
use crate::error::Error;
use crate::io::{FaultInjectingFs, FileSystem, PosixFs};
use crate::keys::{ValueKind, make_internal_key};
use crate::wal::{self, LogWriter};

fn posix() -> Arc<dyn FileSystem> {
    Arc::new(PosixFs)
}

fn meta(number: u64, a: &str, b: &str, seq: u64) -> FileMetaData {
    FileMetaData {
        number,
        file_size: 1000 + number,
        smallest: make_internal_key(a.as_bytes(), seq + 9, ValueKind::Value),
        largest: make_internal_key(b.as_bytes(), seq, ValueKind::Deletion),
        smallest_seq: seq,
        largest_seq: seq + 9,
        num_entries: 10,
        oldest_blob_file: 0,
        range_cleared_seq: 0,
    }
}

fn read_all(fs: &dyn FileSystem, path: &Path) -> Vec<u8> {
    let mut f = fs.open_sequential(path).expect("open");
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = f.read(&mut buf).expect("read");
        if n == 0 {
            return out;
        }
        out.extend_from_slice(&buf[..n]);
    }
}

fn write_all(fs: &dyn FileSystem, path: &Path, data: &[u8]) {
    let mut f = fs.create_writable(path).expect("create");
    f.append(data).expect("append");
    f.sync_data().expect("sync");
}

/// What a recovery must reproduce.
#[derive(Debug, Clone, PartialEq)]
struct State {
    version: Version,
    log_number: u64,
    last_sequence: u64,
    pointers: Vec<Option<Vec<u8>>>,
}

fn state(vs: &VersionSet) -> State {
    State {
        version: (*vs.current()).clone(),
        log_number: vs.log_number(),
        last_sequence: vs.last_sequence(),
        pointers: (0..NUM_LEVELS)
            .map(|l| vs.compact_pointer(l).map(<[u8]>::to_vec))
            .collect(),
    }
}

/// Runs a little history of flushes, a compaction, a trivial move and a
/// deletion; returns the state after each edit (index 0: fresh database).
fn history(vs: &mut VersionSet) -> Vec<State> {
    let mut states = vec![state(vs)];
    // Three flushes to L0, each retiring a WAL.
    for i in 0..3u64 {
        let log = vs.new_file_number();
        let table = vs.new_file_number();
        vs.set_last_sequence(100 * (i + 1));
        let mut e = VersionEdit {
            log_number: Some(log),
            ..VersionEdit::default()
        };
        e.add_file(0, meta(table, "a", &format!("m{i}"), 100 * i + 1));
        vs.log_and_apply(e).expect("flush");
        states.push(state(vs));
    }
    // Compaction: all of L0 into two L1 files.
    let (t1, t2) = (vs.new_file_number(), vs.new_file_number());
    let mut e = VersionEdit::default();
    for f in vs.current().files(0) {
        e.delete_file(0, f.number);
    }
    e.add_file(1, meta(t1, "a", "f", 1));
    e.add_file(1, meta(t2, "g", "m2", 1));
    e.compact_pointers
        .push((0, make_internal_key(b"m2", 5, ValueKind::Value)));
    vs.log_and_apply(e).expect("compaction");
    states.push(state(vs));
    // Trivial move of t2 to L2.
    let mut e = VersionEdit::default();
    e.delete_file(1, t2);
    e.add_file(2, meta(t2, "g", "m2", 1));
    vs.log_and_apply(e).expect("move");
    states.push(state(vs));
    // Deletion of t1.
    let mut e = VersionEdit::default();
    e.delete_file(1, t1);
    vs.set_last_sequence(777);
    vs.log_and_apply(e).expect("delete");
    states.push(state(vs));
    states
}

#[test]
fn create_apply_recover_round_trip() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let mut vs = VersionSet::create(posix(), d).expect("create");
    assert_eq!(vs.manifest_number(), 1);
    assert_eq!(manifest::read_current(&PosixFs, d).expect("CURRENT"), 1);
    let states = history(&mut vs);
    let before = states.last().expect("states").clone();
    assert_eq!(before.version.num_files(0), 0);
    assert_eq!(before.version.num_files(2), 1);
    assert_eq!(before.last_sequence, 777);
    let next = vs.next_file_number();
    let old_manifest = vs.manifest_number();
    drop(vs);

    let vs = VersionSet::recover(posix(), d).expect("recover");
    assert_eq!(state(&vs), before);
    assert!(vs.recovered_tail().is_none());
    assert_eq!(
        vs.manifest_number(),
        next,
        "new manifest takes the next number"
    );
    assert_eq!(vs.next_file_number(), next + 1);
    assert_eq!(manifest::read_current(&PosixFs, d).expect("CURRENT"), next);
    let listing = PosixFs.list_dir(d).expect("list");
    let obsolete = vs.obsolete_files(&listing, &HashSet::new());
    assert_eq!(obsolete, vec![manifest::manifest_name(old_manifest)]);
    // Recovering again (from the new manifest) gives the same state.
    drop(vs);
    let vs = VersionSet::recover(posix(), d).expect("recover again");
    assert_eq!(state(&vs), before);
    VersionSet::create(posix(), d).expect_err("CURRENT exists");
}

#[test]
fn create_numbers_past_existing_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_all(&PosixFs, &dir.path().join("000007.log"), b"");
    let vs = VersionSet::create(posix(), dir.path()).expect("create");
    assert_eq!(vs.manifest_number(), 8);
    // The first WAL's number is reserved and named by the first snapshot.
    assert_eq!(vs.log_number(), 9);
    assert_eq!(vs.next_file_number(), 10);
}

#[test]
fn obsolete_files_rules() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut vs = VersionSet::create(posix(), dir.path()).expect("create");
    let log = vs.log_number(); // 2, reserved by create
    let t = vs.new_file_number(); // 3
    let mut e = VersionEdit {
        log_number: Some(log),
        ..VersionEdit::default()
    };
    e.add_file(0, meta(t, "a", "b", 1));
    vs.log_and_apply(e).expect("apply");
    let names: Vec<String> = [
        "CURRENT",
        "LOCK",
        "LOG",
        "LOG.old",
        "MANIFEST-000001",
        "MANIFEST-000000",
        "000001.log",
        "000002.log",
        "000003.sst",
        "000004.sst",
        "000005.sst",
        "000006.blob",
        "000007.blob",
        "x.tmp",
        "CURRENT.000001.tmp",
        "CURRENT.000009.tmp",
        "README",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    // A blob file goes like a table: when neither live nor pinned.
    let pinned: HashSet<u64> = [5, 7].into_iter().collect();
    assert_eq!(
        vs.obsolete_files(&names, &pinned),
        vec![
            // By number, WALs oldest first; unnumbered files first.
            "CURRENT.000001.tmp",
            "x.tmp",
            "MANIFEST-000000",
            "000001.log",
            "000004.sst",
            "000006.blob",
        ]
    );
    assert_eq!(vs.live_files(), [t].into_iter().collect());
}

/// Offsets of the records of manifest `number` (header record included).
fn record_offsets(d: &Path, number: u64) -> Vec<u64> {
    let mut offs = Vec::new();
    wal::replay(
        &PosixFs,
        &manifest::manifest_path(d, number),
        number,
        |_, off| {
            offs.push(off);
            Ok(())
        },
    )
    .expect("replay");
    offs
}

/// Builds a database with a history, returns (CURRENT bytes, manifest
/// number, manifest bytes, states).
fn sample_manifest() -> (u64, Vec<u8>, Vec<State>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut vs = VersionSet::create(posix(), dir.path()).expect("create");
    let states = history(&mut vs);
    let n = vs.manifest_number();
    let bytes = read_all(&PosixFs, &manifest::manifest_path(dir.path(), n));
    (n, bytes, states)
}

/// Writes a directory holding `manifest` as manifest `n` and a CURRENT.
fn dir_with(n: u64, manifest_bytes: &[u8]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    write_all(
        &PosixFs,
        &manifest::manifest_path(dir.path(), n),
        manifest_bytes,
    );
    manifest::write_current(&PosixFs, dir.path(), n).expect("CURRENT");
    dir
}

#[test]
fn torn_tail_recovers_prefix() {
    let (n, bytes, states) = sample_manifest();
    let probe = dir_with(n, &bytes);
    let offs = record_offsets(probe.path(), n);
    assert_eq!(
        offs.len(),
        states.len() + 1,
        "header + snapshot + one record per edit"
    );
    let last = *offs.last().expect("records") as usize;
    let prefix = &states[states.len() - 2];
    for cut in last..bytes.len() {
        let dir = dir_with(n, &bytes[..cut]);
        let vs =
            VersionSet::recover(posix(), dir.path()).unwrap_or_else(|e| panic!("cut {cut}: {e}"));
        assert_eq!(&state(&vs), prefix, "cut {cut}");
        assert_eq!(vs.recovered_tail().is_some(), cut > last, "cut {cut}");
        if let Some(t) = vs.recovered_tail() {
            assert_eq!(t.offset, last as u64);
            assert_eq!(t.file, manifest::manifest_path(dir.path(), n));
        }
    }
    // An empty manifest, or one cut inside its header or snapshot edit,
    // holds no state: corruption naming the manifest.
    for cut in [0, offs[1] as usize, offs[1] as usize + 5] {
        let dir = dir_with(n, &bytes[..cut]);
        match VersionSet::recover(posix(), dir.path()) {
            Err(Error::Corruption { file, .. }) => {
                assert_eq!(file, manifest::manifest_path(dir.path(), n), "cut {cut}")
            }
            other => panic!("cut {cut}: expected corruption, got {other:?}"),
        }
    }
    // Cutting into the snapshot edit leaves no state: corruption.
    let dir = dir_with(n, &bytes[..offs[1] as usize + 5]);
    let e = VersionSet::recover(posix(), dir.path()).expect_err("no snapshot");
    assert!(e.is_corruption(), "{e}");
}

#[test]
fn damaged_middle_record_is_corruption() {
    let (n, bytes, _) = sample_manifest();
    let probe = dir_with(n, &bytes);
    let offs = record_offsets(probe.path(), n);
    // Flip a payload byte of the third record (an edit followed by others).
    let at = offs[3] as usize + wal::format::HEADER_SIZE + 1;
    let mut bad = bytes.clone();
    bad[at] ^= 0x40;
    let dir = dir_with(n, &bad);
    match VersionSet::recover(posix(), dir.path()) {
        Err(Error::Corruption { file, offset, .. }) => {
            assert_eq!(file, manifest::manifest_path(dir.path(), n));
            assert_eq!(offset, offs[3]);
        }
        other => panic!("expected corruption, got {other:?}"),
    }
    // Recovery wrote nothing: CURRENT still names the damaged manifest.
    assert_eq!(
        manifest::read_current(&PosixFs, dir.path()).expect("CURRENT"),
        n
    );
}

#[test]
fn flipped_byte_anywhere_never_panics() {
    let (n, bytes, states) = sample_manifest();
    let mut ok = 0;
    for at in 0..bytes.len() {
        {
            // One flip per byte (bit chosen by position) keeps the test fast.
            let x = 1u8 << (at % 8);
            let mut bad = bytes.clone();
            bad[at] ^= x;
            let dir = dir_with(n, &bad);
            match VersionSet::recover(posix(), dir.path()) {
                Ok(vs) => {
                    let s = state(&vs);
                    assert!(states.contains(&s), "byte {at}: state is not a prefix");
                    ok += 1;
                }
                Err(e) => assert!(e.is_corruption(), "byte {at}: {e}"),
            }
        }
    }
    assert!(ok > 0, "flips in the last record are torn tails");
}

#[test]
fn current_errors_name_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let cur = manifest::current_path(d);
    let check = |want_file: &Path, what: &str| match VersionSet::recover(posix(), d) {
        Err(Error::Corruption { file, .. }) => assert_eq!(file, want_file, "{what}"),
        other => panic!("{what}: expected corruption, got {other:?}"),
    };
    check(&cur, "missing CURRENT");
    write_all(&PosixFs, &cur, b"MANIFEST-000042\n");
    check(&manifest::manifest_path(d, 42), "missing manifest");
    for garbage in [
        &b""[..],
        b"MANIFEST-000042",
        b"MANIFEST-\n",
        b"hello\n",
        b"\xff\xfe\n",
        b"MANIFEST-99999999999999999999999\n",
    ] {
        write_all(&PosixFs, &cur, garbage);
        check(&cur, &format!("garbage {garbage:?}"));
    }
    let e = VersionSet::recover(posix(), d).expect_err("garbage");
    assert!(e.to_string().contains("CURRENT"), "{e}");
}

/// Writes `MANIFEST-000003` in `d` with a header of format `version` and
/// `snapshot` as its one edit, and points `CURRENT` at it.
fn write_manifest_of_version(d: &Path, version: u32, snapshot: &VersionEdit) {
    let file = PosixFs
        .create_writable(&manifest::manifest_path(d, 3))
        .expect("create");
    let mut w = LogWriter::new(file, 3).expect("writer");
    let mut header = manifest::MANIFEST_MAGIC.to_vec();
    header.extend_from_slice(&version.to_le_bytes());
    w.add_record(&header).expect("header");
    w.add_record(&snapshot.encode()).expect("edit");
    w.sync().expect("sync");
    manifest::write_current(&PosixFs, d, 3).expect("CURRENT");
}

#[test]
fn unknown_format_version_rejected() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    write_manifest_of_version(d, 8, &VersionEdit::default());
    match VersionSet::recover(posix(), d) {
        Err(Error::UnsupportedVersion {
            found: 8,
            supported: 7,
            file,
        }) => {
            assert_eq!(file, manifest::manifest_path(d, 3));
        }
        other => panic!("expected UnsupportedVersion, got {other:?}"),
    }
}

/// A format 6 manifest's time samples (tag 15, whole unix seconds rounded
/// down) are read as the milliseconds ending their second, and a rewrite
/// keeps them (as tag 20) with the expiry floor (tag 21).
#[test]
fn ttl_samples_of_a_format_6_manifest_read_as_milliseconds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let snap = VersionEdit {
        log_number: Some(4),
        next_file_number: Some(5),
        last_sequence: Some(9),
        ..VersionEdit::default()
    };
    let mut payload = snap.encode();
    for (seq, secs) in [(3u64, 1_700_000_000u64), (9, 1_700_000_002)] {
        crate::util::coding::put_varint64(&mut payload, super::edit::tag::TIME_SAMPLE);
        crate::util::coding::put_varint64(&mut payload, seq);
        crate::util::coding::put_varint64(&mut payload, secs);
    }
    let file = PosixFs
        .create_writable(&manifest::manifest_path(d, 3))
        .expect("create");
    let mut w = LogWriter::new(file, 3).expect("writer");
    let mut header = manifest::MANIFEST_MAGIC.to_vec();
    header.extend_from_slice(&6u32.to_le_bytes());
    w.add_record(&header).expect("header");
    w.add_record(&payload).expect("edit");
    w.sync().expect("sync");
    manifest::write_current(&PosixFs, d, 3).expect("CURRENT");
    let mut vs = VersionSet::recover(posix(), d).expect("a version 6 manifest opens");
    let want = [(3, 1_700_000_001_000), (9, 1_700_000_003_000)];
    assert_eq!(vs.current().time_map().samples(), want);
    // A roll-over writes the state as a snapshot into a new manifest.
    vs.set_max_manifest_size(1);
    vs.log_and_apply(VersionEdit {
        ttl_floor: Some(4),
        ..VersionEdit::default()
    })
    .expect("edit");
    drop(vs);
    let vs = VersionSet::recover(posix(), d).expect("reopen");
    assert_eq!(vs.current().time_map().samples(), want);
    assert_eq!(vs.current().ttl_floor(), 4);
}

/// Manifests of format version 1 (before the clean-close field) are read.
#[test]
fn version_1_manifests_are_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let snap = VersionEdit {
        log_number: Some(4),
        next_file_number: Some(5),
        last_sequence: Some(9),
        ..VersionEdit::default()
    };
    write_manifest_of_version(d, 1, &snap);
    let vs = VersionSet::recover(posix(), d).expect("a version 1 manifest opens");
    assert_eq!(vs.log_number(), 4);
    assert_eq!(vs.last_sequence(), 9);
    assert_eq!(vs.clean_close(), None);
}

#[test]
fn level_overlap_rejected() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let mut vs = VersionSet::create(posix(), d).expect("create");
    let mut e = VersionEdit::default();
    e.add_file(1, meta(10, "a", "k", 1));
    vs.log_and_apply(e).expect("first");
    let before = vs.current();
    let mut e = VersionEdit::default();
    e.add_file(1, meta(11, "k", "z", 1));
    let mut cp = VersionEdit::default();
    cp.compact_pointers.push((NUM_LEVELS, b"k".to_vec()));
    assert!(matches!(
        vs.log_and_apply(cp),
        Err(Error::InvalidArgument(_))
    ));
    let err = vs.log_and_apply(e).expect_err("overlap");
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    assert_eq!(*vs.current(), *before);
    // Not an IO error: the set keeps working.
    let mut e = VersionEdit::default();
    e.add_file(1, meta(11, "l", "z", 1));
    vs.log_and_apply(e).expect("disjoint");

    // A manifest that holds an overlapping edit fails recovery at that edit.
    let snap = VersionEdit {
        log_number: Some(0),
        next_file_number: Some(20),
        last_sequence: Some(0),
        ..VersionEdit::default()
    };
    let mut w =
        ManifestWriter::create(&PosixFs, d, 30, std::slice::from_ref(&snap)).expect("manifest");
    let mut ok = VersionEdit::default();
    ok.add_file(1, meta(12, "a", "k", 1));
    w.append(&ok).expect("append");
    let mut bad = VersionEdit::default();
    bad.add_file(1, meta(13, "c", "d", 1));
    w.append(&bad).expect("append");
    manifest::write_current(&PosixFs, d, 30).expect("CURRENT");
    let offs = record_offsets(d, 30);
    match VersionSet::recover(posix(), d) {
        Err(Error::Corruption {
            file,
            offset,
            reason,
        }) => {
            assert_eq!(file, manifest::manifest_path(d, 30));
            assert_eq!(offset, offs[3]);
            assert!(reason.contains("overlaps"), "{reason}");
        }
        other => panic!("expected corruption, got {other:?}"),
    }
}

/// Found by reading the `manifest` fuzz target's path: counters at the
/// top of their range used to overflow in recovery (`log_number + 1`,
/// `next_file_number + 1`, `max_live + 1`: a panic in debug builds,
/// wrapped file numbers in release), and a last sequence past 56 bits was
/// accepted. Each is corruption now. Regression inputs:
/// `fuzz/regressions/manifest/`.
#[test]
fn counters_at_the_top_of_their_range_are_corruption() {
    let cases = [
        (u64::MAX, 20, 12, 5),
        (3, u64::MAX, 12, 5),
        (3, 20, u64::MAX, 5),
        (3, 20, 12, crate::keys::MAX_SEQUENCE + 1),
    ];
    for (log, next, file, last) in cases {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        let mut snap = VersionEdit {
            log_number: Some(log),
            next_file_number: Some(next),
            last_sequence: Some(last),
            ..VersionEdit::default()
        };
        snap.add_file(1, meta(file.min(u64::MAX - 1000), "a", "k", 1));
        snap.new_files[0].1.number = file;
        ManifestWriter::create(&PosixFs, d, 30, std::slice::from_ref(&snap)).expect("manifest");
        manifest::write_current(&PosixFs, d, 30).expect("CURRENT");
        let what = format!("log {log} next {next} file {file} last {last}");
        match VersionSet::recover_read_only(posix(), d) {
            Err(Error::Corruption { file, offset, .. }) => {
                assert_eq!(file, manifest::manifest_path(d, 30), "{what}");
                assert_eq!(offset, 0, "{what}");
            }
            other => panic!("{what}: expected corruption, got {other:?}"),
        }
    }
    // The largest values that still leave room recover.
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let snap = VersionEdit {
        log_number: Some(u64::MAX - 2),
        next_file_number: Some(u64::MAX - 1),
        last_sequence: Some(crate::keys::MAX_SEQUENCE),
        ..VersionEdit::default()
    };
    ManifestWriter::create(&PosixFs, d, 30, std::slice::from_ref(&snap)).expect("manifest");
    manifest::write_current(&PosixFs, d, 30).expect("CURRENT");
    let vs = VersionSet::recover_read_only(posix(), d).expect("recovers");
    assert_eq!(vs.next_file_number(), u64::MAX);
}

#[test]
fn sync_failure_leaves_version_unchanged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fs = FaultInjectingFs::new(posix());
    let mut vs = VersionSet::create(Arc::new(fs.clone()), dir.path()).expect("create");
    let mut e = VersionEdit::default();
    e.add_file(0, meta(5, "a", "b", 1));
    vs.log_and_apply(e).expect("ok");
    let before = state(&vs);
    fs.fail_syncs(true);
    let mut e = VersionEdit::default();
    e.add_file(0, meta(6, "c", "d", 2));
    vs.log_and_apply(e).expect_err("sync fails");
    assert_eq!(state(&vs), before);
    fs.heal();
    let err = vs
        .log_and_apply(VersionEdit::default())
        .expect_err("poisoned");
    assert!(matches!(err, Error::Poisoned(_)), "{err}");
    assert_eq!(state(&vs), before);
    drop(vs);
    // The edit reached the OS before the sync failed, so it may be
    // recovered; either way recovery succeeds.
    let vs = VersionSet::recover(posix(), dir.path()).expect("recover");
    assert!(vs.live_files().contains(&5));
}

#[test]
fn append_failure_leaves_version_unchanged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fs = FaultInjectingFs::new(posix());
    let mut vs = VersionSet::create(Arc::new(fs.clone()), dir.path()).expect("create");
    let before = state(&vs);
    fs.fail_appends_after(0);
    let mut e = VersionEdit::default();
    e.add_file(0, meta(6, "c", "d", 2));
    vs.log_and_apply(e).expect_err("append fails");
    assert_eq!(state(&vs), before);
    fs.heal();
    drop(vs);
    let vs = VersionSet::recover(posix(), dir.path()).expect("recover");
    assert_eq!(state(&vs), before);
}

#[test]
fn roll_over_keeps_recoverability() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let mut vs = VersionSet::create(posix(), d).expect("create");
    vs.set_max_manifest_size(300);
    let mut manifests = HashSet::new();
    for i in 0..40u64 {
        let t = vs.new_file_number();
        let mut e = VersionEdit::default();
        e.add_file(0, meta(t, &format!("k{i:02}"), &format!("k{i:02}z"), i));
        if i >= 1 {
            // Keep L0 small: drop the previous file.
            let prev = vs.current().files(0)[0].number;
            e.delete_file(0, prev);
        }
        vs.set_last_sequence(i * 10);
        vs.log_and_apply(e).expect("apply");
        manifests.insert(vs.manifest_number());
        assert_eq!(
            manifest::read_current(&PosixFs, d).expect("CURRENT"),
            vs.manifest_number()
        );
        assert!(
            vs.manifest_size() < 300 + 200,
            "rolled: {}",
            vs.manifest_size()
        );
    }
    assert!(manifests.len() > 3, "manifest rolled over: {manifests:?}");
    let before = state(&vs);
    let listing = PosixFs.list_dir(d).expect("list");
    let obsolete = vs.obsolete_files(&listing, &HashSet::new());
    assert_eq!(
        obsolete.len(),
        listing.len() - 2,
        "all but CURRENT and the live manifest"
    );
    let next = vs.next_file_number();
    drop(vs);
    let vs = VersionSet::recover(posix(), d).expect("recover");
    assert_eq!(state(&vs), before);
    assert!(vs.next_file_number() > next);
}

#[test]
fn version_set_is_send() {
    fn is_send<T: Send>() {}
    fn is_send_sync<T: Send + Sync>() {}
    is_send::<VersionSet>();
    is_send_sync::<Version>();
}

/// xorshift PRNG for the model test.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn k(i: u64) -> String {
    format!("k{i:04}")
}

/// User key of a test file's bound, back as a number.
fn key_num(user_key: &[u8]) -> u64 {
    std::str::from_utf8(&user_key[1..])
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// Random flushes, compactions, moves and reopens with a tiny manifest limit:
/// every reopen reproduces the state, every version keeps the invariants.
#[test]
fn random_history_survives_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut vs = VersionSet::create(posix(), d).expect("create");
    let mut seq = 1;
    for step in 0..300 {
        let v = vs.current();
        let mut e = VersionEdit::default();
        match rng.below(10) {
            0..=3 => {
                let a = rng.below(1000);
                let b = a + rng.below(100);
                seq += 10;
                vs.set_last_sequence(seq + 9);
                e.log_number = Some(vs.new_file_number());
                e.add_file(0, meta(vs.new_file_number(), &k(a), &k(b), seq));
            }
            4..=7 => {
                let level = rng.below(NUM_LEVELS as u64 - 1) as usize;
                let Some(pick) = v.files(level).first().cloned() else {
                    continue;
                };
                let inputs = v.overlapping_files(
                    level,
                    Some(pick.smallest_user_key()),
                    Some(pick.largest_user_key()),
                );
                let lo = inputs.iter().map(|f| key_num(f.smallest_user_key())).min();
                let hi = inputs.iter().map(|f| key_num(f.largest_user_key())).max();
                let (Some(lo), Some(hi)) = (lo, hi) else {
                    continue;
                };
                let next =
                    v.overlapping_files(level + 1, Some(k(lo).as_bytes()), Some(k(hi).as_bytes()));
                let lo = next
                    .iter()
                    .map(|f| key_num(f.smallest_user_key()))
                    .fold(lo, u64::min);
                let hi = next
                    .iter()
                    .map(|f| key_num(f.largest_user_key()))
                    .fold(hi, u64::max);
                for f in &inputs {
                    e.delete_file(level, f.number);
                }
                for f in &next {
                    e.delete_file(level + 1, f.number);
                }
                if lo < hi {
                    let mid = lo + (hi - lo) / 2;
                    e.add_file(level + 1, meta(vs.new_file_number(), &k(lo), &k(mid), 1));
                    e.add_file(
                        level + 1,
                        meta(vs.new_file_number(), &k(mid + 1), &k(hi), 1),
                    );
                } else {
                    e.add_file(level + 1, meta(vs.new_file_number(), &k(lo), &k(hi), 1));
                }
                e.compact_pointers.push((level, pick.largest.clone()));
            }
            8 => {
                let before = state(&vs);
                drop(vs);
                vs = VersionSet::recover(posix(), d).unwrap_or_else(|e| panic!("step {step}: {e}"));
                assert_eq!(state(&vs), before, "step {step}");
                vs.set_max_manifest_size(200 + rng.below(2000));
                continue;
            }
            _ => {
                // An overlapping add to a deep level must be refused.
                let level = 1 + rng.below(NUM_LEVELS as u64 - 1) as usize;
                let Some(f) = v.files(level).first().cloned() else {
                    continue;
                };
                let mut bad = (*f).clone();
                bad.number = vs.new_file_number();
                e.add_file(level, bad);
                let before = state(&vs);
                assert!(vs.log_and_apply(e).is_err(), "step {step}");
                assert_eq!(state(&vs), before);
                continue;
            }
        }
        vs.log_and_apply(e)
            .unwrap_or_else(|e| panic!("step {step}: {e}"));
        vs.current().check_invariants().expect("invariants");
    }
    let before = state(&vs);
    assert!(before.version.total_files() > 0);
    assert!(
        (1..NUM_LEVELS).all(|l| before.version.num_files(l) > 0),
        "compactions reached every level"
    );
    drop(vs);
    let vs = VersionSet::recover(posix(), d).expect("final recover");
    assert_eq!(state(&vs), before);
}

#[test]
fn failed_roll_over_keeps_old_manifest() {
    // Fail (a) the new manifest's sync, (b) the CURRENT temp file's append.
    for case in 0..2 {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        let fs = FaultInjectingFs::new(posix());
        let mut vs = VersionSet::create(Arc::new(fs.clone()), d).expect("create");
        let mut e = VersionEdit::default();
        e.add_file(0, meta(vs.new_file_number(), "a", "b", 1));
        vs.log_and_apply(e).expect("apply");
        let before = state(&vs);
        let old = vs.manifest_number();
        vs.set_max_manifest_size(1);
        if case == 0 {
            fs.fail_syncs(true);
        } else {
            // WAL file header, manifest header, snapshot: then CURRENT's temp.
            fs.fail_appends_after(3);
        }
        let mut e = VersionEdit::default();
        e.add_file(0, meta(vs.new_file_number(), "c", "d", 2));
        vs.log_and_apply(e).expect_err("roll fails");
        fs.heal();
        assert_eq!(state(&vs), before, "case {case}");
        assert_eq!(vs.manifest_number(), old);
        assert_eq!(manifest::read_current(&PosixFs, d).expect("CURRENT"), old);
        let listing = PosixFs.list_dir(d).expect("list");
        assert!(!listing.iter().any(|n| n.ends_with(".tmp")), "{listing:?}");
        drop(vs);
        let vs = VersionSet::recover(posix(), d).expect("recover");
        assert_eq!(state(&vs), before, "case {case}");
    }
}

#[test]
fn a_full_disk_under_the_manifest_is_recovered_by_a_new_manifest() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let fs = FaultInjectingFs::new(posix());
    let mut vs = VersionSet::create(Arc::new(fs.clone()), d).expect("create");
    let mut e = VersionEdit::default();
    e.add_file(0, meta(5, "a", "b", 1));
    vs.log_and_apply(e).expect("ok");
    let before = state(&vs);
    let old_manifest = vs.manifest_number();
    // The edit's record gets torn: a few bytes fit, then ENOSPC.
    fs.short_writes(true);
    fs.limit_space_of("MANIFEST", 7);
    let mut e = VersionEdit::default();
    e.add_file(0, meta(6, "c", "d", 2));
    let err = vs.log_and_apply(e).expect_err("no space");
    assert!(err.is_no_space(), "{err}");
    assert!(vs.has_failed());
    assert_eq!(state(&vs), before);
    // Still full: the new manifest cannot be written either, the set stays
    // refused, and the attempt leaves no manifest file behind.
    let manifests = |d: &Path| {
        std::fs::read_dir(d)
            .expect("ls")
            .filter(|e| {
                e.as_ref()
                    .is_ok_and(|e| e.file_name().to_string_lossy().starts_with("MANIFEST-"))
            })
            .count()
    };
    let err = vs.restart_manifest().expect_err("still full");
    assert!(err.is_no_space(), "{err}");
    assert!(vs.has_failed());
    assert_eq!(manifests(d), 1);
    assert_eq!(
        manifest::read_current(&fs, d).expect("current"),
        old_manifest
    );
    fs.heal();
    vs.restart_manifest().expect("space again");
    assert!(!vs.has_failed());
    assert_ne!(vs.manifest_number(), old_manifest);
    assert_eq!(
        manifest::read_current(&fs, d).expect("current"),
        vs.manifest_number()
    );
    assert_eq!(
        state(&vs),
        before,
        "the failed edit is not in the new manifest"
    );
    let mut e = VersionEdit::default();
    e.add_file(0, meta(7, "e", "f", 3));
    vs.log_and_apply(e).expect("edits accepted again");
    let after = state(&vs);
    drop(vs);
    let vs = VersionSet::recover(posix(), d).expect("recover");
    assert_eq!(state(&vs), after);
    assert!(
        !vs.live_files().contains(&6),
        "the failed edit stays undone"
    );
}

#[test]
fn a_manifest_io_error_that_is_not_a_full_disk_is_not_restarted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fs = FaultInjectingFs::new(posix());
    let mut vs = VersionSet::create(Arc::new(fs.clone()), dir.path()).expect("create");
    vs.restart_manifest().expect("nothing failed: a no-op");
    fs.fail_appends_after(0);
    let mut e = VersionEdit::default();
    e.add_file(0, meta(6, "c", "d", 2));
    vs.log_and_apply(e).expect_err("EIO");
    fs.heal();
    let err = vs.restart_manifest().expect_err("refused");
    assert!(
        matches!(err, Error::Poisoned(_)) && err.to_string().contains("reopen"),
        "{err}"
    );
    assert!(vs.has_failed());
}

/// A read-only version set refuses an edit before doing anything: the
/// error is `ReadOnly` and no counter moved.
#[test]
fn read_only_edits_are_refused_before_any_change() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    drop(VersionSet::create(posix(), d).expect("create"));
    let mut vs = VersionSet::recover_read_only(posix(), d).expect("read-only");
    let next = vs.next_file_number();
    let mut e = VersionEdit::default();
    e.add_file(0, meta(next + 10, "a", "b", 1));
    assert!(matches!(vs.log_and_apply(e), Err(Error::ReadOnly(_))));
    assert_eq!(
        vs.next_file_number(),
        next,
        "the refused edit moved no counter"
    );
}

/// Blob files (open, then sealed with garbage) survive a reopen and a
/// manifest roll-over (the snapshot edit carries them).
#[test]
fn blob_files_survive_reopen_and_roll_over() {
    use crate::version::BlobFileEdit;
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let mut vs = VersionSet::create(posix(), d).expect("create");
    let (a, b) = (vs.new_file_number(), vs.new_file_number());
    let open = |number| BlobFileEdit {
        number,
        ..BlobFileEdit::default()
    };
    vs.log_and_apply(VersionEdit {
        blob_files: vec![open(a), open(b)],
        ..VersionEdit::default()
    })
    .expect("open");
    vs.log_and_apply(VersionEdit {
        blob_files: vec![BlobFileEdit {
            number: a,
            sealed: true,
            size: 12288,
            value_count: 3,
            value_bytes: 8000,
            crash_closed: false,
        }],
        blob_garbage: vec![(a, 1, 4000)],
        ..VersionEdit::default()
    })
    .expect("seal");
    // The blob files exist, as the open's checks require.
    std::fs::write(d.join(format!("{a:06}.blob")), vec![0u8; 12288]).expect("write");
    std::fs::write(d.join(format!("{b:06}.blob")), vec![0u8; 100]).expect("write");
    let want = vs.current().blob_files().clone();
    assert_eq!(want.len(), 2);
    drop(vs);
    let mut vs = VersionSet::recover(posix(), d).expect("recover");
    assert_eq!(vs.current().blob_files(), &want);
    vs.restart_manifest().expect("roll over");
    drop(vs);
    let vs = VersionSet::recover(posix(), d).expect("recover after roll-over");
    assert_eq!(vs.current().blob_files(), &want);
    let s = want[&a];
    assert_eq!((s.garbage_count, s.garbage_bytes), (1, 4000));
}
