//! Random damage to every file type, checked with gets and full scans both
//! ways: an error, or exactly the right data — never a wrong value, a
//! resurrected (deleted) key, an older version, or a skipped key.
//!
//! One pristine database is built with data on several levels, tables that
//! hold overwrites and tombstones, range tombstones in the manifest, and a
//! WAL (never flushed) that holds more of all three; every third key's value is large enough for a blob file,
//! so tables and WAL records hold blob pointers too. Half of the writes go
//! to a second keyspace (`side`), in the same batches: the manifest holds
//! keyspace records and group edits, the WAL keyspace markers, and tables
//! their keyspace id; both keyspaces are checked. Each round copies it,
//! damages one file chosen at random (WAL, table, blob file, MANIFEST,
//! CURRENT, LOG) in one of three ways (1–8 flipped
//! bytes, a truncation, a zeroed 4 KiB range), then opens the copy
//! read-only, read-write, and read-write again after a clean close. Every
//! open that succeeds must show exactly the written data, where the one
//! allowed loss is a reported WAL tail: a damaged last record of the
//! newest WAL looks exactly like a write torn by a crash, so recovery cuts
//! it off and says so in `recovery_report().truncated`; the data must then
//! be exactly the writes up to the last sequence number recovered. Every
//! get and scan on an open database must give an error or the right data.
//!
//! Before the opens, `varve check` (`tools::check_db`) runs on the damaged
//! copy, and its verdict must be the opens': it flags the database exactly
//! when an open refuses it or a get or scan fails.
//!
//! `VARVE_DAMAGE_ROUNDS=N` sets the rounds (default 300; `VARVE_DAMAGE_SEED`
//! the first seed); `scripts/damage-loop.sh` runs long loops. A failure
//! prints the seed, the file and the damage, so it can be replayed.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::{Rng, value_for};
use varve::{Db, Error, Keyspace, KeyspaceOptions, Options, WriteBatch};

/// Keys are `keyspace byte | key`: 0 the default keyspace, 1 `side`.
type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// The second keyspace.
const SIDE: &str = "side";

/// `key` of keyspace `ks` (0 or 1) as a model key.
fn mkey(ks: u8, key: &[u8]) -> Vec<u8> {
    let mut k = vec![ks];
    k.extend_from_slice(key);
    k
}

/// The part of `model` that is keyspace `ks`'s, with plain keys.
fn part(model: &Model, ks: u8) -> Model {
    model
        .range(vec![ks]..vec![ks + 1])
        .map(|(k, v)| (k[1..].to_vec(), v.clone()))
        .collect()
}

/// Keys `k0000..k1199`.
const KEYS: u64 = 1200;

fn key(i: u64) -> Vec<u8> {
    format!("k{i:04}").into_bytes()
}

/// Values of at least this many bytes go to blob files.
const MIN_BLOB: usize = 512;

fn options() -> Options {
    Options {
        min_blob_size: Some(MIN_BLOB),
        // Nothing expires in a day; the manifest then holds time samples
        // (its tag 15 records) for the damage to hit.
        ttl: Some(std::time::Duration::from_secs(86_400)),
        // Every read reaches the files (and so the damage).
        cache_size: 0,
        warm_table_cache: false,
        ..common::tiny_lsm_options()
    }
}

/// What the pristine database holds.
struct Pristine {
    /// Everything written up to the end of the table phase.
    tables_model: Model,
    /// The WAL phase: (last sequence of the batch, the model after it).
    wal_batches: Vec<(u64, Model)>,
}

impl Pristine {
    /// The model of everything with a sequence number `<= seq` (the table
    /// phase is always whole: its WALs are retired).
    fn model_at(&self, seq: u64) -> &Model {
        self.wal_batches
            .iter()
            .rev()
            .find(|(s, _)| *s <= seq)
            .map_or(&self.tables_model, |(_, m)| m)
    }

    fn full(&self) -> &Model {
        self.wal_batches
            .last()
            .map_or(&self.tables_model, |(_, m)| m)
    }
}

