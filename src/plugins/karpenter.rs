//! Karpenter NodePools (`karpenter.sh/v1`): tainting a zone's nodes does not stop Karpenter from
//! launching new ones there for pending pods, so azevac excludes the zone from each NodePool that
//! can place nodes in it — one requirement value, merged with the NodePool's own requirements on the
//! same key — and journals exactly what it added, so that `recover` takes out that and nothing else.
//! With `--k8s-mode noschedule` it also annotates the zone's Karpenter nodes
//! `karpenter.sh/do-not-disrupt`, so that drift does not replace the nodes that keep serving.
//!
//! Clusters are those of `--kube-context`, as for the `eks` type; a cluster without the NodePool
//! CRD has no NodePools. Every write is a merge patch carrying the `resourceVersion` it was
//! computed from (409 → read again and compute again), like node writes.

use std::collections::BTreeMap;
use std::sync::Mutex;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::eks::{self, Cluster, Mode, ZONE_ID_LABEL, ZONE_NAME_LABEL};
use super::{Acted, Plugin, Scope, Setup};
use crate::journal::Guard;
use crate::model::{Identity, Item, Record, Resource, Status};
use crate::plan::ALREADY_EVACUATED;
use crate::topology::{Zone, Zones};
use crate::{Error, Result};

/// The `--type` value and journal `resource_type` of Karpenter NodePools.
pub const TYPE: &str = "karpenter";
/// The node annotation that keeps Karpenter from disrupting a node (drift, consolidation).
pub const DO_NOT_DISRUPT: &str = "karpenter.sh/do-not-disrupt";
/// The label Karpenter puts on the nodes it launched: the NodePool's name.
pub const NODEPOOL_LABEL: &str = "karpenter.sh/nodepool";
/// Labels and annotations of GitOps controllers that would put a NodePool back as Git has it.
const GITOPS_MARKS: &[(&str, &str)] = &[
    ("argocd.argoproj.io/tracking-id", "Argo CD"),
    ("argocd.argoproj.io/instance", "Argo CD"),
    ("app.kubernetes.io/instance", "Argo CD (its default tracking label)"),
    ("kustomize.toolkit.fluxcd.io/name", "Flux (Kustomization)"),
    ("helm.toolkit.fluxcd.io/name", "Flux (HelmRelease)"),
];

/// The NodePool resource, as the CRD serves it.
fn nodepools() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("karpenter.sh", "v1", "NodePool"), "nodepools")
}

/// One requirement of `spec.template.spec.requirements`, as far as azevac reads it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Requirement {
    /// The node label key.
    pub key: String,
    /// `In`, `NotIn`, `Exists`, `DoesNotExist`, `Gt`, `Lt`.
    pub operator: String,
    /// The values (`In`/`NotIn`: at least one).
    #[serde(default)]
    pub values: Vec<String>,
    /// At least this many values must stay (`In`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_values: Option<usize>,
}

impl Requirement {
    /// Whether a node whose label `key` has `value` satisfies this requirement.
    fn admits(&self, value: &str) -> bool {
        match self.operator.as_str() {
            "In" => self.values.iter().any(|v| v == value),
            "NotIn" => !self.values.iter().any(|v| v == value),
            "DoesNotExist" => false,
            // Exists; Gt/Lt on a zone label would be meaningless: they do not narrow zones here.
            _ => true,
        }
    }
}

/// One change azevac makes to a NodePool or to a node, as journalled (`actions`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A requirement `KEY NotIn [VALUE]` of azevac's own, appended to the NodePool's.
    Appended {
        /// The label key.
        key: String,
        /// The zone's ID or name.
        value: String,
    },
    /// VALUE added to the NodePool's own `KEY NotIn` requirement.
    AddedToNotIn {
        /// The label key.
        key: String,
        /// The zone's ID or name.
        value: String,
    },
    /// VALUE taken out of the NodePool's own `KEY In` requirement, where it stood at `at`.
    TakenFromIn {
        /// The label key.
        key: String,
        /// The zone's ID or name.
        value: String,
        /// Its place in the values (recover puts it back there).
        at: usize,
    },
    /// The node annotation `karpenter.sh/do-not-disrupt: "true"`.
    Annotated,
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Change::Appended { key, value } => write!(f, "requirement:{key} NotIn {value}"),
            Change::AddedToNotIn { key, value } => write!(f, "notin-value:{key}={value}"),
            Change::TakenFromIn { key, value, at } => write!(f, "in-value-removed:{key}={value}@{at}"),
            Change::Annotated => write!(f, "annotate:{DO_NOT_DISRUPT}=true"),
        }
    }
}

