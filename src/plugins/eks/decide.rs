//! What evacuating and recovering a cluster's nodes means, decided from the nodes as read and the
//! journal's records, with no IO (pure; unit-tested in `tests.rs`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Pod, Taint};

use super::{Action, Mode, TAINT_KEY, TYPE};
use crate::model::action::Action as _;
use crate::model::plan::ALREADY_EVACUATED;
use crate::model::topology::Zones;
use crate::model::{Item, Record, Resource};
use crate::plugins::kube::node::{is_ready, is_schedulable};
use crate::plugins::kube::{node_identity, node_zone, replaced, short};
use crate::plugins::Finding;

/// The journal's `resource` for a node.
pub fn resource_id(cluster: &str, node: &str) -> String {
    format!("{cluster}/{node}")
}

/// The cluster name of a journal `resource` (`CLUSTER/NODE`).
pub fn cluster_of(resource: &str) -> &str {
    resource
        .rsplit_once('/')
        .map(|(cluster, _)| cluster)
        .unwrap_or_default()
}

/// The node name of a journal `resource` (`CLUSTER/NODE`).
pub fn node_of(resource: &str) -> &str {
    resource.rsplit('/').next().unwrap_or(resource)
}

/// The taint effect of `mode`.
pub fn effect(mode: Mode) -> &'static str {
    if mode == Mode::Noexecute {
        "NoExecute"
    } else {
        "NoSchedule"
    }
}

/// azevac's taint on the node, if it carries one.
pub fn our_taint(node: &Node) -> Option<&Taint> {
    node.spec.as_ref()?.taints.as_ref()?.iter().find(|t| t.key == TAINT_KEY)
}

/// Whether `action` is still in place on `node`, so that recover has it to undo.
fn in_place(action: &Action, node: &Node) -> bool {
    match action {
        Action::Taint { key, .. } => node
            .spec
            .as_ref()
            .and_then(|s| s.taints.as_ref())
            .is_some_and(|t| t.iter().any(|t| t.key == *key)),
        Action::Cordon => !is_schedulable(node),
        Action::Drain => false,
    }
}

/// What each mode means for the pods, for the plan line.
fn note(mode: Mode) -> &'static str {
    match mode {
        Mode::Noexecute => {
            "NoExecute evicts running pods at once and ignores PodDisruptionBudgets (use --k8s-mode drain to respect them)"
        }
        Mode::Noschedule => "running pods stay; no new pods land on these nodes",
        Mode::Drain => {
            "drain evicts through the Eviction API (PodDisruptionBudgets respected); DaemonSet and mirror pods stay"
        }
    }
}

/// What evacuating one cluster means, node by node (pure). A cluster whose every Ready node is in the
/// zone is skipped whole: never evacuate a cluster's last schedulable zone. A node keeps what an
/// earlier run did to it (`records`, by journal key): a cordon azevac made is not planned again. A
/// record whose actions do not parse fails its node's line.
pub fn evacuation(
    cluster: &str,
    nodes: &[Node],
    az_id: &str,
    zones: &Zones,
    mode: Mode,
    records: &BTreeMap<String, Record>,
) -> Vec<Item> {
    let in_zone: Vec<&Node> = nodes
        .iter()
        .filter(|n| node_zone(n, zones).as_deref() == Some(az_id))
        .collect();
    let elsewhere_ready = nodes
        .iter()
        .filter(|n| node_zone(n, zones).as_deref() != Some(az_id) && is_ready(n) && is_schedulable(n))
        .count();
    in_zone
        .into_iter()
        .map(|node| {
            let name = node.metadata.name.clone().unwrap_or_default();
            let (resource, shown) = (resource_id(cluster, &name), format!("{}/{name}", short(cluster)));
            let record = records.get(&resource);
            let identity = node_identity(node);
            let mut item = Item {
                actions: Some(Vec::new()),
                record: record.cloned(),
                target: Some(Resource {
                    resource_type: TYPE,
                    id: resource.clone(),
                    name: shown.clone(),
                    identity: identity.clone(),
                    ..Resource::default()
                }),
                ..Item::new(TYPE, &resource, &shown, az_id)
            };
            // A record of another node of the same name (replaced since) did nothing to this one.
            let earlier = match record
                .filter(|r| r.is_about(identity.as_ref()))
                .map(Record::actions_as::<Action>)
            {
                None => Vec::new(),
                Some(Ok(earlier)) => earlier,
                Some(Err(e)) => {
                    item.fail(crate::model::Failure::plan(crate::error::describe(&e)));
                    return item;
                }
            };
            let cordoned_by_us = earlier.contains(&Action::Cordon) && !is_schedulable(node);
            let mut actions = Vec::new();
            if mode != Mode::Drain && our_taint(node).is_none() {
                actions.push(Action::taint(az_id, effect(mode)));
            }
            if mode != Mode::Noexecute && is_schedulable(node) {
                actions.push(Action::Cordon);
            }
            // A drain of a node someone else cordoned still evicts its pods: journalled as such.
            if mode == Mode::Drain && actions.is_empty() && !cordoned_by_us {
                actions.push(Action::Drain);
            }
            if elsewhere_ready == 0 {
                item.skip("every Ready node of the cluster is in the zone: it is the cluster's last schedulable zone");
            } else if actions.is_empty() && our_taint(node).is_some() {
                item.skip(format!("{ALREADY_EVACUATED} (azevac taint present)"));
            } else if actions.is_empty() {
                item.skip(format!("{ALREADY_EVACUATED} (cordoned by azevac)"));
            } else {
                item.take_actions(&actions);
                item.notes.push(note(mode).to_owned());
            }
            item
        })
        .collect()
}