fn write_batch(db: &Db, side: &Keyspace, rng: &mut Rng, model: &mut Model, round: u64, ops: usize) {
    let mut b = WriteBatch::new();
    for _ in 0..ops {
        let i = rng.below(KEYS);
        let k = key(i);
        let ks = rng.below(2) as u8;
        let ksh = if ks == 0 {
            db.default_keyspace()
        } else {
            side.clone()
        };
        if rng.below(60) == 0 {
            // A range tombstone over up to 12 keys.
            let end = key(i + 1 + rng.below(12));
            b.delete_range_in(&ksh, k.as_slice()..end.as_slice());
            let doomed: Vec<Vec<u8>> = model
                .range(mkey(ks, &k)..mkey(ks, &end))
                .map(|(k, _)| k.clone())
                .collect();
            for d in doomed {
                model.remove(&d);
            }
        } else if rng.below(5) == 0 {
            b.delete_in(&ksh, &k);
            model.remove(&mkey(ks, &k));
        } else {
            let mut v = value_for(&k);
            v.extend_from_slice(&round.to_le_bytes());
            v.push(ks);
            // A blob value (the default keyspace keeps them in blob
            // files): the key's bytes repeated past the threshold.
            if rng.below(3) == 0 {
                while v.len() < MIN_BLOB + 40 {
                    v.extend_from_slice(&k);
                }
            }
            b.put_in(&ksh, &k, &v);
            model.insert(mkey(ks, &k), v);
        }
    }
    db.write(b).expect("write");
}

/// The `side` keyspace of an open database, which must exist.
fn side_of(what: &str, db: &Db) -> Keyspace {
    assert!(
        db.keyspaces().iter().any(|n| n == SIDE),
        "{what}: the keyspace {SIDE} is gone: {:?}",
        db.keyspaces()
    );
    db.keyspace(SIDE, KeyspaceOptions::from(&options()))
        .expect("side keyspace")
}

fn build(dir: &Path) -> Pristine {
    let mut rng = Rng(0xda3a6e);
    let mut model = Model::new();
    {
        let db = Db::open(dir, options()).expect("open");
        let side = db
            .keyspace(SIDE, KeyspaceOptions::from(&options()))
            .expect("side");
        // A snapshot older than every range tombstone keeps them in the
        // manifest (compaction may not apply them under it) until the
        // close, whatever background work runs when.
        let pin = db.snapshot();
        // Several rounds that overwrite and delete, each flushed: tables on
        // several levels, each holding overwrites and tombstones.
        for round in 0..6u64 {
            for _ in 0..60 {
                write_batch(&db, &side, &mut rng, &mut model, round, 8);
            }
            db.flush().expect("flush");
            if round % 2 == 1 {
                db.wait_for_compactions().expect("compactions");
            }
        }
        let stats = db.stats();
        assert!(
            stats.range_tombstones > 0,
            "the manifest holds range tombstones:\n{stats}"
        );
        assert!(
            stats
                .keyspaces
                .iter()
                .any(|k| k.levels.iter().any(|l| l.files > 0) && k.range_tombstones > 0),
            "the side keyspace has tables and range tombstones:\n{stats}"
        );
        db.close().expect("close");
        drop(pin);
    }
    // The WAL phase, with a memtable large enough that nothing is flushed:
    // every write of it is in the newest WAL only.
    let db = Db::open(
        dir,
        Options {
            write_buffer_size: 32 << 20,
            ..options()
        },
    )
    .expect("reopen");
    let side = side_of("build", &db);
    let tables_model = model.clone();
    let mut wal_batches = Vec::new();
    for _ in 0..80 {
        write_batch(&db, &side, &mut rng, &mut model, 99, 4);
        wal_batches.push((db.debug().latest_sequence(), model.clone()));
    }
    let levels: Vec<usize> = db.debug().live_tables().iter().map(Vec::len).collect();
    assert!(
        levels.iter().filter(|&&n| n > 0).count() >= 2,
        "tables on several levels: {levels:?}"
    );
    db.close().expect("close");
    Pristine {
        tables_model,
        wal_batches,
    }
}

fn data_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_file())
        .filter(|p| {
            let n = p.file_name().map(|n| n.to_string_lossy().into_owned());
            n.is_some_and(|n| n != "LOCK" && n != "LOG.old")
        })
        .collect();
    v.sort();
    v
}

