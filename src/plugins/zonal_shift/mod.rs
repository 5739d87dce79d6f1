//! ARC zonal shift: move traffic away from the zone on the data plane before the control-plane
//! evacuation, and afterwards cancel exactly the shifts azevac started. Managed resources are the
//! load balancers, Auto Scaling groups and EKS clusters registered with ARC; like Kubernetes nodes
//! they are not placed by subnets, so this module plans and acts on its own, and the commands order
//! it around the subnet changes.
//!
//! The kind's story, one job a file: [`actions`] (what is journalled), [`decide`] (the pure
//! decisions), [`client`] (the ARC calls), [`expiry`] (when azevac's shifts end: what the kind
//! declares in its registration as expiring, which `status`, `doctor`, `--notify` and the watcher
//! read), and here the plugin, `azevac shift list`'s listing and `--expires-in`. What other kinds need to know about shifts (the cross-zone guard waits for
//! them) is in [`crate::plugins::shifted`], which this kind shares.

pub mod actions;
pub mod client;
pub mod decide;
pub mod expiry;
pub mod flags;
#[cfg(test)]
mod tests;

use async_trait::async_trait;

use super::{Acted, Plugin, Scope, Setup, Stage};
use crate::error::describe;
use crate::journal::Guard;
use crate::model::action::encode;
use crate::model::{Command, Item, Record, Status};
use crate::plugins::shifted::arn_of;
use crate::{Error, Result};

pub use crate::plugins::shifted::{key, Active};
pub use actions::{started_id, Action};
pub use client::Shifts;
pub use decide::{
    cancelled_first, comment, evacuation, exposed, kind_of, recovery, rfc3339, to_cancel, Kind, Managed, Renewal,
    RENEW_WITHIN,
};

/// The `--type` value and journal `resource_type` of zonal shifts.
pub const TYPE: &str = "zonal-shift";

/// How the registry knows this kind: its calls, its IAM actions, its options.
pub const REGISTRATION: super::Registration = super::Registration {
    name: TYPE,
    services: &["arc-zonal-shift"],
    changes_through: &["arc-zonal-shift"],
    iam_actions: &[
        "arc-zonal-shift:ListManagedResources",
        "arc-zonal-shift:ListZonalShifts",
        "arc-zonal-shift:StartZonalShift",
        "arc-zonal-shift:UpdateZonalShift",
        "arc-zonal-shift:CancelZonalShift",
    ],
    build: plugin,
    flags: Some(&flags::FLAGS),
    describe: crate::model::Record::words_as::<actions::Action>,
    cluster: super::no_cluster,
    expiring: Some(&expiry::EXPIRING),
};
/// `--expires-in` when not given: long enough to ride out most zonal incidents, short enough that
/// a forgotten shift ends by itself.
pub const DEFAULT_EXPIRES_IN: &str = "3h";

/// Zonal shifts as a plugin: planned only when asked (`--zonal-shift` or `--type zonal-shift`),
/// recovered whenever records exist (ARC is asked only then).
pub struct ZonalShifts {
    shifts: Shifts,
    asked: bool,
    expires_in: String,
    /// `shift extend`: extend azevac's shifts in force, start none.
    extend_only: bool,
}

/// Registry constructor.
pub fn plugin(setup: &Setup) -> futures::future::BoxFuture<'_, Result<Option<Box<dyn Plugin>>>> {
    Box::pin(async move {
        let request = &setup.request;
        let options: flags::Options = request.options_as()?;
        Ok(Some(Box::new(ZonalShifts {
            shifts: Shifts::new(&setup.sdk),
            asked: options.zonal_shift || request.names(TYPE),
            expires_in: options.expires_in.unwrap_or_else(|| DEFAULT_EXPIRES_IN.to_owned()),
            extend_only: options.extend,
        }) as Box<dyn Plugin>))
    })
}

