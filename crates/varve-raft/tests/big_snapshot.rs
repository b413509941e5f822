//! A snapshot many times larger than the write buffer is built on one
//! store and installed on another in one atomic batch (a memtable of its
//! own, `docs/raft.md`, "install_snapshot"), and the second store then
//! holds exactly the first one's data and applied state.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use openraft::storage::{RaftSnapshotBuilder, RaftStateMachine};
use openraft::{CommittedLeaderId, Entry, EntryPayload, LogId};
use varve::Options;
use varve_raft::{Request, StateMachine};

/// Runs a future that never waits on anything outside itself (the store's
/// async functions do their IO synchronously).
fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::yield_now();
    }
}

fn store(dir: &std::path::Path) -> StateMachine {
    let options = Options {
        write_buffer_size: 1 << 20,
        ..Options::default()
    };
    varve_raft::open_with(dir, options).expect("open").1
}

fn value(i: u64) -> String {
    format!("{i:08}-").repeat(4096 / 9)
}

#[test]
fn a_snapshot_larger_than_the_write_buffer_installs_whole() {
    let (a_dir, b_dir) = (
        tempfile::tempdir().expect("dir"),
        tempfile::tempdir().expect("dir"),
    );
    let mut a = store(a_dir.path());
    const N: u64 = 4000; // about 16 MiB of values, 16 write buffers
    let entries: Vec<Entry<varve_raft::TypeConfig>> = (1..=N)
        .map(|i| Entry {
            log_id: LogId::new(CommittedLeaderId::new(1, 1), i),
            payload: EntryPayload::Normal(Request::Set {
                key: format!("k{i:06}"),
                value: value(i),
            }),
        })
        .collect();
    for chunk in entries.chunks(500) {
        block_on(a.apply(chunk.to_vec())).expect("apply");
    }
    let snapshot = block_on(async {
        let mut builder = a.get_snapshot_builder().await;
        builder.build_snapshot().await
    })
    .expect("build");
    assert!(
        snapshot.snapshot.get_ref().len() > 8 << 20,
        "the snapshot is many write buffers: {} bytes",
        snapshot.snapshot.get_ref().len()
    );

    let mut b = store(b_dir.path());
    block_on(b.apply(vec![Entry {
        log_id: LogId::new(CommittedLeaderId::new(1, 1), 1),
        payload: EntryPayload::Normal(Request::Set {
            key: "only-on-b".into(),
            value: "gone after the install".into(),
        }),
    }]))
    .expect("apply on b");
    block_on(b.install_snapshot(&snapshot.meta, snapshot.snapshot))
        .expect("install a large snapshot");
    let (applied, _) = block_on(b.applied_state()).expect("applied state");
    assert_eq!(applied.map(|l| l.index), Some(N));
    assert_eq!(
        b.get("only-on-b").expect("get"),
        None,
        "the old data is gone"
    );
    for i in (1..=N).step_by(97).chain([N]) {
        assert_eq!(
            b.get(&format!("k{i:06}")).expect("get"),
            Some(value(i)),
            "key {i}"
        );
    }
    drop(b);
    // And it survived: the install was synced.
    let b = store(b_dir.path());
    assert_eq!(b.get(&format!("k{N:06}")).expect("get"), Some(value(N)));
}
