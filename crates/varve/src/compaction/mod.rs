//! Compaction: choosing what to compact (`picker`), deciding which versions
//! may be dropped (`filter`), rewriting the chosen files (`job`) into new
//! tables cut at user-key boundaries (`output`, shared with repair).

pub mod filter;
pub mod flush;
pub mod job;
pub mod output;
pub mod picker;
