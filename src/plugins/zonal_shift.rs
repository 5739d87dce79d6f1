//! ARC zonal shift: move traffic away from the zone on the data plane before the control-plane
//! evacuation, and afterwards cancel exactly the shifts azevac started. Managed resources are the
//! load balancers, Auto Scaling groups and EKS clusters registered with ARC; like Kubernetes nodes
//! they are not placed by subnets, so this module plans and acts on its own, and the commands order
//! it around the subnet changes.

use std::collections::BTreeMap;

use aws_sdk_arczonalshift::types::{ManagedResourceSummary, ZonalShiftStatus};

use async_trait::async_trait;

use super::{Acted, Plugin, Scope, Setup, Stage};

pub mod flags;
use crate::error::describe;
use crate::journal::Guard;
use crate::model::{Command, Item, Record, Resource, Status};
use crate::plan::ALREADY_EVACUATED;
use crate::topology::Zones;
use crate::{Error, Result};

/// The `--type` value and journal `resource_type` of zonal shifts.
pub const TYPE: &str = "zonal-shift";
/// Journal sort keys of shifts start with this, so a shift of an Auto Scaling group and the
/// group's own subnet record never share a key.
const KEY_PREFIX: &str = "zonal-shift/";
/// The journal action that names a started shift: `zonal-shift:<id>`.
const STARTED: &str = "zonal-shift:";
/// `--expires-in` when not given: long enough to ride out most zonal incidents, short enough that
/// a forgotten shift ends by itself.
pub const DEFAULT_EXPIRES_IN: &str = "3h";
/// ARC's limit on a shift's comment.
const COMMENT_LIMIT: usize = 128;

/// What a managed resource is: decides when `recover` cancels its shift.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An Application or Network Load Balancer: its shift is cancelled last, once capacity is back.
    LoadBalancer,
    /// An Auto Scaling group: its shift is cancelled first, so it may launch into the zone again.
    AutoScaling,
    /// An EKS cluster: cancelled first, like Auto Scaling groups.
    Eks,
}

/// The kind of a managed resource, from its ARN.
pub fn kind_of(arn: &str) -> Kind {
    match arn.split(':').nth(2) {
        Some("autoscaling") => Kind::AutoScaling,
        Some("eks") => Kind::Eks,
        _ => Kind::LoadBalancer,
    }
}

/// Whether `recover` cancels this line's shift before the control-plane changes (capacity) rather
/// than after them (load balancers).
pub fn cancelled_first(item: &Item) -> bool {
    item.resource_type == TYPE && kind_of(arn_of(&item.resource)) != Kind::LoadBalancer
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
}

/// A resource registered with ARC zonal shift.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Managed {
    /// Its ARN.
    pub arn: String,
    /// Its name.
    pub name: String,
    /// The AZ IDs it is deployed in.
    pub az_ids: Vec<String>,
    /// Shifts and autoshifts in progress on it.
    pub active: Vec<Active>,
}

/// The journal key of a resource's shift record.
pub fn key(arn: &str) -> String {
    format!("{KEY_PREFIX}{arn}")
}

/// The resource ARN of a shift record's key.
pub fn arn_of(key: &str) -> &str {
    key.strip_prefix(KEY_PREFIX).unwrap_or(key)
}

/// The shift ID a record says azevac started, if the start was acknowledged.
pub fn started_id(record: &Record) -> Option<&str> {
    record.actions.iter().find_map(|a| a.strip_prefix(STARTED))
}

/// The journal action for a started shift.
pub fn started_action(id: &str) -> String {
    format!("{STARTED}{id}")
}

/// The comment azevac gives its shifts: the run ID (how a shift is found again after a crash) and
/// the reason, within ARC's 128 characters.
pub fn comment(run_id: &str, reason: Option<&str>) -> String {
    let text = match reason {
        Some(reason) => format!("azevac run {run_id}: {reason}"),
        None => format!("azevac run {run_id}"),
    };
    text.chars().take(COMMENT_LIMIT).collect()
}

