//! What evacuating and recovering a cluster's NodePools (and, in noschedule mode, its Karpenter
//! nodes) means, decided from the objects as read and the journal's records, with no IO (pure).

use std::collections::BTreeMap;

use ::kube::api::DynamicObject;
use k8s_openapi::api::core::v1::Node;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::requirements::{exclusion, raw_requirements, requirements, revert, Exclusion};
use super::{Action, Mode, DO_NOT_DISRUPT, NODEPOOL_LABEL, TYPE};
use crate::model::action::Action as _;
use crate::model::plan::ALREADY_EVACUATED;
use crate::model::topology::{Zone, Zones};
use crate::model::{Identity, Item, Record, Resource};
use crate::plugins::kube::{self, node_identity, node_zone, short};

/// Labels and annotations of GitOps controllers that would put a NodePool back as Git has it.
const GITOPS_MARKS: &[(&str, &str)] = &[
    ("argocd.argoproj.io/tracking-id", "Argo CD"),
    ("argocd.argoproj.io/instance", "Argo CD"),
    ("app.kubernetes.io/instance", "Argo CD (its default tracking label)"),
    ("kustomize.toolkit.fluxcd.io/name", "Flux (Kustomization)"),
    ("helm.toolkit.fluxcd.io/name", "Flux (HelmRelease)"),
];

/// The names EKS Auto Mode gives its built-in NodePools.
const AUTO_MODE_POOLS: [&str; 2] = ["general-purpose", "system"];
/// The label EKS Auto Mode puts on the built-in NodePools it manages, with the value `eks`.
const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
/// The API group, kind and name of the NodeClass EKS Auto Mode makes for its built-in NodePools.
const AUTO_MODE_NODECLASS: (&str, &str, &str) = ("eks.amazonaws.com", "NodeClass", "default");

/// Why a NodePool is one of EKS Auto Mode's built-in NodePools, if it is.
///
/// EKS manages them: "You cannot modify the built in system and general-purpose node pools. You can
/// only enable or disable them" (Amazon EKS User Guide, "Create a Node Pool for EKS Auto Mode",
/// <https://docs.aws.amazon.com/eks/latest/userguide/create-node-pool.html>, and "Enable or Disable
/// Built-in NodePools", <https://docs.aws.amazon.com/eks/latest/userguide/set-builtin-node-pools.html>).
/// The API server takes a patch, and EKS puts the NodePool back within minutes: an exclusion
/// journalled as done would silently end. What works instead is the cluster's zonal shift, or a
/// NodePool of one's own (EKS leaves those alone; azevac changes them as any other).
///
/// Recognised by what EKS writes, not by the name alone (a self-managed Karpenter may have a
/// NodePool called `system`): the label `app.kubernetes.io/managed-by: eks` EKS puts on them, or,
/// should it be missing, a built-in name together with the NodeClass EKS makes for them
/// (`eks.amazonaws.com/NodeClass` `default`; a NodePool of one's own may use that NodeClass too,
/// so the name must match as well).
pub fn auto_mode_builtin(pool: &DynamicObject) -> Option<String> {
    let name = pool.metadata.name.as_deref().unwrap_or_default();
    let label = pool
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(MANAGED_BY))
        .filter(|v| v.eq_ignore_ascii_case("eks"));
    let class = &pool.data["spec"]["template"]["spec"]["nodeClassRef"];
    let (group, kind, class_name) = AUTO_MODE_NODECLASS;
    let eks_class = class["group"] == group && class["kind"] == kind && class["name"] == class_name;
    let mark = match label {
        Some(value) => format!("{MANAGED_BY}={value}"),
        None if AUTO_MODE_POOLS.contains(&name) && eks_class => format!("NodeClass {group}/{class_name}"),
        None => return None,
    };
    Some(format!(
        "built-in NodePool of EKS Auto Mode ({mark}): EKS undoes changes to it within minutes, so an exclusion \
         would silently end; use the cluster's zonal shift (--zonal-shift, with the cluster registered with ARC \
         zonal shift), or run the workloads on a NodePool of your own, which azevac changes"
    ))
}

