//! DB iterator (skeleton).
