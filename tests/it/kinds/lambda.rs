//! Lambda functions' conformance fixture: VPC functions in the zone's subnets and elsewhere.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde_json::Value;

use super::{keep, out_of_the_zone, placement, seed_subnet_kind, Fixture};
use crate::common::{self, estate::LambdaSpec};
use crate::protocol::conformance::{State, World};

/// The fixture.
pub struct Lambda;

/// What the suite finds.
pub static FIXTURE: Lambda = Lambda;

#[async_trait(?Send)]
impl Fixture for Lambda {
    fn name(&self) -> &'static str {
        "lambda"
    }

    async fn seed(&self, world: &World) -> BTreeMap<String, String> {
        seed_subnet_kind(world, |spec, name, zones| {
            spec.lambda_functions.push(LambdaSpec {
                name,
                vpc: Some("main".into()),
                zones,
                published_alias: false,
                tags: BTreeMap::new(),
            })
        })
        .await
    }

    async fn state(&self, world: &World) -> State {
        common::live_functions(&world.sdk)
            .await
            .into_iter()
            .map(|(k, (s, g))| (k, placement(&s, &g, None)))
            .collect()
    }

    fn evacuated(&self, world: &World, _i: usize, resource: &mut Value) {
        out_of_the_zone(world, resource);
    }

    /// A subnet outside the zone taken out.
    async fn change_by_hand(&self, world: &World) {
        let (subnets, groups) = common::live_functions(&world.sdk).await["r0"].clone();
        aws_sdk_lambda::Client::new(&world.sdk)
            .update_function_configuration()
            .function_name("r0")
            .vpc_config(
                aws_sdk_lambda::types::VpcConfig::builder()
                    .set_subnet_ids(Some(keep(world, &subnets)))
                    .set_security_group_ids(Some(groups))
                    .build(),
            )
            .send()
            .await
            .expect("UpdateFunctionConfiguration");
    }

    async fn delete_by_hand(&self, world: &World) {
        aws_sdk_lambda::Client::new(&world.sdk)
            .delete_function()
            .function_name("r1")
            .send()
            .await
            .expect("DeleteFunction");
    }
}
