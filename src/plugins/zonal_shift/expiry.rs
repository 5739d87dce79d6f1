//! When azevac's shifts end: for each zonal-shift record, what ARC says of the shift it names — in
//! force until when, or already over while the journal still says evacuated. The kind declares it
//! in its registration ([`EXPIRING`]), and `status`, `doctor`, `--notify` and the watcher report
//! and renew through that, so that a shift never lapses silently (ARC lets it expire; traffic then
//! flows back into the zone while the journal still says evacuated).

use std::collections::BTreeMap;

use futures::future::BoxFuture;

use super::actions::started_id;
use super::client::{Known, Shifts};
use super::decide::{rfc3339, RENEW_WITHIN};
use super::TYPE;
use crate::model::check::Check;
pub use crate::model::expiry::Standing;
use crate::model::{Expiry, Record, Request};
use crate::plugins::expiring::Expiring;
use crate::plugins::shifted::arn_of;
use crate::Result;

/// What the registry knows of zonal shifts' ends.
pub static EXPIRING: Expiring = Expiring {
    noun: "zonal shift",
    short: "shifts",
    source: "ARC",
    renew_within: RENEW_WITHIN,
    window: super::expires_in_seconds,
    read,
    not_checked,
    check,
    renewed_as: "shift extend",
    renewal,
};

/// [`of`], as the registry calls it.
fn read<'a>(
    sdk: &'a aws_config::SdkConfig,
    records: &'a [Record],
    warn_within: i64,
) -> BoxFuture<'a, Result<Vec<Result<Expiry>>>> {
    Box::pin(of(sdk, records, warn_within))
}

/// An evacuation narrowed to azevac's shifts in force, extended for the default `--expires-in`
/// from now; none started.
fn renewal() -> Request {
    Request {
        types: vec![TYPE.to_owned()],
        options: crate::plugins::to_options(&super::flags::Options {
            zonal_shift: true,
            expires_in: Some(super::DEFAULT_EXPIRES_IN.to_owned()),
            extend: true,
        }),
        ..Request::default()
    }
}

/// `azevac doctor`'s line for the zonal shifts azevac's journal holds (`shifts`, and the accounts
/// whose shifts ARC did not tell): none over while the journal says evacuated (a fail: traffic is
/// back in the zone), none ending within the hour (a warning).
fn check(shifts: &[Expiry], unreached: &[String]) -> Check {
    const NAME: &str = "zonal shifts";
    let said = |s: &Expiry, what: &str| {
        format!(
            "{} of {} away from {} {what}",
            s.id.as_deref().unwrap_or_default(),
            s.name,
            s.az_id
        )
    };
    let over: Vec<String> = shifts
        .iter()
        .filter_map(|s| match s.standing {
            Standing::Expired => Some(said(
                s,
                &format!("expired at {}", s.expires_at.as_deref().unwrap_or_default()),
            )),
            Standing::Cancelled => Some(said(s, "was cancelled outside azevac")),
            Standing::Gone => Some(said(s, "is no longer listed by ARC")),
            _ => None,
        })
        .collect();
    if !over.is_empty() {
        // A shift that is over says most, and the accounts not read are said with it.
        let unread = unreached.iter().map(|u| format!("; {u}")).collect::<String>();
        return Check::fail(
            NAME,
            format!(
                "{}: traffic flows into the zone again although the journal says evacuated{unread}",
                over.join("; ")
            ),
            "`azevac shift start --az-id AZ_ID` shifts it away again; `azevac recover --type zonal-shift` \
             clears the records once the zone is healthy",
        );
    }
    if !unreached.is_empty() {
        return Check::fail(
            NAME,
            unreached.join("; "),
            "grant arc-zonal-shift:ListZonalShifts (the operator policy and the member role have it), and \
             check each account's role with `azevac doctor --accounts`",
        );
    }
    let soon: Vec<String> = shifts
        .iter()
        .filter(|s| s.due(RENEW_WITHIN))
        .map(|s| said(s, &format!("ends at {}", s.expires_at.as_deref().unwrap_or_default())))
        .collect();
    if !soon.is_empty() {
        return Check::warn(
            NAME,
            format!("{}: within the hour", soon.join("; ")),
            "`azevac shift extend` keeps traffic away from the zone",
        );
    }
    let first = shifts.iter().filter_map(|s| s.expires_at.as_deref()).min();
    Check::ok(
        NAME,
        format!(
            "{} of azevac's journalled{}",
            shifts.len(),
            first.map(|t| format!(", the first ends at {t}")).unwrap_or_default()
        ),
    )
}

/// The expiry of each shift record among `records`, read from ARC once with `sdk` (the account the
/// records were journalled in; none: ARC is not asked); per record, why not when its actions cannot
/// be read. `warn_within`: a shift ending within that many seconds carries a warning.
pub async fn of(sdk: &aws_config::SdkConfig, records: &[Record], warn_within: i64) -> Result<Vec<Result<Expiry>>> {
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
pub fn standing(record: &Record, known: &BTreeMap<String, Known>, now: i64, warn_within: i64) -> Result<Expiry> {
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
    Ok(Expiry {
        kind: TYPE,
        resource: arn_of(&record.resource).to_owned(),
        name,
        az_id: az.clone(),
        account_id: record.account_id.clone(),
        id,
        standing,
        expires_at: expires_at.map(rfc3339),
        seconds_left,
        warning,
    })
}

/// A shift record whose account's shifts could not be read (`why`): what it says, not known to ARC.
pub fn not_checked(record: &Record, why: &str) -> Result<Expiry> {
    let az = &record.az_id;
    Ok(Expiry {
        kind: TYPE,
        resource: arn_of(&record.resource).to_owned(),
        name: record
            .resource_name
            .clone()
            .unwrap_or_else(|| arn_of(&record.resource).to_owned()),
        az_id: az.clone(),
        account_id: record.account_id.clone(),
        id: started_id(record)?,
        standing: Standing::NotChecked,
        expires_at: None,
        seconds_left: None,
        warning: Some(format!(
            "not checked in account {}: {why}; whether its shift away from {az} is still in force is not known",
            record.account_id.as_deref().unwrap_or("(own)")
        )),
    })
}
