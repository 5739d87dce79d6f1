//! Which zone traffic is away from now, as ARC reports it: the level the watcher follows (an event
//! only wakes it), and the autoshift observer notification `init` turns on.

use std::collections::BTreeMap;

use aws_sdk_arczonalshift::types::{AutoshiftExecutionStatus, AutoshiftObserverNotificationStatus};

use super::event::Origin;
use crate::{Error, Result};

/// Traffic kept away from one zone now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Away {
    /// Who keeps it away (an autoshift outranks a FIS experiment, which outranks a practice run).
    pub origin: Origin,
    /// Since when, in seconds since the epoch (the earliest of the zone's shifts).
    pub since: i64,
}

/// The zones traffic is away from now, by AZ ID: AWS's active autoshifts and, with `practice`,
/// the active practice runs and FIS experiments (zonal shifts of those types).
pub async fn away_now(sdk: &aws_config::SdkConfig, practice: bool) -> Result<BTreeMap<String, Away>> {
    let client = crate::client!(aws_sdk_arczonalshift, sdk);
    let autoshifts: Vec<_> = client
        .list_autoshifts()
        .status(AutoshiftExecutionStatus::Active)
        .into_paginator()
        .items()
        .send()
        .try_collect()
        .await
        .map_err(|e| Error::from_sdk("arc-zonal-shift:ListAutoshifts", e))?;
    let mut away: Vec<(String, Away)> = autoshifts
        .iter()
        .map(|a| {
            let since = a.start_time().secs();
            (
                a.away_from().to_owned(),
                Away {
                    origin: Origin::Autoshift,
                    since,
                },
            )
        })
        .collect();
    if practice {
        for (_, shift) in crate::plugins::shifted::active(&client, None).await? {
            let origin = match shift.shift_type.as_str() {
                "PRACTICE_RUN" => Origin::PracticeRun,
                "FIS_EXPERIMENT" => Origin::FisExperiment,
                _ => continue,
            };
            // A shift lists its end, not its start: the end stands in for ordering only.
            away.push((
                shift.away_from,
                Away {
                    origin,
                    since: shift.expires_at.unwrap_or_default(),
                },
            ));
        }
    }
    Ok(merge(away))
}

/// One entry per zone: the strongest origin, the earliest start.
fn merge(away: Vec<(String, Away)>) -> BTreeMap<String, Away> {
    let mut zones: BTreeMap<String, Away> = BTreeMap::new();
    for (zone, next) in away {
        zones
            .entry(zone)
            .and_modify(|held| {
                if next.origin.rank() < held.origin.rank() {
                    held.origin = next.origin;
                }
                held.since = held.since.min(next.since);
            })
            .or_insert(next);
    }
    zones
}

/// Whether ARC announces every autoshift of the region to this account (the observer
/// notification), whatever is enrolled.
pub async fn observing(sdk: &aws_config::SdkConfig) -> Result<bool> {
    let out = crate::client!(aws_sdk_arczonalshift, sdk)
        .get_autoshift_observer_notification_status()
        .send()
        .await
        .map_err(|e| Error::from_sdk("arc-zonal-shift:GetAutoshiftObserverNotificationStatus", e))?;
    Ok(out.status() == &AutoshiftObserverNotificationStatus::Enabled)
}

/// Turn the observer notification on (idempotent).
pub async fn observe(sdk: &aws_config::SdkConfig) -> Result<()> {
    crate::client!(aws_sdk_arczonalshift, sdk)
        .update_autoshift_observer_notification_status()
        .status(AutoshiftObserverNotificationStatus::Enabled)
        .send()
        .await
        .map_err(|e| Error::from_sdk("arc-zonal-shift:UpdateAutoshiftObserverNotificationStatus", e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_entry_per_zone_with_the_strongest_origin_and_the_earliest_start() {
        let at = |origin, since| Away { origin, since };
        let zones = merge(vec![
            ("use1-az2".into(), at(Origin::PracticeRun, 50)),
            ("use1-az2".into(), at(Origin::Autoshift, 100)),
            ("use1-az1".into(), at(Origin::FisExperiment, 70)),
        ]);
        assert_eq!(zones["use1-az2"], at(Origin::Autoshift, 50));
        assert_eq!(zones["use1-az1"], at(Origin::FisExperiment, 70));
    }
}
