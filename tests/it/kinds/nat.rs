//! NAT routes' conformance fixture: route tables outside the zone whose default route goes
//! through the zone's NAT gateway.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::{zones, Fixture, ZONES};
use crate::common::estate::{self, NatSpec, RouteTableSpec, Seeded, Spec, VpcSpec};
use crate::common::ZONE;
use crate::protocol::conformance::{State, World};

/// The fixture.
pub struct Nat;

/// What the suite finds.
pub static FIXTURE: Nat = Nat;

/// VPCs `v0`..`v2`, each with a NAT gateway in every zone; in each, the route tables of its
/// use1-az1 and use1-az4 subnets (`r0`..`r5`) send 0.0.0.0/0 through the zone's NAT gateway (they
/// move to their own zone's); `inside`, the zone's own table, stays.
fn spec() -> Spec {
    let mut spec = Spec::default();
    for v in 0..3 {
        let vpc = format!("v{v}");
        spec.vpcs.push(VpcSpec {
            name: vpc.clone(),
            cidr: format!("10.{}.0.0/16", 40 + v),
            zones: zones(&ZONES),
        });
        for zone in ZONES {
            spec.nat_gateways.push(NatSpec {
                name: format!("{vpc}-{zone}"),
                vpc: vpc.clone(),
                zone: zone.into(),
                private: false,
            });
        }
        for (i, zone) in [(2 * v, "use1-az1"), (2 * v + 1, "use1-az4")] {
            spec.route_tables.push(RouteTableSpec {
                name: format!("r{i}"),
                vpc: vpc.clone(),
                zones: zones(&[zone]),
                routes: BTreeMap::from([("0.0.0.0/0".to_owned(), format!("{vpc}-{ZONE}"))]),
            });
        }
    }
    spec.route_tables.push(RouteTableSpec {
        name: "inside".into(),
        vpc: "v0".into(),
        zones: zones(&[ZONE]),
        routes: BTreeMap::from([("0.0.0.0/0".to_owned(), format!("v0-{ZONE}"))]),
    });
    spec
}

#[async_trait(?Send)]
impl Fixture for Nat {
    fn name(&self) -> &'static str {
        "nat"
    }

    fn record_of(&self, world: &World, i: usize) -> String {
        world.id(&format!("r{i}"))
    }

    async fn seed(&self, world: &World) -> BTreeMap<String, String> {
        let Seeded {
            nat_gateways,
            route_tables,
            ..
        } = estate::seed(&world.sdk, &spec()).await;
        let mut ids = BTreeMap::new();
        ids.extend(nat_gateways);
        ids.extend(route_tables);
        ids
    }

    /// Every named route table's routes (the `local` one left out), by destination.
    async fn state(&self, world: &World) -> State {
        let routes = estate::routes(&aws_sdk_ec2::Client::new(&world.sdk)).await;
        routes
            .into_iter()
            .map(|(table, routes)| (table, json!(routes)))
            .collect()
    }

    fn evacuated(&self, world: &World, i: usize, resource: &mut Value) {
        let own = if i.is_multiple_of(2) { "use1-az1" } else { "use1-az4" };
        *resource = json!({ "0.0.0.0/0": world.id(&format!("v{}-{own}", i / 2)) });
    }

    /// The route moved to the table's own zone.
    async fn change_by_hand(&self, world: &World) {
        aws_sdk_ec2::Client::new(&world.sdk)
            .replace_route()
            .route_table_id(world.id("r0"))
            .destination_cidr_block("0.0.0.0/0")
            .nat_gateway_id(world.id("v0-use1-az1"))
            .send()
            .await
            .expect("ReplaceRoute");
    }

    async fn delete_by_hand(&self, world: &World) {
        let ec2 = aws_sdk_ec2::Client::new(&world.sdk);
        let table = world.id("r1");
        let described = ec2
            .describe_route_tables()
            .route_table_ids(&table)
            .send()
            .await
            .expect("DescribeRouteTables");
        for association in described.route_tables().iter().flat_map(|t| t.associations()) {
            ec2.disassociate_route_table()
                .association_id(association.route_table_association_id().unwrap_or_default())
                .send()
                .await
                .expect("DisassociateRouteTable");
        }
        ec2.delete_route_table()
            .route_table_id(&table)
            .send()
            .await
            .expect("DeleteRouteTable");
    }
}
