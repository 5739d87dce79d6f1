//! Kubernetes (EKS) nodes: the scheduler places pods on nodes, not in subnets, so azevac acts on the
//! nodes of the zone — a `NoExecute` taint by default, or `NoSchedule` + cordon, or cordon + drain
//! through the Eviction API — and journals exactly what it did, so `recover` undoes that and no more.
//!
//! Nodes are placed by the label `topology.k8s.aws/zone-id` (the AZ ID, set by EKS from Kubernetes
//! 1.30), falling back to `topology.kubernetes.io/zone` mapped to the AZ ID through EC2. Every node
//! write is a merge patch carrying the `resourceVersion` it was computed from (409 → read again), so
//! other taints and concurrent edits are never clobbered.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod, Taint};
use kube::api::{Api, EvictParams, ListParams, Patch, PatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::json;

use async_trait::async_trait;

use super::{Acted, Plugin, Scope, Setup};
use crate::journal::Guard;
use crate::model::{Identity, Item, Record, Status};
use crate::topology::Zones;
use crate::{Error, Result};

/// The `--type` value and journal `resource_type` of Kubernetes nodes.
pub const TYPE: &str = "eks";
/// The taint azevac adds (value: the AZ ID).
pub const TAINT_KEY: &str = "azevac.io/evacuated";
/// The AZ ID label EKS sets from Kubernetes 1.30.
pub const ZONE_ID_LABEL: &str = "topology.k8s.aws/zone-id";
/// The well-known zone-name label, mapped to an AZ ID through EC2.
pub const ZONE_NAME_LABEL: &str = "topology.kubernetes.io/zone";
/// The journal action for a cordon azevac made (and will undo).
const CORDON: &str = "cordon";
/// The journal action for a drain of a node azevac did not cordon (nothing to undo).
const DRAIN: &str = "drain";
/// Tries of a read-modify-write that keeps meeting 409 Conflict.
const CONFLICT_TRIES: usize = 5;

pub mod flags;
pub use flags::Mode;

/// `--kube-context`, `--kubeconfig`, `--k8s-mode`, `--drain-timeout`.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// One cluster per context.
    pub contexts: Vec<String>,
    /// The kubeconfig file (default: KUBECONFIG, then ~/.kube/config).
    pub kubeconfig: Option<PathBuf>,
    /// What to do to the zone's nodes.
    pub mode: Mode,
    /// How long `drain` keeps retrying evictions a PodDisruptionBudget refuses.
    pub drain_timeout: Duration,
}

/// One cluster, reached through one kube context.
#[derive(Clone)]
pub struct Cluster {
    /// The cluster's name in the kubeconfig (for EKS, usually the cluster ARN): the journal's prefix.
    pub name: String,
    client: kube::Client,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster").field("name", &self.name).finish()
    }
}

/// Connect to each context's cluster; exec-based auth (`aws eks get-token`) works as kubectl's does.
pub async fn connect(options: &Options) -> Result<Vec<Cluster>> {
    let kubeconfig = match &options.kubeconfig {
        Some(path) => Kubeconfig::read_from(path),
        None => Kubeconfig::read(),
    }
    .map_err(|e| Error::BadInput(format!("cannot read the kubeconfig: {e}; pass --kubeconfig PATH")))?;
    let mut clusters = Vec::new();
    for context in &options.contexts {
        let name = kubeconfig
            .contexts
            .iter()
            .find(|c| &c.name == context)
            .and_then(|c| c.context.as_ref())
            .map(|c| c.cluster.clone())
            .ok_or_else(|| {
                let known: Vec<&str> = kubeconfig.contexts.iter().map(|c| c.name.as_str()).collect();
                Error::BadInput(format!(
                    "no kube context {context:?} in the kubeconfig; contexts: {}",
                    known.join(", ")
                ))
            })?;
        let mut config = kube::Config::from_custom_kubeconfig(
            kubeconfig.clone(),
            &KubeConfigOptions {
                context: Some(context.clone()),
                ..Default::default()
            },
        )
        .await
        .map_err(|e| Error::BadInput(format!("kube context {context:?}: {e}")))?;
        // kube's own retry waits up to 15 times with delays growing toward 1000 s on 429/503:
        // unbounded for an incident. azevac bounds its waits itself (--drain-timeout, 409 retries).
        config.default_retry = false;
        let client = kube::Client::try_from(config).map_err(|e| kube_err("building a client", e))?;
        clusters.push(Cluster { name, client });
    }
    Ok(clusters)
}

