//! NAT routes out of the zone: private subnets in *healthy* zones whose routes go through a NAT
//! gateway in the impaired zone lose their egress with it, and no other type sees that dependency.
//! For each route table that serves only subnets outside the zone, every route through a NAT
//! gateway in the zone is pointed (`ReplaceRoute`) at an available NAT gateway of the same VPC and
//! the same connectivity type outside the zone, preferring the zones of the table's own subnets.
//! `recover` points each route back, only where it still targets the NAT gateway azevac set.
//!
//! What it never does: touch a table that serves a subnet inside the zone (that traffic stays in
//! the zone anyway), swap a private NAT gateway for a public one or the other way round, remove a
//! route or leave one blackholed (no replacement: the route is left as it is, with the reason), or
//! put back a route that someone changed since.
//!
//! Journal: `resource_type` `nat`, `resource` the route table's ARN, and two actions per route:
//! `route:<destination>:<nat-id>` (the issue's: the original target) and
//! `set:<destination>:<nat-id>` (the NAT gateway azevac set, which `recover` checks the live route
//! against). A destination is an IPv4 CIDR, an IPv6 CIDR or a prefix-list ID; the NAT ID follows
//! the last `:`, so IPv6 destinations round-trip unambiguously ([`Destination::parse`]).
//!
//! [`zonal_dependencies`] is the same discovery, without the plan or the journal, for the exposure
//! report.

use std::collections::{BTreeMap, BTreeSet};

use async_trait::async_trait;
use aws_sdk_ec2::types::Filter;
use serde::{Deserialize, Serialize};

use super::{Acted, Plugin, Scope, Setup, Stage};
use crate::error::describe;
use crate::journal::{Guard, Held};
use crate::model::{Command, Item, Placement, Record, Resource, Site, Status};
use crate::plan::{Filters, ALREADY_EVACUATED};
use crate::{Error, Result};

/// The `--type` value and journal `resource_type` of NAT route changes.
pub const TYPE: &str = "nat";
/// The journal action naming a route's target before the evacuation: `route:<destination>:<nat-id>`.
const ORIGINAL: &str = "route:";
/// The journal action naming the NAT gateway azevac pointed the route at: `set:<destination>:<nat-id>`.
const SET: &str = "set:";
/// EC2 accepts at most 200 values in one filter.
const FILTER_VALUES: usize = 200;
/// What routing through another zone costs, shown with every evacuation line.
const CROSS_ZONE_NOTE: &str = "egress now crosses zones to the replacement NAT gateway: cross-zone data transfer \
     is charged on it (on top of NAT processing) until recover points the routes back";

/// A route's destination, as `ReplaceRoute` names it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Destination {
    /// `DestinationCidrBlock`.
    Ipv4(String),
    /// `DestinationIpv6CidrBlock`.
    Ipv6(String),
    /// `DestinationPrefixListId`.
    PrefixList(String),
}

impl Destination {
    /// From its text: `pl-…` is a prefix list, text with a `:` an IPv6 CIDR, anything else IPv4.
    pub fn parse(text: &str) -> Option<Destination> {
        if text.is_empty() {
            None
        } else if text.starts_with("pl-") {
            Some(Destination::PrefixList(text.to_owned()))
        } else if text.contains(':') {
            Some(Destination::Ipv6(text.to_owned()))
        } else {
            Some(Destination::Ipv4(text.to_owned()))
        }
    }

    /// The text EC2 shows.
    pub fn as_str(&self) -> &str {
        match self {
            Destination::Ipv4(s) | Destination::Ipv6(s) | Destination::PrefixList(s) => s,
        }
    }
}

impl std::fmt::Display for Destination {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The journal action for a route's original target.
pub fn original_action(destination: &Destination, nat: &str) -> String {
    format!("{ORIGINAL}{destination}:{nat}")
}

/// The journal action for the NAT gateway azevac set.
pub fn set_action(destination: &Destination, nat: &str) -> String {
    format!("{SET}{destination}:{nat}")
}

/// `(destination, nat-id)` of an action with this prefix.
fn parse_action<'a>(action: &'a str, prefix: &str) -> Option<(Destination, &'a str)> {
    let (destination, nat) = action.strip_prefix(prefix)?.rsplit_once(':')?;
    nat.starts_with("nat-").then_some(())?;
    Some((Destination::parse(destination)?, nat))
}

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
    fn zonal_routes<'a>(&'a self, table: &'a RouteTable, az_id: &str) -> Vec<(&'a Route, &'a NatGateway)> {
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

/// One route's move: `from` → `to` (evacuate: zonal NAT → replacement; recover: back).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// The route's destination.
    pub destination: Destination,
    /// The NAT gateway it targets now.
    pub from: String,
    /// The NAT gateway it is pointed at.
    pub to: String,
    /// Where `to` is (AZ ID), for the operator.
    #[serde(default)]
    pub to_az: String,
}

/// A line's changes to one route table: the plugin's private state of a planned line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Repoint {
    /// `rtb-…`.
    pub table_id: String,
    /// The routes to move, in order.
    pub changes: Vec<Change>,
    /// Recover: routes that must stay journalled (their original NAT gateway is not available):
    /// the line fails after the others are back, and the record is kept.
    #[serde(default)]
    pub kept: Vec<String>,
}

/// What evacuating the zone means for one route table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// No route through a NAT gateway in the zone.
    Elsewhere,
    /// Move these routes; the others through the zone have no replacement (with why).
    Move(Vec<Change>, Vec<String>),
    /// Left alone, with why.
    Skip(String),
}

