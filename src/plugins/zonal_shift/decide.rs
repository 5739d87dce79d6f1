//! The `zonal-shift` kind's decisions, pure over what ARC lists: which managed resources get a
//! shift away from the zone (and which are left alone, with why), what recovering a record
//! cancels, and what `exposure` reports.

use std::collections::BTreeMap;

use super::actions::{started_id, Action, Cancel};
use super::TYPE;
use crate::error::describe;
use crate::model::{Item, Record, Resource};
use crate::plan::ALREADY_EVACUATED;
use crate::plugins::shifted::{arn_of, key, Active};
use crate::Result;

/// ARC's limit on a shift's comment.
pub(super) const COMMENT_LIMIT: usize = 128;

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
pub fn exposed(managed: &Managed, az_id: &str) -> Option<crate::model::Finding> {
    if !managed.az_ids.iter().any(|z| z == az_id) {
        return None;
    }
    let kind = match kind_of(&managed.arn) {
        Kind::LoadBalancer => "load-balancer",
        Kind::AutoScaling => "asg-traffic",
        Kind::Eks => "eks-traffic",
    };
    let mut found =
        crate::model::Finding::new(kind, &managed.arn, &managed.name, vec![az_id.to_owned()]).moved_by(TYPE);
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
            let mut item = Item {
                target: Some(Resource {
                    resource_type: TYPE,
                    id: key(&m.arn),
                    name: m.name.clone(),
                    ..Resource::default()
                }),
                record: record.cloned(),
                ..Item::new(TYPE, &key(&m.arn), &m.name, az_id)
            };
            item.take_actions(&[Action::Start {
                away_from: az_id.to_owned(),
                expires_in: expires_in.to_owned(),
            }]);
            // A record this version cannot read may name a shift in force: no second one on a guess.
            let ours = match record.map(started_id).transpose() {
                Ok(ours) => ours.flatten(),
                Err(e) => {
                    item.fail(describe(&e));
                    return item;
                }
            };
            let skip = if let Some(active) = m
                .active
                .iter()
                .find(|a| ours.is_some() && a.id.as_deref() == ours.as_deref())
            {
                Some(format!(
                    "{ALREADY_EVACUATED}: zonal shift {} away from {}",
                    ours.unwrap_or_default(),
                    active.away_from
                ))
            } else {
                m.active.first().map(describe_foreign)
            };
            if let Some(why) = skip {
                item.skip(why);
                item.take_actions::<Action>(&[]);
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
/// A record whose actions this version cannot read fails its line.
pub fn recovery(record: &Record, active: &[Active]) -> Item {
    let mut item = Item {
        actions: Some(Vec::new()),
        record: Some(record.clone()),
        ..Item::new(
            TYPE,
            &record.resource,
            record.resource_name.as_deref().unwrap_or(arn_of(&record.resource)),
            &record.az_id,
        )
    };
    let recorded = match started_id(record) {
        Ok(recorded) => recorded,
        Err(e) => {
            item.fail(describe(&e));
            return item;
        }
    };
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
    match (live, &recorded) {
        (Some(id), _) => {
            item.actions = Some(vec![format!("cancel zonal shift {id}")]);
            let mut target = Resource {
                resource_type: TYPE,
                id: record.resource.clone(),
                name: item.name.clone(),
                ..Resource::default()
            };
            target.set_detail(&Cancel { id });
            item.target = Some(target);
        }
        (None, Some(id)) => {
            item.reason = Some(format!(
                "zonal shift {id} already ended (expired or cancelled): journal record will be deleted"
            ));
        }
        (None, None) => {
            item.reason = Some("no zonal shift of this run is active: journal record will be deleted".to_owned());
        }
    }
    item
}

/// The shift ID a recovery line cancels (`None`: none is active), from the line's own state.
pub fn to_cancel(item: &Item) -> Result<Option<String>> {
    Ok(item
        .target
        .as_ref()
        .map(Resource::detail_as::<Cancel>)
        .transpose()?
        .map(|c| c.id))
}