pub(crate) fn kube_err(operation: &'static str, err: kube::Error) -> Error {
    Error::Kube {
        operation,
        source: Box::new(err),
    }
}

/// Read-modify-write one object: `change` computes, from the object as it is now, a merge patch and
/// the journal actions it carries out (or `None`: nothing to do); those actions are written ahead
/// through `held` before the patch is sent, which carries that `resourceVersion`; a 409 means read,
/// compute, write ahead and try again. `operations` name the read and the write in errors. With the
/// `identity` of the object a journal record names, an object of the same name with another uid
/// (the one named was deleted and another created since) is never written:
/// [`Error::ChangedSincePlan`].
pub(crate) async fn read_modify_write<K, F>(
    api: &Api<K>,
    name: &str,
    identity: Option<&Identity>,
    operations: (&'static str, &'static str),
    held: &Guard<'_>,
    change: F,
) -> Result<Option<K>>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    F: Fn(&K) -> Option<(serde_json::Value, Vec<String>)>,
{
    let (read, write) = operations;
    // Nothing declared yet: an act that fails before its first write did nothing (and the lease is
    // checked before the first read).
    held.cover(&[], &[]).await?;
    for _ in 0..CONFLICT_TRIES {
        let object = api.get(name).await.map_err(|e| kube_err(read, e))?;
        // The resourceVersion in the patch keeps a replacement after this read from being written.
        if let (Some(ours), Some(live)) = (identity, object.meta().uid.as_deref()) {
            if ours.uid != live {
                return Err(Error::ChangedSincePlan {
                    resource: name.to_owned(),
                    source: format!(
                        "replaced since the journal record was written: {name} is now another object (uid {live}), not uid {}; nothing changed",
                        ours.uid
                    )
                    .into(),
                });
            }
        }
        let Some((mut patch, actions)) = change(&object) else {
            return Ok(Some(object));
        };
        // The change computed from this read, journalled before it is sent (after a 409 it may
        // differ from the one planned: the object changed in between).
        held.cover(&[], &actions).await?;
        patch["metadata"]["resourceVersion"] = json!(object.meta().resource_version);
        match api.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await {
            Ok(object) => return Ok(Some(object)),
            Err(kube::Error::Api(status)) if status.code == 409 => {
                held.refused(&[], &actions);
                tracing::info!(
                    object = name,
                    "{name} changed while we wrote it (409); reading it again"
                );
            }
            Err(e) => return Err(kube_err(write, e)),
        }
    }
    Err(Error::Kube {
        operation: write,
        source: format!("{name} kept changing under us ({CONFLICT_TRIES} conflicts)").into(),
    })
}

/// The journal's `resource` for a node.
pub fn resource_id(cluster: &str, node: &str) -> String {
    format!("{cluster}/{node}")
}

/// What tells a Kubernetes object from a later one of the same name: its uid, and for a node the
/// EC2 instance of its `providerID` (`aws:///ZONE/INSTANCE_ID`). `None` without a uid.
pub(crate) fn identity(uid: Option<&str>, provider_id: Option<&str>) -> Option<Identity> {
    let instance_id = provider_id
        .and_then(|p| p.rsplit('/').next())
        .filter(|i| i.starts_with("i-"))
        .map(str::to_owned);
    uid.filter(|u| !u.is_empty()).map(|uid| Identity {
        uid: uid.to_owned(),
        instance_id,
    })
}

/// A node's [`identity`].
pub(crate) fn node_identity(node: &Node) -> Option<Identity> {
    identity(
        node.metadata.uid.as_deref(),
        node.spec.as_ref().and_then(|s| s.provider_id.as_deref()),
    )
}