#[async_trait]
impl Plugin for ZonalShifts {
    fn resource_type(&self) -> &'static str {
        TYPE
    }

    /// Traffic first on the way out; on the way back the shifts of groups and clusters first (so
    /// they may launch into the zone again), load balancers last, once capacity is back.
    fn stage(&self, command: Command, line: &Item) -> Stage {
        match command {
            Command::Evacuate => Stage::First,
            Command::Recover if cancelled_first(line) => Stage::First,
            Command::Recover => Stage::Last,
        }
    }

    async fn plan_evacuation(&self, scope: &Scope<'_>) -> Result<Vec<Item>> {
        if !self.asked {
            return Ok(Vec::new());
        }
        let managed = self.shifts.managed(scope.zones).await?;
        let renewal = Renewal {
            now: now(),
            expires_in: expires_in_seconds(&self.expires_in).map_err(Error::BadInput)?,
            within: (!self.extend_only).then_some(RENEW_WITHIN),
            only: self.extend_only,
        };
        Ok(evacuation(
            &managed,
            scope.az_id(),
            &self.expires_in,
            scope.records,
            &renewal,
        ))
    }

    async fn plan_recovery(&self, records: Vec<Record>, _scope: &Scope<'_>) -> Result<Vec<Item>> {
        if records.is_empty() {
            return Ok(Vec::new());
        }
        let active = self.shifts.active(None).await?;
        Ok(records
            .iter()
            .map(|record| {
                let arn = arn_of(&record.resource);
                let on_resource: Vec<Active> = active
                    .iter()
                    .filter(|(resource, _)| resource == arn)
                    .map(|(_, a)| a.clone())
                    .collect();
                recovery(record, &on_resource)
            })
            .collect())
    }

    /// The comment carries the run ID, so that `recover` finds the shift even if azevac dies
    /// before the shift's ID is journalled. A line about azevac's shift in force extends it.
    async fn evacuate(&self, line: &Item, held: &Guard<'_>) -> Result<Acted> {
        let record = held.record();
        let comment = comment(record.run_id.as_deref().unwrap_or_default(), record.reason.as_deref());
        if let Some(extension) = extension_of(line)? {
            let until = rfc3339(self.shifts.extend(&extension.id, &self.expires_in, &comment).await?);
            let shown = format!("extended zonal shift {} until {until}", extension.id);
            return Ok(Acted {
                actions: Some(encode(&[
                    Action::Started {
                        id: extension.id.clone(),
                    },
                    Action::Extended {
                        id: extension.id,
                        was: extension.was,
                        until: Some(until),
                    },
                ])),
                problem: None,
                shown: Some(vec![shown]),
                // The record keeps the shift and its latest extension, not every one.
                replace_actions: true,
            });
        }
        let id = self
            .shifts
            .start(arn_of(&line.resource), &line.az_id, &self.expires_in, &comment)
            .await?;
        Ok(Acted {
            actions: Some(encode(&[Action::Started { id: id.clone() }])),
            problem: None,
            shown: Some(vec![format!("started zonal shift {id} away from {}", line.az_id)]),
            // The record names the one shift in force: an expired earlier one must not shadow it.
            replace_actions: true,
        })
    }

    async fn recover(&self, line: &Item, _held: &Guard<'_>) -> Result<Acted> {
        if let Some(id) = to_cancel(line)? {
            self.shifts.cancel(&id).await?;
        }
        Ok(Acted::default())
    }

    /// Every shift this run started must be listed as active now.
    async fn verify(&self, lines: &mut [&mut Item]) {
        // The record is the one this run just wrote: one it cannot read fails the line.
        let mut started: Vec<(usize, String)> = Vec::new();
        for (n, line) in lines.iter_mut().enumerate() {
            if line.status != Status::Done {
                continue;
            }
            match line.record.as_ref().map(started_id).transpose() {
                Ok(Some(Some(id))) => started.push((n, id)),
                Ok(_) => {}
                Err(e) => line.fail(crate::model::Failure::read_back(format!("read back: {}", describe(&e)))),
            }
        }
        if started.is_empty() {
            return;
        }
        let active = match self.shifts.active(None).await {
            Ok(active) => active,
            Err(e) => {
                for (n, _) in &started {
                    lines[*n].fail(crate::model::Failure::read_back(format!(
                        "could not read back the zonal shifts ({}); the journal holds the shift",
                        describe(&e)
                    )));
                }
                return;
            }
        };
        for (n, id) in started {
            if !active.iter().any(|(_, a)| a.id.as_deref() == Some(id.as_str())) {
                lines[n].fail(crate::model::Failure::read_back(format!(
                    "read back: zonal shift {id} is not listed as active; the journal still holds it"
                )));
            }
        }
    }

    /// ARC is optional (`--zonal-shift`): an endpoint without it (an emulator) is a warning.
    /// Every resource registered with ARC deployed in the zone (load balancers; Auto Scaling
    /// groups and EKS clusters with zonal shift on), and whether a shift or autoshift already keeps
    /// its traffic away from the zone.
    async fn exposure(&self, scope: &Scope<'_>) -> Result<Vec<crate::model::Finding>> {
        let az_id = scope.az_id();
        let managed = self.shifts.managed(scope.zones).await?;
        Ok(managed.iter().filter_map(|m| exposed(m, az_id)).collect())
    }

    async fn probe(&self) -> Vec<super::Check> {
        let listed = self.shifts.client.list_managed_resources().max_results(1).send().await;
        vec![super::Check::answered_optional(
            TYPE,
            "arc-zonal-shift:ListManagedResources",
            listed,
        )]
    }
}

