//! Leases: how long this run's locks hold without renewal, the heartbeat that renews them, and
//! when a call given up in flight can no longer land (so that the process waits for it).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::commit::GroupError;
use super::record::epoch_seconds;
use super::writes::renew_write;
use super::{Audit, Journal};

/// How long a lock is held without renewal unless `AZEVAC_LEASE` says otherwise.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(120);

/// This run's leases: which locks it holds, and until when each is safe to act under.
#[derive(Debug)]
pub struct Lease {
    pub(super) run_id: String,
    pub(super) caller: String,
    pub(super) duration: Duration,
    /// The longest a changing call started under the lease may still be in flight after it (the
    /// run's `--operation-timeout`): another run takes an expired lock over only once that has passed.
    pub(super) in_flight: Duration,
    /// Lock key → the instant the lease runs out by this machine's monotonic clock.
    pub(super) held: Mutex<BTreeMap<String, Instant>>,
    /// Until when a change this run gave up in flight may still land (the latest of them).
    pub(super) quiet: Mutex<Option<Instant>>,
    /// Runs this run found dead on this host, and until when a call of theirs may still land (from
    /// when it first found each gone).
    pub(super) dead: Mutex<BTreeMap<String, Instant>>,
}

impl Lease {
    /// The leases of the run `audit` describes, each lasting `duration` between renewals, with calls
    /// that may outlast a lease by up to `in_flight` (see [`Lock::quiet_at`]).
    pub fn new(audit: &Audit, duration: Duration, in_flight: Duration) -> Arc<Lease> {
        Arc::new(Lease {
            run_id: audit.run_id.clone(),
            caller: audit.caller.clone(),
            duration,
            in_flight,
            held: Mutex::new(BTreeMap::new()),
            quiet: Mutex::new(None),
            dead: Mutex::new(BTreeMap::new()),
        })
    }

    /// Whether this run still holds `key` with time to spare: a quarter of the lease is kept as a
    /// margin for clock skew between operators' machines and for the call about to be made.
    pub fn is_live(&self, key: &str) -> bool {
        let margin = self.duration / 4;
        self.lock()
            .get(key)
            .is_some_and(|until| Instant::now() + margin < *until)
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Instant>> {
        // A poisoned map only means a panic elsewhere; the leases in it are still what they were.
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn hold(&self, key: &str, until: Instant) {
        self.lock().insert(key.to_owned(), until);
    }

    /// A renewal went through: extend `key`'s lease, unless the key was released while the
    /// renewal was in flight (putting it back would renew, and then report lost, a lock that
    /// is no longer ours to renew).
    pub(super) fn renewed(&self, key: &str, until: Instant) {
        if let Some(held) = self.lock().get_mut(key) {
            *held = until;
        }
    }

    pub(super) fn holds(&self, key: &str) -> bool {
        self.lock().contains_key(key)
    }

    pub(super) fn drop_key(&self, key: &str) {
        self.lock().remove(key);
    }

    /// Stop renewing `key`, and say until when it was held (to hold it again if its release fails).
    pub(super) fn take_key(&self, key: &str) -> Option<Instant> {
        self.lock().remove(key)
    }

    /// Stop renewing `key`, whose change was given up in flight: until its lease's end plus the
    /// longest call, that change may still land.
    pub(super) fn abandon(&self, key: &str) {
        if let Some(until) = self.take_key(key) {
            let quiet = until + self.in_flight;
            let mut latest = self.quiet.lock().unwrap_or_else(|e| e.into_inner());
            *latest = Some(latest.map_or(quiet, |q| q.max(quiet)));
        }
    }

    /// Until when a change this run gave up in flight may still land, if it gave one up. The run
    /// stays until then: a process of this host seen gone has its locks taken over at once, so it
    /// must not be gone while a call of it can still land.
    pub fn quiet_after(&self) -> Option<Instant> {
        *self.quiet.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn keys(&self) -> Vec<String> {
        self.lock().keys().cloned().collect()
    }

    pub(super) fn expiry_epoch(&self) -> u64 {
        epoch_seconds() + self.duration.as_secs()
    }

    /// When a lease that runs out at `expiry` (epoch seconds) can have no call of this run in
    /// flight any more: the lease plus the longest call, rounded up to the next second.
    pub(super) fn quiet_epoch(&self, expiry: u64) -> u64 {
        expiry + self.in_flight.as_secs() + u64::from(self.in_flight.subsec_nanos() > 0)
    }
}

/// Renews a run's leases until dropped.
#[derive(Debug)]
pub struct Heartbeat {
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Journal {
    /// Renew every lock `lease` holds every quarter of the lease (one batched write a renewal),
    /// until the returned value is dropped. A lock another run has taken over is dropped from the
    /// lease, so that nothing more is done under it.
    pub fn heartbeat(&self, lease: Arc<Lease>) -> Heartbeat {
        let journal = self.clone();
        let task = tokio::spawn(async move {
            let every = (lease.duration / 4).max(Duration::from_millis(100));
            loop {
                tokio::time::sleep(every).await;
                let keys = lease.keys();
                if keys.is_empty() {
                    continue;
                }
                let started = Instant::now();
                let until = lease.expiry_epoch();
                let quiet = lease.quiet_epoch(until);
                let groups = keys
                    .iter()
                    .map(|k| vec![renew_write(k, &lease.run_id, until, quiet)])
                    .collect();
                for (key, outcome) in keys.iter().zip(journal.commit(groups).await) {
                    match outcome {
                        Ok(()) => lease.renewed(key, started + lease.duration),
                        // Released by this run while the renewal was in flight: the lock is gone
                        // because we are done with it, not because another run took it.
                        Err(GroupError {
                            conditional: Some(_), ..
                        }) if !lease.holds(key) => {
                            tracing::debug!(resource = %key, "renewal crossed the release; nothing to do");
                        }
                        Err(GroupError {
                            conditional: Some(_), ..
                        }) => {
                            tracing::warn!(resource = %key, "lost the lock to another run; nothing more is done under it");
                            lease.drop_key(key);
                        }
                        Err(e) if !lease.holds(key) => {
                            tracing::debug!(resource = %key, error = %crate::error::describe(&e.error), "renewal crossed the release");
                        }
                        // Not renewed this time: the lease runs out on its own unless the next renewal works.
                        Err(e) => {
                            tracing::warn!(resource = %key, error = %crate::error::describe(&e.error), "lease not renewed")
                        }
                    }
                }
            }
        });
        Heartbeat { task }
    }
}
