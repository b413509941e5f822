//! Tests of the slot pool through its public API: single-threaded protocol
//! walks, and multi-threaded stress runs against an in-memory sink that
//! checks every log byte is written exactly once, records tile the log, and
//! the written position only advances over bytes the sink already has.

#![allow(clippy::unwrap_used)] // test helpers (not #[test] fns) lock test mutexes

use std::collections::HashSet;
use std::io;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use super::*;

/// A log in memory, indexed by log offset; each byte may be written once.
#[derive(Default)]
pub(super) struct MemSink {
    bytes: Mutex<Vec<Option<u8>>>,
}

impl SlotSink for MemSink {
    fn write_at_log_offset(&self, log_offset: u64, bytes: &[u8]) -> io::Result<()> {
        let mut log = self.bytes.lock().unwrap();
        let end = log_offset as usize + bytes.len();
        if log.len() < end {
            log.resize(end, None);
        }
        for (i, &b) in bytes.iter().enumerate() {
            let cell = &mut log[log_offset as usize + i];
            assert!(
                cell.is_none(),
                "log byte {} written twice",
                log_offset as usize + i
            );
            *cell = Some(b);
        }
        Ok(())
    }
}

impl MemSink {
    /// True if every byte in `[from, to)` has been written.
    fn has_all(&self, from: u64, to: u64) -> bool {
        let log = self.bytes.lock().unwrap();
        (from..to).all(|i| log.get(i as usize).is_some_and(Option::is_some))
    }

    /// The log from `from` on; panics on a hole.
    fn contents(&self, from: u64) -> Vec<u8> {
        let log = self.bytes.lock().unwrap();
        log[from as usize..]
            .iter()
            .enumerate()
            .map(|(i, b)| b.unwrap_or_else(|| panic!("hole at log offset {}", from as usize + i)))
            .collect()
    }
}

/// Checks that `records` (log offset, bytes) tile `[start, end)` and match the log.
fn check_log(sink: &MemSink, start: u64, mut records: Vec<(u64, Vec<u8>)>) -> u64 {
    records.retain(|(_, r)| !r.is_empty());
    records.sort_by_key(|(off, _)| *off);
    let log = sink.contents(start);
    let mut pos = start;
    for (off, rec) in &records {
        assert_eq!(*off, pos, "gap or overlap at log offset {pos}");
        let at = (off - start) as usize;
        assert_eq!(
            &log[at..at + rec.len()],
            &rec[..],
            "record at {off} corrupted"
        );
        pos += rec.len() as u64;
    }
    assert_eq!(
        pos - start,
        log.len() as u64,
        "log has bytes no record owns"
    );
    pos
}

fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// A record whose bytes identify its writer and sequence number.
fn record(thread: u64, seq: u64, len: usize) -> Vec<u8> {
    let tag = (thread * 1_000_003 + seq).to_le_bytes();
    (0..len).map(|i| tag[i % 8] ^ (i as u8)).collect()
}

#[test]
fn config_is_validated() {
    assert!(SlotPool::new(SlotConfig::new(0, 8), 0).is_err());
    assert!(SlotPool::new(SlotConfig::new(2, 0), 0).is_err());
    assert!(SlotPool::new(SlotConfig::new(2, state::MAX_CAPACITY + 1), 0).is_err());
    let bad = SlotConfig {
        max_join: 8,
        ..SlotConfig::new(2, 8)
    };
    assert!(SlotPool::new(bad, 0).is_err());
    let c = SlotConfig::new(2, 8);
    assert_eq!((c.close_at, c.max_join), (4, 5));
    assert!(SlotPool::new(c, 0).is_ok());
    assert!(SlotPool::new(SlotConfig::new(1, 1), 0).is_ok());
}

#[test]
fn single_thread_walk() {
    let sink = MemSink::default();
    let pool = SlotPool::new(SlotConfig::new(2, 8), 100).unwrap();
    assert!(matches!(pool.join(0), Join::Empty));
    assert!(matches!(pool.join(6), Join::TooLarge));
    assert!(
        pool.close_active().is_none(),
        "empty slot: nothing to close"
    );

    let Join::Slot(mut a) = pool.join(3) else {
        panic!()
    };
    assert_eq!((a.log_offset(), a.slot(), a.len()), (100, 0, 3));
    assert!(!a.is_empty());
    // The second join reaches close_at (4): it closes slot 0, opens slot 1.
    let Join::Slot(mut b) = pool.join(2) else {
        panic!()
    };
    assert_eq!((b.log_offset(), b.slot()), (103, 0));
    let Join::Slot(mut c) = pool.join(1) else {
        panic!()
    };
    assert_eq!((c.log_offset(), c.slot()), (105, 1));
    b.copy_from(b"bb");
    assert!(b.release().is_none());
    a.write_at(0, b"a");
    a.write_at(1, b"aa");
    let job = a.release().expect("last release of closed slot 0");
    assert_eq!((job.log_offset(), job.len(), job.slot()), (100, 5, 0));
    job.with_bytes(|bytes| assert_eq!(bytes, b"aaabb"));
    assert_eq!(pool.written_position(), 100);
    job.write_to(&sink).unwrap();
    assert_eq!(pool.written_position(), 105);

    c.copy_from(b"c");
    assert!(c.release().is_none(), "slot 1 is still open");
    let job = pool.close_active().expect("all released: closer writes");
    assert_eq!((job.log_offset(), job.len()), (105, 1));
    job.write_to(&sink).unwrap();
    assert_eq!(pool.written_position(), 106);
    assert_eq!(sink.contents(100), b"aaabbc");
}

