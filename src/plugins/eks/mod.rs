//! Kubernetes (EKS) nodes: the scheduler places pods on nodes, not in subnets, so azevac acts on the
//! nodes of the zone — a `NoExecute` taint by default, or `NoSchedule` + cordon, or cordon + drain
//! through the Eviction API — and journals exactly what it did ([`Action`]), so `recover` undoes
//! that and no more.
//!
//! Nodes are placed by the label `topology.k8s.aws/zone-id` (the AZ ID, set by EKS from Kubernetes
//! 1.30), falling back to `topology.kubernetes.io/zone` mapped to the AZ ID through EC2. Every node
//! write is a merge patch carrying the `resourceVersion` it was computed from (409 → read again), so
//! other taints and concurrent edits are never clobbered ([`super::kube`] holds what this shares
//! with the other Kubernetes kind).
//!
//! The plugin is here; [`decide`] plans (pure), [`act`] carries lines out, [`actions`] is what the
//! journal keeps.

use std::collections::BTreeMap;
use std::time::Duration;

use ::kube::api::{Api, ListParams};
use async_trait::async_trait;
use k8s_openapi::api::core::v1::Node;

use super::kube::{self, Cluster};
use super::{Acted, Plugin, Scope, Setup};
use crate::journal::Guard;
use crate::model::action::encode;
use crate::model::{Item, Record};
use crate::{Error, Result};

pub mod act;
pub mod actions;
pub mod decide;
#[cfg(test)]
mod tests;

pub use actions::Action;
pub use decide::{cluster_of, evacuation, exposed, node_of, recovery, resource_id};

/// The `--type` value and journal `resource_type` of Kubernetes nodes.
pub const TYPE: &str = "eks";

/// How the registry knows this kind: its calls, its IAM actions, its options.
pub const REGISTRATION: super::Registration = super::Registration {
    name: TYPE,
    services: &[],
    changes_through: &[],
    iam_actions: &[],
    build: plugin,
    flags: Some(&super::kube::flags::FLAGS),
    describe: crate::model::Record::words_as::<Action>,
    cluster: |resource| Some(decide::cluster_of(resource)).filter(|c| !c.is_empty()),
    expiring: None,
};
/// The taint azevac adds (value: the AZ ID).
pub const TAINT_KEY: &str = "azevac.io/evacuated";

pub use super::kube::Mode;

/// `--k8s-mode`, `--drain-timeout` (the clusters come from `--kube-context` and `--kubeconfig`,
/// through [`kube::clusters_of`]).
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// What to do to the zone's nodes.
    pub mode: Mode,
    /// How long `drain` keeps retrying evictions a PodDisruptionBudget refuses.
    pub drain_timeout: Duration,
}

impl Options {
    /// The request's Kubernetes options.
    pub fn of(setup: &Setup) -> Result<Options> {
        let given: kube::flags::Options = setup.request.options_as()?;
        Ok(Options {
            mode: given.k8s_mode.unwrap_or_default(),
            // The flag's own default (5m) when a hand-written request leaves it out.
            drain_timeout: Duration::from_secs(given.drain_timeout_seconds.unwrap_or(300)),
        })
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
        let clusters = kube::clusters_of(setup, TYPE, "Kubernetes nodes").await?;
        Ok(Some(Box::new(Nodes {
            clusters,
            options: Options::of(setup)?,
        }) as Box<dyn Plugin>))
    })
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

    async fn plan_recovery(&self, records: Vec<Record>, scope: &Scope<'_>) -> Result<Vec<Item>> {
        let forget_missing = scope.request.forget_missing;
        let mut items = Vec::new();
        for record in &records {
            let cluster_name = cluster_of(&record.resource);
            let item = match self.clusters.get(cluster_name) {
                Some(cluster) => {
                    let node = cluster.node(node_of(&record.resource)).await?;
                    recovery(record, node.as_ref(), forget_missing)
                }
                None => kube::kept_without_cluster(decide::recovery_line(record), cluster_name),
            };
            items.push(item);
        }
        Ok(items)
    }

    async fn evacuate(&self, line: &Item, held: &Guard<'_>) -> Result<Acted> {
        let cluster = self.cluster_of(line)?;
        let (actions, notes) =
            act::evacuate(cluster, node_of(&line.resource), &held.record(), &self.options, held).await?;
        Ok(Acted {
            actions: Some(encode(&actions)),
            problem: (!notes.is_empty()).then(|| format!("cordoned, but {}", notes.join("; "))),
            shown: None,
            replace_actions: false,
        })
    }

    async fn recover(&self, line: &Item, held: &Guard<'_>) -> Result<Acted> {
        act::recover(self.cluster_of(line)?, node_of(&line.resource), &held.record(), held).await?;
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
            return vec![kube::no_context(TYPE, "Kubernetes nodes")];
        }
        let mut checks = Vec::new();
        for cluster in self.clusters.values() {
            let api: Api<Node> = Api::all(cluster.client());
            let listed = api
                .list(&ListParams::default().limit(1))
                .await
                .map(|_| "answered".to_owned());
            checks.push(kube::kube_check(
                &format!("{TYPE} {}", kube::short(&cluster.name)),
                "list nodes",
                listed,
                "grant get, list, patch on nodes (fixtures/clusterrole.json)",
            ));
        }
        checks
    }
}
