//! EC2 Auto Scaling groups: subnets live in `VPCZoneIdentifier`, a comma-separated list.
//!
//! The kind's story: here the service (discover, read, set subnets, `--pace`, `--wait`, the
//! cross-zone guard); [`actions`] what a paced evacuation journals. The guard learns which load
//! balancers' traffic is shifted away from the zone through [`crate::plugins::shifted`], never
//! from the `zonal-shift` kind itself.

pub mod actions;
pub mod flags;
mod guard;
mod suspended;
#[cfg(test)]
mod tests;
mod waits;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_autoscaling::types::AutoScalingGroup;
use futures::{StreamExt, TryStreamExt};
use serde::{Deserialize, Serialize};

use super::subnets::Subnets;
use super::{Evacuation, Place, Plugin, Presence, Resource, Scope, Setup, SubnetService};
use crate::model::action::encode;
use crate::model::{timestamp, Identity, Plan, Record};
use crate::{Error, Result};

pub use actions::Action;
pub use guard::target_groups;
use waits::Pace;

/// The `--type` value and journal `resource_type` of Auto Scaling groups.
pub const TYPE: &str = "asg";

/// How the registry knows this kind: its calls, its IAM actions, its options.
pub const REGISTRATION: super::Registration = super::Registration {
    name: TYPE,
    services: &["autoscaling", "elasticloadbalancing", "arc-zonal-shift"],
    changes_through: &["autoscaling"],
    iam_actions: &[
        "autoscaling:DescribeAutoScalingGroups",
        "autoscaling:UpdateAutoScalingGroup",
        "autoscaling:SuspendProcesses",
        "autoscaling:ResumeProcesses",
        "autoscaling:TerminateInstanceInAutoScalingGroup",
        "elasticloadbalancing:DescribeTargetGroups",
        "elasticloadbalancing:DescribeTargetGroupAttributes",
        "elasticloadbalancing:DescribeLoadBalancers",
        "elasticloadbalancing:DescribeLoadBalancerAttributes",
        "arc-zonal-shift:ListZonalShifts",
    ],
    build: plugin,
    flags: Some(&flags::FLAGS),
    describe: crate::model::Record::words_as::<Action>,
    cluster: super::no_cluster,
    expiring: None,
};

/// Auto Scaling pages (and accepts names) 100 at a time.
const PAGE: usize = 100;
/// Pages of named groups read at once.
const READ_CONCURRENCY: usize = 4;

/// What an operator should know before an ASG loses subnets.
const REPLACEMENT_NOTE: &str =
    "Auto Scaling terminates the instances in the removed subnets and launches replacements in the rest";

/// The tag EKS puts on the Auto Scaling group of a managed node group.
const NODEGROUP_TAG: &str = "eks:nodegroup-name";

/// Why a managed node group's Auto Scaling group keeps its subnets, and what to do instead.
fn managed_node_group(nodegroup: &str) -> String {
    format!(
        "owned by EKS managed node group {nodegroup}: EKS does not support editing its subnets (the node group turns degraded); use the cluster's zonal shift (--zonal-shift, with the cluster registered with ARC) and the node taints (--type eks --kube-context)"
    )
}

/// The process that would move instances back into a zone on its own while azevac paces them out.
const AZ_REBALANCE: &str = "AZRebalance";
/// How often pacing and `--wait` look at a group again while waiting.
const POLL: Duration = Duration::from_secs(5);

/// What this plugin keeps in a group's `detail`: its own typed value, never read with a default.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct GroupDetail {
    /// The target groups (ARNs) its instances are registered with.
    #[serde(default)]
    target_groups: Vec<String>,
    /// Its instances.
    #[serde(default)]
    instances: Vec<Member>,
    /// Its zones (names).
    #[serde(default)]
    zones: Vec<String>,
    /// Its desired capacity.
    #[serde(default)]
    desired: u64,
    /// Its MaxSize.
    #[serde(default)]
    max: u64,
    /// Its suspended processes.
    #[serde(default)]
    suspended: Vec<String>,
    /// `--pace`, when planned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pace: Option<Pace>,
    /// Whether recovery resumes AZRebalance (azevac suspended it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    resume: bool,
}

/// One instance of a group, as `detail` keeps it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Member {
    id: String,
    az: String,
    state: String,
}