/// A managed resource's exposure finding, when it is deployed in `az_id` (pure).
pub fn exposed(managed: &Managed, az_id: &str) -> Option<super::Finding> {
    if !managed.az_ids.iter().any(|z| z == az_id) {
        return None;
    }
    let kind = match kind_of(&managed.arn) {
        Kind::LoadBalancer => "load-balancer",
        Kind::AutoScaling => "asg-traffic",
        Kind::Eks => "eks-traffic",
    };
    let mut found = super::Finding::new(kind, &managed.arn, &managed.name, vec![az_id.to_owned()]).moved_by(TYPE);
    found.away = managed.active.iter().find(|a| a.away_from == az_id).map(|a| {
        format!(
            "{} {} active away from {az_id}",
            a.shift_type,
            a.id.as_deref().unwrap_or("(autoshift)")
        )
    });
    if found.away.is_none() {
        found.notes.push(
            "the zone is enabled for it and no zonal shift is active: azevac evacuate --zonal-shift (or azevac shift start) moves its traffic".to_owned(),
        );
    }
    Some(found)
}

/// What starting shifts away from `az_id` means for each managed resource deployed there (pure).
/// A resource with a shift, autoshift or practice run already in progress is left alone and listed.
pub fn evacuation(managed: &[Managed], az_id: &str, expires_in: &str, records: &BTreeMap<String, Record>) -> Vec<Item> {
    managed
        .iter()
        .filter(|m| m.az_ids.iter().any(|z| z == az_id))
        .map(|m| {
            let record = records.get(&key(&m.arn));
            let ours = record.and_then(started_id);
            let skip = if let Some(active) = m.active.iter().find(|a| ours.is_some() && a.id.as_deref() == ours) {
                Some(format!(
                    "{ALREADY_EVACUATED}: zonal shift {} away from {}",
                    ours.unwrap_or_default(),
                    active.away_from
                ))
            } else {
                m.active.first().map(describe_foreign)
            };
            let mut item = Item {
                actions: Some(vec![format!(
                    "start zonal shift away from {az_id}, expires in {expires_in}"
                )]),
                target: Some(Resource {
                    resource_type: TYPE,
                    id: key(&m.arn),
                    name: m.name.clone(),
                    ..Resource::default()
                }),
                record: record.cloned(),
                ..Item::new(TYPE, &key(&m.arn), &m.name, az_id)
            };
            if let Some(why) = skip {
                item.status = Status::Skipped;
                item.reason = Some(why);
                item.actions = Some(Vec::new());
            } else if kind_of(&m.arn) == Kind::Eks {
                item.notes.push(EKS_SHIFT_NOTE.to_owned());
            }
            item
        })
        .collect()
}

/// What a cluster's zonal shift does to its capacity, and what it does not.
const EKS_SHIFT_NOTE: &str = "managed node groups stop launching nodes in the zone while the shift lasts; \
     Karpenter honours the shift only when its zonal-shift support is enabled (otherwise --type karpenter excludes the zone from its NodePools)";

/// Why a resource with someone else's shift (or an autoshift, or a practice run) is left alone.
fn describe_foreign(active: &Active) -> String {
    let what = match active.shift_type.as_str() {
        "ZONAL_AUTOSHIFT" => "zonal autoshift".to_owned(),
        "PRACTICE_RUN" => "practice run".to_owned(),
        "FIS_EXPERIMENT" => "FIS experiment".to_owned(),
        _ => "zonal shift".to_owned(),
    };
    let id = active.id.as_deref().map(|i| format!(" {i}")).unwrap_or_default();
    format!(
        "{what}{id} away from {} already in progress (not azevac's): left alone",
        active.away_from
    )
}

/// What recovering one shift record means (pure), given the active shifts on its resource: cancel
/// the shift azevac started if it is still active. A record written before a crash has no shift ID
/// yet; its shift, if it was started, is the active one whose comment carries the record's run ID.
pub fn recovery(record: &Record, active: &[Active]) -> Item {
    let recorded = started_id(record).map(str::to_owned);
    let by_run = || {
        record.run_id.as_ref().and_then(|run| {
            active
                .iter()
                .find(|a| a.away_from == record.az_id && a.comment.contains(run.as_str()))
                .and_then(|a| a.id.clone())
        })
    };
    let live = match &recorded {
        Some(id) => active.iter().any(|a| a.id.as_ref() == Some(id)).then(|| id.clone()),
        None => by_run(),
    };
    let (actions, reason) = match (&live, &recorded) {
        (Some(id), _) => (vec![format!("cancel zonal shift {id}")], None),
        (None, Some(id)) => (
            Vec::new(),
            Some(format!(
                "zonal shift {id} already ended (expired or cancelled): journal record will be deleted"
            )),
        ),
        (None, None) => (
            Vec::new(),
            Some("no zonal shift of this run is active: journal record will be deleted".to_owned()),
        ),
    };
    Item {
        actions: Some(actions),
        reason,
        record: Some(record.clone()),
        ..Item::new(
            TYPE,
            &record.resource,
            record.resource_name.as_deref().unwrap_or(arn_of(&record.resource)),
            &record.az_id,
        )
    }
}

