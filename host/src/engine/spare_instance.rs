//! Spare instances: the work around a call moved to when the host is idle. After a call of a
//! component, a task of its own drops the call's store (which resets its instance slot for
//! reuse) and instantiates the component in a fresh store, so that the next call finds an
//! instance ready and only has to run the tool; the answer of the call goes out first.
//!
//! A spare is as fresh as an instance made at the call: never called, made with the same
//! grants and limits, its instantiation counted in the same CPU budget. Each component keeps
//! at most one, and only once it has been called; how many components may keep one at a time
//! is [`RuntimeConfig::spare_instances`](crate::engine::runtime::RuntimeConfig::spare_instances).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use wasmtime::Store;

use crate::engine::bindings::{ToolInstance, ToolInstancePre};
use crate::engine::runtime::Runtime;
use crate::engine::runtime::{CallSlot, SpareSlot};
use crate::sandbox::Sandbox;
use crate::sandbox::store::StoreState;

/// The spare instance of one component, and what it takes to make the next one.
pub(crate) struct Spare {
    runtime: Runtime,
    sandbox: Sandbox,
    ready: Mutex<Option<Ready>>,
    /// Whether a task makes a spare now, or is about to.
    making: AtomicBool,
    /// Set when making a spare failed: the calls make their own instance then, and report
    /// why it fails.
    failed: AtomicBool,
}

/// A store with the component instantiated in it, never called.
struct Ready {
    store: Store<StoreState>,
    instance: ToolInstance,
    _slot: SpareSlot,
}

impl Spare {
    /// No spare yet for a component that runs in `sandbox`.
    pub(crate) fn new(runtime: Runtime, sandbox: Sandbox) -> Arc<Self> {
        Arc::new(Self {
            runtime,
            sandbox,
            ready: Mutex::new(None),
            making: AtomicBool::new(false),
            failed: AtomicBool::new(false),
        })
    }

    /// The spare instance for a call, if one is ready, with its CPU budget's epoch deadline
    /// counting from now (the epoch went on while it waited).
    pub(crate) fn take(&self) -> Option<(Store<StoreState>, ToolInstance)> {
        let Ready {
            mut store,
            instance,
            _slot,
        } = lock(&self.ready).take()?;
        store.set_epoch_deadline(1);
        Some((store, instance))
    }

    /// Whether an instance is ready for the next call.
    pub(crate) fn is_ready(&self) -> bool {
        lock(&self.ready).is_some()
    }

    /// Ends a call: drops its store and then its instance slot, and makes a spare instance
    /// when there is none, in a task of its own so that the call's answer goes out first.
    /// When too many ended calls wait for that already, the store is dropped here; and only
    /// one task at a time makes a component's spare, so that calls that never wait (a loop
    /// of small calls) do not pile up tasks that cannot run. The task first yields its
    /// thread: the call's answer has usually just been written, waking the client, which
    /// the kernel tends to queue on this very CPU (the writer is expected to sleep next);
    /// without the yield, the client waits for this work before it reads the answer.
    pub(crate) fn retire(
        self: &Arc<Self>,
        pre: &ToolInstancePre,
        store: Store<StoreState>,
        slot: CallSlot,
    ) {
        let later = match self.runtime.retiring_slot() {
            Some(retiring) => Some((store, slot, retiring)),
            None => {
                drop(store);
                drop(slot);
                None
            }
        };
        let refill = !self.failed.load(Ordering::Relaxed)
            && !self.is_ready()
            && !self.making.swap(true, Ordering::AcqRel);
        if later.is_none() && !refill {
            return;
        }
        let spare = self.clone();
        let pre = pre.clone();
        tokio::spawn(async move {
            std::thread::yield_now();
            drop(later);
            if refill {
                // Boxed: the task spawned at the end of the call stays small to set up.
                Box::pin(spare.refill(&pre)).await;
            }
        });
    }

    /// Makes the spare instance, for the task that set `making`.
    async fn refill(&self, pre: &ToolInstancePre) {
        if let Some(ready) = self.make(pre).await {
            *lock(&self.ready) = Some(ready);
        }
        self.making.store(false, Ordering::Release);
    }

    /// Instantiates the component in a fresh store, as a call would, under the wall-clock
    /// timeout of a call; `None` when the runtime has no room for another spare or when
    /// instantiating fails (the call that makes its own instance will say why).
    async fn make(&self, pre: &ToolInstancePre) -> Option<Ready> {
        let slot = self.runtime.spare_slot()?;
        let mut store = match self.runtime.new_store(&self.sandbox, false) {
            Ok(store) => store,
            Err(error) => return self.give_up(&error),
        };
        let instantiate = pre.instantiate_async(&mut store);
        match tokio::time::timeout(self.sandbox.limits.timeout, instantiate).await {
            Ok(Ok(instance)) => Some(Ready {
                store,
                instance,
                _slot: slot,
            }),
            Ok(Err(error)) => self.give_up(&error),
            Err(_) => self.give_up(&"instantiating it took longer than a call's timeout"),
        }
    }

    fn give_up(&self, why: &dyn std::fmt::Display) -> Option<Ready> {
        tracing::debug!("no spare instances for this component: {why}");
        self.failed.store(true, Ordering::Relaxed);
        None
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A poisoned lock only means a holder panicked; the value is still whole.
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