/// The NodePool's disruption budgets, in a few words (Karpenter's default: `nodes: 10%`).
fn budgets(pool: &Value) -> String {
    let listed: Vec<String> = pool["spec"]["disruption"]["budgets"]
        .as_array()
        .map(|b| {
            b.iter()
                .map(|b| {
                    let nodes = b["nodes"].as_str().unwrap_or("10%");
                    match (b["schedule"].as_str(), b["reasons"].as_array()) {
                        (Some(schedule), _) => format!("nodes: {nodes} at {schedule:?}"),
                        (None, Some(reasons)) => format!(
                            "nodes: {nodes} for {}",
                            reasons.iter().filter_map(Value::as_str).collect::<Vec<_>>().join("/")
                        ),
                        (None, None) => format!("nodes: {nodes}"),
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    if listed.is_empty() {
        "nodes: 10%, Karpenter's default".to_owned()
    } else {
        listed.join("; ")
    }
}

/// Which GitOps controller would revert the NodePool, by its labels and annotations.
pub fn gitops(metadata: &::kube::api::ObjectMeta) -> Option<String> {
    let (labels, annotations) = (metadata.labels.as_ref(), metadata.annotations.as_ref());
    GITOPS_MARKS.iter().find_map(|(mark, who)| {
        let found = labels.and_then(|l| l.get(*mark)).or_else(|| annotations.and_then(|a| a.get(*mark)));
        found.map(|value| {
            format!(
                "managed by {who} ({mark}={value}): its controller may revert this change; pause its sync (or make the change in Git) for the evacuation"
            )
        })
    })
}

/// The journal's `resource` for a NodePool.
pub fn pool_resource(cluster: &str, name: &str) -> String {
    format!("{cluster}/nodepool/{name}")
}

/// The journal's `resource` for a node azevac annotates.
pub fn node_resource(cluster: &str, name: &str) -> String {
    format!("{cluster}/node/{name}")
}

/// What a journal `resource` names: the cluster, whether it is a NodePool, the object's name.
pub fn parse_resource(resource: &str) -> Option<(&str, bool, &str)> {
    if let Some((cluster, name)) = resource.rsplit_once("/nodepool/") {
        return Some((cluster, true, name));
    }
    resource
        .rsplit_once("/node/")
        .map(|(cluster, name)| (cluster, false, name))
}

/// The region's zones and the zone, carried from the plan to the act (the act computes the change
/// again from the live NodePool).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Detail {
    /// The zone to exclude.
    pub zone: Zone,
    /// The region's zones.
    pub zones: Vec<Zone>,
}

/// A planned line about one object of one cluster (of `identity`, journalled with the intent),
/// changing nothing yet.
fn line(
    cluster: &str,
    resource: String,
    what: &str,
    name: &str,
    identity: Option<Identity>,
    az_id: &str,
    record: Option<&Record>,
) -> Item {
    let shown = format!("{}/{what}/{name}", short(cluster));
    Item {
        actions: Some(Vec::new()),
        record: record.cloned(),
        target: Some(Resource {
            resource_type: TYPE,
            id: resource.clone(),
            name: shown.clone(),
            identity,
            ..Resource::default()
        }),
        ..Item::new(TYPE, &resource, &shown, az_id)
    }
}

/// What evacuating one cluster's NodePools means, NodePool by NodePool (pure).
pub fn evacuation(
    cluster: &str,
    pools: &[DynamicObject],
    zone: &Zone,
    zones: &Zones,
    mode: Mode,
    records: &BTreeMap<String, Record>,
) -> Vec<Item> {
    let detail = Detail {
        zone: zone.clone(),
        zones: zones.all().to_vec(),
    };
    pools
        .iter()
        .map(|pool| {
            let name = pool.metadata.name.clone().unwrap_or_default();
            let resource = pool_resource(cluster, &name);
            let record = records.get(&resource);
            let identity = kube::identity(pool.metadata.uid.as_deref(), None);
            // A record of another NodePool of the same name (replaced since) excluded nothing here.
            let ours = record.filter(|r| r.is_about(identity.as_ref()));
            let mut item = line(cluster, resource, "nodepool", &name, identity, &zone.id, record);
            if let Some(target) = item.target.as_mut() {
                target.set_detail(&detail);
            }
            if let Some(why) = auto_mode_builtin(pool) {
                item.skip(why);
                return item;
            }
            let decided = requirements(&pool.data).map(|(_, parsed)| exclusion(&parsed, zone, zones.all()));
            match decided {
                Err(e) => item.skip(crate::error::describe(&e)),
                Ok(Exclusion::Excluded) if ours.is_some() => {
                    item.skip(format!("{ALREADY_EVACUATED} (NodePool requirement journalled)"))
                }
                Ok(Exclusion::Excluded) => item.skip(format!(
                    "the NodePool already excludes {}: nothing to do",
                    zone.id
                )),
                Ok(Exclusion::Refused(why)) => item.skip(why),
                Ok(Exclusion::Change(change)) => {
                    item.take_actions(&[change]);
                    let kept = match mode {
                        Mode::Noschedule => format!(
                            ", except the nodes annotated {DO_NOT_DISRUPT} (--k8s-mode noschedule keeps them serving)"
                        ),
                        _ => String::new(),
                    };
                    item.notes.push(format!(
                        "Karpenter launches no new node in {} for this NodePool; its nodes already there drift and are replaced within its disruption budgets ({}){kept}",
                        zone.id,
                        budgets(&pool.data)
                    ));
                    item.notes.extend(gitops(&pool.metadata));
                }
            }
            item
        })
        .collect()
}

/// `--k8s-mode noschedule`: the zone's Karpenter nodes, annotated so that drift does not replace
/// them (pure). A node that already carries the annotation is left alone: it is not azevac's.
pub fn annotations(
    cluster: &str,
    nodes: &[Node],
    zone: &Zone,
    zones: &Zones,
    records: &BTreeMap<String, Record>,
) -> Vec<Item> {
    nodes
        .iter()
        .filter(|n| node_zone(n, zones).as_deref() == Some(zone.id.as_str()))
        .filter(|n| {
            n.metadata
                .labels
                .as_ref()
                .is_some_and(|l| l.contains_key(NODEPOOL_LABEL))
        })
        .map(|node| {
            let name = node.metadata.name.clone().unwrap_or_default();
            let resource = node_resource(cluster, &name);
            let record = records.get(&resource);
            let identity = node_identity(node);
            let ours = record.filter(|r| r.is_about(identity.as_ref()));
            let mut item = line(cluster, resource, "node", &name, identity, &zone.id, record);
            match annotation(node) {
                None => {
                    item.take_actions(&[Action::Annotated]);
                    item.notes
                        .push("Karpenter leaves the node in place (no drift replacement) until recover".to_owned());
                }
                Some(_) if ours.is_some() => item.skip(format!("{ALREADY_EVACUATED} ({DO_NOT_DISRUPT} journalled)")),
                Some(value) => item.skip(format!(
                    "{DO_NOT_DISRUPT}={value:?} was already set (not by azevac): left alone"
                )),
            }
            item
        })
        .collect()
}

/// The node's `karpenter.sh/do-not-disrupt` annotation, if it has one.
pub fn annotation(node: &Node) -> Option<&str> {
    node.metadata
        .annotations
        .as_ref()?
        .get(DO_NOT_DISRUPT)
        .map(String::as_str)
}

/// The recovery line of a record, before anything is decided: changes nothing.
pub fn recovery_line(record: &Record) -> Item {
    let (cluster, is_pool, name) = parse_resource(&record.resource).unwrap_or(("", true, &record.resource));
    let what = if is_pool { "nodepool" } else { "node" };
    let mut item = line(
        cluster,
        record.resource.clone(),
        what,
        name,
        None,
        &record.az_id,
        Some(record),
    );
    item.target = None;
    item
}

/// What recovering one record means (pure): revert the recorded changes still in place.
/// `current` is the NodePool or node as it is now: `None`, gone (its record kept until
/// `--forget-missing`, [`crate::model::plan::missing`]); one of another uid, replaced (as good as gone:
/// its record is removed). Actions that do not parse fail the line.
pub fn recovery(record: &Record, current: Option<&Value>, forget_missing: bool) -> Item {
    let (_, is_pool, name) = parse_resource(&record.resource).unwrap_or(("", true, &record.resource));
    let what = if is_pool { "NodePool" } else { "node" };
    let mut item = recovery_line(record);
    let Some(current) = current else {
        crate::model::plan::missing(&mut item, what, forget_missing);
        return item;
    };
    let live = kube::identity(
        current["metadata"]["uid"].as_str(),
        current["spec"]["providerID"].as_str(),
    );
    if let Some(live) = live.filter(|l| !record.is_about(Some(l))) {
        item.reason = Some(kube::replaced(record, what, name, &live));
        return item;
    }
    let done = match record.actions_as::<Action>() {
        Ok(done) => done,
        Err(e) => {
            item.fail(crate::model::Failure::plan_kept(crate::error::describe(&e)));
            return item;
        }
    };
    let mut undo = Vec::new();
    let mut raw = raw_requirements(current);
    for action in &done {
        let still = match action {
            Action::Annotated => current["metadata"]["annotations"][DO_NOT_DISRUPT] == json!("true"),
            change => revert(change, &mut raw),
        };
        if still {
            undo.push(format!("revert {}", action.describe()));
        }
    }
    if undo.is_empty() {
        item.reason = Some("nothing to undo: journal record will be deleted".to_owned());
    }
    item.actions = Some(undo);
    item
}

/// The failed line of a cluster whose NodePools could not be listed: Karpenter may keep launching
/// nodes in the zone there, so the run must not look like a success.
pub fn unreadable(cluster: &str, az_id: &str, err: &crate::Error) -> Item {
    let status = match err {
        crate::Error::Kube { source, .. } => match source.downcast_ref::<::kube::Error>() {
            Some(::kube::Error::Api(status)) => Some((status.code, status.message.clone())),
            _ => None,
        },
        _ => None,
    };
    let why = match &status {
        Some((code, message)) => format!("{code}: {message}"),
        None => crate::error::describe(err),
    };
    let hint = if status.is_some_and(|(code, _)| code == 403) {
        "; grant get, list, patch on nodepools.karpenter.sh (fixtures/clusterrole.json), or leave the type out with --type"
    } else {
        ""
    };
    let mut item = Item::new(
        TYPE,
        &format!("{cluster}/nodepools"),
        &format!("{}/nodepools", short(cluster)),
        az_id,
    );
    item.actions = Some(Vec::new());
    item.fail(crate::model::Failure::plan(format!(
        "cannot list the NodePools ({why}){hint}"
    )));
    item
}
