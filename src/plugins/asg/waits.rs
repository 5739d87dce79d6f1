//! Waiting on a group's capacity, through the one polling loop ([`crate::plugins::wait`]):
//! `--pace` terminates the zone's instances a batch at a time, each once the previous batch's
//! replacements serve; `--wait` waits for the capacity to be InService in the group's zones.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{members, AutoScaling, GroupDetail, Member, POLL};
use crate::error::describe;
use crate::model::Resource;
use crate::plugins::wait::{self, Poll};
use crate::plugins::SubnetService;
use crate::{Error, Result};

/// `--pace`, as planned for one group and carried to `apply` in its detail.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Pace {
    /// Instances terminated at once.
    pub(super) batch: u32,
    /// The zone's name (instances report their zone by name).
    pub(super) az_name: String,
    /// Whether azevac suspends AZRebalance (it was not suspended already).
    pub(super) suspend: bool,
    /// How long to wait for replacements in all, in seconds.
    pub(super) timeout_secs: u64,
    /// `--pace-alarm`: every one must be OK before each batch.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) alarms: Vec<String>,
    /// `--pace-alarm-prefix`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) alarm_prefixes: Vec<String>,
}

/// Why the next batch has not gone yet.
enum NextBatch {
    /// The last batch's replacements are not InService yet.
    Replacements,
    /// An alarm it is gated on is not OK (INSUFFICIENT_DATA): this one.
    Alarm(String),
    /// The alarms could not be read: why.
    Unreadable(String),
}

impl AutoScaling {
    /// `--wait`: until every group's capacity is InService in its zones, at most `timeout`; the
    /// groups that did not settle, with why.
    pub(super) async fn capacity_settled(
        &self,
        resources: &[Resource],
        timeout: Duration,
    ) -> Result<Vec<(String, String)>> {
        let waiting: Mutex<Vec<String>> = Mutex::new(resources.iter().map(|r| r.id.clone()).collect());
        crate::say!(
            "azevac: waiting up to {} for {} Auto Scaling group(s) to have their capacity InService in their zones",
            humantime::format_duration(timeout),
            resources.len()
        );
        let settled = wait::until(timeout, POLL, |_| self.unsettled(&waiting)).await?;
        Ok(settled
            .err()
            .unwrap_or_default()
            .into_iter()
            .map(|(id, why)| {
                (
                    id,
                    format!("not settled within {}: {why}", humantime::format_duration(timeout)),
                )
            })
            .collect())
    }

    /// `--wait`: one look at the groups still waited for; those not settled yet, with why, are
    /// the next look's.
    pub(super) async fn unsettled(&self, waiting: &Mutex<Vec<String>>) -> Result<Poll<(), Vec<(String, String)>>> {
        let ids = lock(waiting).clone();
        let groups = self.read(&ids).await?;
        let unsettled: Vec<(String, String)> = ids
            .into_iter()
            .filter_map(|id| {
                let why = match groups.get(&id) {
                    None => Some("the group no longer exists".to_owned()),
                    Some(group) => capacity_in_place(group).err(),
                };
                why.map(|why| (id, why))
            })
            .collect();
        if unsettled.is_empty() {
            return Ok(Poll::Reached(()));
        }
        *lock(waiting) = unsettled.iter().map(|(id, _)| id.clone()).collect();
        Ok(Poll::Pending(unsettled))
    }

    /// `--pace`: terminate the zone's instances `batch` at a time without lowering the desired
    /// capacity, each batch only once the group's capacity is whole again (the previous batch's
    /// replacements InService in the other zones).
    pub(super) async fn pace_out(&self, name: &str, pace: &Pace) -> Result<()> {
        // Auto Scaling reads are eventually consistent: an instance just terminated can still show
        // InService for a while. Remembering what this run terminated keeps it from being
        // terminated again or counted as serving, which would let the next batch go at once.
        let terminated: Mutex<BTreeSet<String>> = Mutex::default();
        let alarms = crate::aws::alarms::Alarms::new(&self.sdk, &pace.alarms, &pace.alarm_prefixes);
        let timeout = Duration::from_secs(pace.timeout_secs);
        let paced = wait::until(timeout, POLL, |_| {
            self.pace_batch(name, pace, &terminated, alarms.as_ref())
        })
        .await?;
        paced.map_err(|(staying, held)| Error::NotSettled {
            resource: name.to_owned(),
            why: match held {
                NextBatch::Replacements => format!(
                    "replacements not InService within {}s; {staying} instance(s) still in {} (subnets already removed)",
                    pace.timeout_secs, pace.az_name
                ),
                NextBatch::Alarm(alarm) => format!(
                    "alarm {alarm} not OK within {}s; {staying} instance(s) still in {} (subnets already removed)",
                    pace.timeout_secs, pace.az_name
                ),
                NextBatch::Unreadable(why) => format!(
                    "the alarms could not be read within {}s ({why}); {staying} instance(s) still in {} (subnets \
                     already removed)",
                    pace.timeout_secs, pace.az_name
                ),
            },
        })
    }

