//! Reading a node (or any Kubernetes object) the way both Kubernetes kinds must agree on: which zone
//! a node is in, whether it can take pods, and what tells an object from a later one of the same
//! name.

use k8s_openapi::api::core::v1::Node;

use crate::model::topology::Zones;
use crate::model::{Identity, Record};

/// The AZ ID label EKS sets from Kubernetes 1.30.
pub const ZONE_ID_LABEL: &str = "topology.k8s.aws/zone-id";
/// The well-known zone-name label, mapped to an AZ ID through EC2.
pub const ZONE_NAME_LABEL: &str = "topology.kubernetes.io/zone";

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

/// Whether the node reports the condition Ready.
pub fn is_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Whether the node is not cordoned.
pub fn is_schedulable(node: &Node) -> bool {
    !node.spec.as_ref().and_then(|s| s.unschedulable).unwrap_or(false)
}

/// What tells a Kubernetes object from a later one of the same name: its uid, and for a node the
/// EC2 instance of its `providerID` (`aws:///ZONE/INSTANCE_ID`). `None` without a uid.
pub fn identity(uid: Option<&str>, provider_id: Option<&str>) -> Option<Identity> {
    let instance_id = provider_id
        .and_then(|p| p.rsplit('/').next())
        .filter(|i| i.starts_with("i-"))
        .map(str::to_owned);
    uid.filter(|u| !u.is_empty()).map(|uid| Identity {
        uid: uid.to_owned(),
        instance_id,
        created: None,
    })
}

/// A node's [`identity`].
pub fn node_identity(node: &Node) -> Option<Identity> {
    identity(
        node.metadata.uid.as_deref(),
        node.spec.as_ref().and_then(|s| s.provider_id.as_deref()),
    )
}

/// The plan line's reason for a record whose object (`what`: node, NodePool) was replaced by
/// another of the same name, `live`: the object azevac changed is gone, and with it the change.
pub fn replaced(record: &Record, what: &str, name: &str, live: &Identity) -> String {
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::json;

    use super::*;
    use crate::model::topology::Zone;

    fn node(labels: &[(&str, &str)]) -> Node {
        serde_json::from_value(json!({
            "metadata": { "name": "n", "labels": labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>() },
        }))
        .expect("node")
    }

    #[test]
    fn zone_comes_from_the_zone_id_label_or_the_mapped_zone_name() {
        let zones = Zones::new(
            "us-east-1",
            vec![Zone {
                id: "use1-az2".into(),
                name: "us-east-1c".into(),
            }],
        );
        assert_eq!(
            node_zone(&node(&[(ZONE_ID_LABEL, "use1-az2")]), &zones).as_deref(),
            Some("use1-az2")
        );
        // Older clusters: only the zone name, mapped through EC2 (us-east-1c is use1-az2 here).
        assert_eq!(
            node_zone(&node(&[(ZONE_NAME_LABEL, "us-east-1c")]), &zones).as_deref(),
            Some("use1-az2")
        );
        assert_eq!(node_zone(&node(&[]), &zones), None, "never guessed from the name");
    }
}