/// What evacuating `az_id` means for `table` (pure).
pub fn decide(estate: &Estate, table: &RouteTable, az_id: &str) -> Decision {
    let zonal = estate.zonal_routes(table, az_id);
    if zonal.is_empty() {
        return Decision::Elsewhere;
    }
    let served = estate.served(table);
    if served.is_empty() {
        return Decision::Skip("serves no subnet (no subnet association): left alone".into());
    }
    let inside: Vec<&str> = served
        .iter()
        .filter(|(_, z)| *z == az_id)
        .map(|(s, _)| s.as_str())
        .collect();
    if !inside.is_empty() {
        return Decision::Skip(format!(
            "serves {} in {az_id}: that traffic stays in the zone with its NAT gateway; left alone",
            inside.join(", ")
        ));
    }
    // A served subnet whose zone could not be read may be in the zone: fail safe, change nothing.
    let unknown: Vec<&str> = served
        .iter()
        .filter(|(_, z)| *z == "?")
        .map(|(s, _)| s.as_str())
        .collect();
    if !unknown.is_empty() {
        return Decision::Skip(format!(
            "serves {} whose zone could not be read: left alone",
            unknown.join(", ")
        ));
    }
    let preferred: BTreeSet<String> = served.into_values().collect();
    let (mut changes, mut unmoved) = (Vec::new(), Vec::new());
    for (route, nat) in zonal {
        match estate.replacement(nat, az_id, &preferred) {
            Some(to) => changes.push(Change {
                destination: route.destination.clone(),
                from: nat.id.clone(),
                to: to.id.clone(),
                to_az: to.az_id.clone().unwrap_or_default(),
            }),
            None => unmoved.push(format!(
                "{}: no available {} NAT gateway in {} outside {az_id}; left on {}",
                route.destination, nat.connectivity, nat.vpc_id, nat.id
            )),
        }
    }
    if changes.is_empty() {
        return Decision::Skip(unmoved.join("; "));
    }
    Decision::Move(changes, unmoved)
}

fn skip(item: &mut Item, reason: String) {
    item.status = Status::Skipped;
    item.reason = Some(reason);
    item.actions = Some(Vec::new());
}

/// The journal actions of an evacuation's changes: the original target and azevac's, per route.
fn journal_actions(changes: &[Change]) -> Vec<String> {
    changes
        .iter()
        .flat_map(|c| {
            [
                original_action(&c.destination, &c.from),
                set_action(&c.destination, &c.to),
            ]
        })
        .collect()
}