/// The plan line's reason for a record whose object (`what`: node, NodePool) was replaced by
/// another of the same name, `live`: handled as an object that no longer exists.
pub(crate) fn replaced(record: &Record, what: &str, name: &str, live: &Identity) -> String {
    let changed = record
        .identity
        .as_ref()
        .map(|i| format!(" ({})", i.describe()))
        .unwrap_or_default();
    format!(
        "replaced since the evacuation: {name} is now another {what} ({}); the {what} azevac changed{changed} is gone, \
         nothing to undo: journal record will be deleted",
        live.describe()
    )
}

/// The AZ ID a node is in: the zone-id label, else the zone-name label mapped through EC2.
pub fn node_zone(node: &Node, zones: &Zones) -> Option<String> {
    let labels = node.metadata.labels.as_ref()?;
    if let Some(id) = labels.get(ZONE_ID_LABEL) {
        return Some(id.clone());
    }
    labels
        .get(ZONE_NAME_LABEL)
        .and_then(|name| zones.id_of(name))
        .map(str::to_owned)
}

fn is_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn is_schedulable(node: &Node) -> bool {
    !node.spec.as_ref().and_then(|s| s.unschedulable).unwrap_or(false)
}

fn our_taint(node: &Node) -> Option<&Taint> {
    node.spec.as_ref()?.taints.as_ref()?.iter().find(|t| t.key == TAINT_KEY)
}

/// The journal action for a taint: `taint:KEY=VALUE:EFFECT`.
fn taint_action(az_id: &str, effect: &str) -> String {
    format!("taint:{TAINT_KEY}={az_id}:{effect}")
}

/// What evacuating one cluster means, node by node (pure). A cluster whose every Ready node is in the
/// zone is skipped whole: never evacuate a cluster's last schedulable zone. A node keeps what an
/// earlier run did to it (`records`, by journal key): a cordon azevac made is not planned again.
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
    let effect = if mode == Mode::Noexecute {
        "NoExecute"
    } else {
        "NoSchedule"
    };
    in_zone
        .into_iter()
        .map(|node| {
            let name = node.metadata.name.clone().unwrap_or_default();
            let record = records.get(&resource_id(cluster, &name));
            let identity = node_identity(node);
            // A record of another node of the same name (replaced since) did nothing to this one.
            let cordoned_by_us = record
                .filter(|r| r.is_about(identity.as_ref()))
                .is_some_and(|r| r.actions.iter().any(|a| a == CORDON))
                && !is_schedulable(node);
            let mut actions = Vec::new();
            if mode != Mode::Drain && our_taint(node).is_none() {
                actions.push(taint_action(az_id, effect));
            }
            if mode != Mode::Noexecute && is_schedulable(node) {
                actions.push(CORDON.to_owned());
            }
            // A drain of a node someone else cordoned still evicts its pods: journalled as such.
            if mode == Mode::Drain && actions.is_empty() && !cordoned_by_us {
                actions.push(DRAIN.to_owned());
            }
            let mut notes = Vec::new();
            match mode {
                Mode::Noexecute => notes.push(
                    "NoExecute evicts running pods at once and ignores PodDisruptionBudgets (use --k8s-mode drain to respect them)".to_owned(),
                ),
                Mode::Noschedule => notes.push("running pods stay; no new pods land on these nodes".to_owned()),
                Mode::Drain => notes.push(
                    "drain evicts through the Eviction API (PodDisruptionBudgets respected); DaemonSet and mirror pods stay".to_owned(),
                ),
            }
            let (status, reason) = if elsewhere_ready == 0 {
                (
                    Status::Skipped,
                    Some("every Ready node of the cluster is in the zone: it is the cluster's last schedulable zone".to_owned()),
                )
            } else if actions.is_empty() && our_taint(node).is_some() {
                (Status::Skipped, Some(format!("{} (azevac taint present)", crate::plan::ALREADY_EVACUATED)))
            } else if actions.is_empty() {
                (Status::Skipped, Some(format!("{} (cordoned by azevac)", crate::plan::ALREADY_EVACUATED)))
            } else {
                (Status::Planned, None)
            };
            if status == Status::Skipped {
                actions.clear();
                notes.clear();
            }
            Item {
                actions: Some(actions),
                status,
                reason,
                notes,
                record: record.cloned(),
                target: Some(crate::model::Resource {
                    resource_type: TYPE,
                    id: resource_id(cluster, &name),
                    name: format!("{}/{name}", short(cluster)),
                    identity,
                    ..crate::model::Resource::default()
                }),
                ..Item::new(TYPE, &resource_id(cluster, &name), &format!("{}/{name}", short(cluster)), az_id)
            }
        })
        .collect()
}

