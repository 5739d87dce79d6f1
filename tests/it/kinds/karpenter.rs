//! Karpenter NodePools' conformance fixture: NodePools whose zone requirements name the zone.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::{kube_state, Fixture, CHANGED, ZONE_NAMES};
use crate::common::kube::{fixture, fixture_items, Cluster};
use crate::common::ZONE;
use crate::protocol::conformance::{State, World};

/// The fixture.
pub struct Karpenter;

/// What the suite finds.
pub static FIXTURE: Karpenter = Karpenter;

/// A NodePool named `name` with these requirements, from the fixture's `general`.
fn nodepool(name: &str, requirements: Value) -> Value {
    let mut pool = fixture("karpenter-nodepools.json")["items"][0].clone();
    pool["metadata"]["name"] = json!(name);
    pool["metadata"]["uid"] = json!(format!("uid-{name}"));
    pool["spec"]["template"]["spec"]["requirements"] = requirements;
    pool
}

fn requirement(key: &str, operator: &str, values: &[&str]) -> Value {
    json!({ "key": key, "operator": operator, "values": values })
}

/// NodePools `r0`..`r5`: the even ones in three zones by name (the zone's name comes out), the odd
/// ones out of use1-az1 by ID (the zone's ID is added); `pinned` only in the zone (skipped: it
/// would have no zone left), `far` outside it. The fixture's nodes beside them.
fn cluster() -> Cluster {
    let mut cluster = Cluster::default();
    for n in fixture_items("eks-nodes.json") {
        cluster.add_node(n);
    }
    let arch = requirement("kubernetes.io/arch", "In", &["amd64"]);
    for i in 0..CHANGED {
        let zone = if i % 2 == 0 {
            requirement("topology.kubernetes.io/zone", "In", &ZONE_NAMES)
        } else {
            requirement("topology.k8s.aws/zone-id", "NotIn", &["use1-az1"])
        };
        cluster.add_nodepool(nodepool(&format!("r{i}"), json!([arch, zone])));
    }
    let pinned = requirement("topology.k8s.aws/zone-id", "In", &[ZONE]);
    cluster.add_nodepool(nodepool("pinned", json!([arch, pinned])));
    let far = requirement("topology.kubernetes.io/zone", "In", &["us-east-1b", "us-east-1d"]);
    cluster.add_nodepool(nodepool("far", json!([arch, far])));
    cluster
}

#[async_trait(?Send)]
impl Fixture for Karpenter {
    fn name(&self) -> &'static str {
        "karpenter"
    }

    fn kubernetes(&self) -> bool {
        true
    }

    fn key(&self, i: usize) -> String {
        format!("nodepool/r{i}")
    }

    async fn seed(&self, world: &World) -> BTreeMap<String, String> {
        *world.kube.state.lock().expect("state") = cluster();
        BTreeMap::new()
    }

    async fn state(&self, world: &World) -> State {
        kube_state(world, true)
    }

    fn evacuated(&self, _world: &World, i: usize, resource: &mut Value) {
        let zone = &mut resource["spec"]["template"]["spec"]["requirements"][1];
        *zone = if i.is_multiple_of(2) {
            requirement("topology.kubernetes.io/zone", "In", &["us-east-1b", "us-east-1d"])
        } else {
            requirement("topology.k8s.aws/zone-id", "NotIn", &["use1-az1", ZONE])
        };
    }

    /// A zone name taken out of the NodePool.
    async fn change_by_hand(&self, world: &World) {
        world.kube.state.lock().expect("state").edit_nodepool("r0", |p| {
            p["spec"]["template"]["spec"]["requirements"][1]["values"] = json!(["us-east-1b", "us-east-1c"])
        });
    }

    async fn delete_by_hand(&self, world: &World) {
        let mut st = world.kube.state.lock().expect("state");
        st.nodepools.as_mut().and_then(|p| p.remove("r1"));
    }
}