/// The changes in the operator's words: `0.0.0.0/0: nat-a -> nat-b (use1-az1)`.
fn describe_changes(changes: &[Change], from_az: &str) -> String {
    changes
        .iter()
        .map(|c| {
            let from = if from_az.is_empty() {
                c.from.clone()
            } else {
                format!("{} ({from_az})", c.from)
            };
            format!("{}: {from} -> {} ({})", c.destination, c.to, c.to_az)
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Put an evacuation decision on a line (planning and refresh alike).
fn apply_decision(item: &mut Item, decision: Decision, table: &RouteTable, az_id: &str) {
    match decision {
        Decision::Elsewhere => {
            let record = item.record.as_ref();
            let journalled: Vec<String> = record
                .map(|r| {
                    r.actions
                        .iter()
                        .filter_map(|a| parse_action(a, ORIGINAL))
                        .map(|(d, _)| match table.route(&d) {
                            Some(route) => format!("{d} via {}", route.target),
                            None => format!("{d} gone"),
                        })
                        .collect()
                })
                .unwrap_or_default();
            skip(item, format!("{ALREADY_EVACUATED}: {}", journalled.join(", ")));
        }
        Decision::Skip(why) => skip(item, why),
        Decision::Move(changes, unmoved) => {
            item.actions = Some(journal_actions(&changes));
            let mut reason = describe_changes(&changes, az_id);
            if !unmoved.is_empty() {
                reason = format!("{reason}; {}", unmoved.join("; "));
            }
            item.reason = Some(reason);
            if !item.notes.iter().any(|n| n == CROSS_ZONE_NOTE) {
                item.notes.push(CROSS_ZONE_NOTE.to_owned());
            }
            let repoint = Repoint {
                table_id: table.id.clone(),
                changes,
                kept: Vec::new(),
            };
            if let Some(target) = item.target.as_mut() {
                target.set_detail(&repoint);
            }
        }
    }
}

/// The evacuation lines (pure): one per route table through a NAT gateway in the zone, and one per
/// table an earlier run repointed (already evacuated).
pub fn evacuation(estate: &Estate, az_id: &str, records: &BTreeMap<String, Record>, filters: &Filters) -> Vec<Item> {
    let mut items = Vec::new();
    for table in &estate.tables {
        let record = records.get(&table.arn);
        let decision = decide(estate, table, az_id);
        if decision == Decision::Elsewhere && record.is_none() {
            continue;
        }
        let target = Resource {
            resource_type: TYPE,
            id: table.arn.clone(),
            name: table.name.clone(),
            tags: table.tags.clone(),
            ..Resource::default()
        };
        let mut item = Item {
            record: record.cloned(),
            ..Item::new(TYPE, &table.arn, &table.name, az_id)
        };
        if let Some(why) = Filters::rejects(filters, &target) {
            skip(&mut item, why);
            items.push(item);
            continue;
        }
        item.target = Some(target);
        apply_decision(&mut item, decision, table, az_id);
        items.push(item);
    }
    items
}

/// What recovering one record means (pure), given its table now (`None`: gone) and the NAT
/// gateways it names. Each journalled route goes back to its original NAT gateway only if it
/// still targets the one azevac set and the original is available; a route someone changed since,
/// or that is gone, is left alone and released; one whose original is not available keeps the
/// record (the line fails once the others are back).
pub fn recovery(record: &Record, table: Option<&RouteTable>, nats: &Estate, forget_missing: bool) -> Item {
    let name = record.resource_name.as_deref().unwrap_or(&record.resource);
    let mut item = Item {
        actions: Some(Vec::new()),
        record: Some(record.clone()),
        ..Item::new(TYPE, &record.resource, name, &record.az_id)
    };
    let Some(table) = table else {
        crate::plan::missing(&mut item, "route table", forget_missing);
        return item;
    };
    // The NAT gateways the routes would go back to, where they lie: recover refuses a record that
    // names one outside its zone or the table's VPC.
    item.placement = Placement {
        named: record
            .actions
            .iter()
            .filter_map(|a| parse_action(a, ORIGINAL))
            .filter_map(|(_, id)| {
                let nat = nats.nat(id)?;
                let site = Site {
                    az_id: nat.az_id.clone()?,
                    vpc: nat.vpc_id.clone(),
                };
                Some((id.to_owned(), site))
            })
            .collect(),
        vpc: Some(table.vpc_id.clone()),
    };
    let mut set: BTreeMap<Destination, Vec<&str>> = BTreeMap::new();
    for (d, nat) in record.actions.iter().filter_map(|a| parse_action(a, SET)) {
        set.entry(d).or_default().push(nat);
    }
    let (mut changes, mut kept, mut released) = (Vec::new(), Vec::new(), Vec::new());
    let mut seen = BTreeSet::new();
    for (destination, original) in record.actions.iter().filter_map(|a| parse_action(a, ORIGINAL)) {
        if !seen.insert(destination.clone()) {
            continue;
        }
        let ours = set.get(&destination).cloned().unwrap_or_default();
        let Some(route) = table.route(&destination) else {
            released.push(format!(
                "{destination}: route no longer exists; left alone (was {original})"
            ));
            continue;
        };
        let now = route.nat.as_deref();
        if now == Some(original) {
            released.push(format!("{destination}: already on {original}"));
        } else if now.is_some_and(|n| ours.contains(&n)) {
            match nats.nat(original) {
                Some(nat) if nat.state == "available" => changes.push(Change {
                    destination: destination.clone(),
                    from: now.unwrap_or_default().to_owned(),
                    to: original.to_owned(),
                    to_az: nat.az_id.clone().unwrap_or_default(),
                }),
                found => kept.push(format!(
                    "{destination}: {original} is {}, so the route stays on {}",
                    found.map_or("not found", |n| n.state.as_str()),
                    now.unwrap_or_default()
                )),
            }
        } else {
            released.push(format!(
                "{destination}: now targets {}, not what azevac set ({}): left alone (was {original})",
                route.target,
                ours.join(", ")
            ));
        }
    }
    let mut reasons = Vec::new();
    if !changes.is_empty() {
        reasons.push(describe_changes(&changes, ""));
    }
    reasons.extend(released);
    reasons.extend(kept.iter().cloned());
    let reason = reasons.join("; ");
    if changes.is_empty() && !kept.is_empty() {
        item.fail(format!("{reason}; journal record kept"));
        return item;
    }
    item.reason = (!reason.is_empty()).then_some(reason);
    item.actions = Some(
        changes
            .iter()
            .map(|c| format!("point {} back to {}", c.destination, c.to))
            .collect(),
    );
    if !changes.is_empty() {
        let mut target = Resource {
            resource_type: TYPE,
            id: record.resource.clone(),
            name: name.to_owned(),
            ..Resource::default()
        };
        target.set_detail(&Repoint {
            table_id: table.id.clone(),
            changes,
            kept,
        });
        item.target = Some(target);
    }
    item
}

/// The `rtb-…` of a route table ARN.
pub fn table_id(arn: &str) -> &str {
    arn.rsplit('/').next().unwrap_or(arn)
}

/// NAT routes as a plugin.
pub struct NatRoutes {
    ec2: Ec2,
    forget_missing: bool,
}

/// Registry constructor.
pub fn plugin(setup: &Setup) -> futures::future::BoxFuture<'_, Result<Option<Box<dyn Plugin>>>> {
    Box::pin(async move {
        Ok(Some(Box::new(NatRoutes {
            ec2: Ec2::new(&setup.sdk),
            forget_missing: setup.request.forget_missing,
        }) as Box<dyn Plugin>))
    })
}

#[async_trait]
impl Plugin for NatRoutes {
    fn resource_type(&self) -> &'static str {
        TYPE
    }

    /// Out first: the healthy zones' egress does not depend on capacity, but the capacity that is
    /// about to move into those zones does depend on their egress, so the routes move before it.
    /// Back last: routes return into the zone only once capacity there is back and verified (the
    /// engine holds the last stage back when it is not); until then egress keeps working through the
    /// healthy zone, which costs only cross-zone transfer.
    fn stage(&self, command: Command, _line: &Item) -> Stage {
        match command {
            Command::Evacuate => Stage::First,
            Command::Recover => Stage::Last,
        }
    }

    async fn plan_evacuation(&self, scope: &Scope<'_>) -> Result<Vec<Item>> {
        let estate = self.ec2.estate(scope.az_id()).await?;
        Ok(evacuation(&estate, scope.az_id(), scope.records, &scope.filters()))
    }

    async fn plan_recovery(&self, records: Vec<Record>, _scope: &Scope<'_>) -> Result<Vec<Item>> {
        if records.is_empty() {
            return Ok(Vec::new());
        }
        let estate = self.ec2.for_records(records.iter()).await?;
        Ok(records
            .iter()
            .map(|r| {
                let table = estate.tables.iter().find(|t| t.arn == r.resource);
                recovery(r, table, &estate, self.forget_missing)
            })
            .collect())
    }

    /// Under the lock: read the tables (and NAT gateways) again and decide again from what is live.
    async fn refresh(&self, command: Command, lines: &mut [&mut Item], held: &[&Held]) -> Result<()> {
        if lines.iter().all(|l| l.status != Status::Planned) {
            return Ok(());
        }
        match command {
            Command::Evacuate => {
                let az_id = lines.first().map(|l| l.az_id.clone()).unwrap_or_default();
                let estate = self.ec2.estate(&az_id).await?;
                for line in lines.iter_mut().filter(|l| l.status == Status::Planned) {
                    // Only the VPCs with a NAT gateway in the zone are read: a table not among
                    // them is gone, or its VPC has no such gateway any more. Either way: nothing to do.
                    let Some(table) = estate.tables.iter().find(|t| t.arn == line.resource) else {
                        skip(
                            line,
                            "no longer routes through a NAT gateway in the zone (or is gone); nothing changed".into(),
                        );
                        continue;
                    };
                    match decide(&estate, table, &line.az_id) {
                        Decision::Elsewhere => skip(line, "no route through the zone's NAT gateways any more".into()),
                        decision => apply_decision(line, decision, table, &az_id),
                    }
                }
            }
            Command::Recover => {
                let records: Vec<&Record> = held.iter().map(|h| h.record()).collect();
                let estate = self.ec2.for_records(records.iter().copied()).await?;
                for line in lines.iter_mut().filter(|l| l.status == Status::Planned) {
                    // A table evacuated from two zones has a record in each: the line's own zone's.
                    let Some(record) = records
                        .iter()
                        .find(|r| r.resource == line.resource && r.az_id == line.az_id)
                    else {
                        continue;
                    };
                    let table = estate.tables.iter().find(|t| t.arn == record.resource);
                    let fresh = recovery(record, table, &estate, self.forget_missing);
                    line.status = fresh.status;
                    line.reason = fresh.reason;
                    line.actions = fresh.actions;
                    line.target = fresh.target;
                }
            }
        }
        Ok(())
    }

    async fn evacuate(&self, line: &Item, _held: &Guard<'_>) -> Result<Acted> {
        self.repoint(line).await?;
        Ok(Acted::default())
    }

    async fn recover(&self, line: &Item, _held: &Guard<'_>) -> Result<Acted> {
        if line.target.is_none() {
            return Ok(Acted::default());
        }
        let repoint = self.repoint(line).await?;
        if !repoint.kept.is_empty() {
            return Err(Error::NotSettled {
                resource: line.name.clone(),
                // The engine adds that the record is kept.
                why: format!(
                    "{} route(s) put back; {}",
                    repoint.changes.len(),
                    repoint.kept.join("; ")
                ),
            });
        }
        Ok(Acted::default())
    }

    /// Read the done lines' tables back: every moved route must target what the line set.
    async fn verify(&self, lines: &mut [&mut Item]) {
        let done: Vec<usize> = (0..lines.len())
            .filter(|&n| lines[n].status == Status::Done && lines[n].target.is_some())
            .collect();
        if done.is_empty() {
            return;
        }
        let ids: Vec<String> = done.iter().map(|&n| table_id(&lines[n].resource).to_owned()).collect();
        let tables = match self.ec2.route_tables("route-table-id", &ids).await {
            Ok(tables) => tables,
            Err(e) => {
                for &n in &done {
                    lines[n].fail(format!(
                        "could not read the route table back ({}); the journal holds the routes",
                        describe(&e)
                    ));
                }
                return;
            }
        };
        for n in done {
            let line = &mut lines[n];
            let Some(Ok(repoint)) = line.target.as_ref().map(Resource::detail_as::<Repoint>) else {
                continue;
            };
            let table = tables.iter().find(|t| t.id == repoint.table_id);
            let wrong: Vec<String> = repoint
                .changes
                .iter()
                .filter_map(|c| {
                    let now = table.and_then(|t| t.route(&c.destination));
                    let ok = now.is_some_and(|r| r.nat.as_deref() == Some(c.to.as_str()));
                    (!ok).then(|| {
                        format!(
                            "{} targets {}, not {}",
                            c.destination,
                            now.map_or("nothing", |r| r.target.as_str()),
                            c.to
                        )
                    })
                })
                .collect();
            if !wrong.is_empty() {
                line.fail(format!(
                    "read back: {}; the journal still holds the routes",
                    wrong.join("; ")
                ));
            }
        }
    }

    /// One page of five (the least `DescribeNatGateways` asks for).
    /// `azevac exposure`: the zone's NAT gateways (not movable: a NAT gateway lives in its subnet)
    /// and each route table outside the zone whose routes go through one (moved by this type).
    async fn exposure(&self, scope: &Scope<'_>) -> Result<Vec<crate::model::Finding>> {
        use crate::model::Finding;
        let dependencies = Dependencies::of(&self.ec2.estate(scope.az_id()).await?, scope.az_id());
        let mut found: Vec<Finding> = dependencies
            .nat_gateways
            .iter()
            .map(|nat| {
                let users = dependencies
                    .route_tables
                    .iter()
                    .filter(|t| t.routes.iter().any(|r| r.nat_gateway_id == nat.id))
                    .count();
                Finding::new("nat-gateway", &nat.id, &nat.id, vec![nat.subnet_id.clone()]).not_movable(format!(
                    "a NAT gateway lives in its subnet; {users} route table(s) outside the zone still use it \
                     (`--type nat` points them at a NAT gateway in another zone; create one there if the VPC has none)"
                ))
            })
            .collect();
        found.extend(dependencies.route_tables.iter().map(|table| {
            let routes = table
                .routes
                .iter()
                .map(|r| format!("{} via {}", r.destination, r.nat_gateway_id))
                .collect();
            let mut finding = Finding::new("nat-route-table", &table.arn, &table.name, routes).moved_by(TYPE);
            let served: Vec<String> = table.subnets.iter().map(|(s, az)| format!("{s} ({az})")).collect();
            finding.notes.push(format!("serves {}", served.join(", ")));
            finding
        }));
        Ok(found)
    }

    async fn probe(&self) -> Vec<super::Check> {
        let listed = self.ec2.client.describe_nat_gateways().max_results(5).send().await;
        vec![super::Check::answered(TYPE, "ec2:DescribeNatGateways", listed)]
    }
}

impl NatRoutes {
    /// `ReplaceRoute` each of the line's changes, in order.
    async fn repoint(&self, line: &Item) -> Result<Repoint> {
        let target = line
            .target
            .as_ref()
            .ok_or_else(|| Error::Internal(format!("no route change planned for {}", line.name)))?;
        let repoint: Repoint = target.detail_as()?;
        for change in &repoint.changes {
            self.ec2.replace_route(&repoint.table_id, change).await?;
        }
        Ok(repoint)
    }
}

/// The EC2 calls of this type.
#[derive(Debug, Clone)]
pub struct Ec2 {
    client: aws_sdk_ec2::Client,
    region: String,
}

/// One read per [`FILTER_VALUES`] values of the filter `name`, the results joined.
async fn chunked<T, F, Fut>(name: &str, values: &[String], read: F) -> Result<Vec<T>>
where
    F: Fn(Filter) -> Fut,
    Fut: std::future::Future<Output = Result<Vec<T>>>,
{
    let mut out = Vec::new();
    for chunk in values.chunks(FILTER_VALUES) {
        let filter = Filter::builder().name(name).set_values(Some(chunk.to_vec())).build();
        out.extend(read(filter).await?);
    }
    Ok(out)
}

/// The ARN partition of a region.
fn partition(region: &str) -> &'static str {
    if region.starts_with("cn-") {
        "aws-cn"
    } else if region.starts_with("us-gov-") {
        "aws-us-gov"
    } else {
        "aws"
    }
}

