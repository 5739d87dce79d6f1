//! A line's failure as a value: the stage it failed at, the error, and what became of its journal
//! record. Tests, notifications and the JSON output read these fields; the words an operator reads
//! are made from them once, by the phrase table in `report/phrases.rs` (this type's `Display`), so
//! that the floor holds no sentence about stages or records.

use serde::{Deserialize, Serialize};

/// Where in a line's life it failed, in the order the protocol goes through them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Stage {
    /// Planning, or planning again from the fresh read under the lock: the kind could not decide
    /// what to do (a record it cannot read, a list that failed, a change that would go over a
    /// limit, a resource gone). Nothing was sent; the words are the kind's own.
    Plan,
    /// Not carried out because what it waits for (a zonal shift, capacity back in the zone) did not
    /// happen. Nothing was sent.
    HeldBack,
    /// Taking the lock and writing the intent ahead (or widening it). Nothing was sent.
    JournalAhead,
    /// Reading the resources again under the lock, before the change (the kind's read failed as a
    /// whole). Nothing was sent.
    Read,
    /// Carrying the change out (the kind's calls), or deciding not to at the last moment.
    Act,
    /// Reading the resource back after the change: it does not show it (yet).
    ReadBack,
    /// Marking the record done or deleting it (or rolling back an intent) after the change.
    JournalDone,
    /// `--wait`: the changed resource did not settle in time.
    Settle,
    /// A bug in azevac: an invariant of the engine or of a kind did not hold.
    Internal,
}

/// What became of the line's journal record when it failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RecordFate {
    /// Nothing changed, and the record is as it was before the line (an intent written for it was
    /// rolled back, or none was written).
    Untouched,
    /// The record is kept as it is, for the next recover.
    Kept,
    /// The record stays in state intent with what the act may have taken (recover reconciles it).
    Intent,
    /// The change may still land: the record is kept and its lock left to run out.
    InFlight,
    /// The change was made and journalled; what failed came after.
    Done,
    /// Nothing changed, but the intent could not be rolled back: the record claims more than was
    /// taken until a recover reads the live state.
    Stale,
}

/// One line's failure. Its words are the phrase table's (`report/phrases.rs`), through `Display`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Failure {
    /// The stage the line failed at.
    pub stage: Stage,
    /// What became of its journal record.
    pub record: RecordFate,
    /// The error, on one line (already `describe`d), or the kind's own account of it.
    pub error: String,
    /// A line carried by its resource's one change (a recovery of several zones folded into one):
    /// the zone of the record whose line carried that change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub carried_by: Option<String>,
    /// A failed evacuation act: the subnets it may have taken, which its record keeps.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub taken: Vec<String>,
    /// A read-back that did not confirm the change: how long it read back for, in whole seconds
    /// (set only from one second on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_back_secs: Option<u64>,
}

impl Failure {
    /// A failure at `stage` that left the record so, for this error.
    pub fn new(stage: Stage, record: RecordFate, error: impl Into<String>) -> Failure {
        Failure {
            stage,
            record,
            error: error.into(),
            carried_by: None,
            taken: Vec::new(),
            read_back_secs: None,
        }
    }

    /// A planning failure: nothing was sent, and the record (if any) is as it was.
    pub fn plan(error: impl Into<String>) -> Failure {
        Failure::new(Stage::Plan, RecordFate::Untouched, error)
    }

    /// A planning failure of a recovery line: nothing was sent, and its record is kept.
    pub fn plan_kept(error: impl Into<String>) -> Failure {
        Failure::new(Stage::Plan, RecordFate::Kept, error)
    }

    /// A read-back that does not show the change: the record keeps what was taken.
    pub fn read_back(error: impl Into<String>) -> Failure {
        Failure::new(Stage::ReadBack, RecordFate::Kept, error)
    }

    /// A bug in azevac: an invariant did not hold.
    pub fn internal(record: RecordFate, error: impl Into<String>) -> Failure {
        Failure::new(Stage::Internal, record, error)
    }

    /// The same failure, of a line carried by the change of its record of `zone`.
    pub fn carried_by(mut self, zone: impl Into<String>) -> Failure {
        self.carried_by = Some(zone.into());
        self
    }

    /// The same failure, with the subnets the act may have taken.
    pub fn taken(mut self, taken: Vec<String>) -> Failure {
        self.taken = taken;
        self
    }
}
