//! VPC endpoints' conformance fixture: interface endpoints with an address in the zone's subnet.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::{out_of_the_zone, seed_subnet_kind, Fixture};
use crate::common::estate::EndpointSpec;
use crate::protocol::conformance::{State, World};

/// The fixture.
pub struct VpcEndpoint;

/// What the suite finds.
pub static FIXTURE: VpcEndpoint = VpcEndpoint;

#[async_trait(?Send)]
impl Fixture for VpcEndpoint {
    fn name(&self) -> &'static str {
        "vpc-endpoint"
    }

    fn record_of(&self, world: &World, i: usize) -> String {
        world.id(&format!("r{i}"))
    }

    async fn seed(&self, world: &World) -> BTreeMap<String, String> {
        seed_subnet_kind(world, |spec, name, zones| {
            spec.vpc_endpoints.push(EndpointSpec {
                name,
                vpc: "main".into(),
                service: "com.amazonaws.us-east-1.sqs".into(),
                zones,
            })
        })
        .await
    }

    /// Every interface endpoint (by Name tag) that is not deleted: its subnets (sorted: EC2 keeps
    /// them as a set) and its interfaces' addresses by subnet (recover asks for the same ones again).
    async fn state(&self, world: &World) -> State {
        let ec2 = aws_sdk_ec2::Client::new(&world.sdk);
        let endpoints = ec2.describe_vpc_endpoints().send().await.expect("DescribeVpcEndpoints");
        let mut state = State::new();
        for e in endpoints
            .vpc_endpoints()
            .iter()
            .filter(|e| e.state().is_none_or(|s| !s.as_str().eq_ignore_ascii_case("deleted")))
        {
            let name = e
                .tags()
                .iter()
                .find(|t| t.key() == Some("Name"))
                .and_then(|t| t.value())
                .unwrap_or_default()
                .to_owned();
            let mut subnets = e.subnet_ids().to_vec();
            subnets.sort();
            let mut addresses = serde_json::Map::new();
            if !e.network_interface_ids().is_empty() {
                let found = ec2
                    .describe_network_interfaces()
                    .set_network_interface_ids(Some(e.network_interface_ids().to_vec()))
                    .send()
                    .await
                    .expect("DescribeNetworkInterfaces");
                for n in found.network_interfaces() {
                    addresses.insert(
                        n.subnet_id().unwrap_or_default().to_owned(),
                        json!(n.private_ip_address().unwrap_or_default()),
                    );
                }
            }
            state.insert(name, json!({ "subnets": subnets, "addresses": addresses }));
        }
        state
    }

    fn evacuated(&self, world: &World, _i: usize, resource: &mut Value) {
        out_of_the_zone(world, resource);
        let zone = world.id("zone subnet");
        if let Some(addresses) = resource["addresses"].as_object_mut() {
            addresses.remove(&zone);
        }
    }

    /// A subnet outside the zone taken out.
    async fn change_by_hand(&self, world: &World) {
        aws_sdk_ec2::Client::new(&world.sdk)
            .modify_vpc_endpoint()
            .vpc_endpoint_id(world.id("r0"))
            .remove_subnet_ids(world.id("use1-az4 subnet"))
            .send()
            .await
            .expect("ModifyVpcEndpoint");
    }

    async fn delete_by_hand(&self, world: &World) {
        aws_sdk_ec2::Client::new(&world.sdk)
            .delete_vpc_endpoints()
            .vpc_endpoint_ids(world.id("r1"))
            .send()
            .await
            .expect("DeleteVpcEndpoints");
    }
}