/// Damages `path` and says how.
fn damage(path: &Path, rng: &mut Rng) -> String {
    let mut bytes = std::fs::read(path).expect("read");
    if bytes.is_empty() {
        return "empty file, left alone".into();
    }
    let len = bytes.len();
    let what = match rng.below(3) {
        0 => {
            let n = 1 + rng.below(8) as usize;
            let mut at = Vec::new();
            for _ in 0..n {
                let o = rng.below(len as u64) as usize;
                bytes[o] ^= 1 + rng.below(255) as u8;
                at.push(o);
            }
            format!("flipped bytes at {at:?}")
        }
        1 => {
            let keep = rng.below(len as u64) as usize;
            bytes.truncate(keep);
            format!("truncated to {keep} of {len} bytes")
        }
        _ => {
            let o = rng.below(len as u64) as usize;
            let end = (o + 4096).min(len);
            bytes[o..end].fill(0);
            format!("zeroed {o}..{end}")
        }
    };
    std::fs::write(path, &bytes).expect("write");
    what
}

/// Checks that a scan's items are a prefix of `want` and then one
/// corruption or IO error, or exactly `want`.
fn check_scan(
    what: &str,
    items: impl Iterator<Item = varve::Result<(Vec<u8>, Vec<u8>)>>,
    want: &[(&Vec<u8>, &Vec<u8>)],
) -> u64 {
    let mut n = 0;
    for item in items {
        match item {
            Ok((k, v)) => {
                match want.get(n) {
                    Some((wk, wv)) if **wk == k && **wv == v => {}
                    Some((wk, _)) => panic!(
                        "{what}: scan entry {n} is {}{} where {} belongs",
                        String::from_utf8_lossy(&k),
                        if **wk == k { " (wrong value)" } else { "" },
                        String::from_utf8_lossy(wk)
                    ),
                    None => panic!(
                        "{what}: scan entry {n} ({}) past the end",
                        String::from_utf8_lossy(&k)
                    ),
                }
                n += 1;
            }
            Err(e) => {
                assert_allowed_error(what, &e);
                return 1;
            }
        }
    }
    assert_eq!(
        n,
        want.len(),
        "{what}: the scan ended early without an error"
    );
    0
}

fn assert_allowed_error(what: &str, e: &Error) {
    assert!(
        matches!(
            e,
            Error::Corruption { .. } | Error::Io { .. } | Error::UnsupportedVersion { .. }
        ),
        "{what}: unexpected error kind: {e}"
    );
}

/// Every get and both full scans of both keyspaces against `want`;
/// returns how many of them failed (with an allowed error).
fn check_reads(what: &str, db: &Db, want: &Model) -> u64 {
    let side = side_of(what, db);
    check_keyspace(what, &db.default_keyspace(), &part(want, 0))
        + check_keyspace(&format!("{what}, keyspace {SIDE}"), &side, &part(want, 1))
}

fn check_keyspace(what: &str, db: &Keyspace, want: &Model) -> u64 {
    let mut failed = 0;
    for i in 0..KEYS {
        let k = key(i);
        match db.get(&k) {
            Ok(got) => assert!(
                got.as_ref() == want.get(&k),
                "{what}: get {} is {}",
                String::from_utf8_lossy(&k),
                match (&got, want.get(&k)) {
                    (Some(_), None) => "a deleted key (resurrected)",
                    (None, Some(_)) => "missing (skipped)",
                    _ => "a wrong value (stale)",
                }
            ),
            Err(e) => {
                assert_allowed_error(what, &e);
                failed += 1;
            }
        }
    }
    let fwd: Vec<(&Vec<u8>, &Vec<u8>)> = want.iter().collect();
    failed += check_scan(&format!("{what}, forward"), db.iter(), &fwd);
    let back: Vec<(&Vec<u8>, &Vec<u8>)> = want.iter().rev().collect();
    failed + check_scan(&format!("{what}, backward"), db.iter().rev(), &back)
}

/// What an open that succeeded must show: everything, or (after a
/// reported WAL tail cut) everything up to the last sequence recovered.
fn expected<'a>(what: &str, db: &Db, p: &'a Pristine) -> &'a Model {
    let r = db.debug().recovery_report();
    if r.truncated.is_empty() {
        return p.full();
    }
    for t in &r.truncated {
        assert!(
            t.file.extension().is_some_and(|e| e == "log"),
            "{what}: a truncated tail must be a WAL's: {t:?}"
        );
    }
    p.model_at(db.debug().latest_sequence())
}

