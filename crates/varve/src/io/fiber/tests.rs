//! Tests of the fiber pool and `fiber_aio_read`: concurrent reads, queue
//! deeper than the ring, end of file, panics with reads in flight, a batch
//! dropped with reads in flight, nested batches.

use std::cell::{Cell, RefCell};
use std::fs::File;
use std::panic::{self, AssertUnwindSafe};

use super::current::in_fiber;
use super::pool::{Batch, run_tasks};
use super::{fiber_aio_read, in_flight_reads};
use crate::io::io_uring_available;

fn data_file(len: usize) -> (tempfile::TempDir, File, Vec<u8>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("data");
    let data: Vec<u8> = (0..len as u32).map(|i| (i * 31 + i / 977) as u8).collect();
    std::fs::write(&p, &data).expect("write");
    let f = File::open(&p).expect("open");
    (dir, f, data)
}

/// Reads `len` bytes at `off` through `fiber_aio_read`, looping like callers.
fn read_full(f: &File, off: u64, len: usize) -> Vec<u8> {
    let mut buf = vec![0u8; len];
    let mut done = 0;
    while done < len {
        let n = fiber_aio_read(f, &mut buf[done..], off + done as u64).expect("read");
        if n == 0 {
            break;
        }
        done += n;
    }
    buf.truncate(done);
    buf
}

#[test]
fn outside_a_fiber_it_is_pread_with_short_reads_at_end_of_file() {
    let (_d, f, data) = data_file(10_000);
    assert!(!in_fiber());
    assert_eq!(read_full(&f, 9_990, 64), &data[9_990..]);
    assert_eq!(read_full(&f, 20_000, 64), b"");
}

#[test]
fn many_tasks_deeper_than_the_ring_read_correctly() {
    let (_d, f, data) = data_file(1 << 20);
    let n = 1000;
    let depth = 300; // more than the ring's 64 entries and its 128 CQEs
    let got: Vec<RefCell<Vec<u8>>> = (0..n).map(|_| RefCell::new(Vec::new())).collect();
    let max_in_flight = Cell::new(0);
    let offset = |t: usize| ((t * 7919) % (1 << 20)) as u64;
    run_tasks(n, depth, &|t| {
        assert!(in_fiber() || !io_uring_available());
        // Two reads per task, the second across the end of the file for some.
        let a = read_full(&f, offset(t), 100);
        max_in_flight.set(max_in_flight.get().max(in_flight_reads()));
        let b = read_full(&f, (1 << 20) - 50 + (t % 3) as u64 * 40, 64);
        *got[t].borrow_mut() = [a, b].concat();
    });
    for (t, g) in got.iter().enumerate() {
        let off = offset(t) as usize;
        let end = (off + 100).min(data.len());
        let tail = ((1 << 20) - 50 + (t % 3) * 40).min(data.len());
        let want = [&data[off..end], &data[tail..(tail + 64).min(data.len())]].concat();
        assert_eq!(*g.borrow(), want, "task {t}");
    }
    assert_eq!(in_flight_reads(), 0);
    if crate::io::uring::require_uring("fiber reads in flight together") {
        assert!(
            max_in_flight.get() > 1,
            "reads of different fibers were in flight together"
        );
    }
}