#[test]
fn direct_path_is_ordered_with_slots() {
    let sink = MemSink::default();
    let pool = SlotPool::new(SlotConfig::new(2, 8), 0).unwrap();
    // Empty open slot: the direct record takes its place, the slot moves on.
    let (d0, job) = pool.reserve_direct(10);
    assert!(job.is_none());
    assert_eq!((d0.log_offset(), d0.len()), (0, 10));
    let Join::Slot(mut a) = pool.join(2) else {
        panic!()
    };
    assert_eq!(a.log_offset(), 10);
    // Non-empty open slot with an unreleased writer: closed, not written yet.
    let (d1, job) = pool.reserve_direct(7);
    assert!(job.is_none());
    assert_eq!(d1.log_offset(), 12);
    let Join::Slot(mut b) = pool.join(1) else {
        panic!()
    };
    assert_eq!(b.log_offset(), 19);
    b.copy_from(b"B");
    assert!(b.release().is_none());
    // Fully released open slot: the direct reserver gets its write job.
    let (d2, job) = pool.reserve_direct(6);
    assert_eq!(d2.log_offset(), 20);
    let job1 = job.expect("slot 1 complete on close");
    assert_eq!((job1.log_offset(), job1.len()), (19, 1));
    // Ring of 2: slot 0 (held by `a`) is next and busy, so no slot is open;
    // a direct record still gets the next range.
    let (d3, job) = pool.reserve_direct(1);
    assert!(job.is_none());
    assert_eq!(d3.log_offset(), 26);

    // Finish out of order; the written position follows log order.
    d3.write_to(&sink, b"3").unwrap();
    assert_eq!(pool.written_position(), 0);
    d2.write_to(&sink, b"DDDDDD").unwrap();
    d1.write_to(&sink, b"ddddddd").unwrap();
    assert_eq!(pool.written_position(), 0);
    d0.write_to(&sink, b"0123456789").unwrap();
    assert_eq!(pool.written_position(), 10);
    a.copy_from(b"AA");
    a.release()
        .expect("slot 0 closed by d1")
        .write_to(&sink)
        .unwrap();
    assert_eq!(pool.written_position(), 19);
    job1.write_to(&sink).unwrap();
    assert_eq!(pool.written_position(), 27);
    // Slot 0 was activated when freed: joins work again, after d3.
    let Join::Slot(e) = pool.join(1) else {
        panic!()
    };
    assert_eq!((e.log_offset(), e.slot()), (27, 0));
    drop(e);
    assert_eq!(sink.contents(0), b"0123456789AAdddddddBDDDDDD3");
}

#[test]
fn one_slot_ring_waits_for_its_own_write() {
    let sink = MemSink::default();
    let pool = SlotPool::new(SlotConfig::new(1, 4), 0).unwrap();
    let mut offsets = Vec::new();
    for i in 0..20u64 {
        let rec = record(0, i, 1 + (i % 3) as usize);
        offsets.push((pool.append(&sink, &rec).unwrap().unwrap(), rec));
    }
    if let Some(job) = pool.close_active() {
        job.write_to(&sink).unwrap();
    }
    let end = check_log(&sink, 0, offsets);
    assert_eq!(pool.written_position(), end);
}

