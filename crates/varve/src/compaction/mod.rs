//! Compaction: choosing what to compact (`picker`), deciding which versions
//! may be dropped (`filter`), rewriting the chosen files (`job`) into new
//! tables cut at user-key boundaries (`output`, shared with repair); the
//! user's [`CompactionFilter`] (`user_filter`).

pub(crate) mod blob_gc;
pub(crate) mod filter;
pub(crate) mod flush;
pub(crate) mod job;
pub(crate) mod output;
pub(crate) mod picker;
mod user_filter;

pub use user_filter::{CompactionFilter, FilterDecision};