#[test]
fn a_panicking_task_with_reads_in_flight_drains_before_unwinding() {
    let (_d, f, data) = data_file(1 << 20);
    let in_flight_at_panic = Cell::new(usize::MAX);
    let finished = Cell::new(0usize);
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        run_tasks(200, 32, &|t| {
            if t == 20 {
                in_flight_at_panic.set(in_flight_reads());
                panic!("task {t} fails");
            }
            let got = read_full(&f, (t * 4096) as u64, 4096);
            assert_eq!(got, &data[t * 4096..(t + 1) * 4096]);
            finished.set(finished.get() + 1);
        });
    }));
    let payload = result.expect_err("the panic reaches the caller");
    assert_eq!(
        payload.downcast_ref::<String>().map(String::as_str),
        Some("task 20 fails")
    );
    assert_eq!(in_flight_reads(), 0, "no read is left in flight");
    if crate::io::uring::require_uring("reads in flight at a task's panic") {
        assert!(
            in_flight_at_panic.get() > 0,
            "reads were in flight at the panic"
        );
    }
    // Tasks started before the panic finished; no new one started after it.
    assert!(
        finished.get() >= 20 && finished.get() < 199,
        "{}",
        finished.get()
    );
    // The pool and the ring still work.
    let ok = Cell::new(0);
    run_tasks(50, 8, &|t| {
        assert_eq!(read_full(&f, t as u64, 10), &data[t..t + 10]);
        ok.set(ok.get() + 1);
    });
    assert_eq!(ok.get(), 50);
}

#[test]
fn dropping_a_batch_with_reads_in_flight_waits_for_them() {
    if !crate::io::uring::require_uring("dropping_a_batch_with_reads_in_flight_waits_for_them") {
        return;
    }
    let (_d, f, data) = data_file(1 << 20);
    let got: Vec<RefCell<Option<Vec<u8>>>> = (0..64).map(|_| RefCell::new(None)).collect();
    let task = |t: usize| {
        let a = read_full(&f, (t * 1000) as u64, 3000);
        *got[t].borrow_mut() = Some(a);
    };
    let mut batch = Batch::new(64, 16, &task)
        .expect("batch")
        .without_eager_submit();
    batch.step(); // every fiber queues a read and waits
    assert_eq!(batch.live(), 16);
    assert_eq!(in_flight_reads(), 16);
    drop(batch);
    assert_eq!(in_flight_reads(), 0);
    // The 16 started tasks finished (synchronously after the drain); no
    // other task started.
    for (t, g) in got.iter().enumerate() {
        match &*g.borrow() {
            Some(v) => {
                assert!(t < 16);
                assert_eq!(v, &data[t * 1000..t * 1000 + 3000]);
            }
            None => assert!(t >= 16, "task {t} was started"),
        }
    }
}

#[test]
fn steps_that_submit_between_fibers_read_correctly() {
    if !crate::io::uring::require_uring("steps_that_submit_between_fibers_read_correctly") {
        return;
    }
    // `step` submits between fibers (4 queued reads at a time) and picks up
    // fibers whose reads completed meanwhile (page-cache reads often
    // complete as they are submitted), so more tasks than fibers may finish
    // within one step; every read still gets its own bytes.
    let (_d, f, data) = data_file(1 << 20);
    let done = Cell::new(0usize);
    let task = |t: usize| {
        assert_eq!(
            read_full(&f, (t * 100) as u64, 100),
            &data[t * 100..t * 100 + 100]
        );
        done.set(done.get() + 1);
    };
    let mut batch = Batch::new(256, 8, &task).expect("batch");
    batch.step();
    assert!(done.get() <= 256);
    batch.run();
    assert_eq!(done.get(), 256);
    assert_eq!(in_flight_reads(), 0);
}

#[test]
fn a_batch_inside_a_fiber_runs_synchronously_on_it() {
    let (_d, f, data) = data_file(100_000);
    let sums: Vec<Cell<usize>> = (0..8).map(|_| Cell::new(0)).collect();
    run_tasks(8, 4, &|t| {
        let inner_total = Cell::new(0usize);
        run_tasks(5, 4, &|u| {
            let v = read_full(&f, (t * 1000 + u * 10) as u64, 10);
            assert_eq!(v, &data[t * 1000 + u * 10..t * 1000 + u * 10 + 10]);
            inner_total.set(inner_total.get() + v.len());
        });
        sums[t].set(inner_total.get());
    });
    assert!(sums.iter().all(|s| s.get() == 50));
    assert_eq!(in_flight_reads(), 0);
}
