//! The fiber pool: [`run_tasks`] runs tasks `0..n` on at most `depth`
//! fibers of the calling thread and returns when all are done.
//!
//! Each fiber pulls task indices from a shared counter and runs them one
//! after another, so `depth` bounds the reads in flight. Stacks come from a
//! per-thread free list ([`DefaultStack`]: mmap'ed, with a guard page below
//! it) and go back to it when their fiber finishes; at most
//! `MAX_POOLED_STACKS` are kept.
//!
//! Scheduling ([`Batch::run`]): resume every runnable fiber until each has
//! either finished or suspended on a read; then `poll` the reactor, which
//! submits all queued reads together, waits for at least one completion if
//! none is ready, and reports every completed read's fiber as runnable.
//!
//! Panics: a task's panic is caught on its fiber; no new task starts, the
//! other fibers finish their current task (so their reads complete), and
//! then the first panic is resumed on the caller. If the scheduler itself
//! unwinds, or a batch is dropped early, [`Batch`]'s `Drop` drains every
//! read from the reactor before it finishes the fibers (synchronously) and
//! frees their stacks: no stack is ever unwound or freed with a read of its
//! in the kernel. Per thread; `Batch` is `!Send`.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::io;
use std::marker::PhantomData;
use std::panic::{self, AssertUnwindSafe};
use std::rc::Rc;

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult};

use super::current::{self, Current, FiberYielder};
use crate::io::IoEngine;
use crate::io::uring::with_reactor;

/// Usable bytes of a fiber stack (plus one guard page). Lookups need a few
/// KiB; the margin is for panics (unwinding and the panic hook's backtrace).
/// Untouched pages cost no memory.
const STACK_SIZE: usize = 512 << 10;

/// Most free stacks a thread keeps for the next batch.
const MAX_POOLED_STACKS: usize = 256;

/// The scheduler submits queued reads as soon as this many are waiting in
/// user space, between two fibers (and always before it waits).
const SUBMIT_EVERY: usize = 4;

/// Resumes a dropped batch allows one fiber to finish (it needs one: its
/// read is done and further reads are synchronous).
const TEARDOWN_RESUMES: usize = 4;

thread_local! {
    static STACKS: RefCell<Vec<DefaultStack>> = const { RefCell::new(Vec::new()) };
}

fn take_stack() -> io::Result<DefaultStack> {
    match STACKS.try_with(|s| s.borrow_mut().pop()) {
        Ok(Some(stack)) => Ok(stack),
        _ => DefaultStack::new(STACK_SIZE),
    }
}

fn give_stack(stack: DefaultStack) {
    let _ = STACKS.try_with(|s| {
        let mut s = s.borrow_mut();
        if s.len() < MAX_POOLED_STACKS {
            s.push(stack);
        }
    });
}

/// A task of a batch, called with the task's index.
pub(crate) type Task<'a> = dyn Fn(usize) + 'a;

type Fiber = Coroutine<(), (), (), DefaultStack>;

/// State the fibers of one batch share with its scheduler.
struct Shared {
    next: Cell<usize>,
    n: usize,
    stop: Cell<bool>,
    panic: RefCell<Option<Box<dyn Any + Send>>>,
}

/// Runs `task(0..n)`, on up to `depth` fibers when io_uring is usable on
/// this thread and the caller is not itself a fiber, else one after another
/// on the caller. Resumes the first task panic after every read is done.
pub(crate) fn run_tasks(n: usize, depth: usize, task: &Task<'_>) {
    let usable = !current::in_fiber() && with_reactor(|_| ()).is_some();
    if usable && let Ok(batch) = Batch::new(n, depth, task) {
        batch.run();
        return;
    }
    for i in 0..n {
        task(i);
    }
}

/// [`run_tasks`], or with [`IoEngine::Sync`] simply `task(0..n)` in order
/// on the caller (no fibers, no io_uring).
pub(crate) fn run_tasks_on(engine: IoEngine, n: usize, depth: usize, task: &Task<'_>) {
    match engine {
        IoEngine::IoUring => run_tasks(n, depth, task),
        IoEngine::Sync => (0..n).for_each(task),
    }
}

/// One batch of tasks on the fibers of this thread (see the module docs).
pub(crate) struct Batch<'a> {
    fibers: Vec<Option<Fiber>>,
    runnable: VecDeque<usize>,
    live: usize,
    shared: Rc<Shared>,
    ready: Vec<usize>,
    /// Queued reads that make `step` submit between fibers
    /// (`SUBMIT_EVERY`; tests set `usize::MAX` to leave every read queued
    /// until the next poll).
    submit_every: usize,
    _task: PhantomData<&'a Task<'a>>,
}

