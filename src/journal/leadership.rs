//! The watcher's lease while it holds it: renewed every third of a lease in the background, the
//! run in flight stopped the moment the lease can no longer be trusted. The item itself (claim,
//! renew, release) is [`super::watcher`]'s; runs' own leases are [`super::lease`]'s.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{Journal, Watcher};
use crate::error::describe;

/// Why a run the watcher carries out stops when its lease is lost.
const LEASE_LOST: &str = "the watcher's lease was lost (another watcher may act now)";

/// What the lease tells the watcher's health as it goes: the application layer's beacon.
pub trait Pulse: Send + Sync {
    /// A renewal landed while a run is in flight (the watcher's loop does not turn meanwhile).
    fn beat(&self);
    /// The lease can no longer be trusted, for this reason (said once, however often it is told).
    fn lost(&self, why: &str);
}

/// The lease held: renewed every third of a lease in the background (evacuations and waves take
/// longer than a lease), and whether it is still safe to act under. The run in flight is stopped
/// the moment it is not.
pub struct Leadership {
    state: Arc<LeaseState>,
    heartbeat: tokio::task::JoinHandle<()>,
}

struct LeaseState {
    journal: Journal,
    lease: Duration,
    /// The item as the next renewal writes it.
    item: Mutex<Watcher>,
    /// One write of the item at a time, each with the item as it is when its turn comes: a
    /// renewal that read the item before the zone followed was set must not land after the write
    /// that set it.
    writing: tokio::sync::Mutex<()>,
    /// Until when the lease holds by this machine's monotonic clock.
    until: Mutex<Instant>,
    /// Set when a renewal found the lease another's.
    lost: AtomicBool,
    /// The interrupt of the run the watcher carries out now, stopped once the lease is lost.
    run: Mutex<Option<crate::process::interrupt::Interrupt>>,
    /// The last renewal's error, until one succeeds: why the lease was lost, if it is.
    failed: Mutex<Option<String>>,
    /// The watcher's health: a renewal while a run is in flight is its beat (the loop does not
    /// turn meanwhile), and a lease lost is said at once.
    pulse: Arc<dyn Pulse>,
}

impl LeaseState {
    /// Renew the lease with what `item` says; whether it is still this watcher's.
    async fn renew(&self) -> bool {
        let _one_at_a_time = self.writing.lock().await;
        if self.lost.load(Ordering::SeqCst) {
            return false;
        }
        let item = self.item.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let asked = Instant::now();
        match self.journal.renew_watch(&item, self.lease).await {
            Ok(true) => {
                *self.until.lock().unwrap_or_else(|e| e.into_inner()) = asked + self.lease;
                *self.failed.lock().unwrap_or_else(|e| e.into_inner()) = None;
                if self.run.lock().unwrap_or_else(|e| e.into_inner()).is_some() {
                    self.pulse.beat();
                }
                true
            }
            Ok(false) => {
                self.lost.store(true, Ordering::SeqCst);
                false
            }
            Err(e) => {
                // The lease runs out on its own if this goes on: the watcher then stops acting.
                let why = format!("cannot renew the watcher's lease: {}", describe(&e));
                crate::say!("azevac: warning: watch: {}", crate::model::text::clean(&why));
                *self.failed.lock().unwrap_or_else(|e| e.into_inner()) = Some(why);
                false
            }
        }
    }

    /// Why the lease is no longer this watcher's to act under, in one line.
    fn why_lost(&self) -> String {
        if self.lost.load(Ordering::SeqCst) {
            return "lease lost: another watcher took it over (this one's renewals had not landed in time)".to_owned();
        }
        match self.failed.lock().unwrap_or_else(|e| e.into_inner()).as_deref() {
            Some(why) => format!("lease lost: not renewed in time ({why})"),
            None => "lease lost: not renewed in time".to_owned(),
        }
    }

    /// When this watcher stops acting: a quarter of a lease before the lease runs out by its clock
    /// (a standby takes over only a quarter of a lease after it ran out by the item's).
    fn deadline(&self) -> Instant {
        *self.until.lock().unwrap_or_else(|e| e.into_inner()) - self.lease / 4
    }

