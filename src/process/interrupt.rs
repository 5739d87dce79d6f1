//! Ctrl-C and SIGTERM during a run, taken the way Terraform takes them: the first signal stops new
//! changes from starting and lets the ones in flight finish (for at most [`GRACE`]), so that their
//! done marks are written, every lock is released and the result so far is printed; a second signal
//! exits at once (every change made is already journalled, and its lock runs out on its own).
//!
//! A run may also be stopped without a signal, the same way: `azevac watch` stops the evacuation or
//! recovery it carries out once its lease is lost ([`Interrupt::stop`]), since another watcher may
//! act from then on.

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
    /// Why the run was stopped without a signal, if it was.
    stopped: Mutex<Option<String>>,
    /// The interrupt this one follows (a watcher's, for a run it carries out): its signal stops
    /// this run too.
    parent: Option<Interrupt>,
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

    /// An interrupt for one run that `self`'s signals stop too, and that can be stopped on its own
    /// ([`Interrupt::stop`]) without stopping `self`. No second listener: a second signal still
    /// exits at once through `self`'s.
    pub fn linked(&self) -> Interrupt {
        Interrupt {
            state: Arc::new(State {
                signal: AtomicI32::new(0),
                at: Mutex::new(None),
                listener: Mutex::new(None),
                stopped: Mutex::new(None),
                parent: Some(self.clone()),
            }),
        }
    }

    /// Stop the run without a signal, as the first signal does (no new change, the ones in flight
    /// have [`GRACE`]); `why` ends each line not started: "not started: {why}".
    pub fn stop(&self, why: &str) {
        let mut stopped = self.state.stopped.lock().unwrap_or_else(|e| e.into_inner());
        if stopped.is_none() && self.signal() == 0 {
            self.state
                .at
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get_or_insert_with(Instant::now);
            *stopped = Some(why.to_owned());
        }
    }

    /// Whether a signal (or [`Interrupt::stop`]) asked the run to stop: start no more changes.
    pub fn requested(&self) -> bool {
        self.signal() != 0 || self.why_stopped().is_some()
    }

    /// Whether the changes in flight have had their grace since the signal: give them up.
    pub fn grace_is_over(&self) -> bool {
        let own = self
            .state
            .at
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some_and(|at| at.elapsed() > GRACE);
        own || self.state.parent.as_ref().is_some_and(Interrupt::grace_is_over)
    }

    /// The exit code a run stopped by a signal ends with (130 for SIGINT, 143 for SIGTERM); none for
    /// a run stopped without one.
    pub fn exit_code(&self) -> Option<i32> {
        let signal = self.signal();
        (signal != 0).then_some(128 + signal)
    }

    /// Why a line was not started, for its reason.
    pub fn reason(&self) -> String {
        match (self.signal(), self.why_stopped()) {
            (0, Some(why)) => format!("not started: {why}"),
            (15, _) => "not started: interrupted (SIGTERM)".to_owned(),
            _ => "not started: interrupted (SIGINT)".to_owned(),
        }
    }

    /// The first signal's number, this run's own or the one it follows (0: none).
    fn signal(&self) -> i32 {
        match self.state.signal.load(Ordering::SeqCst) {
            0 => self.state.parent.as_ref().map_or(0, Interrupt::signal),
            own => own,
        }
    }

    fn why_stopped(&self) -> Option<String> {
        self.state.stopped.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// The signal's number, as exit codes count it (128 + number).
fn libc_number(kind: tokio::signal::unix::SignalKind) -> i32 {
    kind.as_raw_value()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_linked_run_stops_on_its_parents_signal_and_alone_without_stopping_the_parent() {
        let watcher = Interrupt::default();
        let run = watcher.linked();
        run.stop("the watcher's lease was lost");
        assert!(run.requested());
        assert!(!watcher.requested(), "a run stopped alone leaves the watcher going");
        assert_eq!(run.exit_code(), None, "no signal, no signal's exit code");
        assert_eq!(run.reason(), "not started: the watcher's lease was lost");
        assert!(!run.grace_is_over());

        let next = watcher.linked();
        watcher.raise(15);
        assert!(next.requested());
        assert_eq!(next.exit_code(), Some(143));
        assert_eq!(next.reason(), "not started: interrupted (SIGTERM)");
        next.stop("too late");
        assert_eq!(
            next.reason(),
            "not started: interrupted (SIGTERM)",
            "the signal came first"
        );
    }
}
