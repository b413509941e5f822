//! The binding-overhead loop, in Rust: the reference that the C and Python
//! versions of the same loop (`bindings/bench/overhead.c`,
//! `bindings/bench/overhead.py`) are measured against
//! (`scripts/bench-bindings.sh`).
//!
//! `fill`: `NUM` puts of 16-byte keys (`%016d` of a permuted index) and
//! 100-byte values, in a fixed pseudo-random order, `sync = false`; then
//! the database is closed and reopened (db_bench's readrandom on an
//! existing database). `read`: one untimed pass over every key (the
//! database hot in the block cache), then `NUM` timed gets in another
//! fixed order, each checked. Options:
//! 256 MiB block cache, everything else default. Prints one line per phase:
//! `rust fill <ops/s>` and `rust read <ops/s>`.
//!
//!     cargo run --release -p varve-ffi --example overhead -- DIR [NUM]

use std::time::Instant;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// Fails the run with `msg` unless `ok`.
fn ensure(ok: bool, msg: impl FnOnce() -> String) -> Result<()> {
    if ok { Ok(()) } else { Err(msg().into()) }
}

/// Multiplier of the fill order (prime, coprime to any NUM it does not divide).
const FILL_STEP: u64 = 999_983;
/// Multiplier of the read order.
const READ_STEP: u64 = 7_919;

fn key(i: u64) -> Vec<u8> {
    format!("{i:016}").into_bytes()
}

fn value(i: u64) -> Vec<u8> {
    let mut v = format!("{i:016}").into_bytes();
    v.resize(100, b'x');
    v
}

/// The loop's options: a 256 MiB block cache, the rest varve's defaults.
fn options() -> varve::Options {
    varve::Options {
        cache_size: 256 << 20,
        ..varve::Options::default()
    }
}

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let Some(dir) = args.next() else {
        return Err("usage: overhead DIR [NUM]".into());
    };
    let num: u64 = match args.next() {
        Some(n) => n
            .parse()
            .map_err(|e| format!("NUM must be a number: {e}"))?,
        None => 1_000_000,
    };
    ensure(
        num > 0 && !num.is_multiple_of(FILL_STEP) && !num.is_multiple_of(READ_STEP),
        || "bad NUM".into(),
    )?;
    let _ = std::fs::remove_dir_all(&dir);
    let db = varve::Db::open(&dir, options())?;

    let t = Instant::now();
    for j in 0..num {
        let i = j * FILL_STEP % num;
        db.put(key(i), value(i))?;
    }
    println!("rust fill {:.0}", num as f64 / t.elapsed().as_secs_f64());
    db.close()?;

    let db = varve::Db::open(&dir, options())?;

    for i in 0..num {
        ensure(db.get(key(i))?.is_some(), || format!("key {i} missing"))?;
    }
    let t = Instant::now();
    let mut found = 0u64;
    for j in 0..num {
        let i = j * READ_STEP % num;
        if let Some(v) = db.get(key(i))? {
            ensure(v.len() == 100, || format!("key {i}: {} bytes", v.len()))?;
            found += 1;
        }
    }
    let rate = num as f64 / t.elapsed().as_secs_f64();
    ensure(found == num, || format!("found {found} of {num}"))?;
    println!("rust read {rate:.0}");
    db.close()?;
    Ok(())
}