impl Ec2 {
    /// A client from the shared configuration.
    pub fn new(sdk: &aws_config::SdkConfig) -> Self {
        Ec2 {
            client: crate::client!(aws_sdk_ec2, sdk),
            region: crate::aws::region_of(sdk),
        }
    }

    /// The NAT gateways, subnets and route tables of every VPC with a NAT gateway in `az_id`.
    pub async fn estate(&self, az_id: &str) -> Result<Estate> {
        let mut nats = self.nat_gateways(None).await?;
        self.locate(&mut nats).await?;
        let vpcs: BTreeSet<String> = nats
            .iter()
            .filter(|n| n.az_id.as_deref() == Some(az_id) && n.state != "deleted")
            .map(|n| n.vpc_id.clone())
            .collect();
        let vpcs: Vec<String> = vpcs.into_iter().collect();
        if vpcs.is_empty() {
            return Ok(Estate {
                nats,
                ..Estate::default()
            });
        }
        let subnets = self.subnets("vpc-id", &vpcs).await?;
        let tables = self.route_tables("vpc-id", &vpcs).await?;
        Ok(Estate { nats, subnets, tables })
    }

    /// The tables these records name and the NAT gateways of their VPCs (recover).
    pub async fn for_records(&self, records: impl Iterator<Item = &Record>) -> Result<Estate> {
        let ids: Vec<String> = records.map(|r| table_id(&r.resource).to_owned()).collect();
        let tables = self.route_tables("route-table-id", &ids).await?;
        let vpcs: BTreeSet<String> = tables.iter().map(|t| t.vpc_id.clone()).collect();
        let vpcs: Vec<String> = vpcs.into_iter().collect();
        let mut nats = if vpcs.is_empty() {
            Vec::new()
        } else {
            self.nat_gateways(Some(("vpc-id", &vpcs))).await?
        };
        self.locate(&mut nats).await?;
        Ok(Estate {
            nats,
            subnets: BTreeMap::new(),
            tables,
        })
    }