/// Every active shift (optionally away from one zone), with whether azevac's journal holds it.
pub async fn listing(
    sdk: &aws_config::SdkConfig,
    journal: &crate::journal::Journal,
    az_id: Option<&str>,
) -> Result<Vec<(String, Active, bool)>> {
    let ours: Vec<String> = match journal.of_type(TYPE, az_id).await {
        Ok(entries) => entries
            .into_iter()
            .flatten()
            // A record this version cannot read is not known to be ours: listed as someone's.
            .filter_map(|r| started_id(&r).ok().flatten())
            .collect(),
        Err(Error::TableMissing { .. }) => Vec::new(),
        Err(e) => return Err(e),
    };
    Ok(Shifts::new(sdk)
        .active(None)
        .await?
        .into_iter()
        .filter(|(_, a)| az_id.is_none_or(|z| a.away_from == z))
        .map(|(resource, a)| {
            let mine = a.id.as_ref().is_some_and(|id| ours.contains(id));
            (resource, a, mine)
        })
        .collect())
}

/// The shift an evacuation line extends (`None`: the line starts one), from the line's own state.
fn extension_of(line: &Item) -> Result<Option<actions::Extension>> {
    match line.target.as_ref() {
        Some(target) if !target.detail.is_null() => target.detail_as().map(Some),
        _ => Ok(None),
    }
}

/// Now, in seconds since the epoch.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// `--expires-in` (and `status --fail-if-expiring`), as [`parse_expires_in`] accepts it, in seconds.
pub fn expires_in_seconds(text: &str) -> std::result::Result<i64, String> {
    let valid = parse_expires_in(text)?;
    let (number, unit) = valid.split_at(valid.len() - 1);
    let n: i64 = number.parse().map_err(|_| format!("not a duration: {text:?}"))?;
    Ok(if unit == "h" { n * 3600 } else { n * 60 })
}

/// `--expires-in`: ARC takes minutes (1–4320) or hours (1–72), e.g. `180m`, `3h`. Checked before
/// anything is changed, so a typo is a one-line error rather than a half-started evacuation.
pub fn parse_expires_in(text: &str) -> std::result::Result<String, String> {
    // Split before the last character, not the last byte: the unit may be any character typed.
    let unit = text.chars().last();
    let number = &text[..text.len() - unit.map_or(0, char::len_utf8)];
    let max = match unit {
        Some('m') => 4320,
        Some('h') => 72,
        _ => 0,
    };
    match number.parse::<u32>() {
        Ok(n) if max > 0 && (1..=max).contains(&n) && !number.starts_with('0') => Ok(text.to_owned()),
        _ => Err(format!(
            "expected minutes (1m to 4320m) or hours (1h to 72h), e.g. 3h; got {text:?}"
        )),
    }
}
