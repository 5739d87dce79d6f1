//! Holds: the proof that a line's lock is taken and its intent journalled ([`Held`]), the only way
//! a plugin reaches a resource ([`Guard`]: the lease checked and the intent widened before each
//! changing call), and the ways a hold can end ([`Release`]).

use std::sync::Mutex;

use super::lease::Lease;
use super::writes::union;
use super::{Journal, Record};
use crate::model::Resource;
use crate::{Error, Result};

/// What a run is about to do to one resource, for [`Journal::acquire`].
#[derive(Debug, Clone, Copy)]
pub enum Ahead<'a> {
    /// Take `removed` subnets and do `actions` to `resource` in `az_id`, on top of `existing`.
    Evacuate {
        /// The AZ ID.
        az_id: &'a str,
        /// The resource as planned.
        resource: &'a Resource,
        /// The subnets about to be taken.
        removed: &'a [String],
        /// What else is about to be done to it.
        actions: &'a [String],
        /// Its record in this zone from an earlier run, if any.
        existing: Option<&'a Record>,
    },
    /// Put back what `record` holds.
    Recover {
        /// The record, as planned from.
        record: &'a Record,
    },
}

impl Ahead<'_> {
    pub(super) fn key(&self) -> &str {
        match self {
            Ahead::Evacuate { resource, .. } => &resource.id,
            Ahead::Recover { record } => &record.resource,
        }
    }
}

/// Proof that a resource's lock is held by this run and its intent is journalled: made only by
/// [`Journal::acquire`], and required to change anything. An evacuation's and a recovery's are
/// different types, and each ends only in the ways its kind can end ([`Release`]): a recovery's
/// outcome cannot be released on an evacuation's hold.
#[must_use = "a held line ends in a Release for Journal::release; dropped, its lock stays until its lease runs out"]
#[derive(Debug)]
pub enum Held {
    /// An evacuation's: its intent is written.
    Evacuation(Evacuating),
    /// A recovery's: its record is the one planned from.
    Recovery(Recovering),
}

/// An evacuation's hold: the intent written, the lock held.
#[must_use = "an evacuation's hold ends in a Release for Journal::release"]
#[derive(Debug)]
pub struct Evacuating(pub(super) HeldLine);

/// A recovery's hold: the record checked, the lock held.
#[must_use = "a recovery's hold ends in a Release for Journal::release"]
#[derive(Debug)]
pub struct Recovering(pub(super) HeldLine);

/// What a hold knows of its line.
#[derive(Debug)]
pub(super) struct HeldLine {
    pub(super) key: String,
    pub(super) record: Record,
    pub(super) prior: Option<Record>,
}

/// How a held line ends, made only by its hold, for [`Journal::release`].
#[must_use = "a release is sent by Journal::release"]
#[derive(Debug)]
pub struct Release {
    pub(super) line: HeldLine,
    pub(super) outcome: Outcome,
}

impl Held {
    /// The record as this run left it (evacuation: the intent; recovery: the record being undone).
    pub fn record(&self) -> &Record {
        &self.line().record
    }

    /// The locked key: the resource's journal key.
    pub fn key(&self) -> &str {
        &self.line().key
    }

    pub(super) fn line(&self) -> &HeldLine {
        match self {
            Held::Evacuation(Evacuating(line)) | Held::Recovery(Recovering(line)) => line,
        }
    }

    /// Nothing was done under it: an evacuation's intent is rolled back, a recovery's record kept.
    pub fn untouched(self) -> Release {
        match self {
            Held::Evacuation(e) => e.untouched(),
            Held::Recovery(r) => r.kept(),
        }
    }

    /// Given up while a call may still be in flight (the lease could not be renewed, or an
    /// interrupt's grace ran out): the record stays as written (it covers anything the call can
    /// do) and the lock is not released but left to run out, so that nobody else trusts a read of
    /// the resource before that call can have ended.
    pub fn abandoned(self) -> Release {
        let line = match self {
            Held::Evacuation(Evacuating(line)) | Held::Recovery(Recovering(line)) => line,
        };
        Release {
            line,
            outcome: Outcome::Abandoned,
        }
    }
}

