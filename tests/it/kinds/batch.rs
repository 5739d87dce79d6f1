//! Batch compute environments' conformance fixture: the odd ones EC2 (an infrastructure update),
//! the others Fargate, in the zone's subnets and elsewhere.

use std::collections::BTreeMap;

use async_trait::async_trait;
use aws_config::SdkConfig;
use serde_json::{json, Value};

use super::{keep, out_of_the_zone, placement, seed_subnet_kind, Fixture};
use crate::common::estate::BatchSpec;
use crate::protocol::conformance::{State, World};

/// The fixture.
pub struct Batch;

/// What the suite finds.
pub static FIXTURE: Batch = Batch;

/// A compute environment: the odd ones EC2 (an infrastructure update), the others Fargate.
fn environment(name: String, zones: Vec<String>) -> BatchSpec {
    let ec2 = ["ce-r1", "ce-r3", "ce-r5"].contains(&name.as_str());
    BatchSpec {
        name,
        vpc: "main".into(),
        zones,
        compute_type: if ec2 { "EC2" } else { "FARGATE" }.into(),
        allocation_strategy: ec2.then(|| "BEST_FIT_PROGRESSIVE".into()),
        managed: true,
        own_service_role: false,
        tags: BTreeMap::new(),
    }
}

/// Every Batch compute environment's placement, and what else an update could change.
async fn state(sdk: &SdkConfig) -> State {
    let environments: Vec<aws_sdk_batch::types::ComputeEnvironmentDetail> = aws_sdk_batch::Client::new(sdk)
        .describe_compute_environments()
        .into_paginator()
        .items()
        .send()
        .try_collect()
        .await
        .expect("DescribeComputeEnvironments");
    environments
        .iter()
        .map(|e| {
            let r = e.compute_resources();
            let mut state = placement(
                r.map(|r| r.subnets()).unwrap_or_default(),
                r.map(|r| r.security_group_ids()).unwrap_or_default(),
                None,
            );
            state["rest"] = json!(format!(
                "{:?} {:?} {:?} {:?} {:?} {:?}",
                r.and_then(|r| r.r#type()),
                r.and_then(|r| r.allocation_strategy()),
                r.and_then(|r| r.maxv_cpus()),
                e.state(),
                e.service_role(),
                e.update_policy()
            ));
            (e.compute_environment_name().unwrap_or_default().to_owned(), state)
        })
        .collect()
}

#[async_trait(?Send)]
impl Fixture for Batch {
    fn name(&self) -> &'static str {
        "batch"
    }

    fn key(&self, i: usize) -> String {
        format!("ce-r{i}")
    }

    async fn seed(&self, world: &World) -> BTreeMap<String, String> {
        // Batch names are three characters at least (in moto).
        seed_subnet_kind(world, |spec, name, zones| {
            spec.batch_compute_environments
                .push(environment(format!("ce-{name}"), zones))
        })
        .await
    }

    async fn state(&self, world: &World) -> State {
        state(&world.sdk).await
    }

    fn evacuated(&self, world: &World, _i: usize, resource: &mut Value) {
        out_of_the_zone(world, resource);
    }

    /// A subnet outside the zone taken out.
    async fn change_by_hand(&self, world: &World) {
        let now = state(&world.sdk).await["ce-r0"]["subnets"].clone();
        let now: Vec<String> = serde_json::from_value(now).expect("subnets");
        aws_sdk_batch::Client::new(&world.sdk)
            .update_compute_environment()
            .compute_environment("ce-r0")
            .compute_resources(
                aws_sdk_batch::types::ComputeResourceUpdate::builder()
                    .set_subnets(Some(keep(world, &now)))
                    .build(),
            )
            .send()
            .await
            .expect("UpdateComputeEnvironment");
    }

    async fn delete_by_hand(&self, world: &World) {
        // AWS deletes only a disabled environment.
        let batch = aws_sdk_batch::Client::new(&world.sdk);
        batch
            .update_compute_environment()
            .compute_environment("ce-r1")
            .state(aws_sdk_batch::types::CeState::Disabled)
            .send()
            .await
            .expect("UpdateComputeEnvironment");
        batch
            .delete_compute_environment()
            .compute_environment("ce-r1")
            .send()
            .await
            .expect("DeleteComputeEnvironment");
    }
}
