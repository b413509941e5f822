//! loom models of the slot protocol (`--cfg loom`; every test name contains
//! `loom`). Two or three writers and a closer run on a ring of two tiny
//! slots so that nearly every record forces a slot switch; loom explores
//! their interleavings (bounded by `LOOM_MAX_PREEMPTIONS`). Each model checks:
//! no lost bytes (the log is exactly the records, each once), no overlapping
//! offsets (records tile the log; the sink panics on a byte written twice),
//! no slot reused while a writer holds it (a job for slot `s` never coexists
//! with a holder of `s`, and `Reservation::release` asserts the slot's
//! generation is unchanged), copies happen-before the slot write (loom's
//! checked cells in `SlotBuf`), and the written position ends at the total.
//!
//! Test bookkeeping uses `std` sync types on purpose: loom runs one thread at
//! a time, and keeping them out of the model keeps the state space small.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use loom::sync::Arc;
use loom::thread;

use super::*;

/// In-memory log: each byte written at most once.
#[derive(Default)]
struct Sink {
    log: Mutex<Vec<Option<u8>>>,
}

impl SlotSink for Sink {
    fn write_at_log_offset(&self, log_offset: u64, bytes: &[u8]) -> std::io::Result<()> {
        let mut log = self.log.lock().unwrap();
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

/// The pool, the sink and per-slot holder counts, shared by the threads.
struct World {
    pool: SlotPool,
    sink: Sink,
    holders: [AtomicUsize; 2],
}

impl World {
    fn new(config: SlotConfig) -> Arc<Self> {
        assert_eq!(config.slots, 2);
        Arc::new(World {
            pool: SlotPool::new(config, 0).unwrap(),
            sink: Sink::default(),
            holders: Default::default(),
        })
    }

    /// Writes a job after checking nobody holds its slot.
    fn write(&self, job: WriteJob<'_>) {
        let held = self.holders[job.slot()].load(Ordering::SeqCst);
        assert_eq!(
            held,
            0,
            "slot {} written while a writer holds it",
            job.slot()
        );
        job.write_to(&self.sink).unwrap();
    }

    /// One record through the step-by-step API; returns (offset, bytes).
    fn put(&self, rec: Vec<u8>) -> (u64, Vec<u8>) {
        match self.pool.join(rec.len()) {
            Join::Slot(mut r) => {
                let slot = r.slot();
                self.holders[slot].fetch_add(1, Ordering::SeqCst);
                let at = r.log_offset();
                r.copy_from(&rec);
                self.holders[slot].fetch_sub(1, Ordering::SeqCst);
                if let Some(job) = r.release() {
                    self.write(job);
                }
                (at, rec)
            }
            Join::TooLarge => {
                let (d, job) = self.pool.reserve_direct(rec.len());
                let at = d.log_offset();
                if let Some(job) = job {
                    self.write(job);
                }
                d.write_to(&self.sink, &rec).unwrap();
                (at, rec)
            }
            Join::Empty | Join::Poisoned => unreachable!("non-empty records, no failures"),
        }
    }

    /// Final flush and the checks on the whole log.
    fn finish(&self, mut records: Vec<(u64, Vec<u8>)>) {
        if let Some(job) = self.pool.close_active() {
            self.write(job);
        }
        records.sort();
        let log = self.sink.log.lock().unwrap();
        let mut pos = 0u64;
        for (at, rec) in &records {
            assert_eq!(*at, pos, "gap or overlap at {pos}: {records:?}");
            for (i, &b) in rec.iter().enumerate() {
                assert_eq!(
                    log[pos as usize + i],
                    Some(b),
                    "byte lost at {}",
                    pos as usize + i
                );
            }
            pos += rec.len() as u64;
        }
        assert_eq!(log.len() as u64, pos, "log has bytes no record owns");
        assert_eq!(
            self.pool.written_position(),
            pos,
            "written position short of the end"
        );
    }
}

/// `id`-tagged record of `len` bytes.
fn rec(id: u8, len: usize) -> Vec<u8> {
    (0..len as u8).map(|i| id * 16 + i).collect()
}

#[test]
fn loom_two_writers_and_closer() {
    loom::model(|| {
        let config = SlotConfig {
            slots: 2,
            capacity: 4,
            close_at: 3,
            max_join: 2,
        };
        let w = World::new(config);
        let a = {
            let w = w.clone();
            thread::spawn(move || vec![w.put(rec(1, 2)), w.put(rec(2, 1))])
        };
        let b = {
            let w = w.clone();
            thread::spawn(move || vec![w.put(rec(3, 2))])
        };
        let closer = {
            let w = w.clone();
            thread::spawn(move || {
                if let Some(job) = w.pool.close_active() {
                    w.write(job);
                }
            })
        };
        let mut records = a.join().unwrap();
        records.extend(b.join().unwrap());
        closer.join().unwrap();
        w.finish(records);
    });
}

#[test]
fn loom_three_writers_one_byte_slots_switch() {
    loom::model(|| {
        // Every second byte closes a slot; the ring of two wraps around.
        let config = SlotConfig {
            slots: 2,
            capacity: 2,
            close_at: 2,
            max_join: 1,
        };
        let w = World::new(config);
        let handles: Vec<_> = (0..3u8)
            .map(|t| {
                let w = w.clone();
                thread::spawn(move || vec![w.put(rec(t + 1, 1))])
            })
            .collect();
        let records = handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect();
        w.finish(records);
    });
}

#[test]
fn loom_direct_record_among_slot_writers() {
    loom::model(|| {
        let config = SlotConfig {
            slots: 2,
            capacity: 3,
            close_at: 2,
            max_join: 2,
        };
        let w = World::new(config);
        let a = {
            let w = w.clone();
            thread::spawn(move || vec![w.put(rec(1, 1)), w.put(rec(2, 2))])
        };
        let b = {
            let w = w.clone();
            thread::spawn(move || vec![w.put(rec(3, 3))])
        };
        let mut records = a.join().unwrap();
        records.extend(b.join().unwrap());
        w.finish(records);
    });
}

#[test]
fn loom_ring_wraps_while_slots_are_written() {
    loom::model(|| {
        // One byte per slot: every record closes its slot, so four records
        // cycle the two slots twice and writers join a slot right after its
        // previous incarnation was written.
        let config = SlotConfig {
            slots: 2,
            capacity: 1,
            close_at: 1,
            max_join: 1,
        };
        let w = World::new(config);
        let handles: Vec<_> = (0..2u8)
            .map(|t| {
                let w = w.clone();
                thread::spawn(move || vec![w.put(rec(2 * t + 1, 1)), w.put(rec(2 * t + 2, 1))])
            })
            .collect();
        let records = handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect();
        w.finish(records);
    });
}

#[test]
fn loom_two_records_per_slot_ring_wraps() {
    loom::model(|| {
        // Two one-byte records per slot, five records: slot 0 is reused
        // while other writers may still be copying into slot 1.
        let config = SlotConfig {
            slots: 2,
            capacity: 2,
            close_at: 2,
            max_join: 1,
        };
        let w = World::new(config);
        let a = {
            let w = w.clone();
            thread::spawn(move || vec![w.put(rec(1, 1)), w.put(rec(2, 1)), w.put(rec(3, 1))])
        };
        let b = {
            let w = w.clone();
            thread::spawn(move || vec![w.put(rec(4, 1)), w.put(rec(5, 1))])
        };
        let mut records = a.join().unwrap();
        records.extend(b.join().unwrap());
        w.finish(records);
    });
}

#[test]
fn loom_direct_record_races_closer() {
    loom::model(|| {
        // A direct record, a slot writer and the idle-timer close all race
        // to close the same open slot.
        let config = SlotConfig {
            slots: 2,
            capacity: 3,
            close_at: 3,
            max_join: 1,
        };
        let w = World::new(config);
        let a = {
            let w = w.clone();
            thread::spawn(move || vec![w.put(rec(1, 1)), w.put(rec(2, 1))])
        };
        let b = {
            let w = w.clone();
            thread::spawn(move || vec![w.put(rec(3, 2))])
        };
        let closer = {
            let w = w.clone();
            thread::spawn(move || {
                if let Some(job) = w.pool.close_active() {
                    w.write(job);
                }
            })
        };
        let mut records = a.join().unwrap();
        records.extend(b.join().unwrap());
        closer.join().unwrap();
        w.finish(records);
    });
}
