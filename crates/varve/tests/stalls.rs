//! Write stalls are graded: when flushes fall behind, writers are first
//! slowed (one short delay per write) and only then stopped, and both show
//! in the stats. A fault-injecting file system makes every table append
//! slow, so flushes cannot keep up with the writer.

mod common;

use std::sync::Arc;
use std::time::Duration;

use varve::fs::PosixFs;
use varve::testing::FaultInjectingFs;
use varve::{Db, Options};

#[test]
fn slow_flushes_slow_writers_down_before_stopping_them() {
    let dir = common::fast_tempdir();
    let fs = FaultInjectingFs::new(Arc::new(PosixFs));
    fs.delay_table_appends(Duration::from_millis(2));
    let opts = Options {
        fs: Arc::new(fs.clone()),
        write_buffer_size: 64 << 10,
        max_immutable_memtables: 3,
        // Keep L0 out of the picture: only the memtable stall is tested.
        l0_compaction_trigger: 1000,
        l0_slowdown_writes_trigger: 1000,
        l0_stop_writes_trigger: 1000,
        ..Options::default()
    };
    let db = Db::open(dir.path(), opts).expect("open");
    let value = vec![7u8; 1024];
    for i in 0..2000u32 {
        db.put(format!("key-{i:06}"), &value).expect("put");
        let s = db.stats();
        if s.stall_stops_memtables > 0 {
            assert!(
                s.stall_slowdowns_memtables > 0,
                "a stop came before any slowdown: {s:?}"
            );
        }
    }
    let s = db.stats();
    assert!(s.stall_slowdowns_memtables > 0, "no slowdown: {s:?}");
    assert!(s.stall_micros > 0);
    assert_eq!(s.stall_slowdowns_l0, 0);
    assert!(db.stats().to_string().contains("slowdowns (memtables)"));
    fs.delay_table_appends(Duration::ZERO);
    for i in (0..2000u32).step_by(97) {
        assert_eq!(
            db.get(format!("key-{i:06}")).expect("get").as_deref(),
            Some(&value[..])
        );
    }
}
