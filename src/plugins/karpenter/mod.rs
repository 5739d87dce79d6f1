//! Karpenter NodePools (`karpenter.sh/v1`): tainting a zone's nodes does not stop Karpenter from
//! launching new ones there for pending pods, so azevac excludes the zone from each NodePool that
//! can place nodes in it — one requirement value, merged with the NodePool's own requirements on the
//! same key — and journals exactly what it added, so that `recover` takes out that and nothing else.
//! With `--k8s-mode noschedule` it also annotates the zone's Karpenter nodes
//! `karpenter.sh/do-not-disrupt`, so that drift does not replace the nodes that keep serving.
//!
//! Clusters are those of `--kube-context` ([`kube::clusters_of`]); a cluster without the NodePool
//! CRD has no NodePools. Every write is a merge patch carrying the `resourceVersion` it was
//! computed from (409 → read again and compute again), like node writes.
//!
//! The plugin is here; [`requirements`] and [`decide`] plan (pure), [`client`] reads, [`act`]
//! carries lines out, [`actions`] is what the journal keeps.

use std::collections::BTreeMap;

use ::kube::api::ListParams;
use async_trait::async_trait;

use super::kube::{self, Cluster};
use super::{Acted, Plugin, Scope, Setup};
use crate::journal::Guard;
use crate::model::{Item, Record};
use crate::{Error, Result};

pub mod act;
pub mod actions;
pub mod client;
pub mod decide;
pub mod requirements;
#[cfg(test)]
mod tests;

pub use super::kube::Mode;
pub use actions::Action;
pub use decide::{annotations, evacuation, node_resource, pool_resource, recovery};
pub use requirements::{apply, exclusion, placeable, revert, Exclusion, Requirement};

/// The `--type` value and journal `resource_type` of Karpenter NodePools.
pub const TYPE: &str = "karpenter";

/// How the registry knows this kind: its calls, its IAM actions, its options.
pub const REGISTRATION: super::Registration = super::Registration {
    name: TYPE,
    services: &[],
    changes_through: &[],
    iam_actions: &[],
    build: plugin,
    flags: Some(&super::kube::flags::FLAGS),
    describe: crate::model::Record::words_as::<Action>,
    // `CLUSTER/nodepool/NAME`, `CLUSTER/node/NAME`.
    cluster: |resource| resource.rsplitn(3, '/').nth(2),
    expiring: None,
};
/// The node annotation that keeps Karpenter from disrupting a node (drift, consolidation).
pub const DO_NOT_DISRUPT: &str = "karpenter.sh/do-not-disrupt";
/// The label Karpenter puts on the nodes it launched: the NodePool's name.
pub const NODEPOOL_LABEL: &str = "karpenter.sh/nodepool";

/// Karpenter NodePools (and, in noschedule mode, node annotations) as a plugin: the clusters of
/// `--kube-context`.
pub struct NodePools {
    clusters: BTreeMap<String, Cluster>,
    mode: Mode,
}

/// Registry constructor: the clusters of `--kube-context`.
pub fn plugin(setup: &Setup) -> futures::future::BoxFuture<'_, Result<Option<Box<dyn Plugin>>>> {
    Box::pin(async move {
        let clusters = kube::clusters_of(setup, TYPE, "Karpenter NodePools").await?;
        Ok(Some(Box::new(NodePools {
            clusters,
            mode: setup
                .request
                .options_as::<kube::flags::Options>()?
                .k8s_mode
                .unwrap_or_default(),
        }) as Box<dyn Plugin>))
    })
}

impl NodePools {
    fn cluster(&self, resource: &str) -> Result<(&Cluster, bool, String)> {
        let (cluster, is_pool, name) = decide::parse_resource(resource)
            .ok_or_else(|| Error::Internal(format!("{resource} is not a NodePool or a node")))?;
        let found = self
            .clusters
            .get(cluster)
            .ok_or_else(|| Error::Internal(format!("no cluster for {resource}")))?;
        Ok((found, is_pool, name.to_owned()))
    }
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
            let pools = match client::list_pools(cluster).await {
                Ok(pools) => pools,
                Err(e) => {
                    items.push(decide::unreadable(&cluster.name, &zone.id, &e));
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

    async fn plan_recovery(&self, mut records: Vec<Record>, scope: &Scope<'_>) -> Result<Vec<Item>> {
        let forget_missing = scope.request.forget_missing;
        // A value taken out of an `In` is put back where it stood: the last exclusion first, so
        // that each goes back into the list its own position was counted in.
        crate::model::plan::latest_first(&mut records);
        let mut items = Vec::new();
        for record in &records {
            let (cluster_name, is_pool, name) = decide::parse_resource(&record.resource).unwrap_or_default();
            let item = match self.clusters.get(cluster_name) {
                Some(cluster) => {
                    let current = client::current(cluster, is_pool, name).await?;
                    recovery(record, current.as_ref(), forget_missing)
                }
                None => kube::kept_without_cluster(decide::recovery_line(record), cluster_name),
            };
            items.push(item);
        }
        Ok(items)
    }

    async fn evacuate(&self, line: &Item, held: &Guard<'_>) -> Result<Acted> {
        let record = held.record();
        let (cluster, is_pool, name) = self.cluster(&line.resource)?;
        if is_pool {
            act::exclude(cluster, &name, line, &record, held).await
        } else {
            act::annotate(cluster, &name, &record, held).await
        }
    }

    async fn recover(&self, line: &Item, held: &Guard<'_>) -> Result<Acted> {
        let (cluster, is_pool, name) = self.cluster(&line.resource)?;
        act::recover(cluster, is_pool, &name, &held.record(), held).await?;
        Ok(Acted::default())
    }

    async fn probe(&self) -> Vec<super::Check> {
        if self.clusters.is_empty() {
            return vec![kube::no_context(TYPE, "Karpenter NodePools")];
        }
        let mut checks = Vec::new();
        for cluster in self.clusters.values() {
            let name = format!("{TYPE} {}", kube::short(&cluster.name));
            let listed = client::pools_api(cluster).list(&ListParams::default().limit(1)).await;
            let check = match listed {
                Err(::kube::Error::Api(status)) if status.code == 404 => super::Check::ok(
                    name,
                    "list nodepools: no NodePool CRD, so no Karpenter NodePools to act on",
                ),
                other => kube::kube_check(
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