impl std::str::FromStr for Change {
    type Err = Error;

    fn from_str(action: &str) -> Result<Change> {
        let pair = |rest: &str, sep: &str| {
            rest.split_once(sep)
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .filter(|(k, v)| !k.is_empty() && !v.is_empty())
        };
        let parsed = if let Some(rest) = action.strip_prefix("requirement:") {
            pair(rest, " NotIn ").map(|(key, value)| Change::Appended { key, value })
        } else if let Some(rest) = action.strip_prefix("notin-value:") {
            pair(rest, "=").map(|(key, value)| Change::AddedToNotIn { key, value })
        } else if let Some(rest) = action.strip_prefix("in-value-removed:") {
            rest.rsplit_once('@')
                .and_then(|(rest, at)| Some((pair(rest, "=")?, at.parse().ok()?)))
                .map(|((key, value), at)| Change::TakenFromIn { key, value, at })
        } else if action == Change::Annotated.to_string() {
            Some(Change::Annotated)
        } else {
            None
        };
        parsed.ok_or_else(|| {
            Error::BadInput(format!(
                "journal action {action:?} is not one azevac's karpenter type writes; nothing changed"
            ))
        })
    }
}

/// The requirements of a NodePool as stored (every field kept) and as read.
fn requirements(pool: &Value) -> Result<(Vec<Value>, Vec<Requirement>)> {
    let raw = raw_requirements(pool);
    let parsed = raw
        .iter()
        .map(|r| serde_json::from_value(r.clone()))
        .collect::<std::result::Result<Vec<Requirement>, _>>()
        .map_err(|e| Error::BadInput(format!("a NodePool requirement does not parse ({e}); nothing changed")))?;
    Ok((raw, parsed))
}

/// A NodePool's requirements as the API server holds them. Reverting works on these alone, so that
/// a requirement azevac cannot parse (a newer operator, a typo) never hides what azevac added.
fn raw_requirements(pool: &Value) -> Vec<Value> {
    pool["spec"]["template"]["spec"]["requirements"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The zones of the region a NodePool with these requirements can place nodes in.
pub fn placeable<'z>(requirements: &[Requirement], zones: &'z [Zone]) -> Vec<&'z Zone> {
    zones
        .iter()
        .filter(|z| {
            requirements.iter().all(|r| match r.key.as_str() {
                ZONE_ID_LABEL => r.admits(&z.id),
                ZONE_NAME_LABEL => r.admits(&z.name),
                _ => true,
            })
        })
        .collect()
}

/// What excluding the zone from one NodePool takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exclusion {
    /// This change.
    Change(Change),
    /// Nothing: the NodePool cannot place nodes in the zone.
    Excluded,
    /// Nothing may be done, for this reason (the zone is the NodePool's only one...).
    Refused(String),
}

