//! Direct IO: with `use_direct_reads` and
//! `use_direct_io_for_flush_and_compaction` the database works exactly as
//! without them (checked on a disk file system), and where the file system
//! refuses O_DIRECT opening fails with a clear error.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use varve::fs::PosixFs;
use varve::testing::FaultInjectingFs;
use varve::{Db, Error, Options};

fn direct_options() -> Options {
    Options {
        use_direct_reads: true,
        use_direct_io_for_flush_and_compaction: true,
        write_buffer_size: 128 << 10,
        target_file_size: 64 << 10,
        max_bytes_for_level_base: 256 << 10,
        l0_compaction_trigger: 2,
        cache_size: 64 << 10, // most reads go to the disk
        ..Options::default()
    }
}

/// A directory on the disk the tests build on (not tmpfs).
fn disk_tempdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("varve-direct-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("tempdir")
}

#[test]
fn direct_io_reads_and_writes_the_same_data() {
    let dir = disk_tempdir();
    let mut model = BTreeMap::new();
    {
        let db = match Db::open(dir.path(), direct_options()) {
            Ok(db) => db,
            Err(e) => {
                varve::testing::skip_or_fail("the O_DIRECT test", &e.to_string());
                return;
            }
        };
        let mut rng = common::Rng(5);
        for i in 0..6000u64 {
            let k = format!("key-{:06}", rng.below(3000)).into_bytes();
            let v = common::value_for(&i.to_le_bytes());
            db.put(&k, &v).expect("put");
            model.insert(k, v);
        }
        db.flush().expect("flush");
        db.wait_for_compactions().expect("compactions");
        let stats = db.stats();
        assert!(
            stats.levels.iter().map(|l| l.files).sum::<usize>() > 1,
            "{}",
            stats.report()
        );
        check(&db, &model);
        db.close().expect("close");
    }
    let db = Db::open(dir.path(), direct_options()).expect("reopen");
    check(&db, &model);
    db.compact_range(None, None).expect("compact");
    check(&db, &model);
    // The same files read back without O_DIRECT.
    drop(db);
    let db = Db::open(dir.path(), Options::default()).expect("open buffered");
    check(&db, &model);
}

fn check(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
    let all: BTreeMap<Vec<u8>, Vec<u8>> = db.iter().map(|r| r.expect("iter")).collect();
    assert!(
        all == *model,
        "iteration differs ({} vs {} keys)",
        all.len(),
        model.len()
    );
    for (k, v) in model.iter().step_by(3) {
        assert_eq!(db.get(k).expect("get").as_ref(), Some(v));
    }
}

#[test]
fn file_system_without_o_direct_is_a_clear_error_at_open() {
    let dir = disk_tempdir();
    let fs = FaultInjectingFs::new(Arc::new(PosixFs));
    fs.refuse_direct_io(true);
    for (reads, writes) in [(true, false), (false, true)] {
        let opts = Options {
            use_direct_reads: reads,
            use_direct_io_for_flush_and_compaction: writes,
            fs: Arc::new(fs.clone()),
            ..Options::default()
        };
        match Db::open(dir.path(), opts) {
            Err(Error::InvalidArgument(msg)) => {
                assert!(
                    msg.contains("O_DIRECT") && msg.contains(&*dir.path().to_string_lossy()),
                    "{msg}"
                );
            }
            other => panic!("expected a clear InvalidArgument, got {other:?}"),
        }
    }
    // Nothing half-written is left behind.
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
