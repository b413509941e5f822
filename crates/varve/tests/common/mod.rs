//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod after_crash;

use std::path::{Path, PathBuf};

use varve::{Db, Options, ReadOptions};

/// Tiny memtables, tables and level targets (with sub-compactions): a few
/// hundred operations build a tree of several levels.
pub fn tiny_lsm_options() -> Options {
    Options {
        write_buffer_size: 64 << 10,
        block_size: 512,
        target_file_size: 8 << 10,
        max_bytes_for_level_base: 32 << 10,
        max_bytes_for_level_multiplier: 4,
        l0_compaction_trigger: 2,
        l0_slowdown_writes_trigger: 8,
        l0_stop_writes_trigger: 12,
        cache_size: 256 << 10,
        max_subcompactions: 3,
        ..Options::default()
    }
}

/// A temporary directory on tmpfs when available (fsync is free there, so
/// tests that open a database thousands of times stay fast), else in $TMPDIR.
pub fn fast_tempdir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir()
        && let Ok(d) = tempfile::tempdir_in(shm)
    {
        return d;
    }
    tempfile::tempdir().expect("temp dir")
}

/// Deterministic value for a key, of a length that varies with the key.
pub fn value_for(key: &[u8]) -> Vec<u8> {
    let h = key.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    let len = (h % 300) as usize;
    (0..len)
        .map(|i| (h >> (i % 8 * 8)) as u8 ^ i as u8)
        .collect()
}

/// Copies every file of `from` into a new directory `to`.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read_dir") {
        let e = e.expect("entry");
        if e.file_type().expect("type").is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).expect("copy");
        }
    }
}

/// The WAL files of a database directory, oldest first.
pub fn wal_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    v.sort();
    v
}

/// A small xorshift generator so tests are reproducible from a seed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Runs test `name` of the current test binary in a child process with
/// `env` set (for switches read once per process, like `VARVE_IO`) and
/// panics with its output unless exactly that test ran and passed.
pub fn run_test_in_child(name: &str, env: &[(&str, &str)]) {
    let exe = std::env::current_exe().expect("test binary");
    let mut cmd = std::process::Command::new(exe);
    cmd.args([name, "--exact", "--test-threads=1", "--nocapture"]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "child {name} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Writes three rounds of 2,500 random puts (one in ten a delete) over keys
/// `key000000..key005999` into `db` and returns the model. With
/// `settle_each_round`, every round is flushed and compacted (data on several
/// levels); otherwise one flush at the end (L0 files over the memtable's
/// older rounds).
pub fn fill_rounds(
    db: &varve::Db,
    seed: u64,
    settle_each_round: bool,
) -> std::collections::BTreeMap<Vec<u8>, Vec<u8>> {
    let mut model = std::collections::BTreeMap::new();
    let mut rng = Rng(seed);
    for round in 0..3u64 {
        for _ in 0..2500 {
            let k = format!("key{:06}", rng.below(6000)).into_bytes();
            if rng.below(10) == 0 {
                db.delete(&k).expect("delete");
                model.remove(&k);
            } else {
                let mut v = value_for(&k);
                v.extend_from_slice(&round.to_le_bytes());
                db.put(&k, &v).expect("put");
                model.insert(k, v);
            }
        }
        if settle_each_round {
            db.flush().expect("flush");
            db.wait_for_compactions().expect("compactions");
        }
    }
    if !settle_each_round {
        db.flush().expect("flush");
    }
    model
}

/// Keys a full forward scan with `opts` visits (the scan's error fails the
/// test).
pub fn count_keys(db: &Db, opts: &ReadOptions) -> u64 {
    let mut it = db.iter_opt(opts);
    it.seek_to_first();
    let mut n = 0;
    while it.valid() {
        n += 1;
        it.move_next();
    }
    it.status().expect("scan");
    n
}

/// Closes `db` and then takes its clean-close mark back off the manifest,
/// leaving the directory as a crash right after the last synced write
/// would: every edit and WAL byte is there, but nothing says the database
/// was closed. Tests that cut or damage a WAL to model a crash's torn tail
/// use it (after a clean close, a cut WAL is corruption).
pub fn close_as_if_crashed(db: Db) {
    let dir = db.path().to_path_buf();
    let current = std::fs::read_to_string(dir.join("CURRENT")).expect("CURRENT");
    let manifest = dir.join(current.trim_end());
    let before = std::fs::metadata(&manifest).expect("manifest").len();
    db.close().expect("close");
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&manifest)
        .expect("open manifest");
    f.set_len(before).expect("cut the clean-close edit");
}

/// A database over several levels and L0 files (`fill_rounds` with `seed`
/// and `settle_each_round`), asserting that at least two levels hold
/// tables; with its model.
pub fn multi_level_db(
    dir: &Path,
    opts: Options,
    seed: u64,
    settle_each_round: bool,
) -> (Db, std::collections::BTreeMap<Vec<u8>, Vec<u8>>) {
    let db = Db::open(dir, opts).expect("open");
    let model = fill_rounds(&db, seed, settle_each_round);
    let levels = db.debug().live_tables();
    let used = levels.iter().filter(|l| !l.is_empty()).count();
    assert!(used >= 2, "want several levels: {levels:?}");
    (db, model)
}

/// Every complete line of every `acked-*` side file in `dir`: the keys a
/// crash test's child acknowledged (a line cut by the kill is not an
/// acknowledgement: the write returned but the record of it did not finish).
pub fn acknowledged(dir: &Path) -> Vec<String> {
    let mut keys = Vec::new();
    for e in std::fs::read_dir(dir).expect("read_dir") {
        let p = e.expect("entry").path();
        if !p
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("acked-"))
        {
            continue;
        }
        let text = std::fs::read_to_string(&p).expect("side file");
        let complete = match text.rfind('\n') {
            Some(i) => &text[..i],
            None => "",
        };
        keys.extend(complete.lines().filter(|l| !l.is_empty()).map(String::from));
    }
    keys
}

/// The model of `delete_range(start..end)` on a `BTreeMap`.
pub fn remove_range(
    model: &mut std::collections::BTreeMap<Vec<u8>, Vec<u8>>,
    start: &[u8],
    end: &[u8],
) {
    let doomed: Vec<Vec<u8>> = model
        .range::<[u8], _>((
            std::ops::Bound::Included(start),
            std::ops::Bound::Excluded(end),
        ))
        .map(|(k, _)| k.clone())
        .collect();
    for k in doomed {
        model.remove(&k);
    }
}

/// Flips one bit in the middle of the largest blob file in `dir` (its
/// values, not its header or footer, for a file of many values).
pub fn flip_byte_in_largest_blob(dir: &Path) {
    let blob = std::fs::read_dir(dir)
        .expect("list")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "blob"))
        .max_by_key(|p| std::fs::metadata(p).expect("stat").len())
        .expect("a blob file");
    let mut bytes = std::fs::read(&blob).expect("read");
    let at = bytes.len() / 2;
    bytes[at] ^= 0x40;
    std::fs::write(&blob, &bytes).expect("write");
}