    /// Each NAT gateway's AZ ID: its subnet's, through the topology's batched subnet reads.
    async fn locate(&self, nats: &mut [NatGateway]) -> Result<()> {
        let subnets: BTreeSet<String> = nats.iter().map(|n| n.subnet_id.clone()).collect();
        let located = crate::topology::locate_subnets(&self.client, &subnets).await?;
        for nat in nats {
            nat.az_id = located.get(&nat.subnet_id).map(|site| site.az_id.clone());
        }
        Ok(())
    }

    /// NAT gateways (all, or those matching one filter), paginated.
    async fn nat_gateways(&self, only: Option<(&str, &[String])>) -> Result<Vec<NatGateway>> {
        let read = |chunk: Option<Filter>| async move {
            let found: Vec<aws_sdk_ec2::types::NatGateway> = self
                .client
                .describe_nat_gateways()
                .set_filter(chunk.map(|f| vec![f]))
                .into_paginator()
                .items()
                .send()
                .try_collect()
                .await
                .map_err(|e| Error::from_sdk("ec2:DescribeNatGateways", e))?;
            Ok(found)
        };
        let found = match only {
            None => read(None).await?,
            Some((name, values)) => chunked(name, values, |f| read(Some(f))).await?,
        };
        let mut out: Vec<NatGateway> = found
            .into_iter()
            .map(|n| NatGateway {
                id: n.nat_gateway_id().unwrap_or_default().to_owned(),
                vpc_id: n.vpc_id().unwrap_or_default().to_owned(),
                subnet_id: n.subnet_id().unwrap_or_default().to_owned(),
                az_id: None,
                state: n.state().map(|s| s.as_str().to_owned()).unwrap_or_default(),
                connectivity: n
                    .connectivity_type()
                    .map_or("public".to_owned(), |c| c.as_str().to_owned()),
            })
            .collect();
        out.sort_by(|a, b| a.id.cmp(&b.id));
        out.dedup_by(|a, b| a.id == b.id);
        Ok(out)
    }

    /// Subnets matching one filter: subnet → (VPC, AZ ID).
    async fn subnets(&self, name: &str, values: &[String]) -> Result<BTreeMap<String, (String, String)>> {
        let found = chunked(name, values, |f| async move {
            let page = self.client.describe_subnets().filters(f).into_paginator();
            let found: Vec<aws_sdk_ec2::types::Subnet> = page
                .items()
                .send()
                .try_collect()
                .await
                .map_err(|e| Error::from_sdk("ec2:DescribeSubnets", e))?;
            Ok(found)
        })
        .await?;
        Ok(found
            .into_iter()
            .filter_map(|s| Some((s.subnet_id?, (s.vpc_id?, s.availability_zone_id?))))
            .collect())
    }

