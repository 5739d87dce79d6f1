//! A journal record as every layer reads it: what azevac took from one resource in one zone,
//! where that change stands, and who made it.

use serde::Serialize;

use super::action::{self, Action};
use super::Identity;
use crate::{Error, Result};

/// Where a journalled change stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Written before the change: the subnets may or may not have been removed yet.
    Intent,
    /// The change was made and acknowledged by the service.
    Done,
}

impl State {
    /// The word stored in the journal.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Intent => "intent",
            State::Done => "done",
        }
    }
}

/// One journal item: a resource that lost subnets in one AZ.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Record {
    /// The evacuated AZ ID (partition key).
    pub az_id: String,
    /// The resource ARN (sort key).
    pub resource: String,
    /// The plugin's `--type` value.
    pub resource_type: String,
    /// Every subnet azevac took away from the resource in this AZ, across all runs.
    pub removed_subnets: Vec<String>,
    /// Whether the change is known to have been made.
    pub state: State,
    /// Bumped on every write; every write is conditional on the version it read.
    pub version: u64,
    /// The resource's short name, for people reading the table.
    pub resource_name: Option<String>,
    /// The resource's subnets before azevac first touched it.
    pub original_subnets: Vec<String>,
    /// What else azevac did to the resource (Kubernetes nodes: `taint:KEY=VALUE:EFFECT`, `cordon`).
    pub actions: Vec<String>,
    /// The azevac run that last wrote the record.
    pub run_id: Option<String>,
    /// The STS caller ARN that last wrote it.
    pub evacuated_by: Option<String>,
    /// The operator's `--reason`.
    pub reason: Option<String>,
    /// The azevac version that last wrote it.
    pub azevac_version: Option<String>,
    /// When it was first written (RFC 3339).
    pub created_at: Option<String>,
    /// When it was last written (RFC 3339).
    pub updated_at: Option<String>,
    /// The account the resource is in, when azevac reached it by assuming a role there
    /// (`--accounts`); absent for the journal's own account reached with the caller's credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    /// The very object azevac changed, for kinds whose key can name a later object of the same name
    /// (Kubernetes nodes and NodePools); absent in records written before azevac kept it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<Identity>,
}

impl Record {
    /// Whether the record is about the object that has the identity `live` now: yes when either
    /// is unknown (a record written before identities were kept, a kind without one), as before.
    pub fn is_about(&self, live: Option<&Identity>) -> bool {
        match (&self.identity, live) {
            (Some(ours), Some(live)) => ours.uid == live.uid,
            _ => true,
        }
    }
}

/// Whether `text` is an AWS account ID: exactly twelve ASCII digits. Checked wherever one comes
/// in (flags, journal records), since it goes into role ARNs.
pub fn is_account_id(text: &str) -> bool {
    text.len() == 12 && text.bytes().all(|b| b.is_ascii_digit())
}

/// Who is writing, and why: stamped on every record a run writes.
#[derive(Debug, Clone, Default)]
pub struct Audit {
    /// This run's ID.
    pub run_id: String,
    /// The STS caller ARN.
    pub caller: String,
    /// The operator's `--reason`, if given.
    pub reason: Option<String>,
    /// The account the records are about, on runs across accounts (`None`: the caller's own).
    pub account_id: Option<String>,
}

impl Record {
    /// The record's actions in the operator's words, read as the kind's own type `A` (for `status`;
    /// a kind's [`Registration::describe`](crate::plugins::Registration::describe)).
    pub fn words_as<A: Action>(&self) -> Result<Vec<String>> {
        Ok(action::describe(&self.actions_as::<A>()?))
    }

    /// The record's actions as the kind's own type, in order, each once (a record widened by both
    /// formats may hold one action in both). An action that does not parse fails the line that
    /// reads it: nothing is changed on a guess.
    pub fn actions_as<A: Action>(&self) -> Result<Vec<A>> {
        let mut actions: Vec<A> = Vec::with_capacity(self.actions.len());
        for text in &self.actions {
            let action = action::decode::<A>(text).map_err(|why| Error::BadRecord {
                az_id: self.az_id.clone(),
                resource: self.resource.clone(),
                why: format!("{why}; upgrade azevac, or put it back by hand and delete the record"),
            })?;
            if !actions.contains(&action) {
                actions.push(action);
            }
        }
        Ok(actions)
    }
}
