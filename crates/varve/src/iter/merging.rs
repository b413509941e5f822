//! Merging iterator (skeleton).