/// One cluster's exposure finding: its nodes in the zone (pure). A cluster with no Ready,
/// schedulable node elsewhere cannot be moved: its nodes are its last schedulable zone.
pub fn exposed(cluster: &str, nodes: &[Node], az_id: &str, zones: &Zones) -> Option<super::Finding> {
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
    let found = super::Finding::new(TYPE, cluster, short(cluster), in_zone);
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

/// What recovering one node's record means (pure): undo the recorded actions that are still in
/// place; a node that is gone, or was replaced by another of the same name, only has its record
/// removed.
pub fn recovery(record: &Record, node: Option<&Node>) -> Item {
    let (cluster, node_name) = (cluster_of(&record.resource), node_of(&record.resource));
    let mut undo = Vec::new();
    let live = node.and_then(node_identity);
    let reason = match node {
        None => Some("node no longer exists (replaced?): journal record will be deleted".to_owned()),
        Some(_) if !record.is_about(live.as_ref()) => {
            live.as_ref().map(|live| replaced(record, "node", node_name, live))
        }
        Some(node) => {
            for action in record.actions.iter().filter(|a| *a != DRAIN) {
                let still = if action == CORDON {
                    !is_schedulable(node)
                } else {
                    our_taint(node).is_some()
                };
                if still {
                    undo.push(format!("un{action}"));
                }
            }
            undo.is_empty()
                .then(|| "nothing to undo: journal record will be deleted".to_owned())
        }
    };
    Item {
        actions: Some(undo),
        reason,
        record: Some(record.clone()),
        ..Item::new(
            TYPE,
            &record.resource,
            &format!("{}/{node_name}", short(cluster)),
            &record.az_id,
        )
    }
}

/// `arn:aws:eks:REGION:ACCOUNT:cluster/NAME` → `NAME`; other names as they are.
pub(crate) fn short(cluster: &str) -> &str {
    cluster.rsplit_once(":cluster/").map(|(_, n)| n).unwrap_or(cluster)
}

impl Cluster {
    /// Every node of the cluster.
    pub async fn nodes(&self) -> Result<Vec<Node>> {
        let api: Api<Node> = Api::all(self.client.clone());
        Ok(api
            .list(&ListParams::default())
            .await
            .map_err(|e| kube_err("list nodes", e))?
            .items)
    }

    /// One node, if it still exists.
    pub async fn node(&self, name: &str) -> Result<Option<Node>> {
        let api: Api<Node> = Api::all(self.client.clone());
        api.get_opt(name).await.map_err(|e| kube_err("get node", e))
    }

    /// The cluster's client, for the other Kubernetes types.
    pub(crate) fn client(&self) -> kube::Client {
        self.client.clone()
    }

    /// Read-modify-write a node, the one of `identity` if known (see [`read_modify_write`]).
    pub(crate) async fn update_node<F>(
        &self,
        name: &str,
        identity: Option<&Identity>,
        held: &Guard<'_>,
        change: F,
    ) -> Result<Option<Node>>
    where
        F: Fn(&Node) -> Option<(serde_json::Value, Vec<String>)>,
    {
        let api: Api<Node> = Api::all(self.client.clone());
        read_modify_write(&api, name, identity, ("get node", "patch node"), held, change).await
    }

    /// Carry out an evacuation line on the node `record` names; returns the actions actually taken
    /// (for the journal) and notes.
    pub async fn evacuate(
        &self,
        node: &str,
        record: &Record,
        options: &Options,
        held: &Guard<'_>,
    ) -> Result<(Vec<String>, Vec<String>)> {
        let az_id = record.az_id.as_str();
        let effect = if options.mode == Mode::Noexecute {
            "NoExecute"
        } else {
            "NoSchedule"
        };
        let want_taint = options.mode != Mode::Drain;
        let want_cordon = options.mode != Mode::Noexecute;
        // Set by the attempt that wrote: whether that write is what tainted and cordoned the node
        // (what was there before is an earlier run's, in its record, or not azevac's at all).
        let tainting = std::sync::atomic::AtomicBool::new(false);
        let cordoning = std::sync::atomic::AtomicBool::new(false);
        let updated = self
            .update_node(node, record.identity.as_ref(), held, |n| {
                let mut taints = n.spec.as_ref().and_then(|s| s.taints.clone()).unwrap_or_default();
                let add_taint = want_taint && !taints.iter().any(|t| t.key == TAINT_KEY);
                let cordon = want_cordon && is_schedulable(n);
                tainting.store(add_taint, std::sync::atomic::Ordering::Relaxed);
                cordoning.store(cordon, std::sync::atomic::Ordering::Relaxed);
                if !add_taint && !cordon {
                    return None;
                }
                if add_taint {
                    taints.push(Taint {
                        key: TAINT_KEY.to_owned(),
                        value: Some(az_id.to_owned()),
                        effect: effect.to_owned(),
                        time_added: None,
                    });
                }
                let mut spec = json!({ "taints": taints });
                let mut actions = Vec::new();
                if add_taint {
                    actions.push(taint_action(az_id, effect));
                }
                if cordon {
                    spec["unschedulable"] = json!(true);
                    actions.push(CORDON.to_owned());
                }
                Some((json!({ "spec": spec }), actions))
            })
            .await?;
        // Read back: the node must now carry what we meant it to.
        let node_now = updated.ok_or_else(|| Error::BadInput(format!("node {node} disappeared")))?;
        if want_taint && our_taint(&node_now).is_none() {
            return Err(Error::Kube {
                operation: "read back node",
                source: "the azevac taint is missing".into(),
            });
        }
        let mut actions = Vec::new();
        if tainting.load(std::sync::atomic::Ordering::Relaxed) {
            actions.push(taint_action(az_id, effect));
        }
        if cordoning.load(std::sync::atomic::Ordering::Relaxed) && !is_schedulable(&node_now) {
            actions.push(CORDON.to_owned());
        }
        if options.mode == Mode::Drain && actions.is_empty() {
            actions.push(DRAIN.to_owned());
        }
        let mut notes = Vec::new();
        if options.mode == Mode::Drain {
            // The drain is a change of its own: journalled before the first eviction.
            held.cover(&[], &actions).await?;
            let stuck = self.drain(node, options.drain_timeout).await?;
            if !stuck.is_empty() {
                notes.push(format!("pods not evicted: {}", stuck.join(", ")));
            }
        }
        Ok((actions, notes))
    }

    /// Evict every evictable pod of the node, retrying while a PodDisruptionBudget refuses (429),
    /// until `timeout`. Returns the pods that could not be evicted, with why.
    async fn drain(&self, node: &str, timeout: Duration) -> Result<Vec<String>> {
        let all: Api<Pod> = Api::all(self.client.clone());
        let pods = all
            .list(&ListParams::default().fields(&format!("spec.nodeName={node}")))
            .await
            .map_err(|e| kube_err("list pods", e))?
            .items;
        let deadline = tokio::time::Instant::now() + timeout;
        let mut stuck = Vec::new();
        for pod in pods.iter().filter(|p| evictable(p)) {
            let namespace = pod.metadata.namespace.clone().unwrap_or_else(|| "default".into());
            let name = pod.metadata.name.clone().unwrap_or_default();
            let api: Api<Pod> = Api::namespaced(self.client.clone(), &namespace);
            let mut delay = Duration::from_millis(200);
            loop {
                match api.evict(&name, &EvictParams::default()).await {
                    Ok(_) => break,
                    Err(kube::Error::Api(status)) if status.code == 404 => break,
                    Err(kube::Error::Api(status)) if status.code == 429 => {
                        if tokio::time::Instant::now() + delay > deadline {
                            stuck.push(format!(
                                "{namespace}/{name} (PodDisruptionBudget; --drain-timeout reached)"
                            ));
                            break;
                        }
                        crate::say!(
                            "azevac: waiting to evict {}: a PodDisruptionBudget refuses it for now",
                            crate::text::clean(&format!("{namespace}/{name}"))
                        );
                        tokio::time::sleep(delay).await;
                        delay = (delay * 2).min(Duration::from_secs(5));
                    }
                    Err(e) => {
                        stuck.push(format!("{namespace}/{name} ({e})"));
                        break;
                    }
                }
            }
        }
        Ok(stuck)
    }

    /// Undo exactly the recorded actions still in place: remove our taint (leaving every other one),
    /// uncordon only if azevac cordoned.
    pub async fn recover(&self, node: &str, record: &Record, held: &Guard<'_>) -> Result<()> {
        let uncordon = record.actions.iter().any(|a| a == CORDON);
        let untaint = record.actions.iter().any(|a| a.starts_with("taint:"));
        self.update_node(node, record.identity.as_ref(), held, |n| {
            let taints = n.spec.as_ref().and_then(|s| s.taints.clone()).unwrap_or_default();
            let kept: Vec<&Taint> = taints.iter().filter(|t| !(untaint && t.key == TAINT_KEY)).collect();
            let remove_taint = kept.len() != taints.len();
            let remove_cordon = uncordon && !is_schedulable(n);
            if !remove_taint && !remove_cordon {
                return None;
            }
            let mut spec = json!({ "taints": kept });
            if remove_cordon {
                spec["unschedulable"] = json!(false);
            }
            Some((json!({ "spec": spec }), Vec::new()))
        })
        .await?;
        Ok(())
    }
}

/// Kubernetes nodes as a plugin: the clusters of `--kube-context`.
pub struct Nodes {
    clusters: BTreeMap<String, Cluster>,
    options: Options,
}

/// Registry constructor: the clusters of `--kube-context`. Without a context the type plans nothing
/// (with a notice when `--type eks` asked for it), and recovery lists its records as kept.
pub fn plugin(setup: &Setup) -> futures::future::BoxFuture<'_, Result<Option<Box<dyn Plugin>>>> {
    Box::pin(async move {
        let (options, clusters) = clusters_of(setup, TYPE, "Kubernetes nodes").await?;
        Ok(Some(Box::new(Nodes { clusters, options }) as Box<dyn Plugin>))
    })
}