    /// Route tables matching one filter (a filter, unlike `RouteTableIds`, does not fail the call
    /// for a table that has been deleted).
    async fn route_tables(&self, name: &str, values: &[String]) -> Result<Vec<RouteTable>> {
        let found = chunked(name, values, |f| async move {
            let page = self.client.describe_route_tables().filters(f).into_paginator();
            let found: Vec<aws_sdk_ec2::types::RouteTable> = page
                .items()
                .send()
                .try_collect()
                .await
                .map_err(|e| Error::from_sdk("ec2:DescribeRouteTables", e))?;
            Ok(found)
        })
        .await?;
        let mut out: Vec<RouteTable> = found.iter().map(|t| self.to_table(t)).collect();
        out.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(out)
    }

    fn to_table(&self, t: &aws_sdk_ec2::types::RouteTable) -> RouteTable {
        let id = t.route_table_id().unwrap_or_default().to_owned();
        let tags: BTreeMap<String, String> = t
            .tags()
            .iter()
            .filter_map(|t| Some((t.key()?.to_owned(), t.value().unwrap_or_default().to_owned())))
            .collect();
        let live = |a: &&aws_sdk_ec2::types::RouteTableAssociation| {
            a.association_state()
                .and_then(|s| s.state())
                .is_none_or(|s| s.as_str() == "associated")
        };
        let associations: Vec<&aws_sdk_ec2::types::RouteTableAssociation> =
            t.associations().iter().filter(live).collect();
        let routes = t
            .routes()
            .iter()
            .filter_map(|r| {
                let destination = r
                    .destination_cidr_block()
                    .map(|c| Destination::Ipv4(c.to_owned()))
                    .or_else(|| r.destination_ipv6_cidr_block().map(|c| Destination::Ipv6(c.to_owned())))
                    .or_else(|| {
                        r.destination_prefix_list_id()
                            .map(|c| Destination::PrefixList(c.to_owned()))
                    })?;
                let nat = r.nat_gateway_id().map(str::to_owned);
                let target = [
                    r.nat_gateway_id(),
                    r.gateway_id(),
                    r.transit_gateway_id(),
                    r.network_interface_id(),
                    r.instance_id(),
                    r.vpc_peering_connection_id(),
                    r.egress_only_internet_gateway_id(),
                ]
                .into_iter()
                .flatten()
                .next()
                .unwrap_or("something else")
                .to_owned();
                Some(Route {
                    destination,
                    nat,
                    target,
                })
            })
            .collect();
        RouteTable {
            arn: format!(
                "arn:{}:ec2:{}:{}:route-table/{id}",
                partition(&self.region),
                self.region,
                t.owner_id().unwrap_or_default()
            ),
            name: tags.get("Name").cloned().unwrap_or_else(|| id.clone()),
            vpc_id: t.vpc_id().unwrap_or_default().to_owned(),
            main: associations.iter().any(|a| a.main() == Some(true)),
            subnets: associations
                .iter()
                .filter_map(|a| a.subnet_id().map(str::to_owned))
                .collect(),
            routes,
            tags,
            id,
        }
    }

