//! Compaction: choosing what to compact and rewriting it.
//!
//! `filter` decides, entry by entry, which versions a compaction may drop
//! without changing what any reader can see.

pub mod filter;
