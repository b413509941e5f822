//! Synchronisation primitives that switch to loom's model-checked versions
//! under `--cfg loom`, so lock-free code can be exhaustively tested.
//! Lock-free modules import atomics from here, never from `std` directly,
//! and so do the locks and condition variables that a lock-free handshake
//! waits under (`db/read/pass_pace.rs`).

#[cfg(loom)]
pub(crate) use loom::sync::atomic;
#[cfg(loom)]
pub(crate) use loom::sync::{Condvar, Mutex, MutexGuard};
#[cfg(not(loom))]
#[allow(unused_imports)]
pub(crate) use std::sync::atomic;
#[cfg(not(loom))]
pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};