    fn holds(&self) -> bool {
        !self.lost.load(Ordering::SeqCst) && Instant::now() < self.deadline()
    }

    /// Stop the run in flight, if any: the lease can no longer be trusted.
    fn stop_run(&self) {
        if let Some(run) = self.run.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            if !run.requested() {
                crate::say!(
                    "azevac: watch: the lease can no longer be trusted: the run in flight starts nothing more (the \
                     changes under way finish under their locks)"
                );
            }
            run.stop(LEASE_LOST);
        }
    }

    /// Renew every third of a lease; stop the run in flight at the deadline when renewals failed
    /// (a renewal that hangs too), and for good once another watcher holds the lease.
    async fn beat(&self) {
        let deadline = |state: &LeaseState| tokio::time::Instant::from_std(state.deadline());
        let mut next = tokio::time::Instant::now() + self.lease / 3;
        loop {
            tokio::select! {
                () = tokio::time::sleep_until(next) => {}
                () = tokio::time::sleep_until(deadline(self)), if self.holds() => {}
            }
            if tokio::time::Instant::now() >= next {
                next = tokio::time::Instant::now() + self.lease / 3;
                let renewal = self.renew();
                tokio::pin!(renewal);
                tokio::select! {
                    _ = &mut renewal => {}
                    () = tokio::time::sleep_until(deadline(self)), if self.holds() => {
                        self.stop_run();
                        renewal.await;
                    }
                }
            }
            if !self.holds() {
                self.pulse.lost(&self.why_lost());
                self.stop_run();
                if self.lost.load(Ordering::SeqCst) {
                    return;
                }
            }
        }
    }
}

impl Leadership {
    /// The lease `held`, claimed by a call sent at `asked`.
    pub fn start(
        journal: &Journal,
        held: Watcher,
        lease: Duration,
        asked: Instant,
        pulse: Arc<dyn Pulse>,
    ) -> Leadership {
        let state = Arc::new(LeaseState {
            journal: journal.clone(),
            lease,
            item: Mutex::new(held),
            writing: tokio::sync::Mutex::new(()),
            until: Mutex::new(asked + lease),
            lost: AtomicBool::new(false),
            run: Mutex::new(None),
            failed: Mutex::new(None),
            pulse,
        });
        let beating = Arc::clone(&state);
        let heartbeat = tokio::spawn(async move { beating.beat().await });
        Leadership { state, heartbeat }
    }

    /// Whether the lease is still this watcher's with a quarter of it to spare: past that, it
    /// stops acting (a standby takes over only a quarter of a lease after it ran out).
    pub fn holds(&self) -> bool {
        self.state.holds()
    }

    /// Why the lease was lost, in one line.
    pub fn why_lost(&self) -> String {
        self.state.why_lost()
    }

    /// The run guarded is over: a later loss of the lease has nothing to stop.
    pub fn unguard(&self) {
        *self.state.run.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// Stop `run` once the lease is lost (at once if it already is).
    pub fn guard(&self, run: &crate::process::interrupt::Interrupt) {
        *self.state.run.lock().unwrap_or_else(|e| e.into_inner()) = Some(run.clone());
        if !self.holds() {
            run.stop(LEASE_LOST);
        }
    }

    /// What the next renewal writes.
    pub fn update(&self, item: &Watcher) {
        let mut held = self.state.item.lock().unwrap_or_else(|e| e.into_inner());
        held.heard_at = item.heard_at;
        held.following = item.following.clone();
        held.acting = item.acting.clone();
    }

    /// Write `item` now (the zone followed changed); whether the lease is still this watcher's.
    pub async fn write(&self, item: &Watcher) -> bool {
        self.update(item);
        self.state.renew().await && self.holds()
    }

    /// Stop renewing: the lease runs out on its own unless released.
    pub fn stop(self) {
        drop(self);
    }
}

impl Drop for Leadership {
    fn drop(&mut self) {
        self.heartbeat.abort();
    }
}
