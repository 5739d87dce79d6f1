//! The cross-zone guard of Auto Scaling groups ([`crate::plugins::crosszone`]), with what it needs to know
//! of the plan: which load balancers' traffic is (or this plan will have) shifted away from the
//! zone, through [`crate::plugins::shifted`], never from the `zonal-shift` kind itself.

use std::collections::BTreeSet;

use super::{AutoScaling, GroupDetail, TYPE};
use crate::error::describe;
use crate::model::{Item, Plan, Resource, Status};
use crate::plugins::crosszone;
use crate::plugins::shifted;
use crate::Result;

/// The target groups (ARNs) a group's instances are registered with, from its discovered state.
pub fn target_groups(resource: &Resource) -> Result<Vec<String>> {
    Ok(resource.detail_as::<GroupDetail>()?.target_groups)
}

impl AutoScaling {
    /// The cross-zone check on every planned group line that has target groups: costs ELB reads only
    /// for those, and an ARC read only when a balancer without cross-zone load balancing is found.
    pub(super) async fn guard_cross_zone(&self, plan: &mut Plan, az_id: &str) -> Result<()> {
        let is_group = |i: &Item| i.resource_type == TYPE && i.status == Status::Planned;
        let mut all_groups: BTreeSet<String> = BTreeSet::new();
        for item in plan.items.iter_mut().filter(|i| is_group(i)) {
            match item.target.as_ref().map(target_groups) {
                Some(Ok(groups)) => all_groups.extend(groups),
                Some(Err(e)) => item.fail(crate::model::Failure::plan(describe(&e))),
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
        // Which balancers' traffic is (or this plan will have) shifted away from the zone.
        let mut shifted = crosszone::Shifted {
            planned: shifted::planned(plan),
            ..crosszone::Shifted::default()
        };
        match shifted::away_from(&self.sdk, az_id).await {
            Ok(active) => shifted.active = active,
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
