//! varve-bench: a db_bench-compatible benchmark for varve, RocksDB, fjall, redb and LMDB.
//!
//! The binary (`main.rs`) parses flags ([`flags`]) and calls
//! [`runner::run`]; everything else is a library so tests drive the same
//! code path. Data flows: flags → runner (database lifetime, reporting) →
//! workloads (threads, key/value generation, timing) → engine trait → the
//! engine under test. `varve-bench chart` ([`chart`]) turns JSON records
//! into SVG charts.

pub mod chart;
pub mod contest_run;
pub mod engine;
pub mod flags;
pub mod help;
pub mod keygen;
pub mod parse;
pub mod progress;
pub mod report;
pub mod runner;
pub mod stats;
pub mod tuning;
pub mod valuegen;
pub mod workloads;