/// The Kubernetes options of the request and its clusters, by name, for the type `resource_type`
/// (`what` it acts on, for the notice). Without `--kube-context` there are none: a notice when
/// `--type` named the type, a log line otherwise.
pub(crate) async fn clusters_of(
    setup: &Setup,
    resource_type: &str,
    what: &str,
) -> Result<(Options, BTreeMap<String, Cluster>)> {
    let request = &setup.request;
    let kube: flags::Options = request.options_as()?;
    let options = Options {
        contexts: request.kube_contexts.clone(),
        kubeconfig: setup.kubeconfig.clone(),
        mode: kube.k8s_mode.unwrap_or_default(),
        // The flag's own default (5m) when a hand-written request leaves it out.
        drain_timeout: Duration::from_secs(kube.drain_timeout_seconds.unwrap_or(300)),
    };
    let clusters = if options.contexts.is_empty() {
        if request.names(resource_type) {
            crate::say!("azevac: notice: --type {resource_type} needs --kube-context CONTEXT; {what} left out");
        } else {
            tracing::info!("no --kube-context: {what} left out");
        }
        Vec::new()
    } else {
        connect(&options).await?
    };
    Ok((options, by_name(&clusters)))
}

impl Nodes {
    fn cluster_of(&self, line: &Item) -> Result<&Cluster> {
        self.clusters
            .get(cluster_of(&line.resource))
            .ok_or_else(|| Error::Internal(format!("no cluster for {}", line.resource)))
    }
}

