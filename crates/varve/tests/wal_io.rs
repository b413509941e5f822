//! The WAL's three ways to the file — plain `pwrite`, the memory-mapped
//! preallocated log, io_uring — give the same database: concurrent `sync`
//! and plain writers, a reopen, every key back. With io_uring the ring's own
//! thread must exist while the database is open (the option is not silently
//! ignored where io_uring works).

mod common;

use std::sync::Arc;

use varve::{Db, Options, WalWriter, WriteOptions};

fn uring_threads() -> usize {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .filter_map(|t| t.ok())
        .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
        .filter(|c| c.trim() == "varve-wal-uring")
        .count()
}

#[test]
fn every_wal_io_mode_keeps_every_write() {
    for writer in [
        WalWriter::Plain,
        WalWriter::Mapped,
        WalWriter::MappedZeroFilled,
        WalWriter::IoUring,
    ] {
        let uring = writer == WalWriter::IoUring;
        let dir = common::fast_tempdir();
        let opts = || Options {
            wal_writer: writer,
            write_buffer_size: 256 << 10, // several log switches
            ..Options::default()
        };
        let db = Arc::new(Db::open(dir.path(), opts()).expect("open"));
        if uring && varve::testing::require_uring("the io_uring WAL writer") {
            assert!(
                uring_threads() >= 1,
                "WalWriter::IoUring is chosen but no ring thread runs"
            );
        }
        std::thread::scope(|s| {
            for t in 0..4u32 {
                let db = Arc::clone(&db);
                s.spawn(move || {
                    let wo = WriteOptions {
                        sync: t % 2 == 0,
                        ..Default::default()
                    };
                    for i in 0..1500u32 {
                        let k = format!("t{t}-{i:05}");
                        db.put_opt(&k, common::value_for(k.as_bytes()), &wo)
                            .expect("put");
                    }
                });
            }
        });
        drop(db);
        let db = Db::open(dir.path(), opts()).expect("reopen");
        for t in 0..4u32 {
            for i in (0..1500u32).step_by(7) {
                let k = format!("t{t}-{i:05}");
                assert_eq!(
                    db.get(&k).expect("get"),
                    Some(common::value_for(k.as_bytes())),
                    "{writer:?} {k}"
                );
            }
        }
        assert_eq!(db.iter().count(), 6000, "{writer:?}");
    }
}
