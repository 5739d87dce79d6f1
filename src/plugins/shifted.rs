//! Traffic shifted away from a zone with ARC zonal shift: what the kind that starts the shifts
//! (`zonal-shift`) and the checks that wait for them (the cross-zone guard of Auto Scaling groups)
//! both need to know, here once so that neither kind imports the other. A shift is known two
//! ways: ARC lists it as active, or a planned line of this plan starts it; such a line is keyed
//! [`key`] of the resource whose traffic it moves.

use std::collections::{BTreeMap, BTreeSet};

use aws_sdk_arczonalshift::types::ZonalShiftStatus;

use crate::model::{Plan, Status};
use crate::{Error, Result};

/// Journal keys (and plan line resources) of shifts start with this, so that a shift of an Auto
/// Scaling group and the group's own subnet record never share a key.
const KEY_PREFIX: &str = "zonal-shift/";

/// The journal key (and plan line resource) of a shift of `arn`'s traffic.
pub fn key(arn: &str) -> String {
    format!("{KEY_PREFIX}{arn}")
}

/// The resource ARN of a shift's key.
pub fn arn_of(key: &str) -> &str {
    key.strip_prefix(KEY_PREFIX).unwrap_or(key)
}

/// A shift or autoshift in progress on a resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Active {
    /// The zonal shift ID (autoshifts have none).
    pub id: Option<String>,
    /// The AZ ID traffic is moved away from.
    pub away_from: String,
    /// `ZONAL_SHIFT`, `PRACTICE_RUN`, `FIS_EXPERIMENT`, `ZONAL_AUTOSHIFT`.
    pub shift_type: String,
    /// The shift's comment (azevac's carry the run ID).
    pub comment: String,
    /// When it ends unless extended or cancelled, in seconds since the epoch (autoshifts: `None`,
    /// they end when AWS decides).
    pub expires_at: Option<i64>,
}

/// The active zonal shifts (all, or on one resource), with the ARN of the resource each moves.
pub async fn active(
    client: &aws_sdk_arczonalshift::Client,
    resource_arn: Option<&str>,
) -> Result<Vec<(String, Active)>> {
    let shifts: Vec<_> = client
        .list_zonal_shifts()
        .status(ZonalShiftStatus::Active)
        .set_resource_identifier(resource_arn.map(str::to_owned))
        .into_paginator()
        .items()
        .send()
        .try_collect()
        .await
        .map_err(|e| Error::from_sdk("arc-zonal-shift:ListZonalShifts", e))?;
    Ok(shifts
        .into_iter()
        .map(|z| {
            (
                z.resource_identifier().to_owned(),
                Active {
                    id: Some(z.zonal_shift_id().to_owned()),
                    away_from: z.away_from().to_owned(),
                    shift_type: z.shift_type().map(|t| t.as_str().to_owned()).unwrap_or_default(),
                    comment: z.comment().to_owned(),
                    expires_at: Some(z.expiry_time().secs()),
                },
            )
        })
        .collect())
}

/// The resources (ARNs) whose traffic an active zonal shift keeps away from `az_id`.
pub async fn away_from(sdk: &aws_config::SdkConfig, az_id: &str) -> Result<BTreeSet<String>> {
    let client = crate::client!(aws_sdk_arczonalshift, sdk);
    Ok(active(&client, None)
        .await?
        .into_iter()
        .filter(|(_, a)| a.away_from == az_id)
        .map(|(arn, _)| arn)
        .collect())
}

/// The resources whose traffic a planned line of `plan` shifts away: ARN → that line's resource
/// (what a line that must wait for the shift names in its `requires`). A skipped shift line is
/// left out: a shift (azevac's or not) is in progress there, and [`away_from`] knows it.
pub fn planned(plan: &Plan) -> BTreeMap<String, String> {
    plan.items
        .iter()
        .filter(|i| i.status == Status::Planned && i.resource.starts_with(KEY_PREFIX))
        .map(|i| (arn_of(&i.resource).to_owned(), i.resource.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shift_key_names_its_resource() {
        let arn = "arn:aws:elasticloadbalancing:us-east-1:1:loadbalancer/net/edge/1";
        assert_eq!(key(arn), format!("zonal-shift/{arn}"));
        assert_eq!(arn_of(&key(arn)), arn);
        assert_eq!(arn_of(arn), arn);
    }
}