/// What excluding `zone` from a NodePool with these requirements means (pure). The key the
/// NodePool already speaks in is used (zone IDs, else zone names; zone IDs when it names neither),
/// and the NodePool's own requirement on that key is merged with: an `In` loses the zone, a `NotIn`
/// gains it; only a NodePool with neither gets a requirement of azevac's own.
pub fn exclusion(requirements: &[Requirement], zone: &Zone, zones: &[Zone]) -> Exclusion {
    let now = placeable(requirements, zones);
    if !now.iter().any(|z| z.id == zone.id) {
        return Exclusion::Excluded;
    }
    if now.len() == 1 {
        return Exclusion::Refused(format!(
            "the NodePool can place nodes only in {} ({}): excluding it would leave the NodePool no zone",
            zone.id, zone.name
        ));
    }
    let speaks = |key: &str| requirements.iter().any(|r| r.key == key);
    let (key, value) = if speaks(ZONE_ID_LABEL) || !speaks(ZONE_NAME_LABEL) {
        (ZONE_ID_LABEL, zone.id.as_str())
    } else {
        (ZONE_NAME_LABEL, zone.name.as_str())
    };
    let (key, value) = (key.to_owned(), value.to_owned());
    let on_key = |op: &str| requirements.iter().find(|r| r.key == key && r.operator == op);
    if let Some(within) = requirements
        .iter()
        .find(|r| r.key == key && r.operator == "In" && r.values.contains(&value))
    {
        if let Some(min) = within.min_values.filter(|&m| within.values.len() <= m) {
            return Exclusion::Refused(format!(
                "{key} In requires at least {min} values (minValues): taking {value} out would break it"
            ));
        }
        let at = within.values.iter().position(|v| *v == value).unwrap_or_default();
        return Exclusion::Change(Change::TakenFromIn { key, value, at });
    }
    if on_key("NotIn").is_some() {
        return Exclusion::Change(Change::AddedToNotIn { key, value });
    }
    Exclusion::Change(Change::Appended { key, value })
}

/// The `values` of a stored requirement.
fn values_of(requirement: &Value) -> Vec<String> {
    serde_json::from_value(requirement["values"].clone()).unwrap_or_default()
}

fn is(requirement: &Value, key: &str, operator: &str) -> bool {
    requirement["key"] == json!(key) && requirement["operator"] == json!(operator)
}

/// Make `change` to the stored requirements; whether anything changed.
pub fn apply(change: &Change, raw: &mut Vec<Value>) -> bool {
    match change {
        Change::Appended { key, value } => {
            raw.push(json!({ "key": key, "operator": "NotIn", "values": [value] }));
            true
        }
        Change::AddedToNotIn { key, value } => match raw.iter_mut().find(|r| is(r, key, "NotIn")) {
            Some(r) => {
                let mut values = values_of(r);
                values.push(value.clone());
                r["values"] = json!(values);
                true
            }
            None => false,
        },
        Change::TakenFromIn { key, value, .. } => {
            match raw
                .iter_mut()
                .find(|r| is(r, key, "In") && values_of(r).contains(value))
            {
                Some(r) => {
                    let values: Vec<String> = values_of(r).into_iter().filter(|v| v != value).collect();
                    r["values"] = json!(values);
                    true
                }
                None => false,
            }
        }
        Change::Annotated => false,
    }
}

