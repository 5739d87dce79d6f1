//! `azevac exposure`, the kinds no plugin moves: EC2 instances that no Auto Scaling group owns, and
//! EBS volumes there that outlive their instance (the workloads pinned to the zone). Interface VPC
//! endpoints left this list for a kind of their own (`--type vpc-endpoint`). Each is listed with why azevac cannot move it
//! and what to do instead. Read-only: describe calls only, batched and paginated.

use std::collections::BTreeSet;

use aws_sdk_ec2::types::{Filter, Tag};
use futures::future::BoxFuture;

use crate::model::topology::Zone;
use crate::model::Finding;
use crate::{Error, Result};

/// The tag Auto Scaling puts on the instances of a group.
const GROUP_TAG: &str = "aws:autoscaling:groupName";

/// What the kinds here are read from.
#[derive(Debug, Clone, Copy)]
pub struct Where<'a> {
    /// EC2.
    pub ec2: &'a aws_sdk_ec2::Client,
    /// The zone.
    pub zone: &'a Zone,
    /// Its subnets.
    pub zone_subnets: &'a BTreeSet<String>,
}

/// A kind no plugin moves: its name, what reading it needs and how its findings are read.
pub struct Kind {
    /// The finding's `kind`.
    pub name: &'static str,
    /// The IAM actions its reads need (the IAM policy and, for `exposure --accounts`, the member
    /// role grant them; tests/it/registry.rs counts them).
    pub iam_actions: &'static [&'static str],
    /// Reads its findings.
    pub read: for<'a> fn(Where<'a>) -> BoxFuture<'a, Result<Vec<Finding>>>,
}

/// The kinds read here, in the order they are listed. Not a list of azevac's types, and not derived
/// from the registry: these are what no type moves (a registered type reports its own findings
/// through `Plugin::exposure`), so a new type adds nothing here; one of these becomes a type only by
/// leaving this list for a plugin of its own.
pub const KINDS: &[Kind] = &[
    Kind {
        name: INSTANCE,
        iam_actions: &["ec2:DescribeInstances"],
        read: |w| Box::pin(standalone_instances(w)),
    },
    Kind {
        name: VOLUME,
        iam_actions: &["ec2:DescribeVolumes"],
        read: |w| Box::pin(pinned_volumes(w)),
    },
];

/// `kind` of an EC2 instance that no group owns.
pub const INSTANCE: &str = "ec2-instance";
/// `kind` of an attached EBS volume.
pub const VOLUME: &str = "ebs-volume";

fn name_tag(tags: &[Tag]) -> Option<&str> {
    tags.iter().find(|t| t.key() == Some("Name")).and_then(|t| t.value())
}

fn filter(name: &str, values: &[&str]) -> Filter {
    Filter::builder()
        .name(name)
        .set_values(Some(values.iter().map(|v| (*v).to_owned()).collect()))
        .build()
}

/// Live instances in the zone without the Auto Scaling group tag.
async fn standalone_instances(w: Where<'_>) -> Result<Vec<Finding>> {
    let reservations: Vec<aws_sdk_ec2::types::Reservation> = w
        .ec2
        .describe_instances()
        .filters(filter("availability-zone", &[&w.zone.name]))
        .filters(filter(
            "instance-state-name",
            &["pending", "running", "stopping", "stopped"],
        ))
        .into_paginator()
        .items()
        .send()
        .try_collect()
        .await
        .map_err(|e| Error::from_sdk("ec2:DescribeInstances", e))?;
    Ok(reservations
        .iter()
        .flat_map(|r| r.instances())
        .filter(|i| !i.tags().iter().any(|t| t.key() == Some(GROUP_TAG)))
        .filter_map(|i| {
            let id = i.instance_id()?;
            let state = i
                .state()
                .and_then(|s| s.name())
                .map(|n| n.as_str())
                .unwrap_or("unknown");
            let mut found = Finding::new(INSTANCE, id, name_tag(i.tags()).unwrap_or(id), vec![id.to_owned()])
                .not_movable(
                    "no Auto Scaling group owns it: azevac cannot move it; launch a replacement in another zone \
                     (or put the workload in a group) and stop this one",
                );
            found.notes.push(format!("state {state}"));
            Some(found)
        })
        .collect())
}

/// Attached volumes in the zone that outlive their instance (`DeleteOnTermination` off): the data
/// a workload keeps in the zone. Root volumes that go with their instance move with it.
async fn pinned_volumes(w: Where<'_>) -> Result<Vec<Finding>> {
    let volumes: Vec<aws_sdk_ec2::types::Volume> = w
        .ec2
        .describe_volumes()
        .filters(filter("availability-zone", &[&w.zone.name]))
        .filters(filter("attachment.status", &["attached", "attaching"]))
        .into_paginator()
        .items()
        .send()
        .try_collect()
        .await
        .map_err(|e| Error::from_sdk("ec2:DescribeVolumes", e))?;
    Ok(volumes
        .iter()
        .filter_map(|v| {
            let id = v.volume_id()?;
            let kept: Vec<String> = v
                .attachments()
                .iter()
                .filter(|a| a.delete_on_termination() != Some(true))
                .filter_map(|a| a.instance_id().map(str::to_owned))
                .collect();
            if kept.is_empty() {
                return None;
            }
            let why = format!(
                "an EBS volume cannot leave its zone: the workload on {} is pinned here; snapshot it \
                 (aws ec2 create-snapshot --volume-id {id}) and restore it in another zone",
                kept.join(", ")
            );
            let mut found = Finding::new(VOLUME, id, name_tag(v.tags()).unwrap_or(id), kept).not_movable(why);
            found.notes.push(format!("{} GiB", v.size().unwrap_or_default()));
            Some(found)
        })
        .collect())
}
