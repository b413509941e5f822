//! Snapshots (skeleton).

/// A point-in-time view.
#[derive(Debug, Clone)]
pub struct Snapshot {}
