//! The journal protocol, the way every change goes through it (the finalizer pattern of
//! kube-runtime, with a lock):
//!
//! 1. **acquire**: in one transaction per batch, take each resource's lock (absent, expired, or
//!    ours) and write its intent — evacuation: the record in state `intent` with what is about to
//!    be taken; recovery: a check that the record is still the one planned from. A [`Held`] is
//!    the only proof of that, and the only way a plugin gets to change a resource.
//! 2. the engine reads the resource again and computes the change from the live state;
//! 3. act (a plugin);
//! 4. **release**: in one transaction per batch, the done mark (or the delete, or the roll-back of
//!    an intent that changed nothing) together with the lock's release. A done mark that lost a
//!    race is repaired: the record is read and written back with what was taken.
//!
//! While a run holds locks, a heartbeat renews their leases; a run that dies stops renewing, and
//! once its lease has run out the next run takes the lock over and reconciles from the live state.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::commit::GroupError;
use super::held::{Ahead, Declared, Evacuating, Held, HeldLine, Outcome, Recovering, Release, Released};
use super::lease::Lease;
use super::record::{epoch_seconds, now, Lock};
use super::writes::{
    begin_write, check_write, drop_dead_lock_write, finish_write, lock_write, recreate_write, remove_write,
    restore_write, union, unlock_write, widen_write, Begin, Write,
};
use super::{Audit, Journal, Record};
use crate::process::interrupt::Interrupt;
use crate::{Error, Result};

/// Seconds a dead holder's calls are waited for at most, in place of what its lock says
/// ([`Lock::calls_may_land_for`]): the tests' way to take over at once when the harness has already
/// seen every call of the killed process answered.
pub const TAKEOVER_WAIT_ENV: &str = "AZEVAC_TAKEOVER_WAIT";