/// `threads` writers append `per_thread` records of random sizes (empty,
/// small, and too large for a slot) while a closer thread closes the active
/// slot now and then and a watcher checks that the written position is
/// monotonic and never ahead of the sink.
fn stress(threads: u64, per_thread: u64, config: SlotConfig, max_len: usize) {
    let start = 7;
    let sink = MemSink::default();
    let pool = SlotPool::new(config, start).unwrap();
    let done = AtomicBool::new(false);
    let records: Vec<(u64, Vec<u8>)> = std::thread::scope(|s| {
        let (pool, sink, done) = (&pool, &sink, &done);
        s.spawn(move || {
            let mut last = start;
            while !done.load(Ordering::Relaxed) {
                let w = pool.written_position();
                assert!(w >= last, "written position went back: {last} -> {w}");
                assert!(
                    sink.has_all(last.min(w), w),
                    "written position {w} ahead of the sink"
                );
                last = w;
                std::thread::yield_now();
            }
        });
        s.spawn(move || {
            while !done.load(Ordering::Relaxed) {
                if let Some(job) = pool.close_active() {
                    job.write_to(sink).unwrap();
                }
                std::thread::yield_now();
            }
        });
        let writers: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || {
                    let mut rng = 0x9E37_79B9_7F4A_7C15 ^ (t + 1);
                    let mut mine = Vec::new();
                    for i in 0..per_thread {
                        let len = (xorshift(&mut rng) % (max_len as u64 + 1)) as usize;
                        let rec = record(t, i, len);
                        // Half the records go through the step-by-step API.
                        let at = if i % 2 == 0 {
                            pool.append(sink, &rec).unwrap()
                        } else {
                            manual_append(pool, sink, &rec)
                        };
                        match at {
                            Some(at) => mine.push((at, rec)),
                            None => assert!(rec.is_empty()),
                        }
                    }
                    mine
                })
            })
            .collect();
        let all = writers
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect();
        done.store(true, Ordering::Relaxed);
        all
    });
    if let Some(job) = pool.close_active() {
        job.write_to(&sink).unwrap();
    }
    let starts: HashSet<u64> = records
        .iter()
        .filter(|r| !r.1.is_empty())
        .map(|r| r.0)
        .collect();
    assert_eq!(
        starts.len(),
        records.iter().filter(|r| !r.1.is_empty()).count()
    );
    let total: u64 = records.iter().map(|r| r.1.len() as u64).sum();
    let end = check_log(&sink, start, records);
    assert_eq!(end, start + total);
    assert_eq!(
        pool.written_position(),
        end,
        "written position ends at the log end"
    );
    assert!(pool.close_active().is_none());
}

/// `append` spelled out with the individual protocol steps.
fn manual_append(pool: &SlotPool, sink: &MemSink, rec: &[u8]) -> Option<u64> {
    match pool.join(rec.len()) {
        Join::Empty => None,
        Join::Poisoned => panic!("nothing failed"),
        Join::Slot(mut r) => {
            let at = r.log_offset();
            let half = rec.len() / 2;
            r.write_at(half, &rec[half..]);
            r.write_at(0, &rec[..half]);
            if let Some(job) = r.release() {
                let (off, bytes) = (job.log_offset(), job.with_bytes(<[u8]>::to_vec));
                sink.write_at_log_offset(off, &bytes).unwrap();
                job.complete();
            }
            Some(at)
        }
        Join::TooLarge => {
            let (d, job) = pool.reserve_direct(rec.len());
            let at = d.log_offset();
            sink.write_at_log_offset(at, rec).unwrap();
            d.complete();
            if let Some(job) = job {
                job.write_to(sink).unwrap();
            }
            Some(at)
        }
    }
}

#[test]
fn stress_8_threads_tiny_slots() {
    stress(8, 3000, SlotConfig::new(4, 16), 12);
}

#[test]
fn stress_16_threads_two_slots() {
    stress(16, 1500, SlotConfig::new(2, 8), 7);
}

#[test]
fn stress_close_when_full() {
    let config = SlotConfig {
        slots: 3,
        capacity: 64,
        close_at: 64,
        max_join: 1,
    };
    stress(8, 4000, config, 2);
}

#[test]
fn stress_larger_slots_many_direct() {
    stress(12, 2000, SlotConfig::new(8, 256), 400);
}

/// A sink whose every write fails.
struct FailSink;

impl SlotSink for FailSink {
    fn write_at_log_offset(&self, _: u64, _: &[u8]) -> io::Result<()> {
        Err(io::Error::other("disk on fire"))
    }
}

#[test]
fn failed_write_poisons_and_frees_waiting_joiners() {
    let pool = SlotPool::new(SlotConfig::new(1, 4), 0).unwrap();
    // Closes the only slot: the ring now waits for its write.
    let Join::Slot(mut r) = pool.join(2) else {
        panic!()
    };
    std::thread::scope(|s| {
        let waiter = s.spawn(|| matches!(pool.join(1), Join::Poisoned));
        std::thread::sleep(std::time::Duration::from_millis(20));
        r.copy_from(b"xy");
        let job = r.release().expect("sole writer of a closed slot");
        assert!(job.write_to(&FailSink).is_err());
        assert!(pool.is_poisoned());
        assert!(waiter.join().unwrap(), "waiting joiner gets Poisoned");
    });
    assert!(matches!(pool.join(1), Join::Poisoned));
    assert!(pool.append(&MemSink::default(), b"z").is_err());
    let (d, _) = pool.reserve_direct(9);
    assert!(d.write_to(&FailSink, &[0; 9]).is_err());
    assert_eq!(pool.written_position(), 0, "nothing reported written");
}

#[test]
fn stress_one_slot_ring_parks_joiners() {
    // With a single slot every switch waits for the slot's own write, so
    // most joiners park on the condition variable.
    stress(8, 1500, SlotConfig::new(1, 8), 6);
}
