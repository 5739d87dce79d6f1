//! Reading NodePools (a custom resource, `karpenter.sh/v1`) and nodes of one cluster; a cluster
//! without the NodePool CRD has no NodePools.

use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams};
use serde_json::{json, Value};

use crate::plugins::kube::{kube_err, Cluster};
use crate::Result;

/// The NodePool resource, as the CRD serves it.
fn nodepools() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("karpenter.sh", "v1", "NodePool"), "nodepools")
}

/// The cluster's NodePools.
pub fn pools_api(cluster: &Cluster) -> Api<DynamicObject> {
    Api::all_with(cluster.client(), &nodepools())
}

/// Every NodePool of the cluster; a cluster without the CRD (404) has none.
pub async fn list_pools(cluster: &Cluster) -> Result<Vec<DynamicObject>> {
    match pools_api(cluster).list(&ListParams::default()).await {
        Ok(list) => Ok(list.items),
        Err(kube::Error::Api(status)) if status.code == 404 => {
            tracing::info!(cluster = %cluster.name, "no NodePool CRD: no Karpenter NodePools");
            Ok(Vec::new())
        }
        Err(e) => Err(kube_err("list nodepools", e)),
    }
}

/// One NodePool or node as it is now, as JSON (`None`: gone, or no CRD).
pub async fn current(cluster: &Cluster, is_pool: bool, name: &str) -> Result<Option<Value>> {
    let found = if is_pool {
        match pools_api(cluster).get_opt(name).await {
            Ok(pool) => pool.map(|p| serde_json::to_value(p).unwrap_or_default()),
            Err(kube::Error::Api(status)) if status.code == 404 => None,
            Err(e) => return Err(kube_err("get nodepool", e)),
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
pub fn requirements_patch(raw: Vec<Value>) -> Value {
    json!({ "spec": { "template": { "spec": { "requirements": raw } } } })
}

/// Whether a kube error is a 404: the object is gone.
pub fn is_not_found(err: &(dyn std::error::Error + 'static)) -> bool {
    matches!(err.downcast_ref::<kube::Error>(), Some(kube::Error::Api(status)) if status.code == 404)
}
