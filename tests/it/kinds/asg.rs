//! Auto Scaling groups' conformance fixture: groups placed in the zone's subnets and elsewhere.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde_json::Value;

use super::{keep, out_of_the_zone, placement, seed_subnet_kind, Fixture};
use crate::common::{self, estate::AsgSpec};
use crate::protocol::conformance::{State, World};

/// The fixture.
pub struct Asg;

/// What the suite finds.
pub static FIXTURE: Asg = Asg;

#[async_trait(?Send)]
impl Fixture for Asg {
    fn name(&self) -> &'static str {
        "asg"
    }

    async fn seed(&self, world: &World) -> BTreeMap<String, String> {
        seed_subnet_kind(world, |spec, name, zones| {
            spec.auto_scaling_groups.push(AsgSpec {
                name,
                vpc: "main".into(),
                zones,
                desired: 0,
                tags: BTreeMap::new(),
            })
        })
        .await
    }

    async fn state(&self, world: &World) -> State {
        common::live_groups(&world.sdk)
            .await
            .into_iter()
            .map(|(k, s)| (k, placement(&s, &[], None)))
            .collect()
    }

    fn evacuated(&self, world: &World, _i: usize, resource: &mut Value) {
        out_of_the_zone(world, resource);
    }

    /// A subnet outside the zone taken out.
    async fn change_by_hand(&self, world: &World) {
        let now = &common::live_groups(&world.sdk).await["r0"];
        aws_sdk_autoscaling::Client::new(&world.sdk)
            .update_auto_scaling_group()
            .auto_scaling_group_name("r0")
            .vpc_zone_identifier(keep(world, now).join(","))
            .send()
            .await
            .expect("UpdateAutoScalingGroup");
    }

    async fn delete_by_hand(&self, world: &World) {
        aws_sdk_autoscaling::Client::new(&world.sdk)
            .delete_auto_scaling_group()
            .auto_scaling_group_name("r1")
            .force_delete(true)
            .send()
            .await
            .expect("DeleteAutoScalingGroup");
    }
}