    /// One look at a paced group: done when no instance stays in the zone; otherwise the next
    /// batch is terminated if the group's capacity is whole and every alarm it is gated on is OK,
    /// and the count still in the zone told. An alarm in ALARM (or gone) stops the pacing: what
    /// is still in the zone stays there.
    async fn pace_batch(
        &self,
        name: &str,
        pace: &Pace,
        terminated: &Mutex<BTreeSet<String>>,
        alarms: Option<&crate::aws::alarms::Alarms>,
    ) -> Result<Poll<(), (usize, NextBatch)>> {
        let group = self.group(name).await?;
        let members = members(&group);
        let (in_zone, elsewhere): (Vec<&Member>, Vec<&Member>) = members.iter().partition(|m| m.az == pace.az_name);
        let staying: Vec<&Member> = {
            let terminated = lock(terminated);
            in_zone
                .into_iter()
                .filter(|m| !m.state.starts_with("Terminating") && !terminated.contains(&m.id))
                .collect()
        };
        if staying.is_empty() {
            return Ok(Poll::Reached(()));
        }
        let serving = elsewhere.iter().filter(|m| m.state == "InService").count() + staying.len();
        let whole = serving >= usize::try_from(group.desired_capacity().unwrap_or(0)).unwrap_or(0);
        if !whole {
            crate::say!(
                "azevac: {}: waiting for replacements to be InService before the next batch",
                crate::model::text::clean(name)
            );
            return Ok(Poll::Pending((staying.len(), NextBatch::Replacements)));
        }
        if let Some(alarms) = alarms {
            // An alarm that cannot be read is not known to be OK: the batch waits, as for
            // INSUFFICIENT_DATA, and the next look reads it again.
            let readings = match alarms.read().await {
                Ok(readings) => readings,
                Err(e) => {
                    let why = crate::model::text::clean(&describe(&e));
                    crate::say!(
                        "azevac: {}: cannot read the alarms before the next batch ({why}); waiting",
                        crate::model::text::clean(name)
                    );
                    return Ok(Poll::Pending((staying.len(), NextBatch::Unreadable(why))));
                }
            };
            if let Some(firing) = crate::aws::alarms::firing(&readings).first() {
                return Err(Error::NotSettled {
                    resource: name.to_owned(),
                    why: format!(
                        "pacing stopped by alarm {}: {} instance(s) left in {} (its subnets are already out of the \
                         zone; nothing more is terminated)",
                        crate::aws::alarms::describe(firing),
                        staying.len(),
                        pace.az_name
                    ),
                });
            }
            if let Some(holding) = crate::aws::alarms::holding(&readings).first() {
                let alarm = crate::aws::alarms::describe(holding);
                crate::say!(
                    "azevac: {}: waiting for alarm {alarm} to be OK before the next batch",
                    crate::model::text::clean(name)
                );
                return Ok(Poll::Pending((staying.len(), NextBatch::Alarm(alarm))));
            }
        }
        for member in staying.iter().take(pace.batch as usize) {
            self.client
                .terminate_instance_in_auto_scaling_group()
                .instance_id(&member.id)
                .should_decrement_desired_capacity(false)
                .send()
                .await
                .map_err(|e| Error::from_sdk("autoscaling:TerminateInstanceInAutoScalingGroup", e))?;
            lock(terminated).insert(member.id.clone());
        }
        // Replacements take minutes to launch: the next look comes a poll later.
        tracing::info!(group = name, left = staying.len(), "paced a batch out of the zone");
        Ok(Poll::Pending((staying.len(), NextBatch::Replacements)))
    }
}

/// A lock that a panic elsewhere does not poison for good: the state it guards is a plain list.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether a group's capacity is where its subnets are (`--wait`): as many instances InService as
/// desired, none outside its zones, and, when it has enough instances for every zone, at least one
/// InService in each (capacity is back in a recovered zone).
pub(super) fn capacity_in_place(group: &Resource) -> std::result::Result<(), String> {
    let detail: GroupDetail = group.detail_as().map_err(|e| describe(&e))?;
    let (members, zones) = (detail.instances, detail.zones);
    let desired = usize::try_from(detail.desired).unwrap_or(usize::MAX);
    let serving: Vec<&Member> = members.iter().filter(|m| m.state == "InService").collect();
    if serving.len() < desired {
        return Err(format!("{} of {desired} instances InService", serving.len()));
    }
    if let Some(stray) = members.iter().find(|m| !zones.contains(&m.az)) {
        return Err(format!("instance {} is still in {}", stray.id, stray.az));
    }
    if desired >= zones.len() {
        if let Some(empty) = zones.iter().find(|z| !serving.iter().any(|m| &m.az == *z)) {
            return Err(format!("no instance InService in {empty} yet"));
        }
    }
    Ok(())
}
