//! The ARC zonal shift API as the `zonal-shift` kind calls it: the managed resources with the
//! shifts in progress on them, every shift by ID with its status, and starting, extending and
//! cancelling a shift.

use std::collections::BTreeMap;

use aws_sdk_arczonalshift::types::ManagedResourceSummary;

use super::decide::Managed;
use crate::model::topology::Zones;
use crate::plugins::shifted::{self, Active};
use crate::{Error, Result};

/// A shift as ARC lists it, whatever its status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Known {
    /// `ACTIVE`, `EXPIRED` or `CANCELED`.
    pub status: String,
    /// When it ends or ended, in seconds since the epoch.
    pub expires_at: i64,
}

/// The ARC zonal shift API.
#[derive(Debug, Clone)]
pub struct Shifts {
    pub(super) client: aws_sdk_arczonalshift::Client,
}

impl Shifts {
    /// A client from the shared configuration.
    pub fn new(sdk: &aws_config::SdkConfig) -> Self {
        Shifts {
            client: crate::client!(aws_sdk_arczonalshift, sdk),
        }
    }

    /// A client as given (tests).
    pub fn from_client(client: aws_sdk_arczonalshift::Client) -> Self {
        Shifts { client }
    }

    /// Every managed resource of the region, with the shifts in progress on it. Zones are AZ IDs;
    /// a name, should one appear, is mapped through EC2's list.
    pub async fn managed(&self, zones: &Zones) -> Result<Vec<Managed>> {
        let summaries: Vec<ManagedResourceSummary> = self
            .client
            .list_managed_resources()
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .map_err(|e| Error::from_sdk("arc-zonal-shift:ListManagedResources", e))?;
        Ok(summaries
            .into_iter()
            .filter_map(|s| {
                let arn = s.arn()?.to_owned();
                let az_ids = s
                    .availability_zones()
                    .iter()
                    .map(|z| zones.id_of(z).unwrap_or(z).to_owned())
                    .collect();
                let mut active: Vec<Active> = s
                    .zonal_shifts()
                    .iter()
                    .map(|z| Active {
                        id: Some(z.zonal_shift_id().to_owned()),
                        away_from: z.away_from().to_owned(),
                        shift_type: z.shift_type().map(|t| t.as_str().to_owned()).unwrap_or_default(),
                        comment: z.comment().to_owned(),
                        expires_at: Some(z.expiry_time().secs()),
                    })
                    .collect();
                active.extend(s.autoshifts().iter().map(|a| Active {
                    id: None,
                    away_from: a.away_from().to_owned(),
                    shift_type: "ZONAL_AUTOSHIFT".to_owned(),
                    comment: String::new(),
                    expires_at: None,
                }));
                Some(Managed {
                    name: s.name().unwrap_or(&arn).to_owned(),
                    arn,
                    az_ids,
                    active,
                })
            })
            .collect())
    }

    /// The active shifts (all, or on one resource).
    pub async fn active(&self, resource_arn: Option<&str>) -> Result<Vec<(String, Active)>> {
        shifted::active(&self.client, resource_arn).await
    }

    /// Start a shift away from `az_id`; returns its ID.
    pub async fn start(&self, arn: &str, az_id: &str, expires_in: &str, comment: &str) -> Result<String> {
        let out = self
            .client
            .start_zonal_shift()
            .resource_identifier(arn)
            .away_from(az_id)
            .expires_in(expires_in)
            .comment(comment)
            .send()
            .await
            .map_err(|e| Error::from_sdk("arc-zonal-shift:StartZonalShift", e))?;
        Ok(out.zonal_shift_id().to_owned())
    }

    /// Give azevac's active shift `id` a new expiry, `expires_in` from now, with `comment` (ARC
    /// overwrites the comment, so it must carry the run ID again). Returns the new expiry (seconds
    /// since the epoch). A shift that is no longer active is an error: ARC refuses to extend it,
    /// and the record stays for status to report.
    pub async fn extend(&self, id: &str, expires_in: &str, comment: &str) -> Result<i64> {
        let out = self
            .client
            .update_zonal_shift()
            .zonal_shift_id(id)
            .expires_in(expires_in)
            .comment(comment)
            .send()
            .await
            .map_err(|e| Error::from_sdk("arc-zonal-shift:UpdateZonalShift", e))?;
        Ok(out.expiry_time().secs())
    }

    /// Every shift ARC still lists, whatever its status, by ID: what became of the ones azevac
    /// journalled (active, expired, cancelled).
    pub async fn every(&self) -> Result<BTreeMap<String, Known>> {
        let shifts: Vec<_> = self
            .client
            .list_zonal_shifts()
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
                    z.zonal_shift_id().to_owned(),
                    Known {
                        status: z.status().as_str().to_owned(),
                        expires_at: z.expiry_time().secs(),
                    },
                )
            })
            .collect())
    }

    /// Cancel a shift. One that already ended (expired, or cancelled by someone) is not an error:
    /// there is nothing left to undo. ARC answers other conflicts too (an autoshift or a practice
    /// run in the way): those are failures, and the record stays.
    pub async fn cancel(&self, id: &str) -> Result<()> {
        use aws_sdk_arczonalshift::operation::cancel_zonal_shift::CancelZonalShiftError;
        use aws_sdk_arczonalshift::types::ConflictExceptionReason;
        match self.client.cancel_zonal_shift().zonal_shift_id(id).send().await {
            Ok(_) => Ok(()),
            Err(e)
                if e.as_service_error().is_some_and(|s| match s {
                    CancelZonalShiftError::ConflictException(c) => {
                        c.reason() == &ConflictExceptionReason::ZonalShiftStatusNotActive
                    }
                    other => other.is_resource_not_found_exception(),
                }) =>
            {
                tracing::info!(zonal_shift = id, "zonal shift already ended");
                Ok(())
            }
            Err(e) => Err(Error::from_sdk("arc-zonal-shift:CancelZonalShift", e)),
        }
    }
}
