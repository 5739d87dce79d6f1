//! When a change that ends by itself ends (a zonal shift ARC lets expire): the value `status`,
//! `doctor`, `--notify` and the watcher read, whichever kind made the change. The kind that makes
//! such changes computes it ([`crate::plugins::expiring`]); nothing here knows how.

use serde::Serialize;

/// What became of the change a record names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Standing {
    /// In force: traffic stays away from the zone until it ends.
    Active,
    /// It ran out: traffic flows into the zone again.
    Expired,
    /// Someone cancelled it outside azevac: traffic flows into the zone again.
    Cancelled,
    /// Its service no longer lists it: it ended long ago.
    Gone,
    /// The record names no change yet (a run stopped before the service answered): `recover`
    /// finds it by the run ID.
    Unconfirmed,
    /// Its account could not be read (the role not assumed, or the service refused): not known.
    NotChecked,
}

/// One record's change and when it ends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Expiry {
    /// The registry name of the kind that made it (which [`crate::plugins::expiring::Expiring`]
    /// words it); not printed.
    #[serde(skip)]
    pub kind: &'static str,
    /// The resource's ARN.
    pub resource: String,
    /// Its name.
    pub name: String,
    /// The AZ ID traffic is kept away from.
    pub az_id: String,
    /// The account the record was journalled in (`--accounts`; absent: the caller's own).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    /// The ID of the change the record names. Its JSON name is the one it had when zonal shifts
    /// were the only changes that end by themselves, kept so that `status -o json` reads the same.
    #[serde(rename = "zonal_shift_id")]
    pub id: Option<String>,
    /// What became of it.
    pub standing: Standing,
    /// When it ends or ended (RFC 3339).
    pub expires_at: Option<String>,
    /// Seconds until it ends (negative: it ended that long ago).
    pub seconds_left: Option<i64>,
    /// What the operator must read: it ends soon, or it is over while the record says evacuated.
    pub warning: Option<String>,
}

impl Expiry {
    /// Whether it ends within `within` seconds, or is already over although journalled.
    pub fn expiring(&self, within: i64) -> bool {
        match self.standing {
            Standing::Active => self.seconds_left.is_some_and(|left| left <= within),
            Standing::Expired | Standing::Cancelled | Standing::Gone => true,
            Standing::Unconfirmed | Standing::NotChecked => false,
        }
    }

    /// Whether it is in force and ends within `within` seconds: due for a renewal.
    pub fn due(&self, within: i64) -> bool {
        self.standing == Standing::Active && self.expiring(within)
    }
}