#[async_trait]
impl Plugin for Nodes {
    fn resource_type(&self) -> &'static str {
        TYPE
    }

    async fn plan_evacuation(&self, scope: &Scope<'_>) -> Result<Vec<Item>> {
        let mut items = Vec::new();
        for cluster in self.clusters.values() {
            let nodes = cluster.nodes().await?;
            items.extend(evacuation(
                &cluster.name,
                &nodes,
                scope.az_id(),
                scope.zones,
                self.options.mode,
                scope.records,
            ));
        }
        Ok(items)
    }

    async fn plan_recovery(&self, records: Vec<Record>, _scope: &Scope<'_>) -> Result<Vec<Item>> {
        let mut items = Vec::new();
        for record in &records {
            let cluster_name = cluster_of(&record.resource);
            let item = match self.clusters.get(cluster_name) {
                Some(cluster) => recovery(record, cluster.node(node_of(&record.resource)).await?.as_ref()),
                None => kept_without_cluster(recovery(record, None), cluster_name),
            };
            items.push(item);
        }
        Ok(items)
    }

    async fn evacuate(&self, line: &Item, held: &Guard<'_>) -> Result<Acted> {
        let cluster = self.cluster_of(line)?;
        let (actions, notes) = cluster
            .evacuate(node_of(&line.resource), &held.record(), &self.options, held)
            .await?;
        Ok(Acted {
            actions: Some(actions),
            problem: (!notes.is_empty()).then(|| format!("cordoned, but {}", notes.join("; "))),
            shown: None,
            replace_actions: false,
        })
    }

    async fn recover(&self, line: &Item, held: &Guard<'_>) -> Result<Acted> {
        self.cluster_of(line)?
            .recover(node_of(&line.resource), &held.record(), held)
            .await?;
        Ok(Acted::default())
    }

    /// Per cluster, its nodes in the zone.
    async fn exposure(&self, scope: &Scope<'_>) -> Result<Vec<super::Finding>> {
        let mut found = Vec::new();
        for cluster in self.clusters.values() {
            found.extend(exposed(
                &cluster.name,
                &cluster.nodes().await?,
                scope.az_id(),
                scope.zones,
            ));
        }
        Ok(found)
    }

    async fn probe(&self) -> Vec<super::Check> {
        if self.clusters.is_empty() {
            return vec![no_context(TYPE, "Kubernetes nodes")];
        }
        let mut checks = Vec::new();
        for cluster in self.clusters.values() {
            let api: Api<Node> = Api::all(cluster.client());
            let listed = api
                .list(&ListParams::default().limit(1))
                .await
                .map(|_| "answered".to_owned());
            checks.push(kube_check(
                &format!("{TYPE} {}", short(&cluster.name)),
                "list nodes",
                listed,
                "grant get, list, patch on nodes (fixtures/clusterrole.json)",
            ));
        }
        checks
    }
}

