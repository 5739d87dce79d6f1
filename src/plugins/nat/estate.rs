//! What the NAT routes of some VPCs look like (NAT gateways, subnets, route tables) and the pure
//! reading of it: which subnets a table serves, which routes go through the zone, where a route
//! could go instead, and the zone's NAT dependencies for the exposure report.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::actions::Destination;
use super::client::Ec2;
use crate::Result;

/// A NAT gateway, with the AZ ID of its subnet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NatGateway {
    /// `nat-…`.
    pub id: String,
    /// Its VPC.
    pub vpc_id: String,
    /// Its subnet.
    pub subnet_id: String,
    /// Its subnet's AZ ID (`None`: the subnet was not found).
    pub az_id: Option<String>,
    /// `pending`, `available`, `deleting`, `deleted`, `failed`.
    pub state: String,
    /// `public` or `private`.
    pub connectivity: String,
}

/// One route of a table, as far as this type cares.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Route {
    /// Where it goes.
    pub destination: Destination,
    /// The NAT gateway it targets, if it targets one.
    pub nat: Option<String>,
    /// Its target in words (`nat-…`, `igw-…`, `local`, `tgw-…`), for the operator.
    pub target: String,
}

/// A route table, with the subnets it is explicitly associated with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RouteTable {
    /// `rtb-…`.
    pub id: String,
    /// Its ARN (the journal key).
    pub arn: String,
    /// Its Name tag, or its ID.
    pub name: String,
    /// Its VPC.
    pub vpc_id: String,
    /// Whether it is its VPC's main route table.
    pub main: bool,
    /// Its explicit subnet associations.
    pub subnets: Vec<String>,
    /// Its routes.
    pub routes: Vec<Route>,
    /// Its tags, for `--tag`.
    #[serde(skip)]
    pub tags: BTreeMap<String, String>,
}

impl RouteTable {
    /// The route to this destination.
    pub fn route(&self, destination: &Destination) -> Option<&Route> {
        self.routes.iter().find(|r| &r.destination == destination)
    }
}

/// What the NAT routes of some VPCs look like now: their NAT gateways, subnets and route tables.
#[derive(Debug, Clone, Default)]
pub struct Estate {
    /// NAT gateways.
    pub nats: Vec<NatGateway>,
    /// Subnet → (VPC, AZ ID).
    pub subnets: BTreeMap<String, (String, String)>,
    /// Route tables.
    pub tables: Vec<RouteTable>,
}

impl Estate {
    /// A NAT gateway by ID.
    pub fn nat(&self, id: &str) -> Option<&NatGateway> {
        self.nats.iter().find(|n| n.id == id)
    }

    /// The subnets a table serves, with their AZ IDs: its explicit associations, and for its VPC's
    /// main table every subnet of the VPC that no table is explicitly associated with.
    pub fn served(&self, table: &RouteTable) -> BTreeMap<String, String> {
        let az = |s: &String| {
            self.subnets
                .get(s)
                .map(|(_, az)| az.clone())
                .unwrap_or_else(|| "?".into())
        };
        let mut served: BTreeMap<String, String> = table.subnets.iter().map(|s| (s.clone(), az(s))).collect();
        if table.main {
            let explicit: BTreeSet<&String> = self
                .tables
                .iter()
                .filter(|t| t.vpc_id == table.vpc_id)
                .flat_map(|t| t.subnets.iter())
                .collect();
            for (subnet, (vpc, az_id)) in &self.subnets {
                if *vpc == table.vpc_id && !explicit.contains(subnet) {
                    served.insert(subnet.clone(), az_id.clone());
                }
            }
        }
        served
    }