impl Evacuating {
    /// The intent as written (and widened since).
    pub fn record(&self) -> &Record {
        &self.0.record
    }

    /// The resource was evacuated: the done mark holds what earlier runs took plus what this run
    /// took as computed from the fresh read (not the plan's guess, which the intent may hold).
    /// `replace_actions`: this run's actions replace the earlier ones instead of joining them (a
    /// zonal shift record names the one shift in force; a node keeps every cordon azevac made).
    pub fn evacuated(self, removed: Vec<String>, actions: Vec<String>, replace_actions: bool) -> Release {
        Release {
            line: self.0,
            outcome: Outcome::Evacuated {
                removed,
                actions,
                replace_actions,
            },
        }
    }

    /// Nothing was changed after all: the intent is rolled back.
    pub fn untouched(self) -> Release {
        Release {
            line: self.0,
            outcome: Outcome::RolledBack,
        }
    }

    /// The change failed or may have half happened: the record is brought back to `done`, the most
    /// it can have done (what the act declared, or the change computed from the fresh read), on
    /// top of what earlier runs took, so that recover never undoes what this run did not do.
    pub fn failed(self, done: Declared) -> Release {
        Release {
            line: self.0,
            outcome: Outcome::Narrowed(done),
        }
    }
}

impl Recovering {
    /// The resource was recovered: the record goes.
    pub fn recovered(self) -> Release {
        Release {
            line: self.0,
            outcome: Outcome::Recovered,
        }
    }

    /// Nothing was put back, or putting it back failed: the record stays as it is.
    pub fn kept(self) -> Release {
        Release {
            line: self.0,
            outcome: Outcome::Kept,
        }
    }
}

impl Release {
    /// Whether the record goes with this release: only a recovery that was carried out deletes it,
    /// so only such a release waits for its read-back (the finalizer's rule: the marker goes once
    /// the cleanup is confirmed).
    pub fn deletes_record(&self) -> bool {
        matches!(self.outcome, Outcome::Recovered)
    }

    /// The record as this release will leave it (`None`: deleted), before it is written: what a
    /// read-back compares the live state with (a zonal shift's record names the shift started).
    pub fn record_after(&self) -> Option<Record> {
        super::protocol::release_write(&self.line, &self.outcome, "").1
    }

    /// The read-back did not confirm the change: nothing that would forget it is written. A
    /// recovery's record stays as it was (its `Recovered` becomes `Kept`); an evacuation's done mark
    /// is written all the same, since the change may have landed and the record must cover it
    /// (recover reconciles it from the live state).
    pub fn unconfirmed(self) -> Release {
        let outcome = match self.outcome {
            Outcome::Recovered => Outcome::Kept,
            other => other,
        };
        Release { outcome, ..self }
    }
}

/// What one act said, through [`Guard::cover`], it was about to do: the most it can have done.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Declared {
    /// The subnets it was about to take.
    pub removed: Vec<String>,
    /// The actions it was about to do.
    pub actions: Vec<String>,
}

/// A held line while its plugin carries it out: the proof that the lock is held and the intent
/// journalled, and the one way a plugin writes ahead a step its intent does not cover yet (a
/// change computed again after a 409, the next step of a multi-step change). A plugin calls
/// [`Guard::cover`] right before each changing call; the engine journals, the plugin never does.
#[derive(Debug)]
pub struct Guard<'a> {
    journal: &'a Journal,
    lease: &'a Lease,
    held: Mutex<Held>,
    declared: Mutex<Option<Declared>>,
}