/// Take `change` back out of the stored requirements where it is still in place, leaving whatever
/// else changed since (other values added to azevac's requirement stay); whether anything changed.
pub fn revert(change: &Change, raw: &mut Vec<Value>) -> bool {
    match change {
        Change::Appended { key, value } | Change::AddedToNotIn { key, value } => {
            // An appended requirement is ours whole only while it holds just our value.
            let Some(at) = raw
                .iter()
                .position(|r| is(r, key, "NotIn") && values_of(r).contains(value))
            else {
                return false;
            };
            let values: Vec<String> = values_of(&raw[at]).into_iter().filter(|v| v != value).collect();
            if values.is_empty() {
                // A NotIn without values is invalid: the requirement held nothing but ours.
                raw.remove(at);
            } else {
                raw[at]["values"] = json!(values);
            }
            true
        }
        Change::TakenFromIn { key, value, at } => match raw.iter_mut().find(|r| is(r, key, "In")) {
            Some(r) if !values_of(r).contains(value) => {
                let mut values = values_of(r);
                values.insert((*at).min(values.len()), value.clone());
                r["values"] = json!(values);
                true
            }
            _ => false,
        },
        Change::Annotated => false,
    }
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
fn gitops(metadata: &kube::api::ObjectMeta) -> Option<String> {
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
fn parse_resource(resource: &str) -> Option<(&str, bool, &str)> {
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
struct Detail {
    zone: Zone,
    zones: Vec<Zone>,
}

/// A planned line about one object of one cluster (of `identity`, journalled with the intent).
fn line(
    cluster: &str,
    resource: String,
    what: &str,
    name: &str,
    identity: Option<Identity>,
    az_id: &str,
    record: Option<&Record>,
) -> Item {
    let shown = format!("{}/{what}/{name}", eks::short(cluster));
    Item {
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

fn skip(item: &mut Item, reason: String) {
    item.status = Status::Skipped;
    item.reason = Some(reason);
    item.actions = Some(Vec::new());
    item.notes.clear();
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
            let identity = eks::identity(pool.metadata.uid.as_deref(), None);
            // A record of another NodePool of the same name (replaced since) excluded nothing here.
            let ours = record.filter(|r| r.is_about(identity.as_ref()));
            let mut item = line(cluster, resource, "nodepool", &name, identity, &zone.id, record);
            if let Some(target) = item.target.as_mut() {
                target.set_detail(&detail);
            }
            let decided = requirements(&pool.data).map(|(_, parsed)| exclusion(&parsed, zone, zones.all()));
            match decided {
                Err(e) => skip(&mut item, crate::error::describe(&e)),
                Ok(Exclusion::Excluded) if ours.is_some() => {
                    skip(&mut item, format!("{ALREADY_EVACUATED} (NodePool requirement journalled)"))
                }
                Ok(Exclusion::Excluded) => skip(
                    &mut item,
                    format!("the NodePool already excludes {}: nothing to do", zone.id),
                ),
                Ok(Exclusion::Refused(why)) => skip(&mut item, why),
                Ok(Exclusion::Change(change)) => {
                    item.actions = Some(vec![change.to_string()]);
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
        .filter(|n| eks::node_zone(n, zones).as_deref() == Some(zone.id.as_str()))
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
            let identity = eks::node_identity(node);
            let ours = record.filter(|r| r.is_about(identity.as_ref()));
            let mut item = line(cluster, resource, "node", &name, identity, &zone.id, record);
            match annotation(node) {
                None => {
                    item.actions = Some(vec![Change::Annotated.to_string()]);
                    item.notes
                        .push("Karpenter leaves the node in place (no drift replacement) until recover".to_owned());
                }
                Some(_) if ours.is_some() => {
                    skip(&mut item, format!("{ALREADY_EVACUATED} ({DO_NOT_DISRUPT} journalled)"))
                }
                Some(value) => skip(
                    &mut item,
                    format!("{DO_NOT_DISRUPT}={value:?} was already set (not by azevac): left alone"),
                ),
            }
            item
        })
        .collect()
}

fn annotation(node: &Node) -> Option<&str> {
    node.metadata
        .annotations
        .as_ref()?
        .get(DO_NOT_DISRUPT)
        .map(String::as_str)
}

/// What recovering one record means (pure): revert the recorded changes still in place.
/// `current` is the NodePool or node as it is now (`None`: gone; one of another uid: replaced,
/// and as good as gone).
pub fn recovery(record: &Record, current: Option<&Value>) -> Item {
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
    let Some(current) = current else {
        item.actions = Some(Vec::new());
        item.reason = Some(format!("{what} no longer exists: journal record will be deleted"));
        return item;
    };
    let live = eks::identity(
        current["metadata"]["uid"].as_str(),
        current["spec"]["providerID"].as_str(),
    );
    if let Some(live) = live.filter(|l| !record.is_about(Some(l))) {
        let what = if is_pool { "NodePool" } else { "node" };
        item.actions = Some(Vec::new());
        item.reason = Some(eks::replaced(record, what, name, &live));
        return item;
    }
    let mut undo = Vec::new();
    let mut raw = raw_requirements(current);
    for action in &record.actions {
        let still = match action.parse::<Change>() {
            Ok(Change::Annotated) => current["metadata"]["annotations"][DO_NOT_DISRUPT] == json!("true"),
            Ok(change) => revert(&change, &mut raw),
            Err(e) => {
                item.fail(crate::error::describe(&e));
                return item;
            }
        };
        if still {
            undo.push(format!("revert {action}"));
        }
    }
    if undo.is_empty() {
        item.reason = Some("nothing to undo: journal record will be deleted".to_owned());
    }
    item.actions = Some(undo);
    item
}

/// Karpenter NodePools (and, in noschedule mode, node annotations) as a plugin: the clusters of
/// `--kube-context`.
pub struct NodePools {
    clusters: BTreeMap<String, Cluster>,
    mode: Mode,
}

/// Registry constructor: the clusters of `--kube-context`, as for `eks`.
pub fn plugin(setup: &Setup) -> futures::future::BoxFuture<'_, Result<Option<Box<dyn Plugin>>>> {
    Box::pin(async move {
        let (options, clusters) = eks::clusters_of(setup, TYPE, "Karpenter NodePools").await?;
        Ok(Some(Box::new(NodePools {
            clusters,
            mode: options.mode,
        }) as Box<dyn Plugin>))
    })
}

impl NodePools {
    fn cluster(&self, resource: &str) -> Result<(&Cluster, bool, String)> {
        let (cluster, is_pool, name) = parse_resource(resource)
            .ok_or_else(|| Error::Internal(format!("{resource} is not a NodePool or a node")))?;
        let found = self
            .clusters
            .get(cluster)
            .ok_or_else(|| Error::Internal(format!("no cluster for {resource}")))?;
        Ok((found, is_pool, name.to_owned()))
    }
}

fn pools_api(cluster: &Cluster) -> Api<DynamicObject> {
    Api::all_with(cluster.client(), &nodepools())
}

/// Every NodePool of the cluster; a cluster without the CRD (404) has none.
async fn list_pools(cluster: &Cluster) -> Result<Vec<DynamicObject>> {
    match pools_api(cluster).list(&ListParams::default()).await {
        Ok(list) => Ok(list.items),
        Err(kube::Error::Api(status)) if status.code == 404 => {
            tracing::info!(cluster = %cluster.name, "no NodePool CRD: no Karpenter NodePools");
            Ok(Vec::new())
        }
        Err(e) => Err(eks::kube_err("list nodepools", e)),
    }
}

/// The failed line of a cluster whose NodePools could not be listed: Karpenter may keep launching
/// nodes in the zone there, so the run must not look like a success.
fn unreadable(cluster: &str, az_id: &str, err: &Error) -> Item {
    let status = match err {
        Error::Kube { source, .. } => match source.downcast_ref::<kube::Error>() {
            Some(kube::Error::Api(status)) => Some((status.code, status.message.clone())),
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
        &format!("{}/nodepools", eks::short(cluster)),
        az_id,
    );
    item.actions = Some(Vec::new());
    item.fail(format!("cannot list the NodePools ({why}){hint}"));
    item
}

/// One NodePool or node as it is now, as JSON (`None`: gone, or no CRD).
async fn current(cluster: &Cluster, is_pool: bool, name: &str) -> Result<Option<Value>> {
    let found = if is_pool {
        match pools_api(cluster).get_opt(name).await {
            Ok(pool) => pool.map(|p| serde_json::to_value(p).unwrap_or_default()),
            Err(kube::Error::Api(status)) if status.code == 404 => None,
            Err(e) => return Err(eks::kube_err("get nodepool", e)),
        }
    } else {
        cluster
            .node(name)
            .await?
            .map(|n| serde_json::to_value(n).unwrap_or_default())
    };
    Ok(found)
}

/// A merge patch that sets the NodePool's requirements to `raw`.
fn requirements_patch(raw: Vec<Value>) -> Value {
    json!({ "spec": { "template": { "spec": { "requirements": raw } } } })
}

#[async_trait]
impl Plugin for NodePools {
    fn resource_type(&self) -> &'static str {
        TYPE
    }

    async fn plan_evacuation(&self, scope: &Scope<'_>) -> Result<Vec<Item>> {
        let Some(zone) = scope.zone else {
            return Ok(Vec::new());
        };
        let mut items = Vec::new();
        for cluster in self.clusters.values() {
            // One cluster whose NodePools cannot be read (RBAC) fails its line, not the run.
            let pools = match list_pools(cluster).await {
                Ok(pools) => pools,
                Err(e) => {
                    items.push(unreadable(&cluster.name, &zone.id, &e));
                    continue;
                }
            };
            items.extend(evacuation(
                &cluster.name,
                &pools,
                zone,
                scope.zones,
                self.mode,
                scope.records,
            ));
            if self.mode == Mode::Noschedule && !pools.is_empty() {
                let nodes = cluster.nodes().await?;
                items.extend(annotations(&cluster.name, &nodes, zone, scope.zones, scope.records));
            }
        }
        Ok(items)
    }

    async fn plan_recovery(&self, records: Vec<Record>, _scope: &Scope<'_>) -> Result<Vec<Item>> {
        let mut items = Vec::new();
        for record in &records {
            let (cluster_name, is_pool, name) = parse_resource(&record.resource).unwrap_or_default();
            let item = match self.clusters.get(cluster_name) {
                Some(cluster) => recovery(record, current(cluster, is_pool, name).await?.as_ref()),
                None => eks::kept_without_cluster(recovery(record, None), cluster_name),
            };
            items.push(item);
        }
        Ok(items)
    }

    async fn evacuate(&self, line: &Item, held: &Guard<'_>) -> Result<Acted> {
        let record = held.record();
        let identity = record.identity.as_ref();
        let (cluster, is_pool, name) = self.cluster(&line.resource)?;
        if !is_pool {
            // Set by the attempt that wrote: whether this run is what annotated the node.
            let annotating = Mutex::new(false);
            let node = cluster
                .update_node(&name, identity, held, |n| {
                    let add = annotation(n).is_none();
                    *annotating.lock().unwrap_or_else(|e| e.into_inner()) = add;
                    add.then(|| {
                        (
                            json!({ "metadata": { "annotations": { DO_NOT_DISRUPT: "true" } } }),
                            vec![Change::Annotated.to_string()],
                        )
                    })
                })
                .await?
                .ok_or_else(|| Error::BadInput(format!("node {name} disappeared")))?;
            if annotation(&node) != Some("true") {
                return Err(read_back(format!("{DO_NOT_DISRUPT} is not \"true\" on {name}")));
            }
            let ours = *annotating.lock().unwrap_or_else(|e| e.into_inner());
            return Ok(Acted {
                actions: Some(if ours {
                    vec![Change::Annotated.to_string()]
                } else {
                    Vec::new()
                }),
                ..Acted::default()
            });
        }
        let detail: Detail = line
            .target
            .as_ref()
            .ok_or_else(|| Error::Internal(format!("no planned state for {}", line.resource)))?
            .detail_as()?;
        // Set by the attempt that wrote: the change computed from that read.
        let made: Mutex<Option<Change>> = Mutex::new(None);
        let refused: Mutex<Option<String>> = Mutex::new(None);
        let operations = ("get nodepool", "patch nodepool");
        let pool = eks::read_modify_write(&pools_api(cluster), &name, identity, operations, held, |pool| {
            let data = serde_json::to_value(pool).unwrap_or_default();
            let (mut raw, parsed) = match requirements(&data) {
                Ok(found) => found,
                Err(e) => {
                    *refused.lock().unwrap_or_else(|e| e.into_inner()) = Some(crate::error::describe(&e));
                    return None;
                }
            };
            let (change, why) = match exclusion(&parsed, &detail.zone, &detail.zones) {
                Exclusion::Change(change) if apply(&change, &mut raw) => (Some(change), None),
                Exclusion::Change(change) => (None, Some(format!("internal: {change} did not apply"))),
                Exclusion::Excluded => (None, None),
                Exclusion::Refused(why) => (None, Some(why)),
            };
            *refused.lock().unwrap_or_else(|e| e.into_inner()) = why;
            let patch = change
                .as_ref()
                .map(|change| (requirements_patch(raw), vec![change.to_string()]));
            *made.lock().unwrap_or_else(|e| e.into_inner()) = change;
            patch
        })
        .await?
        .ok_or_else(|| Error::BadInput(format!("NodePool {name} disappeared")))?;
        if let Some(why) = refused.into_inner().unwrap_or_else(|e| e.into_inner()) {
            return Err(Error::BadInput(format!("{why}; nothing changed")));
        }
        // Read back: the NodePool must now exclude the zone.
        let (_, parsed) = requirements(&serde_json::to_value(&pool).unwrap_or_default())?;
        if placeable(&parsed, &detail.zones).iter().any(|z| z.id == detail.zone.id) {
            return Err(read_back(format!(
                "NodePool {name} still places nodes in {}",
                detail.zone.id
            )));
        }
        let made = made.into_inner().unwrap_or_else(|e| e.into_inner());
        Ok(Acted {
            actions: Some(made.iter().map(Change::to_string).collect()),
            ..Acted::default()
        })
    }

    async fn recover(&self, line: &Item, held: &Guard<'_>) -> Result<Acted> {
        let (cluster, is_pool, name) = self.cluster(&line.resource)?;
        let record = held.record();
        let identity = record.identity.as_ref();
        let changes = record
            .actions
            .iter()
            .map(|a| a.parse::<Change>())
            .collect::<Result<Vec<Change>>>()?;
        if !is_pool {
            if changes.contains(&Change::Annotated) {
                cluster
                    .update_node(&name, identity, held, |n| {
                        (annotation(n) == Some("true")).then(|| {
                            (
                                json!({ "metadata": { "annotations": { DO_NOT_DISRUPT: null } } }),
                                Vec::new(),
                            )
                        })
                    })
                    .await?;
            }
            return Ok(Acted::default());
        }
        let api = pools_api(cluster);
        let outcome = eks::read_modify_write(
            &api,
            &name,
            identity,
            ("get nodepool", "patch nodepool"),
            held,
            |pool| {
                let data = serde_json::to_value(pool).unwrap_or_default();
                let mut raw = raw_requirements(&data);
                let mut changed = false;
                for change in &changes {
                    changed |= revert(change, &mut raw);
                }
                changed.then(|| (requirements_patch(raw), Vec::new()))
            },
        )
        .await;
        match outcome {
            Ok(_) => Ok(Acted::default()),
            // Deleted since the plan: nothing left to put back.
            Err(Error::Kube { source, .. }) if is_not_found(&*source) => Ok(Acted::default()),
            Err(e) => Err(e),
        }
    }

    async fn probe(&self) -> Vec<super::Check> {
        if self.clusters.is_empty() {
            return vec![eks::no_context(TYPE, "Karpenter NodePools")];
        }
        let mut checks = Vec::new();
        for cluster in self.clusters.values() {
            let name = format!("{TYPE} {}", eks::short(&cluster.name));
            let listed = pools_api(cluster).list(&ListParams::default().limit(1)).await;
            let check = match listed {
                Err(kube::Error::Api(status)) if status.code == 404 => super::Check::ok(
                    name,
                    "list nodepools: no NodePool CRD, so no Karpenter NodePools to act on",
                ),
                other => eks::kube_check(
                    &name,
                    "list nodepools",
                    other.map(|_| "answered".to_owned()),
                    "grant get, list, patch on nodepools.karpenter.sh (fixtures/clusterrole.json)",
                ),
            };
            checks.push(check);
        }
        checks
    }
}

fn is_not_found(err: &(dyn std::error::Error + 'static)) -> bool {
    matches!(err.downcast_ref::<kube::Error>(), Some(kube::Error::Api(status)) if status.code == 404)
}

fn read_back(why: String) -> Error {
    Error::Kube {
        operation: "read back",
        source: why.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zones() -> Vec<Zone> {
        [
            ("use1-az1", "us-east-1b"),
            ("use1-az2", "us-east-1c"),
            ("use1-az4", "us-east-1d"),
        ]
        .iter()
        .map(|(id, name)| Zone {
            id: (*id).into(),
            name: (*name).into(),
        })
        .collect()
    }

    fn req(key: &str, operator: &str, values: &[&str]) -> Requirement {
        Requirement {
            key: key.into(),
            operator: operator.into(),
            values: values.iter().map(|v| (*v).to_owned()).collect(),
            min_values: None,
        }
    }

    fn az2() -> Zone {
        zones()[1].clone()
    }

    #[test]
    fn a_nodepool_without_a_zone_requirement_gets_one_of_azevacs_own() {
        let reqs = [req("karpenter.sh/capacity-type", "In", &["spot"])];
        assert_eq!(
            exclusion(&reqs, &az2(), &zones()),
            Exclusion::Change(Change::Appended {
                key: ZONE_ID_LABEL.into(),
                value: "use1-az2".into()
            })
        );
    }

    #[test]
    fn a_nodepool_speaking_in_zone_names_is_merged_with() {
        let within = [req(ZONE_NAME_LABEL, "In", &["us-east-1b", "us-east-1c", "us-east-1d"])];
        assert_eq!(
            exclusion(&within, &az2(), &zones()),
            Exclusion::Change(Change::TakenFromIn {
                key: ZONE_NAME_LABEL.into(),
                value: "us-east-1c".into(),
                at: 1
            })
        );
        let outside = [req(ZONE_NAME_LABEL, "NotIn", &["us-east-1b"])];
        assert_eq!(
            exclusion(&outside, &az2(), &zones()),
            Exclusion::Change(Change::AddedToNotIn {
                key: ZONE_NAME_LABEL.into(),
                value: "us-east-1c".into()
            })
        );
    }

    #[test]
    fn the_only_zone_is_refused_and_an_excluded_one_needs_nothing() {
        let only = [req(ZONE_ID_LABEL, "In", &["use1-az2"])];
        assert!(matches!(exclusion(&only, &az2(), &zones()), Exclusion::Refused(why) if why.contains("no zone")));
        let elsewhere = [req(ZONE_ID_LABEL, "In", &["use1-az1", "use1-az4"])];
        assert_eq!(exclusion(&elsewhere, &az2(), &zones()), Exclusion::Excluded);
        let mut min = req(ZONE_ID_LABEL, "In", &["use1-az1", "use1-az2"]);
        min.min_values = Some(2);
        assert!(matches!(exclusion(&[min], &az2(), &zones()), Exclusion::Refused(why) if why.contains("minValues")));
    }

    #[test]
    fn revert_takes_out_only_what_was_added() {
        let original = vec![
            json!({ "key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"] }),
            json!({ "key": ZONE_NAME_LABEL, "operator": "NotIn", "values": ["us-east-1b"], "minValues": null }),
        ];
        for change in [
            Change::Appended {
                key: ZONE_ID_LABEL.into(),
                value: "use1-az2".into(),
            },
            Change::AddedToNotIn {
                key: ZONE_NAME_LABEL.into(),
                value: "us-east-1c".into(),
            },
        ] {
            let mut raw = original.clone();
            assert!(apply(&change, &mut raw));
            assert_ne!(raw, original);
            assert_eq!(change.to_string().parse::<Change>().expect("parses"), change);
            assert!(revert(&change, &mut raw));
            assert_eq!(raw, original, "{change}");
            assert!(!revert(&change, &mut raw), "a second revert finds nothing");
        }
        // An operator's later value on azevac's requirement stays.
        let change = Change::Appended {
            key: ZONE_ID_LABEL.into(),
            value: "use1-az2".into(),
        };
        let mut raw = original.clone();
        apply(&change, &mut raw);
        raw[2]["values"] = json!(["use1-az2", "use1-az4"]);
        assert!(revert(&change, &mut raw));
        assert_eq!(raw[2]["values"], json!(["use1-az4"]));
    }

    #[test]
    fn an_in_list_gets_the_zone_back() {
        let change = Change::TakenFromIn {
            key: ZONE_ID_LABEL.into(),
            value: "use1-az2".into(),
            at: 1,
        };
        assert_eq!(change.to_string().parse::<Change>().expect("parses"), change);
        let original =
            vec![json!({ "key": ZONE_ID_LABEL, "operator": "In", "values": ["use1-az1", "use1-az2", "use1-az4"] })];
        let mut raw = original.clone();
        assert!(apply(&change, &mut raw));
        assert_eq!(raw[0]["values"], json!(["use1-az1", "use1-az4"]));
        assert!(revert(&change, &mut raw));
        assert_eq!(raw, original, "back in its place");
        assert!(
            "taint:x".parse::<Change>().is_err(),
            "another type's action fails the line"
        );
    }

    #[test]
    fn gitops_marks_are_named() {
        let mut meta = kube::api::ObjectMeta::default();
        assert_eq!(gitops(&meta), None);
        meta.annotations = Some(
            [(
                "argocd.argoproj.io/tracking-id".to_owned(),
                "karpenter:karpenter.sh/NodePool:/general".to_owned(),
            )]
            .into(),
        );
        assert!(gitops(&meta).unwrap_or_default().contains("Argo CD"));
        meta.annotations = None;
        meta.labels = Some([("kustomize.toolkit.fluxcd.io/name".to_owned(), "infra".to_owned())].into());
        assert!(gitops(&meta).unwrap_or_default().contains("Flux"));
    }
}
