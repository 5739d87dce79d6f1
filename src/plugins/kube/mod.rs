//! What the Kubernetes kinds (`eks` nodes, `karpenter` NodePools) share, so that neither imports
//! the other: reaching each cluster through a kube context, the labels that place a node in a zone
//! and what tells an object from a later one of the same name ([`node`]), the read-modify-write
//! that journals a change before every PATCH ([`write`]), and `doctor`'s lines ([`doctor`]).
//!
//! It knows no kind's options or actions: a kind passes in what it reads of the request and the
//! action type it journals.

use std::collections::BTreeMap;
use std::path::PathBuf;

use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams};
use kube::config::{KubeConfigOptions, Kubeconfig};

use super::Setup;
use crate::journal::Guard;
use crate::model::{Identity, Item};
use crate::{Error, Result};

pub mod doctor;
pub mod flags;
pub mod node;
pub mod write;

pub use doctor::{kube_check, no_context};
pub use flags::Mode;
pub use node::{identity, node_identity, node_zone, replaced, ZONE_ID_LABEL, ZONE_NAME_LABEL};
pub use write::read_modify_write;

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

/// Connect to each of `contexts`' clusters, from `kubeconfig` (default: KUBECONFIG, then
/// ~/.kube/config); exec-based auth (`aws eks get-token`) works as kubectl's does.
pub async fn connect(contexts: &[String], kubeconfig: Option<&PathBuf>) -> Result<Vec<Cluster>> {
    let kubeconfig = match kubeconfig {
        Some(path) => Kubeconfig::read_from(path),
        None => Kubeconfig::read(),
    }
    .map_err(|e| Error::BadInput(format!("cannot read the kubeconfig: {e}; pass --kubeconfig PATH")))?;
    let mut clusters = Vec::new();
    for context in contexts {
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

/// The clusters of the request's `--kube-context`s, by name, for the type `resource_type` (`what`
/// it acts on, for the notice). Without `--kube-context` there are none: a notice when `--type`
/// named the type, a log line otherwise.
pub async fn clusters_of(setup: &Setup, resource_type: &str, what: &str) -> Result<BTreeMap<String, Cluster>> {
    let request = &setup.request;
    let clusters = if request.kube_contexts.is_empty() {
        if request.names(resource_type) {
            crate::say!("azevac: notice: --type {resource_type} needs --kube-context CONTEXT; {what} left out");
        } else {
            tracing::info!("no --kube-context: {what} left out");
        }
        Vec::new()
    } else {
        connect(&request.kube_contexts, setup.kubeconfig.as_ref()).await?
    };
    Ok(by_name(&clusters))
}

/// The clusters by name, for finding the cluster of a journal record.
pub fn by_name(clusters: &[Cluster]) -> BTreeMap<String, Cluster> {
    clusters.iter().map(|c| (c.name.clone(), c.clone())).collect()
}

/// A kube error as azevac's, naming the call that failed.
pub fn kube_err(operation: &'static str, err: kube::Error) -> Error {
    Error::Kube {
        operation,
        source: Box::new(err),
    }
}

/// `arn:aws:eks:REGION:ACCOUNT:cluster/NAME` → `NAME`; other names as they are.
pub fn short(cluster: &str) -> &str {
    cluster.rsplit_once(":cluster/").map(|(_, n)| n).unwrap_or(cluster)
}

/// A recovery line of a cluster this run has no `--kube-context` for: skipped, its record kept.
pub fn kept_without_cluster(mut item: Item, cluster: &str) -> Item {
    item.actions = Some(Vec::new());
    item.skip(format!("no --kube-context for cluster {cluster}: journal record kept"));
    item
}

impl Cluster {
    /// The cluster's client.
    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }

    /// Every node of the cluster.
    pub async fn nodes(&self) -> Result<Vec<Node>> {
        let api: Api<Node> = Api::all(self.client());
        Ok(api
            .list(&ListParams::default())
            .await
            .map_err(|e| kube_err("list nodes", e))?
            .items)
    }

    /// One node, if it still exists.
    pub async fn node(&self, name: &str) -> Result<Option<Node>> {
        let api: Api<Node> = Api::all(self.client());
        api.get_opt(name).await.map_err(|e| kube_err("get node", e))
    }

    /// Read-modify-write a node, the one of `identity` if known (see [`read_modify_write`]).
    pub async fn update_node<A, F>(
        &self,
        name: &str,
        identity: Option<&Identity>,
        held: &Guard<'_>,
        change: F,
    ) -> Result<Option<Node>>
    where
        A: crate::model::action::Action,
        F: Fn(&Node) -> Option<(serde_json::Value, Vec<A>)>,
    {
        let api: Api<Node> = Api::all(self.client());
        read_modify_write(&api, name, identity, ("get node", "patch node"), held, change).await
    }
}