    /// Point one route at `change.to`.
    async fn replace_route(&self, table_id: &str, change: &Change) -> Result<()> {
        let call = self
            .client
            .replace_route()
            .route_table_id(table_id)
            .nat_gateway_id(&change.to);
        let call = match &change.destination {
            Destination::Ipv4(c) => call.destination_cidr_block(c),
            Destination::Ipv6(c) => call.destination_ipv6_cidr_block(c),
            Destination::PrefixList(p) => call.destination_prefix_list_id(p),
        };
        call.send().await.map_err(|e| Error::from_sdk("ec2:ReplaceRoute", e))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::State;

    const ZONE: &str = "use1-az2";

    fn nat(id: &str, vpc: &str, az: &str, connectivity: &str) -> NatGateway {
        NatGateway {
            id: id.into(),
            vpc_id: vpc.into(),
            subnet_id: format!("subnet-{id}"),
            az_id: Some(az.into()),
            state: "available".into(),
            connectivity: connectivity.into(),
        }
    }

    fn route(destination: &str, nat: &str) -> Route {
        Route {
            destination: Destination::parse(destination).expect("destination"),
            nat: Some(nat.into()),
            target: nat.into(),
        }
    }

    fn table(id: &str, main: bool, subnets: &[&str], routes: Vec<Route>) -> RouteTable {
        RouteTable {
            id: id.into(),
            arn: format!("arn:aws:ec2:us-east-1:123456789012:route-table/{id}"),
            name: id.into(),
            vpc_id: "vpc-1".into(),
            main,
            subnets: subnets.iter().map(|s| s.to_string()).collect(),
            routes,
            tags: BTreeMap::new(),
        }
    }

    /// vpc-1: subnets a1 (use1-az1), a2 (zone), a4 (use1-az4); NATs in each zone, a private one in
    /// the zone and one in use1-az4.
    fn estate(tables: Vec<RouteTable>) -> Estate {
        Estate {
            nats: vec![
                nat("nat-zone", "vpc-1", ZONE, "public"),
                nat("nat-a1", "vpc-1", "use1-az1", "public"),
                nat("nat-a4", "vpc-1", "use1-az4", "public"),
                nat("nat-pzone", "vpc-1", ZONE, "private"),
                nat("nat-p4", "vpc-1", "use1-az4", "private"),
                nat("nat-other-vpc", "vpc-2", "use1-az1", "public"),
            ],
            subnets: [("a1", "use1-az1"), ("a2", ZONE), ("a4", "use1-az4")]
                .into_iter()
                .map(|(s, z)| (s.to_owned(), ("vpc-1".to_owned(), z.to_owned())))
                .collect(),
            tables,
        }
    }

    fn record(actions: &[String]) -> Record {
        Record {
            az_id: ZONE.into(),
            resource: "arn:aws:ec2:us-east-1:123456789012:route-table/rtb-1".into(),
            resource_type: TYPE.into(),
            removed_subnets: vec![],
            state: State::Done,
            version: 2,
            resource_name: Some("rtb-1".into()),
            original_subnets: vec![],
            actions: actions.to_vec(),
            run_id: Some("run-1".into()),
            evacuated_by: None,
            reason: None,
            azevac_version: None,
            created_at: None,
            updated_at: None,
            account_id: None,
            identity: None,
        }
    }

    #[test]
    fn destinations_round_trip_through_the_journal_actions() {
        for (text, kind) in [
            ("0.0.0.0/0", Destination::Ipv4("0.0.0.0/0".into())),
            ("::/0", Destination::Ipv6("::/0".into())),
            ("64:ff9b::/96", Destination::Ipv6("64:ff9b::/96".into())),
            ("pl-0123abcd", Destination::PrefixList("pl-0123abcd".into())),
        ] {
            assert_eq!(Destination::parse(text), Some(kind.clone()));
            let action = original_action(&kind, "nat-0abc");
            assert_eq!(
                parse_action(&action, ORIGINAL),
                Some((kind.clone(), "nat-0abc")),
                "{action}"
            );
            assert_eq!(parse_action(&set_action(&kind, "nat-9"), SET), Some((kind, "nat-9")));
        }
        assert_eq!(parse_action("route:0.0.0.0/0", ORIGINAL), None);
        assert_eq!(parse_action("set:0.0.0.0/0:igw-1", SET), None);
        assert_eq!(Destination::parse(""), None);
    }

    #[test]
    fn a_table_serving_a_subnet_of_unknown_zone_is_left_alone() {
        let t = table("rtb-1", false, &["a4", "a9"], vec![route("0.0.0.0/0", "nat-zone")]);
        let estate = estate(vec![t.clone()]);
        match decide(&estate, &t, ZONE) {
            Decision::Skip(why) => assert!(why.contains("a9 whose zone could not be read"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_main_table_serves_every_subnet_without_an_explicit_association() {
        let estate = estate(vec![
            table("rtb-main", true, &[], vec![]),
            table("rtb-a2", false, &["a2"], vec![]),
        ]);
        let served = estate.served(&estate.tables[0]);
        assert_eq!(served.keys().collect::<Vec<_>>(), ["a1", "a4"]);
        assert_eq!(served["a4"], "use1-az4");
    }

    #[test]
    fn routes_move_to_the_subnets_zone_same_vpc_same_connectivity() {
        let t = table(
            "rtb-1",
            false,
            &["a4"],
            vec![route("0.0.0.0/0", "nat-zone"), route("10.9.0.0/16", "nat-pzone")],
        );
        let estate = estate(vec![t.clone()]);
        match decide(&estate, &t, ZONE) {
            Decision::Move(changes, unmoved) => {
                let to: Vec<&str> = changes.iter().map(|c| c.to.as_str()).collect();
                assert_eq!(to, ["nat-a4", "nat-p4"]);
                assert!(unmoved.is_empty());
            }
            other => panic!("{other:?}"),
        }
        // Subnets in use1-az1: its own zone's NAT, and a private NAT only ever for a private one.
        let t1 = table(
            "rtb-1",
            false,
            &["a1"],
            vec![route("0.0.0.0/0", "nat-zone"), route("10.9.0.0/16", "nat-pzone")],
        );
        match decide(&estate, &t1, ZONE) {
            Decision::Move(changes, _) => {
                assert_eq!(changes[0].to, "nat-a1");
                assert_eq!(changes[1].to, "nat-p4");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn no_replacement_or_a_subnet_in_the_zone_leaves_the_table_alone() {
        let mut e = estate(vec![]);
        e.nats.retain(|n| n.connectivity == "public" || n.id == "nat-pzone");
        let t = table("rtb-1", false, &["a1"], vec![route("10.9.0.0/16", "nat-pzone")]);
        assert!(
            matches!(decide(&e, &t, ZONE), Decision::Skip(why) if why.contains("no available private NAT gateway in vpc-1 outside use1-az2; left on nat-pzone"))
        );
        let inside = table("rtb-2", false, &["a1", "a2"], vec![route("0.0.0.0/0", "nat-zone")]);
        assert!(matches!(decide(&e, &inside, ZONE), Decision::Skip(why) if why.starts_with("serves a2 in use1-az2")));
        let unused = table("rtb-3", false, &[], vec![route("0.0.0.0/0", "nat-zone")]);
        assert!(matches!(decide(&e, &unused, ZONE), Decision::Skip(why) if why.starts_with("serves no subnet")));
        let elsewhere = table("rtb-4", false, &["a4"], vec![route("0.0.0.0/0", "nat-a1")]);
        assert_eq!(decide(&e, &elsewhere, ZONE), Decision::Elsewhere);
        // A stopped (unavailable) NAT is no replacement.
        e.nats
            .iter_mut()
            .filter(|n| n.id == "nat-a1" || n.id == "nat-a4")
            .for_each(|n| n.state = "pending".into());
        let t = table("rtb-5", false, &["a1"], vec![route("0.0.0.0/0", "nat-zone")]);
        assert!(matches!(decide(&e, &t, ZONE), Decision::Skip(_)));
    }

    #[test]
    fn dependencies_list_the_zones_nats_and_the_tables_outside_it_that_use_them() {
        let e = estate(vec![
            table("rtb-out", false, &["a1", "a4"], vec![route("0.0.0.0/0", "nat-zone")]),
            table("rtb-in", false, &["a2"], vec![route("0.0.0.0/0", "nat-zone")]),
            table("rtb-calm", false, &[], vec![route("0.0.0.0/0", "nat-a1")]),
        ]);
        let deps = Dependencies::of(&e, ZONE);
        let nats: Vec<&str> = deps.nat_gateways.iter().map(|n| n.id.as_str()).collect();
        assert_eq!(nats, ["nat-zone", "nat-pzone"]);
        assert_eq!(deps.route_tables.len(), 1);
        assert_eq!(deps.route_tables[0].id, "rtb-out");
        assert_eq!(
            deps.route_tables[0].routes,
            [ZonalRoute {
                destination: Destination::Ipv4("0.0.0.0/0".into()),
                nat_gateway_id: "nat-zone".into()
            }]
        );
        assert_eq!(deps.route_tables[0].subnets["a4"], "use1-az4");
    }

    #[test]
    fn recovery_puts_back_only_what_azevac_set_and_keeps_what_it_cannot() {
        let v4 = Destination::parse("0.0.0.0/0").expect("v4");
        let v6 = Destination::parse("::/0").expect("v6");
        let pl = Destination::parse("pl-1").expect("pl");
        let gone = Destination::parse("10.1.0.0/16").expect("gone");
        let actions = [
            original_action(&v4, "nat-zone"),
            set_action(&v4, "nat-a1"),
            original_action(&v6, "nat-zone"),
            set_action(&v6, "nat-a1"),
            original_action(&pl, "nat-zone"),
            set_action(&pl, "nat-a1"),
            original_action(&gone, "nat-zone"),
            set_action(&gone, "nat-a1"),
        ];
        let live = table(
            "rtb-1",
            false,
            &["a1"],
            vec![
                route("0.0.0.0/0", "nat-a1"),
                route("::/0", "nat-a4"),
                route("pl-1", "nat-zone"),
            ],
        );
        let e = estate(vec![]);
        let item = recovery(&record(&actions), Some(&live), &e, false);
        assert_eq!(item.status, Status::Planned);
        assert_eq!(
            item.actions.as_deref(),
            Some(&["point 0.0.0.0/0 back to nat-zone".to_string()][..])
        );
        let reason = item.reason.clone().unwrap_or_default();
        assert!(
            reason.contains("::/0: now targets nat-a4, not what azevac set (nat-a1): left alone (was nat-zone)"),
            "{reason}"
        );
        assert!(reason.contains("pl-1: already on nat-zone"), "{reason}");
        assert!(reason.contains("10.1.0.0/16: route no longer exists"), "{reason}");
        // The original NAT gone: the record stays and the line fails.
        let mut e = e;
        e.nats.retain(|n| n.id != "nat-zone");
        let item = recovery(&record(&actions[..2]), Some(&live), &e, false);
        assert_eq!(item.status, Status::Failed);
        assert!(item
            .reason
            .unwrap_or_default()
            .contains("nat-zone is not found, so the route stays on nat-a1; journal record kept"));
        // The table gone: kept unless --forget-missing.
        assert_eq!(recovery(&record(&actions), None, &e, false).status, Status::Skipped);
        let forgotten = recovery(&record(&actions), None, &e, true);
        assert_eq!(forgotten.status, Status::Planned);
        assert!(!forgotten.changes_resource());
    }

    /// Issue 31: a record whose route went "back" to a NAT gateway outside its zone (or the
    /// table's VPC) is odd, whatever the live route says; the honest record is not.
    #[test]
    fn a_record_naming_a_nat_gateway_outside_its_zone_or_vpc_is_odd() {
        let v4 = Destination::parse("0.0.0.0/0").expect("v4");
        let live = table("rtb-1", false, &["a1"], vec![route("0.0.0.0/0", "nat-a4")]);
        let e = estate(vec![]);
        let honest = [original_action(&v4, "nat-zone"), set_action(&v4, "nat-a4")];
        assert_eq!(
            crate::plan::odd_record(&recovery(&record(&honest), Some(&live), &e, false)),
            None
        );
        for (original, why) in [
            (
                "nat-a1",
                "nat-a1, which lies in use1-az1, not in the record's zone use1-az2",
            ),
            ("nat-other-vpc", "nat-other-vpc, which lies in use1-az1"),
        ] {
            let odd = [original_action(&v4, original), set_action(&v4, "nat-a4")];
            let item = recovery(&record(&odd), Some(&live), &e, false);
            let found = crate::plan::odd_record(&item).expect(original);
            assert!(found.contains(why), "{found}");
        }
        let mut elsewhere = e.clone();
        elsewhere.nats.push(nat("nat-zone-vpc-2", "vpc-2", ZONE, "public"));
        let odd = [original_action(&v4, "nat-zone-vpc-2"), set_action(&v4, "nat-a4")];
        let item = recovery(&record(&odd), Some(&live), &elsewhere, false);
        let found = crate::plan::odd_record(&item).expect("another VPC");
        assert!(found.contains("lies in vpc-2, not in vpc-1"), "{found}");
    }

    #[test]
    fn evacuation_journals_both_targets_and_filters_apply() {
        let t = table("rtb-1", false, &["a1"], vec![route("0.0.0.0/0", "nat-zone")]);
        let e = estate(vec![t]);
        let items = evacuation(&e, ZONE, &BTreeMap::new(), &Filters::default());
        assert_eq!(
            items[0].actions.as_deref(),
            Some(
                &[
                    "route:0.0.0.0/0:nat-zone".to_string(),
                    "set:0.0.0.0/0:nat-a1".to_string()
                ][..]
            )
        );
        assert_eq!(
            items[0].reason.as_deref(),
            Some("0.0.0.0/0: nat-zone (use1-az2) -> nat-a1 (use1-az1)")
        );
        let detail: Repoint = items[0].target.as_ref().expect("target").detail_as().expect("detail");
        assert_eq!(detail.table_id, "rtb-1");
        let filters = Filters {
            tags: vec![],
            name_prefix: Some("private-".into()),
        };
        let items = evacuation(&e, ZONE, &BTreeMap::new(), &filters);
        assert_eq!(items[0].status, Status::Skipped);
        assert!(items[0].reason.as_deref().unwrap_or_default().starts_with("filtered"));
    }
}
