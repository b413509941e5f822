//! Small shared helpers with no engine state: integer coding and checksums.
//! Everything here is pure and thread-safe.

pub(crate) mod checksum;
pub(crate) mod coding;
pub(crate) mod lru;