/// The Auto Scaling groups plugin.
#[derive(Debug, Clone)]
pub struct AutoScaling {
    client: aws_sdk_autoscaling::Client,
    sdk: aws_config::SdkConfig,
    force: bool,
    options: flags::Options,
}

/// Registry constructor: Auto Scaling applies to every run.
pub fn plugin(setup: &Setup) -> futures::future::BoxFuture<'_, Result<Option<Box<dyn Plugin>>>> {
    Box::pin(async move {
        let service = AutoScaling {
            client: crate::client!(aws_sdk_autoscaling, &setup.sdk),
            sdk: setup.sdk.clone(),
            force: setup.request.force,
            options: setup.request.options_as()?,
        };
        Ok(Some(Subnets::journalling::<Action>(service, &setup.sdk)))
    })
}

#[async_trait]
impl SubnetService for AutoScaling {
    fn resource_type(&self) -> &'static str {
        TYPE
    }

    async fn discover(&self) -> Result<Vec<Resource>> {
        Ok(self.describe(None).await?.into_iter().map(to_resource).collect())
    }

    async fn read(&self, ids: &[String]) -> Result<BTreeMap<String, Resource>> {
        let names: Vec<String> = ids.iter().filter_map(|arn| name_from_arn(arn)).collect();
        let wanted: BTreeSet<&String> = ids.iter().collect();
        // A recover of 1,000 groups reads 10 pages: one after the other they serialise the plan on
        // the call latency. Collected first: a lazy map inside the stream trips async-trait's Send check.
        let reads: Vec<_> = names.chunks(PAGE).map(|chunk| self.describe(Some(chunk))).collect();
        let pages: Vec<Vec<AutoScalingGroup>> = futures::stream::iter(reads)
            .buffer_unordered(READ_CONCURRENCY)
            .try_collect()
            .await?;
        // A group deleted and re-created under the same name has a new ARN: it is not ours.
        Ok(pages
            .into_iter()
            .flatten()
            .map(to_resource)
            .filter(|r| wanted.contains(&r.id))
            .map(|r| (r.id.clone(), r))
            .collect())
    }

    async fn apply(&self, resource: &Resource, subnets: &[String]) -> Result<()> {
        let detail: GroupDetail = resource.detail_as()?;
        let pace = detail.pace;
        // Suspended first, so that Auto Scaling does not rebalance the zone out all at once.
        if pace.as_ref().is_some_and(|p| p.suspend) {
            self.client
                .suspend_processes()
                .auto_scaling_group_name(&resource.name)
                .scaling_processes(AZ_REBALANCE)
                .send()
                .await
                .map_err(|e| Error::from_sdk("autoscaling:SuspendProcesses", e))?;
        }
        self.client
            .update_auto_scaling_group()
            .auto_scaling_group_name(&resource.name)
            .vpc_zone_identifier(subnets.join(","))
            .send()
            .await
            .map_err(|e| Error::from_sdk("autoscaling:UpdateAutoScalingGroup", e))?;
        if let Some(pace) = pace {
            self.pace_out(&resource.name, &pace).await?;
        }
        if detail.resume {
            self.client
                .resume_processes()
                .auto_scaling_group_name(&resource.name)
                .scaling_processes(AZ_REBALANCE)
                .send()
                .await
                .map_err(|e| Error::from_sdk("autoscaling:ResumeProcesses", e))?;
        }
        Ok(())
    }

    /// The group's instances in the zone (from discovery: no extra call); each needs an address
    /// elsewhere. MaxSize: see [`at_max_size`].
    async fn presence(&self, resources: &[Resource], place: &Place<'_>) -> Result<BTreeMap<String, Presence>> {
        let mut found = BTreeMap::new();
        for resource in resources {
            let detail: GroupDetail = resource.detail_as()?;
            let in_zone: Vec<String> = detail
                .instances
                .iter()
                .filter(|m| m.az == place.zone.name && !m.state.starts_with("Terminat"))
                .map(|m| m.id.clone())
                .collect();
            let note = at_max_size(&detail, in_zone.len());
            found.insert(
                resource.id.clone(),
                Presence {
                    needs: in_zone.clone(),
                    in_zone,
                    units: "instances",
                    note,
                },
            );
        }
        Ok(found)
    }

    fn plan_evacuation(&self, resource: &mut Resource, how: &Evacuation) -> Result<Vec<String>> {
        let Some(batch) = self.options.pace else {
            return Ok(Vec::new());
        };
        let mut detail: GroupDetail = resource.detail_as()?;
        // Nothing would replace what pacing terminates: the subnets alone are changed, and the
        // line's note says why ([`suspended::staying`]).
        if !suspended::paces(&detail) {
            return Ok(Vec::new());
        }
        let suspend = !detail.suspended.iter().any(|p| p == AZ_REBALANCE);
        let in_zone = detail.instances.iter().filter(|m| m.az == how.az_name).count();
        detail.pace = Some(Pace {
            batch,
            az_name: how.az_name.clone(),
            suspend,
            timeout_secs: self.options.pace_timeout_seconds.unwrap_or(how.timeout.as_secs()),
            alarms: self.options.pace_alarms.clone(),
            alarm_prefixes: self.options.pace_alarm_prefixes.clone(),
        });
        resource.set_detail(&detail);
        let mut actions = Vec::new();
        if suspend {
            actions.push(Action::Suspend {
                process: AZ_REBALANCE.to_owned(),
            });
        }
        actions.push(Action::Terminate { in_zone, batch });
        Ok(encode(&actions))
    }

    /// Resumes AZRebalance where the record says azevac suspended it and it is suspended still. A
    /// record whose actions this version cannot read fails its line.
    fn plan_recovery(&self, resource: &mut Resource, record: &Record) -> Result<Vec<String>> {
        let suspended = Action::Suspend {
            process: AZ_REBALANCE.to_owned(),
        };
        if !record.actions_as::<Action>()?.contains(&suspended) {
            return Ok(Vec::new());
        }
        let mut detail: GroupDetail = resource.detail_as()?;
        if !detail.suspended.iter().any(|p| p == AZ_REBALANCE) {
            return Ok(Vec::new());
        }
        detail.resume = true;
        resource.set_detail(&detail);
        Ok(vec![format!("resume:{AZ_REBALANCE}")])
    }

    async fn review(&self, plan: &mut Plan, scope: &Scope<'_>) -> Result<()> {
        if scope.command == crate::model::Command::Evacuate {
            if let Some(zone) = scope.zone {
                self.what_stays(plan, &zone.name);
            }
            // A gate on an alarm that is not there would let every batch through: bad input, before
            // any change (the alarms are read where the groups are).
            let alarms = crate::aws::alarms::Alarms::new(
                &self.sdk,
                &self.options.pace_alarms,
                &self.options.pace_alarm_prefixes,
            );
            if let Some(alarms) = alarms {
                alarms.check_as("--pace-alarm", "--pace-alarm-prefix").await?;
            }
            self.guard_cross_zone(plan, scope.az_id()).await?;
        }
        Ok(())
    }

    async fn settle(&self, resources: &[Resource], timeout: Duration) -> Result<Vec<(String, String)>> {
        self.capacity_settled(resources, timeout).await
    }

    async fn probe(&self) -> Vec<super::Check> {
        let groups = self.client.describe_auto_scaling_groups().max_records(1).send().await;
        // The cross-zone check reads the groups' load balancers.
        let elb = crate::client!(aws_sdk_elasticloadbalancingv2, &self.sdk);
        let balancers = elb.describe_load_balancers().page_size(1).send().await;
        vec![
            super::Check::answered(TYPE, "autoscaling:DescribeAutoScalingGroups", groups),
            super::Check::answered(TYPE, "elasticloadbalancing:DescribeLoadBalancers", balancers),
        ]
    }
}

