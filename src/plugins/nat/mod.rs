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
//! Journal: `resource_type` `nat`, `resource` the route table's ARN, and two actions per route
//! ([`Action`]): the original target (the one `recover` points back to) and the NAT gateway azevac
//! set (which `recover` checks the live route against).
//!
//! The kind's story, one job a file: [`actions`] (what is journalled), [`estate`] (the NAT routes
//! as read, and their pure reading), [`decide`] (the pure decisions of evacuation and recovery),
//! [`client`] (the EC2 calls), and here the plugin. [`zonal_dependencies`] is the same discovery,
//! without the plan or the journal, for the exposure report.

pub mod actions;
pub mod client;
pub mod decide;
pub mod estate;
#[cfg(test)]
mod tests;

use async_trait::async_trait;

use super::{Acted, Plugin, Refreshing, Scope, Setup, Stage};
use crate::error::describe;
use crate::journal::{Guard, Held};
use crate::model::{Command, Item, Record, Resource, Status};
use crate::{Error, Result};

pub use actions::{Action, Destination};
pub use client::Ec2;
use decide::apply_decision;
pub use decide::{decide, evacuation, recovery, table_id, Change, Decision, Repoint};
pub use estate::{zonal_dependencies, Dependencies, Dependent, Estate, NatGateway, Route, RouteTable, ZonalRoute};

/// The `--type` value and journal `resource_type` of NAT route changes.
pub const TYPE: &str = "nat";

/// How the registry knows this kind: its calls, its IAM actions, its options.
pub const REGISTRATION: super::Registration = super::Registration {
    name: TYPE,
    services: &["ec2"],
    changes_through: &["ec2"],
    iam_actions: &[
        "ec2:DescribeNatGateways",
        "ec2:DescribeRouteTables",
        "ec2:DescribeSubnets",
        "ec2:ReplaceRoute",
    ],
    build: plugin,
    flags: None,
    describe: crate::model::Record::words_as::<actions::Action>,
    cluster: super::no_cluster,
    expiring: None,
};
/// What routing through another zone costs, shown with every evacuation line.
const CROSS_ZONE_NOTE: &str = "egress now crosses zones to the replacement NAT gateway: cross-zone data transfer \
     is charged on it (on top of NAT processing) until recover points the routes back";

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
    async fn refresh(&self, run: Refreshing<'_>, lines: &mut [&mut Item], held: &[&Held]) -> Result<()> {
        if lines.iter().all(|l| l.status != Status::Planned) {
            return Ok(());
        }
        match run.command {
            Command::Evacuate => {
                let az_id = lines.first().map(|l| l.az_id.clone()).unwrap_or_default();
                let estate = self.ec2.estate(&az_id).await?;
                for line in lines.iter_mut().filter(|l| l.status == Status::Planned) {
                    // Only the VPCs with a NAT gateway in the zone are read: a table not among
                    // them is gone, or its VPC has no such gateway any more. Either way: nothing to do.
                    let Some(table) = estate.tables.iter().find(|t| t.arn == line.resource) else {
                        line.skip("no longer routes through a NAT gateway in the zone (or is gone); nothing changed");
                        line.take_actions::<Action>(&[]);
                        continue;
                    };
                    match decide(&estate, table, &line.az_id) {
                        Decision::Elsewhere => {
                            line.skip("no route through the zone's NAT gateways any more");
                            line.take_actions::<Action>(&[]);
                        }
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
                    line.failure = fresh.failure;
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
                    lines[n].fail(crate::model::Failure::read_back(format!(
                        "could not read the route table back ({}); the journal holds the routes",
                        describe(&e)
                    )));
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
                line.fail(crate::model::Failure::read_back(format!(
                    "read back: {}; the journal still holds the routes",
                    wrong.join("; ")
                )));
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
