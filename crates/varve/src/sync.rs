//! Synchronisation primitives that switch to loom's model-checked versions
//! under `--cfg loom`, so lock-free code can be exhaustively tested.
//! Lock-free modules import atomics from here, never from `std` directly.

#[cfg(loom)]
pub(crate) use loom::sync::atomic;
#[cfg(not(loom))]
#[allow(unused_imports)]
pub(crate) use std::sync::atomic;
