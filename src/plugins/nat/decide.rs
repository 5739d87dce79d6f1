//! The `nat` kind's decisions, pure over an [`Estate`]: what evacuating the zone means for each
//! route table (which routes move where, or why the table is left alone), and what recovering a
//! record means given the table as it is now.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::actions::{Action, Destination};
use super::estate::{Estate, RouteTable};
use super::{CROSS_ZONE_NOTE, TYPE};
use crate::error::describe;
use crate::model::plan::{Filters, ALREADY_EVACUATED};
use crate::model::{Item, Placement, Record, Resource, Site};

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

/// The journal actions of an evacuation's changes: the original target and azevac's, per route.
pub fn journal_actions(changes: &[Change]) -> Vec<Action> {
    changes
        .iter()
        .flat_map(|c| {
            [
                Action::Original {
                    destination: c.destination.clone(),
                    nat: c.from.clone(),
                },
                Action::Set {
                    destination: c.destination.clone(),
                    nat: c.to.clone(),
                },
            ]
        })
        .collect()
}

/// The changes in a few words, for the plan table: `route -> nat-b (use1-az1)`, or `2 routes ->
/// nat-b (use1-az1)` when they all go to one NAT gateway.
fn change_words(changes: &[Change]) -> String {
    let mut targets: Vec<String> = Vec::new();
    for target in changes.iter().map(|c| format!("{} ({})", c.to, c.to_az)) {
        if !targets.contains(&target) {
            targets.push(target);
        }
    }
    let routes = match changes.len() {
        1 => "route".to_owned(),
        n => format!("{n} routes"),
    };
    format!("{routes} -> {}", targets.join(", "))
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
pub(super) fn apply_decision(item: &mut Item, decision: Decision, table: &RouteTable, az_id: &str) {
    match decision {
        Decision::Elsewhere => {
            let journalled: Vec<String> = match item.record.as_ref().map(Record::actions_as::<Action>) {
                None => Vec::new(),
                Some(Ok(actions)) => actions
                    .iter()
                    .filter_map(Action::original)
                    .map(|(d, _)| match table.route(d) {
                        Some(route) => format!("{d} via {}", route.target),
                        None => format!("{d} gone"),
                    })
                    .collect(),
                Some(Err(e)) => vec![describe(&e)],
            };
            item.skip(format!("{ALREADY_EVACUATED}: {}", journalled.join(", ")));
            item.take_actions::<Action>(&[]);
        }
        Decision::Skip(why) => {
            item.skip(why);
            item.take_actions::<Action>(&[]);
        }
        Decision::Move(changes, unmoved) => {
            item.take_actions(&journal_actions(&changes));
            item.change = Some(change_words(&changes));
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
            item.skip(why);
            item.take_actions::<Action>(&[]);
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
        crate::model::plan::missing(&mut item, "route table", forget_missing);
        return item;
    };
    // An action this version cannot read fails the line: nothing is put back on a guess.
    let actions = match record.actions_as::<Action>() {
        Ok(actions) => actions,
        Err(e) => {
            item.fail(crate::model::Failure::plan_kept(describe(&e)));
            return item;
        }
    };
    // The NAT gateways the routes would go back to, where they lie: recover refuses a record that
    // names one outside its zone or the table's VPC.
    item.placement = Placement {
        named: actions
            .iter()
            .filter_map(Action::original)
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
    let mut set: BTreeMap<&Destination, Vec<&str>> = BTreeMap::new();
    for (d, nat) in actions.iter().filter_map(Action::set) {
        set.entry(d).or_default().push(nat);
    }
    let (mut changes, mut kept, mut released) = (Vec::new(), Vec::new(), Vec::new());
    let mut seen = BTreeSet::new();
    for (destination, original) in actions.iter().filter_map(Action::original) {
        if !seen.insert(destination.clone()) {
            continue;
        }
        let ours = set.get(destination).cloned().unwrap_or_default();
        let Some(route) = table.route(destination) else {
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
        item.fail(crate::model::Failure::plan_kept(format!(
            "{reason}; journal record kept"
        )));
        return item;
    }
    item.reason = (!reason.is_empty()).then_some(reason);
    item.change = (!changes.is_empty()).then(|| change_words(&changes));
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