#[test]
fn random_damage_to_every_file_type_gives_an_error_or_the_right_data() {
    let rounds: u64 = std::env::var("VARVE_DAMAGE_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    let first_seed: u64 = std::env::var("VARVE_DAMAGE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let root = common::fast_tempdir();
    let pristine_dir = root.path().join("pristine");
    let pristine = build(&pristine_dir);
    let files = data_files(&pristine_dir);
    let kinds = |ext: &str| {
        files
            .iter()
            .filter(|p| p.to_string_lossy().ends_with(ext))
            .count()
    };
    assert!(
        kinds(".sst") >= 3 && kinds(".log") >= 1 && kinds(".blob") >= 1,
        "{files:?}"
    );
    let mut outcomes: BTreeMap<String, [u64; 3]> = BTreeMap::new();
    // Per file kind: [check clean, check flagged].
    let mut verdicts: BTreeMap<String, [u64; 2]> = BTreeMap::new();
    for seed in first_seed..first_seed + rounds {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let dir = root.path().join(format!("round-{seed}"));
        common::copy_dir(&pristine_dir, &dir);
        // A file kind first (so the few WALs and the one MANIFEST are hit
        // as often as the many tables), then a file of that kind.
        let kind_of = |p: &Path| {
            let n = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            match n.rsplit_once('.') {
                Some((_, ext)) => ext.to_string(),
                None => n.split('-').next().unwrap_or("").to_string(),
            }
        };
        let mut kinds: Vec<String> = files.iter().map(|p| kind_of(p)).collect();
        kinds.sort();
        kinds.dedup();
        let kind = kinds[rng.below(kinds.len() as u64) as usize].clone();
        let of_kind: Vec<&PathBuf> = files.iter().filter(|p| kind_of(p) == kind).collect();
        let victim = dir.join(
            of_kind[rng.below(of_kind.len() as u64) as usize]
                .file_name()
                .expect("name"),
        );
        let how = damage(&victim, &mut rng);
        let what = format!("seed {seed}: {} {how}", victim.display());
        // `varve check` first, on the damaged copy as it is.
        let problems: Vec<String> =
            varve::tools::check_db(std::sync::Arc::new(varve::fs::PosixFs), &dir, |_| {})
                .expect("check")
                .into_iter()
                .filter_map(|c| {
                    c.problem
                        .map(|p| format!("{} at {}: {}", c.path.display(), p.offset, p.reason))
                })
                .collect();
        // Whether an open refused it or any read failed.
        let mut failed = false;
        // [open refused, opened whole, opened after a reported WAL cut]
        let tally = outcomes.entry(kind.clone()).or_default();
        match Db::open_read_only(&dir, options()) {
            Ok(db) => {
                let want = expected(&what, &db, &pristine);
                failed |= check_reads(&format!("{what}, read-only"), &db, want) > 0;
            }
            Err(e) => {
                assert_allowed_error(&format!("{what}, read-only open"), &e);
                failed = true;
            }
        }
        match Db::open(&dir, options()) {
            Ok(db) => {
                let want = expected(&what, &db, &pristine);
                tally[if db.debug().recovery_report().truncated.is_empty() {
                    1
                } else {
                    2
                }] += 1;
                failed |= check_reads(&format!("{what}, read-write"), &db, want) > 0;
                let want = want.clone();
                db.close().expect("close");
                // What recovery made durable is right too.
                let db = Db::open(&dir, options()).expect("reopen after a good open");
                check_reads(&format!("{what}, reopened"), &db, &want);
                db.close().expect("close");
            }
            Err(e) => {
                tally[0] += 1;
                assert_allowed_error(&format!("{what}, read-write open"), &e);
                failed = true;
            }
        }
        // check's verdict against the opens': it passes a database exactly
        // when both opens accept it and every read succeeds.
        assert!(
            !(problems.is_empty() && failed),
            "{what}: check found nothing, but an open refused the database or a read failed"
        );
        assert!(
            problems.is_empty() || failed,
            "{what}: check flagged {problems:?}, but both opens and every read succeeded"
        );
        verdicts.entry(kind).or_default()[usize::from(!problems.is_empty())] += 1;
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }
    println!(
        "damage outcomes per file kind [open refused, opened whole, opened after a reported WAL cut]:"
    );
    for (k, t) in &outcomes {
        println!("  {k:>10}: {t:?}");
    }
    println!("check's verdicts per file kind [clean, flagged]:");
    for (k, t) in &verdicts {
        println!("  {k:>10}: {t:?}");
    }
}