impl<'a> Guard<'a> {
    /// The guard of one held line, for one act.
    pub fn new(journal: &'a Journal, lease: &'a Lease, held: Held) -> Guard<'a> {
        Guard {
            journal,
            lease,
            held: Mutex::new(held),
            declared: Mutex::new(None),
        }
    }

    pub(super) fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        // A poisoned lock only means a panic elsewhere; the record in it is still what it was.
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The record as the journal holds it now (evacuation: the intent, widened by every cover so
    /// far; recovery: the record being undone).
    pub fn record(&self) -> Record {
        self.held().record().clone()
    }

    /// Right before a changing call: make sure the lease still holds and that the journal covers
    /// `removed` and `actions` (widening the intent first if it does not). Recovery only checks the
    /// lease: its record already says what is undone. Refused (nothing may be sent) when the lease
    /// is no longer safe to act under or the widening cannot be written.
    pub async fn cover(&self, removed: &[String], actions: &[String]) -> Result<()> {
        let (wanted_removed, wanted_actions) = (removed, actions);
        let (key, record, recovering) = {
            let held = self.held();
            (
                held.key().to_owned(),
                held.record().clone(),
                matches!(*held, Held::Recovery(_)),
            )
        };
        if !self.lease.is_live(&key) {
            return Err(Error::LeaseLost { resource: key });
        }
        if recovering {
            return Ok(());
        }
        let missing = |want: &[String], have: &[String]| -> Vec<String> {
            want.iter().filter(|w| !have.contains(w)).cloned().collect()
        };
        let (removed, actions) = (
            missing(removed, &record.removed_subnets),
            missing(actions, &record.actions),
        );
        if !(removed.is_empty() && actions.is_empty()) {
            let widened = self.journal.widen_record(&record, &removed, &actions).await?;
            if let Held::Evacuation(Evacuating(line)) = &mut *self.held() {
                line.record = widened;
            }
        }
        // Declared only once journalled: a step whose write-ahead failed is never sent.
        let mut declared = self.declared.lock().unwrap_or_else(|e| e.into_inner());
        let declared = declared.get_or_insert_with(Declared::default);
        declared.removed = union(&declared.removed, wanted_removed);
        declared.actions = union(&declared.actions, wanted_actions);
        Ok(())
    }

    /// The call [`Guard::cover`] was last made for was refused outright, so none of it was done (a
    /// Kubernetes 409: the object changed and the write was not applied): it no longer counts among
    /// what the act may have done. The record keeps it until the line is released.
    pub fn refused(&self, removed: &[String], actions: &[String]) {
        let mut declared = self.declared.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(declared) = declared.as_mut() {
            declared.removed.retain(|s| !removed.contains(s));
            declared.actions.retain(|a| !actions.contains(a));
        }
    }

    /// The held line back, with what the act declared (`None`: it made no [`Guard::cover`] call, and
    /// its change is the one the engine computed and journalled before the act).
    pub fn finish(self) -> (Held, Option<Declared>) {
        let held = self.held.into_inner().unwrap_or_else(|e| e.into_inner());
        let declared = self.declared.into_inner().unwrap_or_else(|e| e.into_inner());
        (held, declared)
    }
}

/// How a held line ended (see the methods of [`Evacuating`], [`Recovering`] and [`Held`] that
/// make each).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Outcome {
    /// Evacuated: the done mark.
    Evacuated {
        removed: Vec<String>,
        actions: Vec<String>,
        replace_actions: bool,
    },
    /// Recovered: the record goes.
    Recovered,
    /// An evacuation that changed nothing: the intent is rolled back.
    RolledBack,
    /// A recovery that put nothing back or failed: the record stays.
    Kept,
    /// An evacuation that failed: the record is brought back to what it can have done.
    Narrowed(Declared),
    /// Given up in flight: no write, no unlock.
    Abandoned,
}

/// A line released: the record it leaves (`None`: deleted), and whether a lost done mark had to
/// be repaired.
#[derive(Debug)]
pub struct Released {
    /// The record as stored now.
    pub record: Option<Record>,
    /// A concurrent run had removed or replaced the record; it was written back.
    pub repaired: bool,
}
