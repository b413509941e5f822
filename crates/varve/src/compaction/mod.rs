//! Compaction: choosing what to compact (`picker`), deciding which versions
//! may be dropped (`filter`) and rewriting the chosen files (`job`).

pub mod filter;
pub mod job;
pub mod picker;