/// Wait until no call of the dead holders of `locks` can still land (the longest of their bounds,
/// at most [`TAKEOVER_WAIT_ENV`]), saying so; `false` if `interrupt` stopped the run first. A call
/// such a process sent just before it was killed is carried out by AWS all the same, and shows in
/// reads only after that: a run that took over at once could read the resource before it, plan from
/// that read, and be overtaken (a recovery that found nothing to put back, deleting its record, and
/// then the killed evacuation's change landing: the zone lost with nothing left to bring it back).
///
/// The bound runs from when this run first found each holder gone (kept on `lease`, this run's
/// own): its other batches and stages wait out the same moment, not a new one each, and it is said
/// once.
async fn wait_for_dead_calls(locks: &[&Lock], lease: &Lease, interrupt: &Interrupt) -> bool {
    let cap = std::env::var(TAKEOVER_WAIT_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(Duration::MAX, Duration::from_secs);
    let now = Instant::now();
    let mut first_seen: Vec<String> = Vec::new();
    let deadline = {
        let mut dead = lease.dead.lock().unwrap_or_else(|e| e.into_inner());
        locks
            .iter()
            .map(|l| {
                *dead.entry(l.run_id.clone()).or_insert_with(|| {
                    first_seen.push(crate::model::text::clean(&l.run_id));
                    now + l.calls_may_land_for().min(cap)
                })
            })
            .max()
            .unwrap_or(now)
    };
    let wait = deadline.saturating_duration_since(now);
    if wait.is_zero() {
        return true;
    }
    first_seen.sort();
    first_seen.dedup();
    if !first_seen.is_empty() {
        crate::say!(
            "azevac: run {} died on this host, and a call it sent may still land: waiting {}s before taking \
             over its locks (Ctrl-C to stop; its resources are then left alone)",
            first_seen.join(", "),
            wait.as_secs()
        );
    }
    while Instant::now() < deadline {
        if interrupt.requested() {
            return false;
        }
        tokio::time::sleep((deadline - Instant::now()).min(Duration::from_millis(250))).await;
    }
    !interrupt.requested()
}

impl Journal {
    /// Take each line's lock and journal its intent, one transaction per batch. Lines of the same
    /// resource share one lock. Each line gets its [`Held`], or why not: the lock is held by a live
    /// run ([`Error::Locked`]), or the record changed since it was planned from. A lock whose holder
    /// is a process of this host that has died (a crash, a SIGKILL) is taken over without waiting
    /// for its lease, but only once the calls that process may have sent can no longer land
    /// ([`Lock::calls_may_land_for`]): until then this waits, saying so, unless `interrupt` stops
    /// the run (those lines are then refused as locked, nothing changed).
    pub async fn acquire(
        &self,
        lines: &[Ahead<'_>],
        lease: &Lease,
        audit: &Audit,
        interrupt: &Interrupt,
    ) -> Vec<Result<Held>> {
        let mut outcomes = self.acquire_once(lines, lease, audit, &BTreeMap::new()).await;
        let gone: Vec<&Lock> = outcomes
            .iter()
            .filter_map(|o| match o {
                Err(Refusal::Locked(lock)) if lock.holder_is_gone() => Some(&**lock),
                _ => None,
            })
            .collect();
        let dead: BTreeMap<String, String> = if gone.is_empty() || wait_for_dead_calls(&gone, lease, interrupt).await {
            gone.iter().map(|l| (l.resource.clone(), l.run_id.clone())).collect()
        } else {
            BTreeMap::new()
        };
        if !dead.is_empty() {
            let again: Vec<usize> = (0..lines.len())
                .filter(|&i| dead.contains_key(lines[i].key()))
                .collect();
            for run in dead.values().collect::<std::collections::BTreeSet<_>>() {
                crate::say!(
                    "azevac: run {} died on this host; taking over its locks",
                    crate::model::text::clean(&run.to_string())
                );
            }
            let retried: Vec<Ahead<'_>> = again.iter().map(|&i| lines[i]).collect();
            for (i, outcome) in again
                .into_iter()
                .zip(self.acquire_once(&retried, lease, audit, &dead).await)
            {
                outcomes[i] = outcome;
            }
        }
        outcomes
            .into_iter()
            .map(|o| {
                o.map_err(|refusal| match refusal {
                    Refusal::Locked(lock) => Error::Locked {
                        resource: lock.resource.clone(),
                        run_id: lock.run_id.clone(),
                        caller: lock.caller.clone(),
                        until: lock.until(),
                    },
                    Refusal::Other(e) => e,
                })
            })
            .collect()
    }

    /// One pass of [`Journal::acquire`]; `dead` names, per key, a dead holder to take over from.
    async fn acquire_once(
        &self,
        lines: &[Ahead<'_>],
        lease: &Lease,
        audit: &Audit,
        dead: &BTreeMap<String, String>,
    ) -> Vec<Result<Held, Refusal>> {
        let now_text = now();
        let mut keys: Vec<String> = Vec::new();
        let mut line_key: Vec<usize> = Vec::new();
        for line in lines {
            let key = line.key().to_owned();
            let k = keys.iter().position(|k| *k == key).unwrap_or_else(|| {
                keys.push(key);
                keys.len() - 1
            });
            line_key.push(k);
        }
        let expiry = lease.expiry_epoch();
        let lock = |resource: &str| Lock {
            resource: resource.to_owned(),
            run_id: lease.run_id.clone(),
            caller: lease.caller.clone(),
            lease_expires_at: expiry,
            quiet_at: lease.quiet_epoch(expiry),
            host: super::record::host_name(),
            pid: std::process::id(),
            started: super::record::process_started(std::process::id()),
        };
        let mut groups: Vec<Vec<Write>> = keys
            .iter()
            .map(|k| vec![lock_write(&lock(k), epoch_seconds(), dead.get(k).map(String::as_str))])
            .collect();
        let mut held: Vec<Held> = Vec::new();
        for (line, &k) in lines.iter().zip(&line_key) {
            let (write, record, prior, recovering) = match *line {
                Ahead::Evacuate {
                    az_id,
                    resource,
                    removed,
                    actions,
                    existing,
                } => {
                    let entry = Begin {
                        az_id,
                        resource,
                        removed,
                        actions,
                        existing,
                    };
                    let (write, record) = begin_write(&entry, audit, &now_text);
                    (write, record, existing.cloned(), false)
                }
                Ahead::Recover { record } => (check_write(record), record.clone(), Some(record.clone()), true),
            };
            groups[k].push(write);
            let line = HeldLine {
                key: keys[k].clone(),
                record,
                prior,
            };
            held.push(match recovering {
                true => Held::Recovery(Recovering(line)),
                false => Held::Evacuation(Evacuating(line)),
            });
        }
        let started = Instant::now();
        let outcomes = self.commit(groups).await;
        let mut verdicts: Vec<Result<(), Refusal>> = Vec::new();
        for (key, outcome) in keys.iter().zip(outcomes) {
            verdicts.push(match outcome {
                Ok(()) => {
                    lease.hold(key, started + lease.duration);
                    Ok(())
                }
                Err(GroupError {
                    conditional: Some(0), ..
                }) => Err(self.why_locked(key).await),
                Err(GroupError { error, .. }) => Err(Refusal::Other(error)),
            });
        }
        held.into_iter()
            .zip(&line_key)
            .map(|(h, &k)| match &verdicts[k] {
                Ok(()) => Ok(h),
                Err(e) => Err(e.copy()),
            })
            .collect()
    }

    /// Who holds the lock of `key`.
    async fn why_locked(&self, key: &str) -> Refusal {
        match self.lock_of(key).await {
            Ok(Some(lock)) => Refusal::Locked(Box::new(lock)),
            // Released between our write and this read: a plain lost race.
            Ok(None) => Refusal::Other(Error::JournalConflict {
                az_id: super::LOCK_PARTITION.to_owned(),
                resource: key.to_owned(),
                source: "the lock was released while this run asked for it".into(),
            }),
            Err(e) => Refusal::Other(e),
        }
    }

    /// Remove the locks of runs that died (lease and calls run out, or holder gone from this host) whose
    /// resource has no record left (`keep`: the keys that still have one). Such a lock protects
    /// nothing; it is left by a run killed between the writes of a release that had to be sent one
    /// by one. Returns how many were removed.
    pub async fn sweep_locks(&self, keep: &std::collections::BTreeSet<String>) -> Result<usize> {
        let dead: Vec<Lock> = self
            .locks()
            .await?
            .into_iter()
            .filter(|l| !keep.contains(&l.resource) && (l.is_free() || l.holder_is_gone()))
            .collect();
        if dead.is_empty() {
            return Ok(0);
        }
        let groups = dead.iter().map(|l| vec![drop_dead_lock_write(l)]).collect();
        Ok(self.commit(groups).await.iter().filter(|r| r.is_ok()).count())
    }

    /// Evacuation found more to take than it journalled (the resource changed between the plan and
    /// the lock): widen the record first, so the write-ahead still covers the change.
    pub async fn widen(&self, held: &mut Evacuating, removed: &[String], actions: &[String]) -> Result<()> {
        held.0.record = self.widen_record(&held.0.record, removed, actions).await?;
        Ok(())
    }

    /// Widen `record` (as this run holds it, under its lock); returns the record as stored now.
    pub(super) async fn widen_record(&self, record: &Record, removed: &[String], actions: &[String]) -> Result<Record> {
        let (write, widened) = widen_write(record, removed, actions);
        match self.commit_one(&write).await {
            Ok(()) => {}
            // An answer lost and the write sent again fails its own condition: our write landed
            // if the record is now exactly the widened one (the lock keeps everyone else out).
            Err(e) if e.is_conflict() => match self.record_of(&widened.az_id, &widened.resource).await? {
                Some(Ok(stored))
                    if stored.version == widened.version && stored.removed_subnets == widened.removed_subnets => {}
                _ => return Err(e),
            },
            Err(e) => return Err(e),
        }
        Ok(widened)
    }

    /// Journal how each held line ended and release its lock, one transaction per batch; returns,
    /// per line, the record left or why the journal could not be brought up to date.
    pub async fn release(&self, lines: Vec<Release>, lease: &Lease) -> Vec<Result<Released>> {
        let lines: Vec<(HeldLine, Outcome)> = lines.into_iter().map(|r| (r.line, r.outcome)).collect();
        // An abandoned line's lock is left to run out (a call of it may still land), and every line
        // of that resource with it: no record write, no unlock, no more renewals.
        let abandoned: std::collections::BTreeSet<String> = lines
            .iter()
            .filter(|(_, outcome)| *outcome == Outcome::Abandoned)
            .map(|(held, _)| held.key.clone())
            .collect();
        if abandoned.is_empty() {
            return self.release_all(lines, lease).await;
        }
        for key in &abandoned {
            lease.abandon(key);
        }
        let (left, released): (Vec<_>, Vec<_>) = lines
            .into_iter()
            .enumerate()
            .partition(|(_, (held, _))| abandoned.contains(&held.key));
        let (order, rest): (Vec<usize>, Vec<(HeldLine, Outcome)>) = released.into_iter().unzip();
        let mut results: Vec<Option<Result<Released>>> = (0..order.len() + left.len()).map(|_| None).collect();
        for (i, result) in order.into_iter().zip(self.release_all(rest, lease).await) {
            results[i] = Some(result);
        }
        for (i, (held, _)) in left {
            results[i] = Some(Ok(Released {
                record: Some(held.record),
                repaired: false,
            }));
        }
        results.into_iter().flatten().collect()
    }

    /// [`Journal::release`] of lines none of which was abandoned.
    async fn release_all(&self, lines: Vec<(HeldLine, Outcome)>, lease: &Lease) -> Vec<Result<Released>> {
        let now_text = now();
        let mut keys: Vec<String> = Vec::new();
        let mut groups: Vec<Vec<Write>> = Vec::new();
        let mut planned: Vec<(usize, Option<Write>, Option<Record>)> = Vec::new();
        for (held, outcome) in &lines {
            let k = match keys.iter().position(|k| *k == held.key) {
                Some(k) => k,
                None => {
                    keys.push(held.key.clone());
                    groups.push(Vec::new());
                    keys.len() - 1
                }
            };
            let (write, left) = release_write(held, outcome, &now_text);
            if let Some(write) = &write {
                groups[k].push(write.clone());
            }
            planned.push((k, write, left));
        }
        let mut held_until: Vec<Option<Instant>> = Vec::new();
        for (group, key) in groups.iter_mut().zip(&keys) {
            group.push(unlock_write(key, &lease.run_id));
            // Out of the lease before the release is sent, so that a renewal crossing it neither
            // puts the key back nor reports the released lock as lost to another run.
            held_until.push(lease.take_key(key));
        }
        let outcomes = self.commit(groups).await;
        let group_ok: Vec<bool> = outcomes.iter().map(Result::is_ok).collect();
        // A failed group changed nothing, its lock included: renewed again while its writes go one
        // by one below (a repair can take seconds), so that it stays ours while we write the record.
        for ((key, ok), until) in keys.iter().zip(&group_ok).zip(&held_until) {
            if let (false, Some(until)) = (ok, until) {
                lease.hold(key, *until);
            }
        }
        // A group that failed: its writes one by one, so that a lost lock does not cost the record.
        let mut results: Vec<Result<Released>> = Vec::new();
        for ((_, outcome), (k, write, left)) in lines.into_iter().zip(planned) {
            if group_ok[k] {
                results.push(Ok(Released {
                    record: left,
                    repaired: false,
                }));
                continue;
            }
            let result = match write {
                None => Ok(Released {
                    record: left,
                    repaired: false,
                }),
                Some(write) => match self.commit_one(&write).await {
                    Ok(()) => Ok(Released {
                        record: left,
                        repaired: false,
                    }),
                    Err(e) if e.is_conflict() => self.after_conflict(&outcome, left, e).await,
                    Err(e) => Err(e),
                },
            };
            results.push(result);
        }
        for (k, key) in keys.iter().enumerate() {
            if !group_ok[k] {
                lease.drop_key(key);
                match self.commit_one(&unlock_write(key, &lease.run_id)).await {
                    Ok(()) => {}
                    Err(e) if e.is_conflict() => self.report_lost_release(key, &lease.run_id).await,
                    Err(e) => tracing::warn!(
                        resource = %key,
                        error = %crate::error::describe(&e),
                        "lock not released; it is free again once its lease runs out"
                    ),
                }
            }
        }
        results
    }

    /// The lock of a failed release group was not ours to release. Gone: an earlier attempt of the
    /// release landed though its answer was lost (the SDK retried it), which is no news. Held by
    /// another run: that run took it over when our lease ran out (the record writes were conditional
    /// on its version all the same), which the operator should hear of.
    async fn report_lost_release(&self, key: &str, run_id: &str) {
        match self.lock_of(key).await {
            Ok(Some(lock)) if lock.run_id != run_id => tracing::warn!(
                resource = %key,
                run = %crate::model::text::clean(&lock.run_id),
                "the lock was taken over by another run before this run released it"
            ),
            Ok(_) => tracing::debug!(resource = %key, "lock already released by an earlier attempt"),
            Err(e) => tracing::debug!(resource = %key, error = %crate::error::describe(&e), "lock not read"),
        }
    }

    /// A release write lost a race. A done mark is repaired (what was taken must stay journalled);
    /// a delete is refused (someone journalled something since); a roll-back is left (the record
    /// then claims a little more than was taken, which recover handles as a no-op).
    async fn after_conflict(&self, outcome: &Outcome, left: Option<Record>, err: Error) -> Result<Released> {
        let (az_id, resource) = match &err {
            Error::JournalConflict { az_id, resource, .. } => (az_id.clone(), resource.clone()),
            _ => return Err(err),
        };
        match outcome {
            Outcome::Evacuated { .. } => match left {
                Some(meant) => self.repair(meant).await,
                None => Err(err),
            },
            // A delete whose answer was lost and that the SDK sent again fails its own condition:
            // the record being gone is the delete having happened.
            Outcome::Recovered => match self.record_of(&az_id, &resource).await? {
                None => Ok(Released {
                    record: None,
                    repaired: false,
                }),
                Some(_) => Err(err),
            },
            // The record then claims a little more than was taken: recover reads the live state.
            Outcome::RolledBack => Ok(Released {
                record: self.record_of(&az_id, &resource).await?.and_then(Result::ok),
                repaired: false,
            }),
            Outcome::Narrowed(_) | Outcome::Kept | Outcome::Abandoned => Err(err),
        }
    }

    /// Make sure the stored record holds at least what `meant` does: write it back if it is gone,
    /// widen it if it lacks some of it.
    async fn repair(&self, meant: Record) -> Result<Released> {
        const TRIES: u32 = 6;
        let mut last = None;
        for attempt in 0..TRIES {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_millis(100 << attempt)).await;
            }
            let stored = match self.record_of(&meant.az_id, &meant.resource).await {
                Err(e) => {
                    last = Some(e);
                    continue;
                }
                Ok(None) => {
                    match self.commit_one(&recreate_write(&meant)).await {
                        Ok(()) => {
                            return Ok(Released {
                                record: Some(meant),
                                repaired: true,
                            })
                        }
                        Err(e) => last = Some(e),
                    };
                    continue;
                }
                Ok(Some(stored)) => stored?,
            };
            let covers = |have: &[String], want: &[String]| want.iter().all(|w| have.contains(w));
            if covers(&stored.removed_subnets, &meant.removed_subnets) && covers(&stored.actions, &meant.actions) {
                return Ok(Released {
                    record: Some(stored),
                    repaired: false,
                });
            }
            let (write, widened) = widen_write(&stored, &meant.removed_subnets, &meant.actions);
            match self.commit_one(&write).await {
                Ok(()) => {
                    return Ok(Released {
                        record: Some(widened),
                        repaired: true,
                    })
                }
                Err(e) => last = Some(e),
            }
        }
        // The one thing azevac must never do silently: say exactly what is not journalled.
        let why = last.map(|e| crate::error::describe(&e)).unwrap_or_default();
        let line = format!(
            "azevac: NOT JOURNALLED: {} in {} lost {} and actions [{}]; write this down and put it back by hand ({why})",
            meant.resource,
            meant.az_id,
            meant.removed_subnets.join(", "),
            meant.actions.join(", ")
        );
        crate::say!("{}", crate::model::text::clean(&line));
        Err(Error::JournalConflict {
            az_id: meant.az_id.clone(),
            resource: meant.resource.clone(),
            source: format!("the record could not be written back ({why})").into(),
        })
    }
}

/// The record write that ends a held line, and the record it leaves (`None`: deleted or none).
pub(super) fn release_write(held: &HeldLine, outcome: &Outcome, now: &str) -> (Option<Write>, Option<Record>) {
    let record = &held.record;
    match outcome {
        Outcome::Evacuated {
            removed,
            actions,
            replace_actions,
        } => {
            // Earlier runs' subnets and actions stay: a re-run in another mode never forgets a cordon
            // (those of another object of the same name, replaced since, are not this one's).
            let prior = held.prior.as_ref().filter(|p| p.is_about(record.identity.as_ref()));
            let removed = union(prior.map_or(&[][..], |p| &p.removed_subnets), removed);
            let actions = match replace_actions {
                true => actions.clone(),
                false => union(prior.map_or(&[][..], |p| &p.actions), actions),
            };
            if removed.is_empty() && actions.is_empty() {
                // Done, but nothing of it was azevac's (the change was there already): a record
                // with nothing in it would be refused as damaged, so the intent is rolled back.
                return release_write(held, &Outcome::RolledBack, now);
            }
            let (write, done) = finish_write(
                &Record {
                    removed_subnets: removed,
                    actions,
                    ..record.clone()
                },
                now,
            );
            (Some(write), Some(done))
        }
        Outcome::Recovered => (Some(remove_write(record)), None),
        Outcome::Narrowed(done) => narrow(held, done),
        Outcome::Kept | Outcome::Abandoned => (None, Some(record.clone())),
        Outcome::RolledBack => match &held.prior {
            None => (Some(remove_write(record)), None),
            Some(prior) => {
                let (write, restored) = restore_write(prior, record.version);
                (Some(write), Some(restored))
            }
        },
    }
}

/// A failed evacuation's record, brought back to what earlier runs took plus the most this run's
/// act can have done: the plan's guess and any step the act never got to are not kept, so that
/// recover never undoes what azevac did not do (an operator's own cordon made in between).
fn narrow(held: &HeldLine, done: &Declared) -> (Option<Write>, Option<Record>) {
    let record = &held.record;
    // An earlier record about an object since replaced under the same name is not this one's.
    let prior = held.prior.as_ref().filter(|p| p.is_about(record.identity.as_ref()));
    let removed = union(prior.map_or(&[][..], |p| &p.removed_subnets), &done.removed);
    let actions = union(prior.map_or(&[][..], |p| &p.actions), &done.actions);
    // Kept in the record's own order (the intent's), so that a record left as it was is not rewritten.
    let keep = |stored: &[String], wanted: &[String]| -> Vec<String> {
        let mut kept: Vec<String> = stored.iter().filter(|s| wanted.contains(s)).cloned().collect();
        kept.extend(wanted.iter().filter(|w| !stored.contains(w)).cloned());
        kept
    };
    let removed = keep(&record.removed_subnets, &removed);
    let actions = keep(&record.actions, &actions);
    if removed == record.removed_subnets && actions == record.actions {
        return (None, Some(record.clone()));
    }
    match prior {
        None if removed.is_empty() && actions.is_empty() => (Some(remove_write(record)), None),
        Some(prior) if removed == prior.removed_subnets && actions == prior.actions => {
            let (write, restored) = restore_write(prior, record.version);
            (Some(write), Some(restored))
        }
        _ => {
            let narrowed = Record {
                removed_subnets: removed,
                actions,
                ..record.clone()
            };
            let (write, stored) = restore_write(&narrowed, record.version);
            (Some(write), Some(stored))
        }
    }
}

/// Why a line was not acquired.
#[derive(Debug)]
enum Refusal {
    /// Another run holds the lock.
    Locked(Box<Lock>),
    /// Anything else (the record changed since the plan, the table, the network).
    Other(Error),
}

impl Refusal {
    /// Errors are not cloneable; the lines of one resource share its lock's verdict.
    fn copy(&self) -> Refusal {
        match self {
            Refusal::Locked(lock) => Refusal::Locked(lock.clone()),
            Refusal::Other(Error::JournalConflict { az_id, resource, .. }) => Refusal::Other(Error::JournalConflict {
                az_id: az_id.clone(),
                resource: resource.clone(),
                source: self.text().into(),
            }),
            Refusal::Other(other) => Refusal::Other(super::commit::other(
                "dynamodb:TransactWriteItems",
                &crate::error::describe(other),
            )),
        }
    }

    fn text(&self) -> String {
        match self {
            Refusal::Locked(lock) => format!("locked by run {}", lock.run_id),
            Refusal::Other(e) => crate::error::describe(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::State;

    fn record(removed: &[&str], actions: &[&str], version: u64) -> Record {
        Record {
            az_id: "use1-az2".into(),
            resource: "arn:web".into(),
            resource_type: "asg".into(),
            removed_subnets: removed.iter().map(|s| s.to_string()).collect(),
            state: State::Intent,
            version,
            resource_name: Some("web".into()),
            original_subnets: vec![],
            actions: actions.iter().map(|s| s.to_string()).collect(),
            run_id: None,
            evacuated_by: None,
            reason: None,
            azevac_version: None,
            created_at: None,
            updated_at: None,
            account_id: None,
            identity: None,
        }
    }

    fn held(intent: Record, prior: Option<Record>) -> HeldLine {
        HeldLine {
            key: intent.resource.clone(),
            record: intent,
            prior,
        }
    }

    fn strings(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_done_mark_holds_what_the_fresh_read_took_not_the_plans_guess() {
        // Planned {b, c}; by the time of the lock someone had removed b: only c was taken.
        let h = held(record(&["b", "c"], &[], 1), None);
        let outcome = Outcome::Evacuated {
            removed: strings(&["c"]),
            actions: vec![],
            replace_actions: false,
        };
        let (_, done) = release_write(&h, &outcome, "now");
        let done = done.expect("a done record");
        assert_eq!(done.removed_subnets, ["c"]);
        assert_eq!(done.state, State::Done);
        assert_eq!(done.version, 2);
    }

    #[test]
    fn earlier_runs_are_kept_and_a_zonal_shift_replaces_its_expired_predecessor() {
        let prior = record(&["b"], &["cordon"], 3);
        let h = held(record(&["b"], &["cordon", "taint:x"], 4), Some(prior.clone()));
        let joined = Outcome::Evacuated {
            removed: vec![],
            actions: strings(&["taint:x"]),
            replace_actions: false,
        };
        let done = release_write(&h, &joined, "now").1.expect("done");
        assert_eq!(done.actions, ["cordon", "taint:x"], "a re-run never forgets a cordon");
        assert_eq!(done.removed_subnets, ["b"]);

        let shift = held(
            record(&[], &["zonal-shift:OLD", "start zonal shift"], 4),
            Some(record(&[], &["zonal-shift:OLD"], 3)),
        );
        let replaced = Outcome::Evacuated {
            removed: vec![],
            actions: strings(&["zonal-shift:NEW"]),
            replace_actions: true,
        };
        let done = release_write(&shift, &replaced, "now").1.expect("done");
        assert_eq!(done.actions, ["zonal-shift:NEW"], "the record names the shift in force");
    }

    /// A done mark with nothing of azevac's in it (the change was there already) would be refused
    /// as damaged when read: the intent is rolled back instead.
    #[test]
    fn an_empty_done_mark_rolls_the_intent_back() {
        let h = held(record(&[], &["step"], 1), None);
        let nothing = Outcome::Evacuated {
            removed: vec![],
            actions: vec![],
            replace_actions: false,
        };
        let (write, left) = release_write(&h, &nothing, "now");
        assert!(write.is_some() && left.is_none(), "the intent is deleted");
    }

    /// A failed line of a replaced node does not write the old node's record back under the new
    /// node's intent: the earlier record is about another object.
    #[test]
    fn a_failed_line_ignores_the_record_of_a_replaced_object() {
        let identity = |uid: &str| {
            Some(crate::model::Identity {
                uid: uid.into(),
                instance_id: None,
                created: None,
            })
        };
        let mut prior = record(&[], &["taint:x"], 3);
        prior.identity = identity("old");
        let mut intent = record(&[], &["taint:x", "cordon"], 4);
        intent.identity = identity("new");
        let h = held(intent, Some(prior));
        let taint_only = Declared {
            removed: vec![],
            actions: strings(&["taint:x"]),
        };
        let kept = release_write(&h, &Outcome::Narrowed(taint_only), "now")
            .1
            .expect("kept");
        assert_eq!(kept.actions, ["taint:x"]);
        assert_eq!(
            kept.identity,
            identity("new"),
            "the new node's record, not the old one's"
        );
        assert_eq!(kept.version, 5);
    }

    #[test]
    fn an_untouched_intent_rolls_back_and_a_failed_one_stays() {
        let new = held(record(&["b"], &[], 1), None);
        assert!(
            release_write(&new, &Outcome::RolledBack, "now").1.is_none(),
            "a new intent goes"
        );
        let prior = record(&["a"], &[], 5);
        let over = held(record(&["a", "b"], &[], 6), Some(prior.clone()));
        let restored = release_write(&over, &Outcome::RolledBack, "now").1.expect("restored");
        assert_eq!(restored.removed_subnets, prior.removed_subnets);
        assert_eq!(restored.version, 7);
        let (write, kept) = release_write(&over, &Outcome::Kept, "now");
        assert!(write.is_none(), "a failed recovery leaves its record");
        assert_eq!(kept.expect("kept").removed_subnets, ["a", "b"]);
        let failed = Outcome::Narrowed;
        let (write, kept) = release_write(&over, &failed(Declared::default()), "now");
        assert!(write.is_some(), "nothing done: back to the earlier run's record");
        assert_eq!(kept.expect("restored").removed_subnets, prior.removed_subnets);
        assert!(
            release_write(&new, &failed(Declared::default()), "now").1.is_none(),
            "nothing done and no earlier record: the intent goes"
        );
        let cordon = held(record(&[], &["taint:x", "cordon"], 1), None);
        let taint_only = Declared {
            removed: vec![],
            actions: strings(&["taint:x"]),
        };
        let (write, kept) = release_write(&cordon, &failed(taint_only), "now");
        assert!(write.is_some());
        let kept = kept.expect("narrowed");
        assert_eq!(kept.actions, ["taint:x"], "the plan's guess of a cordon is not kept");
        assert_eq!(kept.state, State::Intent, "what may have happened stays an intent");
        let all = Declared {
            removed: strings(&["a", "b"]),
            actions: vec![],
        };
        let (write, kept) = release_write(&over, &failed(all), "now");
        assert!(
            write.is_none(),
            "a failed change that may have done it all leaves the intent"
        );
        assert_eq!(kept.expect("kept").removed_subnets, ["a", "b"]);
    }
}
