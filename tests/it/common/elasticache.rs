//! What moto lacks of ElastiCache primary promotion, answered by the test proxy: moto accepts
//! `ModifyReplicationGroup` `PrimaryClusterId` and ignores it. The fake checks the call as
//! ElastiCache does (a group being modified, one with Multi-AZ / automatic failover on, a
//! cluster-mode-enabled group, a node that is not the group's or not available are refused, in the query protocol's XML error shape), lets moto answer
//! the rest, and then reports the promoted node as primary in `DescribeReplicationGroups`.

use std::collections::{BTreeMap, BTreeSet};

use super::query::{between, param, Refusal};

/// The proxy's view of replication groups beyond moto's.
#[derive(Debug, Default)]
pub struct FakeCache {
    /// Group ID -> the node promoted to primary.
    pub primaries: BTreeMap<String, String>,
    /// Group ID -> (its nodes, cluster mode enabled, Multi-AZ or automatic failover on), as moto
    /// last described it.
    seen: BTreeMap<String, (Vec<String>, bool, bool)>,
    /// Nodes the test says are not available (their promotion is refused).
    pub unavailable: BTreeSet<String>,
    /// Groups the test says are being modified (every modification is refused).
    pub modifying: BTreeSet<String>,
}

impl FakeCache {
    /// Refuse the call as ElastiCache would, before it reaches moto; `None`: forward it.
    pub fn refuse(&self, service: &str, action: &str, body: &str) -> Option<Refusal> {
        if service != "elasticache" || action != "ModifyReplicationGroup" {
            return None;
        }
        let node = param(body, "PrimaryClusterId")?;
        let group = param(body, "ReplicationGroupId").unwrap_or_default();
        if self.modifying.contains(&group) {
            return Some((
                400,
                "InvalidReplicationGroupState",
                format!("Replication group {group} is not in available state."),
            ));
        }
        let (nodes, sharded, failover_on) = self.seen.get(&group)?;
        if *failover_on {
            return Some((
                400,
                "InvalidParameterCombination",
                "Cannot promote a read replica to primary while Multi-AZ with automatic failover is enabled.".into(),
            ));
        }
        if *sharded {
            return Some((
                400,
                "InvalidParameterCombination",
                "PrimaryClusterId is not supported for a cluster mode enabled replication group.".into(),
            ));
        }
        if !nodes.contains(&node) {
            return Some((
                400,
                "InvalidParameterValue",
                format!("Cache cluster {node} is not a member of replication group {group}."),
            ));
        }
        if self.unavailable.contains(&node) {
            return Some((
                400,
                "InvalidCacheClusterState",
                format!("Cache cluster {node} is not in available state."),
            ));
        }
        None
    }

    /// After moto answered: note a promotion it accepted, and rewrite the roles it describes.
    /// Returns the body to send (`None`: moto's, unchanged).
    pub fn answered(&mut self, service: &str, action: &str, request: &str, status: u16, body: &str) -> Option<String> {
        if service != "elasticache" || status != 200 {
            return None;
        }
        match action {
            "ModifyReplicationGroup" => {
                if let (Some(group), Some(node)) =
                    (param(request, "ReplicationGroupId"), param(request, "PrimaryClusterId"))
                {
                    self.primaries.insert(group, node);
                }
                None
            }
            "DescribeReplicationGroups" => Some(self.describe(body)),
            _ => None,
        }
    }

    fn describe(&mut self, body: &str) -> String {
        let mut groups = body.split("<ReplicationGroup>");
        let mut out = groups.next().unwrap_or_default().to_owned();
        for group in groups {
            out.push_str("<ReplicationGroup>");
            let id = between(group, "<ReplicationGroupId>", "</ReplicationGroupId>").unwrap_or_default();
            let sharded = between(group, "<ClusterEnabled>", "</ClusterEnabled>") == Some("true");
            let failover_on = between(group, "<AutomaticFailover>", "</AutomaticFailover>") == Some("enabled")
                || between(group, "<MultiAZ>", "</MultiAZ>") == Some("enabled");
            let mut members = group.split("<NodeGroupMember>");
            let mut rewritten = members.next().unwrap_or_default().to_owned();
            let mut nodes = Vec::new();
            for member in members {
                rewritten.push_str("<NodeGroupMember>");
                let node = between(member, "<CacheClusterId>", "</CacheClusterId>").unwrap_or_default();
                nodes.push(node.to_owned());
                match self.primaries.get(id) {
                    Some(primary) if !sharded => {
                        let role = if primary == node { "primary" } else { "replica" };
                        let member = member
                            .replace("<CurrentRole>primary</CurrentRole>", "<CurrentRole>ROLE</CurrentRole>")
                            .replace("<CurrentRole>replica</CurrentRole>", "<CurrentRole>ROLE</CurrentRole>")
                            .replace("ROLE", role);
                        rewritten.push_str(&member);
                    }
                    _ => rewritten.push_str(member),
                }
            }
            self.seen.insert(id.to_owned(), (nodes, sharded, failover_on));
            out.push_str(&rewritten);
        }
        out
    }
}