/// DaemonSet pods come back at once and mirror pods cannot be evicted; finished pods need nothing.
fn evictable(pod: &Pod) -> bool {
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

/// A recovery line of a cluster this run has no `--kube-context` for: skipped, its record kept.
pub(crate) fn kept_without_cluster(mut item: Item, cluster: &str) -> Item {
    item.status = Status::Skipped;
    item.actions = Some(Vec::new());
    item.reason = Some(format!("no --kube-context for cluster {cluster}: journal record kept"));
    item
}

/// The clusters by name, for finding the cluster of a journal record.
pub fn by_name(clusters: &[Cluster]) -> BTreeMap<String, Cluster> {
    clusters.iter().map(|c| (c.name.clone(), c.clone())).collect()
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

/// `doctor`'s line for a Kubernetes type run without `--kube-context`: nothing to check.
pub(crate) fn no_context(resource_type: &str, what: &str) -> super::Check {
    super::Check::skip(
        resource_type,
        format!("no --kube-context: {what} not checked (and left out of runs without one)"),
        "pass --kube-context CONTEXT (repeatable) for each cluster azevac should act on",
    )
}

/// `doctor`'s line for one Kubernetes read `what` on one cluster: OK, denied (FAIL with the RBAC
/// to grant), or unreachable / anything else (FAIL: the context cannot be used in an incident).
pub(crate) fn kube_check(
    name: &str,
    what: &str,
    result: std::result::Result<String, kube::Error>,
    grant: &str,
) -> super::Check {
    match result {
        Ok(found) => super::Check::ok(name, format!("{what}: {found} (read permission only)")),
        // 401: the API server did not accept who we are (token, EKS access entry, aws-auth); RBAC
        // is not reached yet.
        Err(kube::Error::Api(status)) if status.code == 401 => super::Check::fail(
            name,
            format!("{what}: {} {}", status.code, status.message),
            "the cluster does not accept the caller: check the kubeconfig's credentials (`aws eks update-kubeconfig`) and the caller's EKS access entry or aws-auth mapping",
        ),
        Err(kube::Error::Api(status)) if status.code == 403 => super::Check::fail(
            name,
            format!("{what}: {} {}", status.code, status.message),
            format!("{grant}, bound to the caller's IAM principal"),
        ),
        Err(kube::Error::Api(status)) => super::Check::fail(
            name,
            format!("{what}: {} {}", status.code, status.message),
            "check the kube context's cluster (`kubectl --context CONTEXT get nodes`)",
        ),
        Err(e) => super::Check::fail(
            name,
            format!("{what}: cannot reach the API server: {}", crate::error::describe(&e)),
            "check the context's server and credentials: `aws eks update-kubeconfig --name CLUSTER`, \
             the network path to the API endpoint, then `kubectl --context CONTEXT get nodes`",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::Zone;

    fn zones() -> Zones {
        Zones::new(
            "us-east-1",
            vec![
                Zone {
                    id: "use1-az1".into(),
                    name: "us-east-1b".into(),
                },
                Zone {
                    id: "use1-az2".into(),
                    name: "us-east-1c".into(),
                },
            ],
        )
    }

    fn node(name: &str, labels: &[(&str, &str)], ready: bool) -> Node {
        serde_json::from_value(json!({
            "metadata": { "name": name, "labels": labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>() },
            "spec": {},
            "status": { "conditions": [{ "type": "Ready", "status": if ready { "True" } else { "False" } }] }
        }))
        .expect("node")
    }

    #[test]
    fn zone_comes_from_the_zone_id_label_or_the_mapped_zone_name() {
        assert_eq!(
            node_zone(&node("a", &[(ZONE_ID_LABEL, "use1-az2")], true), &zones()).as_deref(),
            Some("use1-az2")
        );
        // Older clusters: only the zone name, mapped through EC2 (us-east-1c is use1-az2 here).
        assert_eq!(
            node_zone(&node("b", &[(ZONE_NAME_LABEL, "us-east-1c")], true), &zones()).as_deref(),
            Some("use1-az2")
        );
        assert_eq!(
            node_zone(&node("c", &[], true), &zones()),
            None,
            "never guessed from the name"
        );
    }

    #[test]
    fn the_last_schedulable_zone_is_never_evacuated() {
        let nodes = vec![
            node("a", &[(ZONE_ID_LABEL, "use1-az2")], true),
            node("b", &[(ZONE_ID_LABEL, "use1-az1")], false), // not Ready: does not count
        ];
        let items = evacuation("prod", &nodes, "use1-az2", &zones(), Mode::Noexecute, &BTreeMap::new());
        assert_eq!(items.len(), 1);
        assert_eq!(items[0].status, Status::Skipped);
        assert!(items[0]
            .reason
            .as_deref()
            .unwrap_or_default()
            .contains("last schedulable zone"));
    }

    #[test]
    fn modes_plan_their_actions() {
        let nodes = vec![
            node("a", &[(ZONE_ID_LABEL, "use1-az2")], true),
            node("b", &[(ZONE_ID_LABEL, "use1-az1")], true),
        ];
        let plan = |mode| {
            evacuation("prod", &nodes, "use1-az2", &zones(), mode, &BTreeMap::new())[0]
                .actions
                .clone()
                .unwrap_or_default()
        };
        assert_eq!(plan(Mode::Noexecute), ["taint:azevac.io/evacuated=use1-az2:NoExecute"]);
        assert_eq!(
            plan(Mode::Noschedule),
            ["taint:azevac.io/evacuated=use1-az2:NoSchedule", "cordon"]
        );
        assert_eq!(plan(Mode::Drain), ["cordon"]);
    }
}