/// One cluster's exposure finding: its nodes in the zone (pure). A cluster with no Ready,
/// schedulable node elsewhere cannot be moved: its nodes are its last schedulable zone.
pub fn exposed(cluster: &str, nodes: &[Node], az_id: &str, zones: &Zones) -> Option<Finding> {
    let in_zone: Vec<String> = nodes
        .iter()
        .filter(|n| node_zone(n, zones).as_deref() == Some(az_id))
        .filter_map(|n| n.metadata.name.clone())
        .collect();
    if in_zone.is_empty() {
        return None;
    }
    let elsewhere = nodes
        .iter()
        .filter(|n| node_zone(n, zones).as_deref() != Some(az_id) && is_ready(n) && is_schedulable(n))
        .count();
    let tainted = nodes
        .iter()
        .filter(|n| node_zone(n, zones).as_deref() == Some(az_id) && our_taint(n).is_some())
        .count();
    let count = in_zone.len();
    let found = Finding::new(TYPE, cluster, short(cluster), in_zone);
    let mut found = if elsewhere == 0 {
        found.not_movable("every Ready node of the cluster is in the zone: add nodes in another zone first")
    } else {
        found.moved_by(TYPE)
    };
    if tainted == count {
        found.away = Some(format!(
            "azevac's taint {TAINT_KEY} is on every node in the zone: no new pods land there"
        ));
    } else if tainted > 0 {
        found.notes.push(format!("{tainted} of {count} carry azevac's taint"));
    }
    Some(found)
}

/// The recovery line of a record, before anything is decided: changes nothing.
pub fn recovery_line(record: &Record) -> Item {
    let (cluster, node_name) = (cluster_of(&record.resource), node_of(&record.resource));
    Item {
        actions: Some(Vec::new()),
        record: Some(record.clone()),
        ..Item::new(
            TYPE,
            &record.resource,
            &format!("{}/{node_name}", short(cluster)),
            &record.az_id,
        )
    }
}

/// What recovering one node's record means (pure): undo the recorded actions that are still in
/// place. A node that is gone keeps its record until `--forget-missing` ([`crate::model::plan::missing`]);
/// one replaced by another of the same name only has its record removed (the change went with
/// the node, and the name is the new node's). Actions that do not parse fail the line.
pub fn recovery(record: &Record, node: Option<&Node>, forget_missing: bool) -> Item {
    let mut item = recovery_line(record);
    let live = node.and_then(node_identity);
    match node {
        None => crate::model::plan::missing(&mut item, "node", forget_missing),
        Some(_) if !record.is_about(live.as_ref()) => {
            item.reason = live
                .as_ref()
                .map(|live| replaced(record, "node", node_of(&record.resource), live));
        }
        Some(node) => match record.actions_as::<Action>() {
            Err(e) => item.fail(crate::model::Failure::plan_kept(crate::error::describe(&e))),
            Ok(done) => {
                let undo: Vec<String> = done
                    .iter()
                    .filter(|action| in_place(action, node))
                    .map(|action| format!("un{}", action.describe()))
                    .collect();
                if undo.is_empty() {
                    item.reason = Some("nothing to undo: journal record will be deleted".to_owned());
                }
                item.actions = Some(undo);
            }
        },
    }
    item
}

/// Whether a drain evicts the pod: DaemonSet pods come back at once and mirror pods cannot be
/// evicted; finished pods need nothing.
pub fn evictable(pod: &Pod) -> bool {
    let daemonset = pod
        .metadata
        .owner_references
        .as_ref()
        .is_some_and(|o| o.iter().any(|r| r.kind == "DaemonSet"));
    let mirror = pod
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key("kubernetes.io/config.mirror"));
    let finished = pod
        .status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .is_some_and(|p| p == "Succeeded" || p == "Failed");
    !daemonset && !mirror && !finished && pod.metadata.deletion_timestamp.is_none()
}