    /// The routes of `table` through a NAT gateway in `az_id`: `(route, NAT gateway)`.
    pub(super) fn zonal_routes<'a>(&'a self, table: &'a RouteTable, az_id: &str) -> Vec<(&'a Route, &'a NatGateway)> {
        table
            .routes
            .iter()
            .filter_map(|r| Some((r, self.nat(r.nat.as_deref()?)?)))
            .filter(|(_, nat)| nat.az_id.as_deref() == Some(az_id) && nat.state != "deleted")
            .collect()
    }

    /// The NAT gateway a route through `original` moves to: available, same VPC and connectivity
    /// type, in a known zone other than `az_id`; one in the `preferred` zones first, then by ID.
    pub fn replacement(&self, original: &NatGateway, az_id: &str, preferred: &BTreeSet<String>) -> Option<&NatGateway> {
        self.nats
            .iter()
            .filter(|n| n.state == "available" && n.vpc_id == original.vpc_id)
            .filter(|n| n.connectivity == original.connectivity)
            .filter(|n| n.az_id.as_deref().is_some_and(|z| z != az_id))
            .min_by_key(|n| {
                (
                    !preferred.contains(n.az_id.as_deref().unwrap_or_default()),
                    n.id.clone(),
                )
            })
    }
}

/// A route table outside the zone that routes through a NAT gateway in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Dependent {
    /// `rtb-…`.
    pub id: String,
    /// Its ARN.
    pub arn: String,
    /// Its Name tag, or its ID.
    pub name: String,
    /// Its VPC.
    pub vpc_id: String,
    /// Whether it is its VPC's main route table.
    pub main: bool,
    /// Each route through a NAT gateway in the zone.
    pub routes: Vec<ZonalRoute>,
    /// The subnets it serves, with their AZ IDs (none of them in the zone).
    pub subnets: BTreeMap<String, String>,
}

/// A route through a NAT gateway in the zone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ZonalRoute {
    /// Where it goes.
    pub destination: Destination,
    /// The NAT gateway in the zone it targets.
    pub nat_gateway_id: String,
}

/// The zonal NAT dependencies of one zone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Dependencies {
    /// The AZ ID.
    pub az_id: String,
    /// The NAT gateways in the zone (any state but `deleted`).
    pub nat_gateways: Vec<NatGateway>,
    /// The route tables outside the zone that route through them.
    pub route_tables: Vec<Dependent>,
}

impl Dependencies {
    /// The dependencies of `az_id` in `estate` (pure).
    pub fn of(estate: &Estate, az_id: &str) -> Dependencies {
        let nat_gateways = estate
            .nats
            .iter()
            .filter(|n| n.az_id.as_deref() == Some(az_id) && n.state != "deleted")
            .cloned()
            .collect();
        let route_tables = estate
            .tables
            .iter()
            .filter_map(|table| {
                let routes: Vec<ZonalRoute> = estate
                    .zonal_routes(table, az_id)
                    .into_iter()
                    .map(|(r, n)| ZonalRoute {
                        destination: r.destination.clone(),
                        nat_gateway_id: n.id.clone(),
                    })
                    .collect();
                let subnets = estate.served(table);
                let outside = !subnets.is_empty() && subnets.values().all(|z| z != az_id);
                (outside && !routes.is_empty()).then(|| Dependent {
                    id: table.id.clone(),
                    arn: table.arn.clone(),
                    name: table.name.clone(),
                    vpc_id: table.vpc_id.clone(),
                    main: table.main,
                    routes,
                    subnets,
                })
            })
            .collect();
        Dependencies {
            az_id: az_id.to_owned(),
            nat_gateways,
            route_tables,
        }
    }
}

/// The zonal NAT dependencies of `az_id` (an AZ ID, never a name): the NAT gateways in the zone,
/// and each route table that serves only subnets outside the zone and routes through one of them,
/// with those destinations and the subnets it serves (with their AZ IDs). Reads only (EC2
/// `DescribeNatGateways`, `DescribeSubnets`, `DescribeRouteTables`); independent of any plan or
/// journal.
pub async fn zonal_dependencies(sdk: &aws_config::SdkConfig, az_id: &str) -> Result<Dependencies> {
    let estate = Ec2::new(sdk).estate(az_id).await?;
    Ok(Dependencies::of(&estate, az_id))
}
