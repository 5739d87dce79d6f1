//! When azevac's shifts end: for each zonal-shift record, what ARC says of the shift it names — in
//! force until when, or already over while the journal still says evacuated. `status` and `doctor`
//! report it, so that a shift never lapses silently (ARC lets it expire; traffic then flows back
//! into the zone while the journal still says evacuated).

use std::collections::BTreeMap;

use serde::Serialize;

use super::actions::started_id;
use super::client::{Known, Shifts};
use super::decide::rfc3339;
use super::TYPE;
use crate::model::Record;
use crate::plugins::shifted::arn_of;
use crate::Result;

/// What became of the shift a record names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Standing {
    /// In force: traffic stays away from the zone until it ends.
    Active,
    /// It ran out: traffic flows into the zone again.
    Expired,
    /// Someone cancelled it outside azevac: traffic flows into the zone again.
    Cancelled,
    /// ARC no longer lists it: it ended long ago.
    Gone,
    /// The record names no shift yet (a run stopped before ARC answered): `recover` finds it by
    /// the run ID in its comment.
    Unconfirmed,
    /// Its account's shifts could not be read (the role not assumed, or ARC refused): not known.
    NotChecked,
}

/// One record's shift and when it ends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ShiftExpiry {
    /// The managed resource's ARN.
    pub resource: String,
    /// Its name.
    pub name: String,
    /// The AZ ID traffic is kept away from.
    pub az_id: String,
    /// The account the record was journalled in (`--accounts`; absent: the caller's own).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    /// The zonal shift ID the record names.
    pub zonal_shift_id: Option<String>,
    /// What became of it.
    pub standing: Standing,
    /// When it ends or ended (RFC 3339).
    pub expires_at: Option<String>,
    /// Seconds until it ends (negative: it ended that long ago).
    pub seconds_left: Option<i64>,
    /// What the operator must read: it ends soon, or it is over while the record says evacuated.
    pub warning: Option<String>,
}

impl ShiftExpiry {
    /// Whether it ends within `within` seconds, or is already over although journalled.
    pub fn expiring(&self, within: i64) -> bool {
        match self.standing {
            Standing::Active => self.seconds_left.is_some_and(|left| left <= within),
            Standing::Expired | Standing::Cancelled | Standing::Gone => true,
            Standing::Unconfirmed | Standing::NotChecked => false,
        }
    }
}

/// The expiry of each shift record among `records`, read from ARC once with `sdk` (the account the
/// records were journalled in; none: ARC is not asked); per record, why not when its actions cannot
/// be read. `warn_within`: a shift ending within that many seconds carries a warning.
pub async fn of(sdk: &aws_config::SdkConfig, records: &[Record], warn_within: i64) -> Result<Vec<Result<ShiftExpiry>>> {
    let shifts: Vec<&Record> = records.iter().filter(|r| r.resource_type == TYPE).collect();
    if shifts.is_empty() {
        return Ok(Vec::new());
    }
    let known = Shifts::new(sdk).every().await?;
    let now = super::now();
    Ok(shifts
        .into_iter()
        .map(|r| standing(r, &known, now, warn_within))
        .collect())
}

/// What ARC's `known` shifts say of the one `record` names, at `now` (pure). A record whose
/// actions this version cannot read is an error, never a guess.
pub fn standing(record: &Record, known: &BTreeMap<String, Known>, now: i64, warn_within: i64) -> Result<ShiftExpiry> {
    let name = record
        .resource_name
        .clone()
        .unwrap_or_else(|| arn_of(&record.resource).to_owned());
    let id = started_id(record)?;
    let az = &record.az_id;
    let found = id.as_ref().and_then(|id| known.get(id));
    let standing = match (&id, found) {
        (None, _) => Standing::Unconfirmed,
        (Some(_), None) => Standing::Gone,
        (Some(_), Some(k)) => match k.status.as_str() {
            "ACTIVE" if k.expires_at > now => Standing::Active,
            "ACTIVE" | "EXPIRED" => Standing::Expired,
            _ => Standing::Cancelled,
        },
    };
    let expires_at = found.map(|k| k.expires_at);
    let seconds_left = expires_at.map(|at| at - now);
    let shift = format!("zonal shift {} of {name}", id.as_deref().unwrap_or_default());
    let over = format!(
        "traffic flows into {az} again although the journal says evacuated; `azevac shift start --az-id {az}` \
         shifts it away again, `azevac recover --type zonal-shift` clears the record once the zone is healthy"
    );
    let warning = match standing {
        Standing::Active => seconds_left.filter(|left| *left <= warn_within).map(|left| {
            format!(
                "{shift} ends in {}m ({}): `azevac shift extend --az-id {az}` keeps traffic away from {az}",
                left.max(0) / 60,
                expires_at.map(rfc3339).unwrap_or_default()
            )
        }),
        Standing::Expired => Some(format!(
            "{shift} expired at {}: {over}",
            expires_at.map(rfc3339).unwrap_or_default()
        )),
        Standing::Cancelled => Some(format!("{shift} was cancelled outside azevac: {over}")),
        Standing::Gone => Some(format!("{shift} is no longer listed by ARC, so it has ended: {over}")),
        Standing::Unconfirmed | Standing::NotChecked => None,
    };
    Ok(ShiftExpiry {
        resource: arn_of(&record.resource).to_owned(),
        name,
        az_id: az.clone(),
        account_id: record.account_id.clone(),
        zonal_shift_id: id,
        standing,
        expires_at: expires_at.map(rfc3339),
        seconds_left,
        warning,
    })
}

/// A shift record whose account's shifts could not be read (`why`): what it says, not known to ARC.
pub fn not_checked(record: &Record, why: &str) -> Result<ShiftExpiry> {
    let az = &record.az_id;
    Ok(ShiftExpiry {
        resource: arn_of(&record.resource).to_owned(),
        name: record
            .resource_name
            .clone()
            .unwrap_or_else(|| arn_of(&record.resource).to_owned()),
        az_id: az.clone(),
        account_id: record.account_id.clone(),
        zonal_shift_id: started_id(record)?,
        standing: Standing::NotChecked,
        expires_at: None,
        seconds_left: None,
        warning: Some(format!(
            "not checked in account {}: {why}; whether its shift away from {az} is still in force is not known",
            record.account_id.as_deref().unwrap_or("(own)")
        )),
    })
}