/// The shift ID a recovery line cancels.
pub fn to_cancel(item: &Item) -> Option<&str> {
    item.actions
        .as_ref()?
        .iter()
        .find_map(|a| a.strip_prefix("cancel zonal shift "))
}

/// Zonal shifts as a plugin: planned only when asked (`--zonal-shift` or `--type zonal-shift`),
/// recovered whenever records exist (ARC is asked only then).
pub struct ZonalShifts {
    shifts: Shifts,
    asked: bool,
    expires_in: String,
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
        Ok(evacuation(&managed, scope.az_id(), &self.expires_in, scope.records))
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
    /// before the shift's ID is journalled.
    async fn evacuate(&self, line: &Item, held: &Guard<'_>) -> Result<Acted> {
        let record = held.record();
        let comment = comment(record.run_id.as_deref().unwrap_or_default(), record.reason.as_deref());
        let id = self
            .shifts
            .start(arn_of(&line.resource), &line.az_id, &self.expires_in, &comment)
            .await?;
        Ok(Acted {
            actions: Some(vec![started_action(&id)]),
            problem: None,
            shown: Some(vec![format!("started zonal shift {id} away from {}", line.az_id)]),
            // The record names the one shift in force: an expired earlier one must not shadow it.
            replace_actions: true,
        })
    }

    async fn recover(&self, line: &Item, _held: &Guard<'_>) -> Result<Acted> {
        if let Some(id) = to_cancel(line) {
            self.shifts.cancel(id).await?;
        }
        Ok(Acted::default())
    }

    /// Every shift this run started must be listed as active now.
    async fn verify(&self, lines: &mut [&mut Item]) {
        let started: Vec<usize> = (0..lines.len())
            .filter(|&n| lines[n].status == Status::Done && lines[n].record.as_ref().and_then(started_id).is_some())
            .collect();
        if started.is_empty() {
            return;
        }
        let active = match self.shifts.active(None).await {
            Ok(active) => active,
            Err(e) => {
                for &n in &started {
                    lines[n].fail(format!(
                        "could not read back the zonal shifts ({}); the journal holds the shift",
                        describe(&e)
                    ));
                }
                return;
            }
        };
        for n in started {
            let line = &mut lines[n];
            let id = line.record.as_ref().and_then(started_id).map(str::to_owned);
            if !active.iter().any(|(_, a)| a.id.is_some() && a.id == id) {
                line.fail(format!(
                    "read back: zonal shift {} is not listed as active; the journal still holds it",
                    id.unwrap_or_default()
                ));
            }
        }
    }

