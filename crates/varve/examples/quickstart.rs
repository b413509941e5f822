//! Quick start: open a database in a temporary directory, write from several
//! threads, read, iterate, reopen, and print what it measured.
//!
//! Run with `cargo run --release --example quickstart [-- NUM_KEYS]`.

use std::sync::Arc;
use std::time::Instant;

use varve::{Db, Options, ReadOptions, WriteBatch, WriteOptions};

fn key(i: u64) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[8..].copy_from_slice(&i.to_be_bytes());
    k
}

fn main() -> varve::Result<()> {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(200_000);
    let dir = std::env::temp_dir().join(format!("varve-quickstart-{}", std::process::id()));
    let value = vec![b'v'; 100];
    let threads = 4u64;

    let db = Arc::new(Db::open(&dir, Options::default())?);
    let start = Instant::now();
    std::thread::scope(|s| {
        for t in 0..threads {
            let db = Arc::clone(&db);
            let value = &value;
            s.spawn(move || -> varve::Result<()> {
                let mut i = t;
                while i < n {
                    let mut batch = WriteBatch::new();
                    for j in i..(i + 16 * threads).min(n) {
                        if j % threads == t {
                            batch.put(key(j), value);
                        }
                    }
                    db.write(batch)?;
                    i += 16 * threads;
                }
                Ok(())
            });
        }
    });
    let write_secs = start.elapsed().as_secs_f64();
    println!(
        "wrote {n} keys (16 B keys, 100 B values) from {threads} threads in batches of 16: {:.0} keys/s",
        n as f64 / write_secs
    );

    let durable = Instant::now();
    db.put_opt(b"durable", b"yes", &WriteOptions::sync())?;
    println!(
        "one sync put: {:.3} ms",
        durable.elapsed().as_secs_f64() * 1e3
    );

    let start = Instant::now();
    let mut found = 0u64;
    for i in (0..n).step_by(7) {
        if db.get(key(i))?.is_some() {
            found += 1;
        }
    }
    let reads = n.div_ceil(7);
    println!(
        "read {reads} keys ({found} found): {:.0} reads/s",
        reads as f64 / start.elapsed().as_secs_f64()
    );

    let snapshot = db.snapshot();
    db.delete(key(0))?;
    let start = Instant::now();
    let count = db.iter_opt(&ReadOptions::at(&snapshot)).count();
    println!(
        "iterated {count} entries of a snapshot (a later delete is invisible): {:.0} entries/s",
        count as f64 / start.elapsed().as_secs_f64()
    );
    drop(snapshot);

    let db = Arc::into_inner(db).expect("no other handles");
    db.close()?;
    let start = Instant::now();
    let db = Db::open(&dir, Options::default())?;
    let report = db.debug().recovery_report().clone();
    println!(
        "reopened in {:.3} s: {} WAL records replayed, last sequence {}",
        start.elapsed().as_secs_f64(),
        report.records,
        report.last_sequence
    );
    assert_eq!(db.get(key(0))?, None);
    assert_eq!(db.get(b"durable")?, Some(b"yes".to_vec()));
    db.close()?;
    Db::destroy(&dir, &Options::default())?;
    Ok(())
}
