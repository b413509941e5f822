//! Stackful fibers that give IO concurrency to unchanged synchronous code
//! (after ToplingDB's fiber-based MultiGet).
//!
//! `pool` runs a batch of tasks (e.g. the table lookups of `multi_get`)
//! on at most `async_queue_depth` fibers of the calling thread; each fiber
//! is a `corosensei` coroutine on a reusable, guard-paged stack. A task's
//! file reads go through [`fiber_aio_read`], which inside a fiber queues an
//! io_uring read (`crate::io::uring`) and switches back to the scheduler;
//! the scheduler runs every runnable fiber, then submits all queued reads
//! at once and resumes fibers as their completions arrive. Outside a fiber
//! `fiber_aio_read` is a plain `pread`.
//!
//! Thread-safety: everything here is per thread (`thread_local!` state,
//! coroutines are `!Send`), so a fiber never migrates and its reads always
//! complete on the ring they were queued on. Invariant: a fiber's stack is
//! never freed or unwound while one of its reads is queued or in the kernel;
//! a panicking task is caught on its fiber, the other fibers run on until
//! their reads are done, and only then does the panic reach the caller.
//! `unsafe` here: the yielder pointer of the running fiber (`current`), the
//! lifetime of the batch's task closure (`pool`) and the buffer handed to
//! the reactor (`aio`), each with its `SAFETY` argument.

mod aio;
mod current;
mod pool;

#[cfg(any(test, feature = "testing"))]
pub use crate::io::uring::in_flight_reads;
pub(crate) use aio::fiber_aio_read;
pub(crate) use pool::{run_tasks, run_tasks_on};

#[cfg(test)]
mod tests;

pub(crate) use current::SyncReads;
#[cfg(test)]
pub(crate) use current::in_fiber;