impl AutoScaling {
    /// Each planned group line whose instances a suspended process keeps in the zone says so, in
    /// place of "replaced" ([`suspended::staying`]).
    fn what_stays(&self, plan: &mut Plan, az_name: &str) {
        for item in plan
            .items
            .iter_mut()
            .filter(|i| i.resource_type == TYPE && i.status == crate::model::Status::Planned)
        {
            let Some(detail) = item.target.as_ref().and_then(|t| t.detail_as::<GroupDetail>().ok()) else {
                continue;
            };
            let in_zone = suspended::in_zone(&detail, az_name).len();
            let by_azevac = suspended::suspended_by_azevac(item.record.as_ref());
            if let Some(note) = suspended::staying(&detail, in_zone, self.options.pace, by_azevac) {
                item.notes.retain(|n| n != REPLACEMENT_NOTE);
                item.notes.insert(0, note);
            }
        }
    }

    /// The groups of these names (at most [`PAGE`]; `None`: every group), every page of the answer.
    async fn describe(&self, names: Option<&[String]>) -> Result<Vec<AutoScalingGroup>> {
        self.client
            .describe_auto_scaling_groups()
            .set_auto_scaling_group_names(names.map(<[String]>::to_vec))
            .max_records(PAGE as i32)
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .map_err(|e| Error::from_sdk("autoscaling:DescribeAutoScalingGroups", e))
    }
    /// One group as it is now.
    async fn group(&self, name: &str) -> Result<AutoScalingGroup> {
        let out = self
            .client
            .describe_auto_scaling_groups()
            .auto_scaling_group_names(name)
            .send()
            .await
            .map_err(|e| Error::from_sdk("autoscaling:DescribeAutoScalingGroups", e))?;
        out.auto_scaling_groups()
            .first()
            .cloned()
            .ok_or_else(|| Error::NotSettled {
                resource: name.to_owned(),
                why: "the group no longer exists".into(),
            })
    }
}