impl<'a> Batch<'a> {
    /// A batch of tasks `0..n` on `min(depth, n)` (at least one) fibers, none
    /// started yet. Fails only if not even one stack can be mapped.
    pub(crate) fn new(n: usize, depth: usize, task: &'a Task<'a>) -> io::Result<Batch<'a>> {
        // SAFETY: only the lifetime changes (coroutines need 'static
        // closures). Every fiber that can call `task` finishes before the
        // batch is dropped (`run` runs them to the end; `Drop` finishes the
        // rest), and a batch cannot outlive `'a`; a leaked batch never
        // resumes its fibers, so `task` is never called after `'a`.
        let task: &'static Task<'static> =
            unsafe { std::mem::transmute::<&'a Task<'a>, &'static Task<'static>>(task) };
        let shared = Rc::new(Shared {
            next: Cell::new(0),
            n,
            stop: Cell::new(false),
            panic: RefCell::new(None),
        });
        let count = depth.min(n).max(1);
        let mut fibers = Vec::with_capacity(count);
        for index in 0..count {
            let stack = match take_stack() {
                Ok(s) => s,
                Err(e) if index == 0 => return Err(e),
                Err(_) => break,
            };
            let sh = Rc::clone(&shared);
            fibers.push(Some(Coroutine::with_stack(
                stack,
                move |y: &FiberYielder, ()| fiber_main(y, index, &sh, task),
            )));
        }
        Ok(Batch {
            runnable: (0..fibers.len()).collect(),
            live: fibers.len(),
            fibers,
            shared,
            ready: Vec::new(),
            submit_every: SUBMIT_EVERY,
            _task: PhantomData,
        })
    }

    /// Resumes fiber `i`; returns its stack to the pool if it finished.
    fn resume(&mut self, i: usize) {
        let Some(fiber) = self.fibers[i].as_mut() else {
            return;
        };
        // A fiber that unwound out of `resume` (a bug outside its task's
        // `catch_unwind`) is done and must not be resumed again.
        let finished = fiber.done() || matches!(fiber.resume(()), CoroutineResult::Return(()));
        current::clear();
        if finished && let Some(done) = self.fibers[i].take() {
            self.live -= 1;
            give_stack(done.into_stack());
        }
    }

    /// Runs every runnable fiber until it finishes or waits for a read;
    /// between two fibers, submits the queued reads and picks up the fibers
    /// whose reads completed meanwhile.
    pub(crate) fn step(&mut self) {
        while let Some(i) = self.runnable.pop_front() {
            self.resume(i);
            let ready = &mut self.ready;
            let every = self.submit_every;
            with_reactor(|r| r.submit_queued(every, ready));
            self.runnable.extend(self.ready.drain(..));
        }
    }

    /// Runs the batch to the end; resumes the first task panic, if any,
    /// once no read of the batch is in flight.
    pub(crate) fn run(mut self) {
        loop {
            self.step();
            if self.live == 0 {
                break;
            }
            let mut ready = std::mem::take(&mut self.ready);
            let pending = with_reactor(|r| {
                r.poll(&mut ready);
                r.has_pending()
            });
            assert!(
                !ready.is_empty() || pending == Some(true),
                "fibers are waiting but no read is in flight"
            );
            self.runnable.extend(ready.drain(..));
            self.ready = ready;
        }
        let panicked = self.shared.panic.borrow_mut().take();
        drop(self);
        if let Some(payload) = panicked {
            panic::resume_unwind(payload);
        }
    }

    /// Fibers not finished yet.
    #[cfg(test)]
    pub(crate) fn live(&self) -> usize {
        self.live
    }

    /// `step` leaves reads queued until the next poll (the scheduling
    /// before eager submission), so a test can stop with every fiber waiting.
    #[cfg(test)]
    pub(crate) fn without_eager_submit(mut self) -> Self {
        self.submit_every = usize::MAX;
        self
    }
}

impl Drop for Batch<'_> {
    fn drop(&mut self) {
        if self.live == 0 {
            return;
        }
        // The safety net: wait for every read in the kernel (their results
        // stay for their fibers), then finish the fibers with synchronous
        // reads and no new tasks, then free the stacks.
        current::clear();
        self.shared.stop.set(true);
        with_reactor(|r| r.drain());
        current::set_teardown(true);
        for i in 0..self.fibers.len() {
            for _ in 0..TEARDOWN_RESUMES {
                if self.fibers[i].is_none() {
                    break;
                }
                self.resume(i);
            }
            if let Some(stuck) = self.fibers[i].take() {
                // Never unwind a stack we could not finish: leak it.
                std::mem::forget(stuck);
            }
        }
        current::set_teardown(false);
    }
}

/// A fiber's body: run tasks until none is left or one panicked.
fn fiber_main(yielder: &FiberYielder, index: usize, shared: &Shared, task: &Task<'_>) {
    let me = Current::new(yielder, index);
    while !shared.stop.get() {
        let t = shared.next.get();
        if t >= shared.n {
            break;
        }
        shared.next.set(t + 1);
        me.enter();
        let result = panic::catch_unwind(AssertUnwindSafe(|| task(t)));
        current::clear();
        if let Err(payload) = result {
            shared.stop.set(true);
            let mut first = shared.panic.borrow_mut();
            if first.is_none() {
                *first = Some(payload);
            }
            break;
        }
    }
}
