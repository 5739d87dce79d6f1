//! The `zonal-shift` kind's decisions, pure over what ARC lists: which managed resources get a
//! shift away from the zone (and which are left alone, with why), what recovering a record
//! cancels, and what `exposure` reports.

use std::collections::BTreeMap;

use super::actions::{started_id, Action, Cancel, Extension};
use super::TYPE;
use crate::error::describe;
use crate::model::plan::ALREADY_EVACUATED;
use crate::model::{Item, Record, Resource};
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

/// When an evacuation extends azevac's shifts in force instead of leaving them be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Renewal {
    /// Now, in seconds since the epoch.
    pub now: i64,
    /// `--expires-in`, in seconds: the new expiry is this long from now.
    pub expires_in: i64,
    /// Extend the shifts that end within this many seconds (`None`: every one, `shift extend`).
    pub within: Option<i64>,
    /// Extend only, start nothing (`shift extend`).
    pub only: bool,
}

/// A re-run of `evacuate` extends azevac's shifts of the zone that end within this many seconds:
/// an hour leaves an on-call team time to notice a run that failed.
pub const RENEW_WITHIN: i64 = 3600;

/// An extension never shortens a shift, and one that would move its end by less than this (ARC's
/// unit is the minute) changes nothing: asking again at once is a no-op, not a journal write.
const LEAST_EXTENSION: i64 = 60;

/// An instant as the journal and the reports show it (RFC 3339, UTC, seconds).
pub fn rfc3339(epoch_seconds: i64) -> String {
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(epoch_seconds.max(0).unsigned_abs());
    humantime::format_rfc3339_seconds(at).to_string()
}

/// Whether azevac's shift in force is due for an extension (pure): it ends within the renewal
/// window and the new expiry is later by at least [`LEAST_EXTENSION`]. A shift whose end ARC did
/// not give is extended only when asked for every shift.
fn due(active: &Active, renewal: &Renewal) -> bool {
    match active.expires_at {
        Some(ends) => {
            renewal.within.is_none_or(|w| ends - renewal.now <= w)
                && renewal.now + renewal.expires_in >= ends + LEAST_EXTENSION
        }
        None => renewal.within.is_none(),
    }
}

/// What starting shifts away from `az_id` means for each managed resource deployed there (pure).
/// A resource with a shift, autoshift or practice run already in progress is left alone and listed,
/// except azevac's own shift that `renewal` says is due: that is extended. With `renewal.only`
/// (`shift extend`) only the resources with azevac's records are listed, and nothing is started.
pub fn evacuation(
    managed: &[Managed],
    az_id: &str,
    expires_in: &str,
    records: &BTreeMap<String, Record>,
    renewal: &Renewal,
) -> Vec<Item> {
    managed
        .iter()
        .filter(|m| m.az_ids.iter().any(|z| z == az_id))
        .filter(|m| !renewal.only || records.contains_key(&key(&m.arn)))
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
                    item.fail(crate::model::Failure::plan(describe(&e)));
                    return item;
                }
            };
            let in_force = m
                .active
                .iter()
                .find(|a| ours.is_some() && a.id.as_deref() == ours.as_deref());
            if let (Some(active), Some(id)) = (in_force, &ours) {
                let ends = active.expires_at.map(rfc3339);
                if due(active, renewal) {
                    item.take_actions(&[Action::Extend {
                        id: id.clone(),
                        was: ends.clone(),
                        expires_in: expires_in.to_owned(),
                    }]);
                    if let Some(target) = item.target.as_mut() {
                        target.set_detail(&Extension {
                            id: id.clone(),
                            was: ends,
                        });
                    }
                    return item;
                }
                let ends = ends.map(|t| format!(", ends {t}")).unwrap_or_default();
                item.skip(if renewal.only {
                    format!(
                        "zonal shift {id} away from {}{ends}, no earlier than --expires-in {expires_in} from now: nothing to extend",
                        active.away_from
                    )
                } else {
                    format!("{ALREADY_EVACUATED}: zonal shift {id} away from {}{ends}", active.away_from)
                });
                item.take_actions::<Action>(&[]);
                return item;
            }
            if renewal.only {
                item.skip(match &ours {
                    Some(id) => format!(
                        "azevac's zonal shift {id} is no longer active (expired or cancelled): nothing to extend; \
                         `azevac shift start --az-id {az_id}` starts a new one"
                    ),
                    None => "no zonal shift of azevac's is journalled for it: nothing to extend".to_owned(),
                });
                item.take_actions::<Action>(&[]);
                return item;
            }
            if let Some(why) = m.active.first().map(describe_foreign) {
                item.skip(why);
                item.take_actions::<Action>(&[]);
                return item;
            }
            if let Some(id) = &ours {
                item.notes.push(format!(
                    "azevac's zonal shift {id} is no longer active (expired or cancelled): a new one is started"
                ));
            }
            if kind_of(&m.arn) == Kind::Eks {
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
            item.fail(crate::model::Failure::plan_kept(describe(&e)));
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
