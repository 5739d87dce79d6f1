//! Kubernetes nodes' conformance fixture: nodes `r0`..`r5` in the zone (`r5` cordoned and tainted
//! by someone else), `a1` and `a4` elsewhere, in the fake API server's cluster `prod`.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::{kube_state, Fixture, CHANGED, ZONES, ZONE_NAMES};
use crate::common::kube::{fixture_items, Cluster};
use crate::common::ZONE;
use crate::protocol::conformance::{Phase, State, World};

/// The fixture.
pub struct Eks;

/// What the suite finds.
pub static FIXTURE: Eks = Eks;

/// The `n`th node, in `ZONES[zone]`, from the fixture's first use1-az2 node.
fn node(name: &str, zone: usize, n: usize) -> Value {
    let mut node = fixture_items("eks-nodes.json")
        .into_iter()
        .find(|n| n["metadata"]["name"] == "ip-10-0-2-21.ec2.internal")
        .expect("fixture node");
    node["metadata"]["name"] = json!(name);
    node["metadata"]["uid"] = json!(format!("uid-{name}"));
    for label in ["topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone"] {
        node["metadata"]["labels"][label] = json!(ZONE_NAMES[zone]);
    }
    node["metadata"]["labels"]["topology.k8s.aws/zone-id"] = json!(ZONES[zone]);
    node["metadata"]["labels"]["kubernetes.io/hostname"] = json!(name);
    node["spec"]["providerID"] = json!(format!("aws:///{}/i-0{n:016}", ZONE_NAMES[zone]));
    node
}

/// Nodes `r0`..`r5` in the zone (`r5` cordoned and tainted by someone else), `a1` and `a4`
/// elsewhere.
fn cluster() -> Cluster {
    let mut cluster = Cluster::default();
    for i in 0..CHANGED {
        cluster.add_node(node(&format!("r{i}"), 1, i));
    }
    cluster.add_node(node("a1", 0, CHANGED));
    cluster.add_node(node("a4", 2, CHANGED + 1));
    cluster.edit_node("r5", |n| {
        n["spec"]["unschedulable"] = json!(true);
        n["spec"]["taints"] = json!([{ "key": "example.com/maintenance", "effect": "NoSchedule" }]);
    });
    cluster
}

#[async_trait(?Send)]
impl Fixture for Eks {
    fn name(&self) -> &'static str {
        "eks"
    }

    fn kubernetes(&self) -> bool {
        true
    }

    fn flags(&self, phase: Phase) -> &'static [&'static str] {
        match phase {
            Phase::Evacuate => &["--k8s-mode", "noschedule"],
            Phase::Recover => &[],
        }
    }

    async fn seed(&self, world: &World) -> BTreeMap<String, String> {
        *world.kube.state.lock().expect("state") = cluster();
        BTreeMap::new()
    }

    async fn state(&self, world: &World) -> State {
        kube_state(world, false)
    }

    fn evacuated(&self, _world: &World, _i: usize, resource: &mut Value) {
        let taint = json!({ "key": "azevac.io/evacuated", "value": ZONE, "effect": "NoSchedule" });
        match resource["spec"]["taints"].as_array_mut() {
            Some(taints) => taints.push(taint),
            None => resource["spec"]["taints"] = json!([taint]),
        }
        resource["spec"]["unschedulable"] = json!(true);
    }

    /// The node cordoned.
    async fn change_by_hand(&self, world: &World) {
        world
            .kube
            .state
            .lock()
            .expect("state")
            .edit_node("r0", |n| n["spec"]["unschedulable"] = json!(true));
    }

    async fn delete_by_hand(&self, world: &World) {
        world.kube.state.lock().expect("state").nodes.remove("r1");
    }
}