    /// ARC is optional (`--zonal-shift`): an endpoint without it (an emulator) is a warning.
    /// Every resource registered with ARC deployed in the zone (load balancers; Auto Scaling
    /// groups and EKS clusters with zonal shift on), and whether a shift or autoshift already keeps
    /// its traffic away from the zone.
    async fn exposure(&self, scope: &Scope<'_>) -> Result<Vec<super::Finding>> {
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
            .filter_map(|r| started_id(&r).map(str::to_owned))
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

/// The ARC zonal shift API.
#[derive(Debug, Clone)]
pub struct Shifts {
    client: aws_sdk_arczonalshift::Client,
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
                    })
                    .collect();
                active.extend(s.autoshifts().iter().map(|a| Active {
                    id: None,
                    away_from: a.away_from().to_owned(),
                    shift_type: "ZONAL_AUTOSHIFT".to_owned(),
                    comment: String::new(),
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
        let shifts: Vec<_> = self
            .client
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
                    },
                )
            })
            .collect())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::State;

    const LB: &str = "arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/net/edge/0123";
    const GROUP: &str = "arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:u:autoScalingGroupName/web";

    fn managed(arn: &str, active: Vec<Active>) -> Managed {
        Managed {
            arn: arn.into(),
            name: "edge".into(),
            az_ids: vec!["use1-az1".into(), "use1-az2".into()],
            active,
        }
    }

    fn shift(id: &str, away: &str, kind: &str, comment: &str) -> Active {
        Active {
            id: Some(id.into()),
            away_from: away.into(),
            shift_type: kind.into(),
            comment: comment.into(),
        }
    }

    fn record(actions: &[&str], run: &str) -> Record {
        Record {
            az_id: "use1-az2".into(),
            resource: key(LB),
            resource_type: TYPE.into(),
            removed_subnets: vec![],
            state: State::Done,
            version: 2,
            resource_name: Some("edge".into()),
            original_subnets: vec![],
            actions: actions.iter().map(|a| a.to_string()).collect(),
            run_id: Some(run.into()),
            evacuated_by: None,
            reason: None,
            azevac_version: None,
            created_at: None,
            updated_at: None,
            account_id: None,
            identity: None,
        }
    }

    #[test]
    fn kinds_come_from_the_arn() {
        assert_eq!(kind_of(LB), Kind::LoadBalancer);
        assert_eq!(kind_of(GROUP), Kind::AutoScaling);
        assert_eq!(kind_of("arn:aws:eks:us-east-1:1:cluster/prod"), Kind::Eks);
        assert_eq!(arn_of(&key(GROUP)), GROUP);
    }

    #[test]
    fn plans_a_shift_for_resources_in_the_zone_only() {
        let mut elsewhere = managed(GROUP, vec![]);
        elsewhere.az_ids = vec!["use1-az1".into(), "use1-az4".into()];
        let items = evacuation(&[managed(LB, vec![]), elsewhere], "use1-az2", "3h", &BTreeMap::new());
        assert_eq!(items.len(), 1);
        assert_eq!(items[0].status, Status::Planned);
        assert_eq!(items[0].resource, key(LB));
        assert_eq!(
            items[0].actions.as_deref(),
            Some(&["start zonal shift away from use1-az2, expires in 3h".to_string()][..])
        );
    }

    #[test]
    fn a_clusters_shift_says_what_karpenter_and_node_groups_do() {
        let cluster = "arn:aws:eks:us-east-1:123456789012:cluster/prod";
        let items = evacuation(
            &[managed(LB, vec![]), managed(cluster, vec![])],
            "use1-az2",
            "3h",
            &BTreeMap::new(),
        );
        assert!(items[0].notes.is_empty());
        let notes = items[1].notes.join(" ");
        assert!(notes.contains("Karpenter honours the shift only when") && notes.contains("managed node groups"));
    }

    #[test]
    fn leaves_someone_elses_shift_autoshift_or_practice_run_alone() {
        for (kind, words) in [
            ("ZONAL_SHIFT", "zonal shift s-1 away from use1-az1"),
            ("PRACTICE_RUN", "practice run s-1"),
            ("ZONAL_AUTOSHIFT", "zonal autoshift s-1"),
        ] {
            let items = evacuation(
                &[managed(LB, vec![shift("s-1", "use1-az1", kind, "by hand")])],
                "use1-az2",
                "3h",
                &BTreeMap::new(),
            );
            assert_eq!(items[0].status, Status::Skipped);
            let reason = items[0].reason.clone().unwrap_or_default();
            assert!(reason.starts_with(words) && reason.ends_with("left alone"), "{reason}");
        }
    }

    #[test]
    fn our_own_active_shift_is_already_evacuated() {
        let records = BTreeMap::from([(key(LB), record(&["zonal-shift:s-9"], "run-1"))]);
        let items = evacuation(
            &[managed(
                LB,
                vec![shift("s-9", "use1-az2", "ZONAL_SHIFT", "azevac run run-1")],
            )],
            "use1-az2",
            "3h",
            &records,
        );
        assert_eq!(items[0].status, Status::Skipped);
        assert!(items[0]
            .reason
            .as_deref()
            .unwrap_or_default()
            .starts_with(ALREADY_EVACUATED));
    }

    #[test]
    fn recovery_cancels_only_our_shift_and_finds_it_after_a_crash() {
        let ours = shift("s-9", "use1-az2", "ZONAL_SHIFT", "azevac run run-1: INC-1");
        let theirs = shift("s-3", "use1-az2", "ZONAL_SHIFT", "by hand");
        let item = recovery(&record(&["zonal-shift:s-9"], "run-1"), &[theirs.clone(), ours.clone()]);
        assert_eq!(to_cancel(&item), Some("s-9"));
        // Killed between StartZonalShift and the journal's "done": found by the run ID in the comment.
        let item = recovery(
            &record(&["start zonal shift away from use1-az2, expires in 3h"], "run-1"),
            &[theirs.clone(), ours],
        );
        assert_eq!(to_cancel(&item), Some("s-9"));
        // Expired, or never started: only the record goes.
        let item = recovery(&record(&["zonal-shift:s-9"], "run-1"), std::slice::from_ref(&theirs));
        assert_eq!(to_cancel(&item), None);
        assert!(item.reason.as_deref().unwrap_or_default().contains("already ended"));
        let item = recovery(&record(&[], "run-2"), &[theirs]);
        assert_eq!(to_cancel(&item), None);
    }

    #[test]
    fn comments_fit_arcs_limit_and_carry_the_run_id() {
        assert_eq!(comment("r1", None), "azevac run r1");
        assert_eq!(comment("r1", Some(&"x".repeat(300))).chars().count(), COMMENT_LIMIT);
        assert!(comment("r1", Some("INC-7")).contains("r1"));
    }

    #[test]
    fn expires_in_is_checked_against_arcs_range() {
        for good in ["1m", "4320m", "3h", "72h"] {
            assert_eq!(parse_expires_in(good).as_deref(), Ok(good));
        }
        for bad in ["0h", "73h", "4321m", "3d", "h", "", "03h", "-1h"] {
            assert!(parse_expires_in(bad).is_err(), "{bad}");
        }
    }

    mod sdk {
        //! Request shapes, paging and error handling against aws-smithy-mocks (the emulator has no ARC).
        use super::*;
        use aws_sdk_arczonalshift::operation::cancel_zonal_shift::CancelZonalShiftError;
        use aws_sdk_arczonalshift::operation::list_managed_resources::ListManagedResourcesOutput;
        use aws_sdk_arczonalshift::operation::start_zonal_shift::{StartZonalShiftError, StartZonalShiftOutput};
        use aws_sdk_arczonalshift::types::error::{ConflictException, ValidationException};
        use aws_sdk_arczonalshift::types::{AppliedStatus, ValidationExceptionReason};
        use aws_sdk_arczonalshift::types::{ConflictExceptionReason, ShiftType, ZonalShiftInResource};
        use aws_smithy_mocks::{mock, mock_client, RuleMode};
        use aws_smithy_types::DateTime;

        fn zones() -> Zones {
            Zones::new(
                "us-east-1",
                vec![crate::topology::Zone {
                    id: "use1-az2".into(),
                    name: "us-east-1c".into(),
                }],
            )
        }

        fn summary(arn: &str, zones: &[&str]) -> ManagedResourceSummary {
            ManagedResourceSummary::builder()
                .arn(arn)
                .name(arn.rsplit('/').next().unwrap_or(arn))
                .set_availability_zones(Some(zones.iter().map(|z| z.to_string()).collect()))
                .build()
                .expect("summary")
        }

        #[tokio::test]
        async fn managed_resources_are_read_across_pages_with_their_shifts() {
            let in_progress = ZonalShiftInResource::builder()
                .applied_status(AppliedStatus::Applied)
                .zonal_shift_id("s-1")
                .resource_identifier(LB)
                .away_from("use1-az1")
                .expiry_time(DateTime::from_secs(2_000_000_000))
                .start_time(DateTime::from_secs(1_900_000_000))
                .comment("by hand")
                .shift_type(ShiftType::ZonalShift)
                .build()
                .expect("shift");
            let page1 = mock!(aws_sdk_arczonalshift::Client::list_managed_resources)
                .match_requests(|r| r.next_token().is_none())
                .then_output(move || {
                    let mut lb = summary(LB, &["use1-az1", "use1-az2"]);
                    lb.zonal_shifts = Some(vec![in_progress.clone()]);
                    ListManagedResourcesOutput::builder()
                        .items(lb)
                        .next_token("page-2")
                        .build()
                        .expect("page")
                });
            let page2 = mock!(aws_sdk_arczonalshift::Client::list_managed_resources)
                .match_requests(|r| r.next_token() == Some("page-2"))
                .then_output(|| {
                    ListManagedResourcesOutput::builder()
                        // A zone name, should ARC answer one, is mapped to its ID through EC2's list.
                        .items(summary(GROUP, &["us-east-1c"]))
                        .build()
                        .expect("page")
                });
            let client = mock_client!(aws_sdk_arczonalshift, RuleMode::MatchAny, [&page1, &page2]);
            let found = Shifts::from_client(client).managed(&zones()).await.expect("managed");
            assert_eq!(found.len(), 2);
            assert_eq!(found[0].active, [shift("s-1", "use1-az1", "ZONAL_SHIFT", "by hand")]);
            assert_eq!(found[1].az_ids, ["use1-az2"]);
            assert_eq!((page1.num_calls(), page2.num_calls()), (1, 1));
        }

        #[tokio::test]
        async fn a_shift_is_started_away_from_the_az_id_with_expiry_and_comment() {
            let start = mock!(aws_sdk_arczonalshift::Client::start_zonal_shift)
                .match_requests(|r| {
                    r.resource_identifier() == Some(LB)
                        && r.away_from() == Some("use1-az2")
                        && r.expires_in() == Some("3h")
                        && r.comment() == Some("azevac run r1: INC-7")
                })
                .then_output(|| {
                    StartZonalShiftOutput::builder()
                        .zonal_shift_id("s-42")
                        .resource_identifier(LB)
                        .away_from("use1-az2")
                        .expiry_time(DateTime::from_secs(0))
                        .start_time(DateTime::from_secs(0))
                        .status(ZonalShiftStatus::Active)
                        .comment("azevac run r1: INC-7")
                        .build()
                        .expect("output")
                });
            let refused = mock!(aws_sdk_arczonalshift::Client::start_zonal_shift)
                .match_requests(|r| r.resource_identifier() == Some(GROUP))
                .then_error(|| {
                    StartZonalShiftError::ConflictException(
                        ConflictException::builder()
                            .message("a zonal shift already exists")
                            .reason(ConflictExceptionReason::ZonalShiftAlreadyExists)
                            .build()
                            .expect("error"),
                    )
                });
            let client = mock_client!(aws_sdk_arczonalshift, RuleMode::MatchAny, [&start, &refused]);
            let shifts = Shifts::from_client(client);
            let id = shifts
                .start(LB, "use1-az2", "3h", &comment("r1", Some("INC-7")))
                .await
                .expect("started");
            assert_eq!(id, "s-42");
            let err = shifts.start(GROUP, "use1-az2", "3h", "c").await.expect_err("conflict");
            let text = crate::error::describe(&err);
            assert!(
                text.contains("StartZonalShift") && text.contains("already exists"),
                "{text}"
            );
        }

        #[tokio::test]
        async fn cancelling_an_ended_shift_is_done_but_other_errors_are_not() {
            let ended = mock!(aws_sdk_arczonalshift::Client::cancel_zonal_shift)
                .match_requests(|r| r.zonal_shift_id() == Some("s-old"))
                .then_error(|| {
                    CancelZonalShiftError::ConflictException(
                        ConflictException::builder()
                            .message("not active")
                            .reason(ConflictExceptionReason::ZonalShiftStatusNotActive)
                            .build()
                            .expect("error"),
                    )
                });
            let invalid = mock!(aws_sdk_arczonalshift::Client::cancel_zonal_shift)
                .match_requests(|r| r.zonal_shift_id() == Some("bad"))
                .then_error(|| {
                    CancelZonalShiftError::ValidationException(
                        ValidationException::builder()
                            .message("invalid id")
                            .reason(ValidationExceptionReason::MissingValue)
                            .build()
                            .expect("error"),
                    )
                });
            // Issue 13: a conflict for any other reason (here: zonal autoshift in the way) is no
            // proof that the shift ended, so it must fail and keep the record.
            let autoshift = mock!(aws_sdk_arczonalshift::Client::cancel_zonal_shift)
                .match_requests(|r| r.zonal_shift_id() == Some("s-autoshift"))
                .then_error(|| {
                    CancelZonalShiftError::ConflictException(
                        ConflictException::builder()
                            .message("zonal autoshift active")
                            .reason(ConflictExceptionReason::ZonalAutoshiftActive)
                            .build()
                            .expect("error"),
                    )
                });
            let client = mock_client!(
                aws_sdk_arczonalshift,
                RuleMode::MatchAny,
                [&ended, &invalid, &autoshift]
            );
            let shifts = Shifts::from_client(client);
            shifts
                .cancel("s-old")
                .await
                .expect("an ended shift needs no cancelling");
            assert!(shifts.cancel("bad").await.is_err());
            let err = shifts
                .cancel("s-autoshift")
                .await
                .expect_err("another conflict is a failure");
            assert!(crate::error::describe(&err).contains("CancelZonalShift"), "{err}");
        }
    }
}
