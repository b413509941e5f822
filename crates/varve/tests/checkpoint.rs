//! `Db::checkpoint`: a copy taken while four threads write opens and holds,
//! per thread, a prefix of its writes that includes every write
//! acknowledged before the call; a target that exists is refused; a
//! database with tables in several levels (and data still in WALs) copies
//! whole.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use varve::{Db, Error, Options};

fn small() -> Options {
    Options {
        write_buffer_size: 64 << 10,
        block_size: 1024,
        max_bytes_for_level_base: 256 << 10,
        ..Options::default()
    }
}

fn key(t: usize, i: u64) -> Vec<u8> {
    format!("t{t}-{i:08}").into_bytes()
}

#[test]
fn checkpoint_while_four_threads_write_is_a_prefix() {
    let dir = common::fast_tempdir();
    let db = Arc::new(Db::open(dir.path(), small()).expect("open"));
    let stop = Arc::new(AtomicBool::new(false));
    let acked: Arc<Vec<AtomicU64>> = Arc::new((0..4).map(|_| AtomicU64::new(0)).collect());
    let writers: Vec<_> = (0..4)
        .map(|t| {
            let (db, stop, acked) = (Arc::clone(&db), Arc::clone(&stop), Arc::clone(&acked));
            std::thread::spawn(move || {
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) && i < 200_000 {
                    db.put(key(t, i), vec![b'v'; 100]).expect("put");
                    i += 1;
                    acked[t].store(i, Ordering::Release);
                }
            })
        })
        .collect();
    // Let some data reach tables first.
    while acked.iter().map(|a| a.load(Ordering::Acquire)).sum::<u64>() < 4000 {
        std::thread::yield_now();
    }
    let mut targets = Vec::new();
    for round in 0..3 {
        let before: Vec<u64> = acked.iter().map(|a| a.load(Ordering::Acquire)).collect();
        let target = dir.path().join(format!("cp{round}"));
        db.checkpoint(&target).expect("checkpoint");
        targets.push((target, before));
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().expect("writer");
    }
    for (target, before) in targets {
        let names: Vec<String> = std::fs::read_dir(&target)
            .expect("target")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().any(|n| n.ends_with(".sst")), "{names:?}");
        assert!(names.iter().any(|n| n.ends_with(".log")), "{names:?}");
        assert!(names.iter().any(|n| n == "CURRENT"), "{names:?}");
        let cp = Db::open(&target, small()).expect("checkpoint opens");
        for (t, &min) in before.iter().enumerate() {
            let mut n = 0u64;
            for kv in cp.iter() {
                let (k, _) = kv.expect("scan");
                if k.starts_with(format!("t{t}-").as_bytes()) {
                    assert_eq!(k, key(t, n), "thread {t}: keys must form a prefix");
                    n += 1;
                }
            }
            assert!(
                n >= min,
                "thread {t}: {n} keys in the checkpoint, {min} acknowledged before it"
            );
        }
        cp.close().expect("close");
    }
}

#[test]
fn target_that_exists_is_refused() {
    let dir = common::fast_tempdir();
    let db = Db::open(dir.path().join("db"), small()).expect("open");
    db.put(b"k", b"v").expect("put");
    let target = dir.path().join("cp");
    std::fs::create_dir(&target).expect("mkdir");
    std::fs::write(target.join("x"), b"x").expect("write");
    let e = db.checkpoint(&target).expect_err("non-empty target");
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    assert!(e.to_string().contains("not empty"), "{e}");
    let file = dir.path().join("file");
    std::fs::write(&file, b"x").expect("write");
    let e = db.checkpoint(&file).expect_err("file target");
    assert!(e.to_string().contains("not a directory"), "{e}");
    // An empty directory is fine.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).expect("mkdir");
    db.checkpoint(&empty).expect("empty target");
    let cp = Db::open(&empty, small()).expect("open");
    assert_eq!(cp.get(b"k").expect("get"), Some(b"v".to_vec()));
}

#[test]
fn checkpoint_with_tables_in_several_levels() {
    let dir = common::fast_tempdir();
    let db = Db::open(dir.path().join("db"), small()).expect("open");
    for i in 0..20_000u32 {
        db.put(format!("k{i:06}"), common::value_for(&i.to_be_bytes()))
            .expect("put");
    }
    db.compact_range(None, None).expect("compact");
    for i in (0..20_000u32).step_by(7) {
        db.delete(format!("k{i:06}")).expect("delete");
    }
    db.flush().expect("flush");
    for i in 0..100u32 {
        db.put(format!("w{i}"), b"in the wal").expect("put");
    }
    let levels = db.debug().live_tables();
    assert!(
        levels.iter().filter(|l| !l.is_empty()).count() >= 2,
        "{levels:?}"
    );
    let target = dir.path().join("cp");
    db.checkpoint(&target).expect("checkpoint");
    // The source keeps working and changing; the copy does not follow.
    db.put(b"after", b"x").expect("put");
    let cp = Db::open(&target, small()).expect("open copy");
    let want: Vec<_> = db
        .iter()
        .map(|kv| kv.expect("scan"))
        .filter(|(k, _)| k != b"after")
        .collect();
    let got: Vec<_> = cp.iter().map(|kv| kv.expect("scan")).collect();
    assert_eq!(got.len(), want.len());
    assert!(got == want, "checkpoint differs from the source");
    assert_eq!(cp.get(b"after").expect("get"), None);
}
