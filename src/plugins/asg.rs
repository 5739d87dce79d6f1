//! EC2 Auto Scaling groups: subnets live in `VPCZoneIdentifier`, a comma-separated list.

use std::collections::BTreeMap;

use async_trait::async_trait;
use aws_sdk_autoscaling::types::AutoScalingGroup;

use super::{Plugin, Resource, Setup};
use crate::{Error, Result};

/// The `--type` value and journal `resource_type` of Auto Scaling groups.
pub const TYPE: &str = "asg";

/// Auto Scaling pages (and accepts names) 100 at a time.
const PAGE: usize = 100;

/// What an operator should know before an ASG loses subnets.
const REPLACEMENT_NOTE: &str =
    "Auto Scaling terminates the instances in the removed subnets and launches replacements in the rest";

/// The Auto Scaling groups plugin.
#[derive(Debug, Clone)]
pub struct AutoScaling {
    client: aws_sdk_autoscaling::Client,
}

/// Registry constructor: Auto Scaling applies to every run.
pub fn plugin(setup: &Setup) -> Option<Box<dyn Plugin>> {
    Some(Box::new(AutoScaling {
        client: crate::client!(aws_sdk_autoscaling, &setup.sdk),
    }))
}

#[async_trait]
impl Plugin for AutoScaling {
    fn resource_type(&self) -> &'static str {
        TYPE
    }

    async fn discover(&self) -> Result<Vec<Resource>> {
        let groups = self
            .client
            .describe_auto_scaling_groups()
            .max_records(PAGE as i32)
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .map_err(|e| Error::from_sdk("autoscaling:DescribeAutoScalingGroups", e))?;
        Ok(groups.into_iter().map(to_resource).collect())
    }

    async fn read(&self, ids: &[String]) -> Result<BTreeMap<String, Resource>> {
        let names: Vec<String> = ids.iter().filter_map(|arn| name_from_arn(arn)).collect();
        let mut found = BTreeMap::new();
        for chunk in names.chunks(PAGE) {
            let groups: Vec<AutoScalingGroup> = self
                .client
                .describe_auto_scaling_groups()
                .set_auto_scaling_group_names(Some(chunk.to_vec()))
                .max_records(PAGE as i32)
                .into_paginator()
                .items()
                .send()
                .try_collect()
                .await
                .map_err(|e| Error::from_sdk("autoscaling:DescribeAutoScalingGroups", e))?;
            // A group deleted and re-created under the same name has a new ARN: it is not ours.
            found.extend(
                groups
                    .into_iter()
                    .map(to_resource)
                    .filter(|r| ids.contains(&r.id))
                    .map(|r| (r.id.clone(), r)),
            );
        }
        Ok(found)
    }

    async fn apply(&self, resource: &Resource, subnets: &[String]) -> Result<()> {
        self.client
            .update_auto_scaling_group()
            .auto_scaling_group_name(&resource.name)
            .vpc_zone_identifier(subnets.join(","))
            .send()
            .await
            .map_err(|e| Error::from_sdk("autoscaling:UpdateAutoScalingGroup", e))?;
        Ok(())
    }
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
    let tags = group
        .tags()
        .iter()
        .filter_map(|t| Some((t.key()?.to_owned(), t.value().unwrap_or_default().to_owned())))
        .collect();
    Resource {
        resource_type: TYPE,
        id: group.auto_scaling_group_arn().unwrap_or_default().to_owned(),
        name: group.auto_scaling_group_name().unwrap_or_default().to_owned(),
        subnets,
        tags,
        unsupported: None,
        notes: vec![REPLACEMENT_NOTE.to_owned()],
        detail: serde_json::json!({ "target_groups": group.target_group_arns() }),
    }
}

/// The target groups (ARNs) a group's instances are registered with, from its discovered state.
pub fn target_groups(resource: &Resource) -> Vec<String> {
    serde_json::from_value(resource.detail["target_groups"].clone()).unwrap_or_default()
}

/// `arn:aws:autoscaling:REGION:ACCOUNT:autoScalingGroup:UUID:autoScalingGroupName/NAME` → `NAME`.
fn name_from_arn(arn: &str) -> Option<String> {
    arn.split_once(":autoScalingGroupName/")
        .map(|(_, name)| name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
