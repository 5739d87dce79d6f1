//! ECS services' conformance fixture: awsvpc services of cluster `prod` in the zone and elsewhere.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde_json::Value;

use super::{keep, out_of_the_zone, placement, seed_subnet_kind, Fixture};
use crate::common::{self, estate::EcsSpec};
use crate::protocol::conformance::{State, World};

/// The fixture.
pub struct Ecs;

/// What the suite finds.
pub static FIXTURE: Ecs = Ecs;

#[async_trait(?Send)]
impl Fixture for Ecs {
    fn name(&self) -> &'static str {
        "ecs"
    }

    fn key(&self, i: usize) -> String {
        format!("prod/r{i}")
    }

    async fn seed(&self, world: &World) -> BTreeMap<String, String> {
        seed_subnet_kind(world, |spec, name, zones| {
            spec.ecs_services.push(EcsSpec {
                cluster: "prod".into(),
                name,
                vpc: "main".into(),
                zones,
                network_mode: "awsvpc".into(),
                controller: "ECS".into(),
                assign_public_ip: "DISABLED".into(),
                desired: 0,
                tags: BTreeMap::new(),
            })
        })
        .await
    }

    async fn state(&self, world: &World) -> State {
        common::live_services(&world.sdk)
            .await
            .into_iter()
            .map(|(k, (s, g, p))| (k, placement(&s, &g, Some(&p))))
            .collect()
    }

    fn evacuated(&self, world: &World, _i: usize, resource: &mut Value) {
        out_of_the_zone(world, resource);
    }

    /// A subnet outside the zone taken out.
    async fn change_by_hand(&self, world: &World) {
        let (subnets, groups, _) = common::live_services(&world.sdk).await["prod/r0"].clone();
        let awsvpc = aws_sdk_ecs::types::AwsVpcConfiguration::builder()
            .set_subnets(Some(keep(world, &subnets)))
            .set_security_groups(Some(groups))
            .assign_public_ip(aws_sdk_ecs::types::AssignPublicIp::Disabled)
            .build()
            .expect("awsvpc");
        aws_sdk_ecs::Client::new(&world.sdk)
            .update_service()
            .cluster("prod")
            .service("r0")
            .network_configuration(
                aws_sdk_ecs::types::NetworkConfiguration::builder()
                    .awsvpc_configuration(awsvpc)
                    .build(),
            )
            .send()
            .await
            .expect("UpdateService");
    }

    async fn delete_by_hand(&self, world: &World) {
        aws_sdk_ecs::Client::new(&world.sdk)
            .delete_service()
            .cluster("prod")
            .service("r1")
            .force(true)
            .send()
            .await
            .expect("DeleteService");
    }
}
