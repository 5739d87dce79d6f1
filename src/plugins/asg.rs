//! EC2 Auto Scaling groups: subnets live in `VPCZoneIdentifier`, a comma-separated list.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use aws_sdk_autoscaling::types::AutoScalingGroup;
use futures::{StreamExt, TryStreamExt};
use serde::{Deserialize, Serialize};

use super::subnets::Subnets;

pub mod flags;
use super::{zonal_shift, Evacuation, Place, Plugin, Presence, Resource, Scope, Setup, SubnetService};
use crate::crosszone;
use crate::error::describe;
use crate::model::{Item, Plan, Record, Status};
use crate::{Error, Result};

/// The `--type` value and journal `resource_type` of Auto Scaling groups.
pub const TYPE: &str = "asg";

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
/// The journal action for a suspension azevac made (and will undo).
const SUSPENDED: &str = "suspend:AZRebalance";
/// How often pacing and `--wait` look at a group again while waiting.
const POLL: Duration = Duration::from_secs(5);

/// `--pace`, as planned for one group and carried to `apply` in its detail.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Pace {
    /// Instances terminated at once.
    batch: u32,
    /// The zone's name (instances report their zone by name).
    az_name: String,
    /// Whether azevac suspends AZRebalance (it was not suspended already).
    suspend: bool,
    /// How long to wait for replacements in all, in seconds.
    timeout_secs: u64,
}

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
        Ok(Some(Subnets::plugin(service, &setup.sdk)))
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
        let wanted: std::collections::BTreeSet<&String> = ids.iter().collect();
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
        let suspend = !detail.suspended.iter().any(|p| p == AZ_REBALANCE);
        let in_zone = detail.instances.iter().filter(|m| m.az == how.az_name).count();
        detail.pace = Some(Pace {
            batch,
            az_name: how.az_name.clone(),
            suspend,
            timeout_secs: self.options.pace_timeout_seconds.unwrap_or(how.timeout.as_secs()),
        });
        resource.set_detail(&detail);
        let mut actions = Vec::new();
        if suspend {
            actions.push(SUSPENDED.to_owned());
        }
        actions.push(format!("terminate:{in_zone} in the zone, {batch} at a time"));
        Ok(actions)
    }

    fn plan_recovery(&self, resource: &mut Resource, record: &Record) -> Result<Vec<String>> {
        if !record.actions.iter().any(|a| a == SUSPENDED) {
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
            self.guard_cross_zone(plan, scope.az_id()).await?;
        }
        Ok(())
    }

    async fn settle(&self, resources: &[Resource], timeout: Duration) -> Result<Vec<(String, String)>> {
        let deadline = Instant::now() + timeout;
        let mut waiting: Vec<String> = resources.iter().map(|r| r.id.clone()).collect();
        crate::say!(
            "azevac: waiting up to {} for {} Auto Scaling group(s) to have their capacity InService in their zones",
            humantime::format_duration(timeout),
            waiting.len()
        );
        loop {
            let groups = self.read(&waiting).await?;
            let mut unsettled = Vec::new();
            for id in &waiting {
                let why = match groups.get(id) {
                    None => Some("the group no longer exists".to_owned()),
                    Some(group) => capacity_in_place(group).err(),
                };
                if let Some(why) = why {
                    unsettled.push((id.clone(), why));
                }
            }
            if unsettled.is_empty() {
                return Ok(Vec::new());
            }
            if Instant::now() + POLL > deadline {
                return Ok(unsettled
                    .into_iter()
                    .map(|(id, why)| {
                        (
                            id,
                            format!("not settled within {}: {why}", humantime::format_duration(timeout)),
                        )
                    })
                    .collect());
            }
            waiting = unsettled.into_iter().map(|(id, _)| id).collect();
            tokio::time::sleep(POLL).await;
        }
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

    /// `--pace`: terminate the zone's instances `batch` at a time without lowering the desired
    /// capacity, each batch only once the group's capacity is whole again (the previous batch's
    /// replacements InService in the other zones).
    async fn pace_out(&self, name: &str, pace: &Pace) -> Result<()> {
        // tokio's clock, which tests can pause, rather than the wall clock.
        let now = tokio::time::Instant::now;
        let deadline = now() + Duration::from_secs(pace.timeout_secs);
        // Auto Scaling reads are eventually consistent: an instance just terminated can still show
        // InService for a while. Remembering what this run terminated keeps it from being
        // terminated again or counted as serving, which would let the next batch go at once.
        let mut terminated: std::collections::BTreeSet<String> = Default::default();
        loop {
            let group = self.group(name).await?;
            let members = members(&group);
            let (in_zone, elsewhere): (Vec<&Member>, Vec<&Member>) = members.iter().partition(|m| m.az == pace.az_name);
            let staying: Vec<&Member> = in_zone
                .into_iter()
                .filter(|m| !m.state.starts_with("Terminating") && !terminated.contains(&m.id))
                .collect();
            if staying.is_empty() {
                return Ok(());
            }
            let serving = elsewhere.iter().filter(|m| m.state == "InService").count() + staying.len();
            let whole = serving >= usize::try_from(group.desired_capacity().unwrap_or(0)).unwrap_or(0);
            if whole {
                for member in staying.iter().take(pace.batch as usize) {
                    self.client
                        .terminate_instance_in_auto_scaling_group()
                        .instance_id(&member.id)
                        .should_decrement_desired_capacity(false)
                        .send()
                        .await
                        .map_err(|e| Error::from_sdk("autoscaling:TerminateInstanceInAutoScalingGroup", e))?;
                    terminated.insert(member.id.clone());
                }
                tracing::info!(group = name, left = staying.len(), "paced a batch out of the zone");
                // Replacements take minutes to launch: no reason to read again at once.
                tokio::time::sleep(POLL).await;
                continue;
            }
            if now() + POLL > deadline {
                return Err(Error::NotSettled {
                    resource: name.to_owned(),
                    why: format!(
                        "replacements not InService within {}s; {} instance(s) still in {} (subnets already removed)",
                        pace.timeout_secs,
                        staying.len(),
                        pace.az_name
                    ),
                });
            }
            crate::say!(
                "azevac: {}: waiting for replacements to be InService before the next batch",
                crate::text::clean(name)
            );
            tokio::time::sleep(POLL).await;
        }
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

/// Whether a group's capacity is where its subnets are (`--wait`): as many instances InService as
/// desired, none outside its zones, and, when it has enough instances for every zone, at least one
/// InService in each (capacity is back in a recovered zone).
fn capacity_in_place(group: &Resource) -> std::result::Result<(), String> {
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

fn to_resource(group: AutoScalingGroup) -> Resource {
    let subnets = group
        .vpc_zone_identifier()
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    let tags: BTreeMap<String, String> = group
        .tags()
        .iter()
        .filter_map(|t| Some((t.key()?.to_owned(), t.value().unwrap_or_default().to_owned())))
        .collect();
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
        identity: None,
    }
}

/// The target groups (ARNs) a group's instances are registered with, from its discovered state.
pub fn target_groups(resource: &Resource) -> Result<Vec<String>> {
    Ok(resource.detail_as::<GroupDetail>()?.target_groups)
}

impl AutoScaling {
    /// The cross-zone check on every planned group line that has target groups: costs ELB reads only
    /// for those, and an ARC read only when a balancer without cross-zone load balancing is found.
    async fn guard_cross_zone(&self, plan: &mut Plan, az_id: &str) -> Result<()> {
        let is_group = |i: &Item| i.resource_type == TYPE && i.status == Status::Planned;
        let mut all_groups: std::collections::BTreeSet<String> = Default::default();
        for item in plan.items.iter_mut().filter(|i| is_group(i)) {
            match item.target.as_ref().map(target_groups) {
                Some(Ok(groups)) => all_groups.extend(groups),
                Some(Err(e)) => item.fail(describe(&e)),
                None => {}
            }
        }
        if all_groups.is_empty() {
            return Ok(());
        }
        let zonal = crosszone::zonal_balancers(&self.sdk, &all_groups).await?;
        if zonal.values().all(Vec::is_empty) {
            return Ok(());
        }
        let mut shifted = crosszone::Shifted::default();
        for item in plan.items.iter().filter(|i| i.resource_type == zonal_shift::TYPE) {
            // A skipped shift line has a shift (ours or not) in progress: the active list below decides.
            if item.status == Status::Planned {
                let arn = zonal_shift::arn_of(&item.resource).to_owned();
                shifted.planned.insert(arn, item.resource.clone());
            }
        }
        match zonal_shift::Shifts::new(&self.sdk).active(None).await {
            Ok(active) => shifted.active.extend(
                active
                    .into_iter()
                    .filter(|(_, a)| a.away_from == az_id)
                    .map(|(arn, _)| arn),
            ),
            Err(e) => shifted.unknown = Some(describe(&e)),
        }
        for item in plan.items.iter_mut().filter(|i| is_group(i)) {
            let groups = item
                .target
                .as_ref()
                .map(target_groups)
                .and_then(Result::ok)
                .unwrap_or_default();
            let balancers: Vec<crosszone::Zonal> = groups
                .iter()
                .filter_map(|tg| zonal.get(tg))
                .flatten()
                .cloned()
                .collect();
            crosszone::check(item, &balancers, &shifted, self.force);
        }
        Ok(())
    }
}

/// `arn:aws:autoscaling:REGION:ACCOUNT:autoScalingGroup:UUID:autoScalingGroupName/NAME` → `NAME`.
fn name_from_arn(arn: &str) -> Option<String> {
    arn.split_once(":autoScalingGroupName/")
        .map(|(_, name)| name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(desired: u64, zones: &[&str], members: &[(&str, &str)]) -> Resource {
        let members: Vec<Member> = members
            .iter()
            .enumerate()
            .map(|(n, (az, state))| Member {
                id: format!("i-{n}"),
                az: az.to_string(),
                state: state.to_string(),
            })
            .collect();
        Resource {
            detail: serde_json::json!({ "instances": members, "zones": zones, "desired": desired }),
            ..Resource::default()
        }
    }

    #[test]
    fn capacity_is_in_place_when_every_zone_serves() {
        let zones = ["us-east-1b", "us-east-1c"];
        let ok = group(2, &zones, &[("us-east-1b", "InService"), ("us-east-1c", "InService")]);
        assert_eq!(capacity_in_place(&ok), Ok(()));
        let short = group(2, &zones, &[("us-east-1b", "InService"), ("us-east-1c", "Pending")]);
        assert_eq!(capacity_in_place(&short), Err("1 of 2 instances InService".into()));
        let lopsided = group(2, &zones, &[("us-east-1b", "InService"), ("us-east-1b", "InService")]);
        assert_eq!(
            capacity_in_place(&lopsided),
            Err("no instance InService in us-east-1c yet".into())
        );
        let stray = group(
            1,
            &["us-east-1b"],
            &[("us-east-1b", "InService"), ("us-east-1c", "InService")],
        );
        assert!(capacity_in_place(&stray)
            .err()
            .unwrap_or_default()
            .contains("still in us-east-1c"));
        // Fewer instances than zones: one zone may stay empty.
        let small = group(1, &zones, &[("us-east-1b", "InService")]);
        assert_eq!(capacity_in_place(&small), Ok(()));
    }

    #[test]
    fn a_group_at_max_size_moves_out_a_margin_at_a_time() {
        let detail = |desired, max| GroupDetail {
            desired,
            max,
            ..GroupDetail::default()
        };
        assert_eq!(at_max_size(&detail(4, 8), 4), None);
        let note = at_max_size(&detail(4, 4), 2).unwrap_or_default();
        assert!(note.contains("room for 1 replacement(s)"), "{note}");
        assert_eq!(at_max_size(&detail(20, 20), 2), None, "10% of 20 is 2");
    }

    #[test]
    fn name_comes_from_the_arn() {
        let arn = "arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:0a1b:autoScalingGroupName/web/blue";
        assert_eq!(name_from_arn(arn).as_deref(), Some("web/blue"));
        assert_eq!(name_from_arn("web"), None);
    }

    #[test]
    fn subnets_come_from_vpc_zone_identifier() {
        let group = AutoScalingGroup::builder()
            .auto_scaling_group_name("web")
            .auto_scaling_group_arn("arn:web")
            .vpc_zone_identifier("subnet-a, subnet-b,,subnet-c")
            .build();
        assert_eq!(to_resource(group).subnets, ["subnet-a", "subnet-b", "subnet-c"]);
    }

    /// Issue 13: a group whose reads still show a terminated instance InService (Auto Scaling is
    /// eventually consistent) must not have it terminated again, nor the next batch terminated
    /// at once: one instance goes, then the run waits for its replacement and times out.
    #[tokio::test]
    async fn issue_13_pacing_terminates_each_instance_once_and_waits() {
        use aws_sdk_autoscaling::operation::describe_auto_scaling_groups::DescribeAutoScalingGroupsOutput;
        use aws_sdk_autoscaling::operation::terminate_instance_in_auto_scaling_group::TerminateInstanceInAutoScalingGroupOutput;
        use aws_sdk_autoscaling::types::{Instance, LifecycleState};
        use aws_smithy_mocks::{mock, mock_client, RuleMode};
        let instance = |id: &str| {
            Instance::builder()
                .instance_id(id)
                .availability_zone("us-east-1c")
                .lifecycle_state(LifecycleState::InService)
                .health_status("Healthy")
                .protected_from_scale_in(false)
                .build()
        };
        let stale = mock!(aws_sdk_autoscaling::Client::describe_auto_scaling_groups)
            .sequence()
            .output(move || {
                let group = AutoScalingGroup::builder()
                    .auto_scaling_group_name("web")
                    .desired_capacity(2)
                    .instances(instance("i-a"))
                    .instances(instance("i-b"))
                    .build();
                DescribeAutoScalingGroupsOutput::builder()
                    .auto_scaling_groups(group)
                    .build()
            })
            .repeatedly()
            .build();
        let terminate = mock!(aws_sdk_autoscaling::Client::terminate_instance_in_auto_scaling_group)
            .sequence()
            .output(|| TerminateInstanceInAutoScalingGroupOutput::builder().build())
            .repeatedly()
            .build();
        let client = mock_client!(aws_sdk_autoscaling, RuleMode::MatchAny, [&stale, &terminate]);
        let asg = AutoScaling {
            client,
            sdk: aws_config::SdkConfig::builder().build(),
            force: false,
            options: flags::Options::default(),
        };
        let pace = Pace {
            batch: 1,
            az_name: "us-east-1c".into(),
            suspend: false,
            timeout_secs: 1,
        };
        // Bounded, so that the old behaviour (terminating for ever) fails instead of hanging.
        let err = tokio::time::timeout(Duration::from_secs(60), asg.pace_out("web", &pace))
            .await
            .expect("pacing ends at its deadline")
            .expect_err("the replacement never comes");
        assert!(matches!(err, Error::NotSettled { .. }), "{err}");
        assert_eq!(terminate.num_calls(), 1, "one batch of one, terminated once");
    }

    #[test]
    fn a_managed_node_groups_group_is_not_changed() {
        let group = AutoScalingGroup::builder()
            .auto_scaling_group_name("eks-general-1")
            .auto_scaling_group_arn("arn:eks-general-1")
            .vpc_zone_identifier("subnet-a,subnet-b")
            .tags(
                aws_sdk_autoscaling::types::TagDescription::builder()
                    .key(NODEGROUP_TAG)
                    .value("general")
                    .build(),
            )
            .build();
        let why = to_resource(group).unsupported.unwrap_or_default();
        assert!(
            why.contains("managed node group general") && why.contains("--zonal-shift"),
            "{why}"
        );
    }
}