/// The MaxSize check. What must fit outside the zone is the desired capacity, which MaxSize
/// always holds; but with the subnets removed alone Auto Scaling rebalances launch-first, and
/// exceeds MaxSize by only 10% (at least 1 instance) meanwhile: a group at MaxSize with more
/// instances in the zone than that margin empties the zone a few at a time. `--pace` terminates
/// first (desired unchanged) and is not held by MaxSize. `None` when the margin covers the zone.
fn at_max_size(detail: &GroupDetail, in_zone: usize) -> Option<String> {
    let margin = (detail.max / 10).max(1);
    let room = (detail.max + margin).saturating_sub(detail.desired);
    let in_zone = u64::try_from(in_zone).unwrap_or(u64::MAX);
    (detail.max > 0 && in_zone > room).then(|| {
        format!(
            "MaxSize {} leaves room for {room} replacement(s) at a time beyond desired {}: Auto Scaling launches before it terminates, so {in_zone} instances leave the zone {room} at a time (raise MaxSize, or --pace)",
            detail.max, detail.desired
        )
    })
}

/// A group's instances with their zone and lifecycle state.
fn members(group: &AutoScalingGroup) -> Vec<Member> {
    group
        .instances()
        .iter()
        .map(|i| Member {
            id: i.instance_id().unwrap_or_default().to_owned(),
            az: i.availability_zone().unwrap_or_default().to_owned(),
            state: i.lifecycle_state().map(|s| s.as_str().to_owned()).unwrap_or_default(),
        })
        .collect()
}
fn to_resource(group: AutoScalingGroup) -> Resource {
    let subnets = group
        .vpc_zone_identifier()
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    let tags = super::tags::fold(group.tags().iter().map(|t| (t.key(), t.value())));
    let unsupported = tags.get(NODEGROUP_TAG).map(|n: &String| managed_node_group(n));
    Resource {
        resource_type: TYPE,
        id: group.auto_scaling_group_arn().unwrap_or_default().to_owned(),
        name: group.auto_scaling_group_name().unwrap_or_default().to_owned(),
        subnets,
        tags,
        unsupported,
        notes: vec![REPLACEMENT_NOTE.to_owned()],
        detail: serde_json::json!({
            "target_groups": group.target_group_arns(),
            "instances": members(&group),
            "zones": group.availability_zones(),
            "desired": group.desired_capacity().unwrap_or(0),
            "max": group.max_size().unwrap_or(0),
            "suspended": group
                .suspended_processes()
                .iter()
                .filter_map(|p| p.process_name())
                .collect::<Vec<_>>(),
        }),
        // `CreatedTime`, "the date and time the group was created"
        // (<https://docs.aws.amazon.com/autoscaling/ec2/APIReference/API_AutoScalingGroup.html>).
        identity: Identity::created_at(group.created_time().and_then(timestamp)),
    }
}

/// `arn:aws:autoscaling:REGION:ACCOUNT:autoScalingGroup:UUID:autoScalingGroupName/NAME` → `NAME`.
fn name_from_arn(arn: &str) -> Option<String> {
    arn.split_once(":autoScalingGroupName/")
        .map(|(_, name)| name.to_owned())
}
