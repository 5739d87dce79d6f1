//! Ctrl-C and SIGTERM during a run, taken the way Terraform takes them: the first signal stops new
//! changes from starting and lets the ones in flight finish (for at most [`GRACE`]), so that their
//! done marks are written, every lock is released and the result so far is printed; a second signal
//! exits at once (every change made is already journalled, and its lock runs out on its own).

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long the changes in flight may take after the first signal before they are given up (their
/// records kept, their locks left to run out).
pub const GRACE: Duration = Duration::from_secs(10);

/// Whether a signal asked the run to stop, shared by everything that starts changes.
#[derive(Debug, Clone, Default)]
pub struct Interrupt {
    state: Arc<State>,
}

#[derive(Debug, Default)]
struct State {
    /// The first signal's number (0: none yet).
    signal: AtomicI32,
    /// When it came.
    at: Mutex<Option<Instant>>,
    /// The listener, stopped when the last handle goes.
    listener: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Drop for State {
    fn drop(&mut self) {
        if let Some(task) = self.listener.get_mut().ok().and_then(Option::take) {
            task.abort();
        }
    }
}

impl Interrupt {
    /// Take SIGINT and SIGTERM from now until the last handle is dropped. Where the handlers cannot
    /// be installed, signals keep their default effect (the journal still covers every change).
    pub fn listen() -> Interrupt {
        let interrupt = Interrupt::default();
        let state = Arc::downgrade(&interrupt.state);
        let task = tokio::spawn(async move {
            use tokio::signal::unix::{signal, SignalKind};
            let (Ok(mut int), Ok(mut term)) = (signal(SignalKind::interrupt()), signal(SignalKind::terminate())) else {
                tracing::warn!("signal handlers not installed; Ctrl-C stops azevac at once");
                return;
            };
            loop {
                let number = tokio::select! {
                    _ = int.recv() => libc_number(SignalKind::interrupt()),
                    _ = term.recv() => libc_number(SignalKind::terminate()),
                };
                let Some(state) = state.upgrade() else {
                    return;
                };
                if state.signal.load(Ordering::SeqCst) != 0 {
                    crate::say!(
                        "azevac: second interrupt: stopping at once; every change made is journalled, and its lock \
                         runs out on its own"
                    );
                    std::process::exit(128 + number);
                }
                Interrupt { state }.raise(number);
                crate::say!(
                    "azevac: interrupted: starting no more changes; the ones in flight finish (at most {}s), then \
                     every lock is released and the result so far printed. Interrupt again to stop at once.",
                    GRACE.as_secs()
                );
            }
        });
        *interrupt.state.listener.lock().unwrap_or_else(|e| e.into_inner()) = Some(task);
        interrupt
    }

    /// What the first signal does: from now on no change starts, and the ones in flight have
    /// [`GRACE`]. `signal` is its number (2: SIGINT, 15: SIGTERM).
    pub fn raise(&self, signal: i32) {
        *self.state.at.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
        self.state.signal.store(signal, Ordering::SeqCst);
    }

    /// Whether a signal asked the run to stop: start no more changes.
    pub fn requested(&self) -> bool {
        self.state.signal.load(Ordering::SeqCst) != 0
    }

    /// Whether the changes in flight have had their grace since the signal: give them up.
    pub fn grace_is_over(&self) -> bool {
        self.requested()
            && self
                .state
                .at
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .is_some_and(|at| at.elapsed() > GRACE)
    }

    /// The exit code a run stopped by a signal ends with (130 for SIGINT, 143 for SIGTERM).
    pub fn exit_code(&self) -> Option<i32> {
        let signal = self.state.signal.load(Ordering::SeqCst);
        (signal != 0).then_some(128 + signal)
    }

    /// Why a line was not started, for its reason.
    pub fn reason(&self) -> String {
        let name = match self.state.signal.load(Ordering::SeqCst) {
            15 => "SIGTERM",
            _ => "SIGINT",
        };
        format!("not started: interrupted ({name})")
    }
}

/// The signal's number, as exit codes count it (128 + number).
fn libc_number(kind: tokio::signal::unix::SignalKind) -> i32 {
    kind.as_raw_value()
}
