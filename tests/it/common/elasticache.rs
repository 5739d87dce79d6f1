//! What moto lacks of ElastiCache primary promotion, answered by the test proxy: moto accepts
//! `ModifyReplicationGroup` `PrimaryClusterId` and ignores it (it does apply
//! `AutomaticFailoverEnabled` and `MultiAZEnabled`, and describes them). The fake checks the call as
//! ElastiCache does (a group being modified, a promotion while automatic failover is on, Multi-AZ
//! without automatic failover, automatic failover with a single node, a cluster-mode-enabled group,
//! a node that is not the group's or not available are refused, in the query protocol's XML error
//! shape), lets moto answer the rest, and then reports the promoted node as primary in
//! `DescribeReplicationGroups` — and, if the test asks, the group as `modifying` for a while after
//! each modification, as ElastiCache does.

use std::collections::{BTreeMap, BTreeSet};

use super::query::{between, param, Refusal};

/// A group as moto last described it.
#[derive(Debug, Default, Clone)]
struct Seen {
    nodes: Vec<String>,
    sharded: bool,
    automatic_failover: bool,
    multi_az: bool,
}

/// The proxy's view of replication groups beyond moto's.
#[derive(Debug, Default)]
pub struct FakeCache {
    /// Group ID -> the node promoted to primary.
    pub primaries: BTreeMap<String, String>,
    /// Group ID -> the group as moto last described it.
    seen: BTreeMap<String, Seen>,
    /// Nodes the test says are not available (their promotion is refused).
    pub unavailable: BTreeSet<String>,
    /// Groups the test says are being modified (every modification is refused).
    pub modifying: BTreeSet<String>,
    /// For how many `DescribeReplicationGroups` after a modification the group is `modifying`
    /// (and refuses another one); 0: none, the change is instant.
    pub modifying_for: usize,
    /// Group ID -> how many more descriptions it is `modifying` for.
    busy: BTreeMap<String, usize>,
}

fn refused(code: &'static str, message: String) -> Option<Refusal> {
    Some((400, code, message))
}

impl FakeCache {
    /// Refuse the call as ElastiCache would, before it reaches moto; `None`: forward it.
    pub fn refuse(&self, service: &str, action: &str, body: &str) -> Option<Refusal> {
        if service != "elasticache" || action != "ModifyReplicationGroup" {
            return None;
        }
        let group = param(body, "ReplicationGroupId").unwrap_or_default();
        if self.modifying.contains(&group) || self.busy.get(&group).is_some_and(|n| *n > 0) {
            return refused(
                "InvalidReplicationGroupState",
                format!("Replication group {group} is not in available state."),
            );
        }
        let seen = self.seen.get(&group)?;
        let flag = |name: &str| param(body, name).map(|v| v == "true");
        let automatic_failover = flag("AutomaticFailoverEnabled").unwrap_or(seen.automatic_failover);
        let multi_az = flag("MultiAZEnabled").unwrap_or(seen.multi_az);
        if multi_az && !automatic_failover {
            return refused(
                "InvalidParameterCombination",
                "Multi-AZ requires automatic failover to be enabled.".into(),
            );
        }
        if flag("AutomaticFailoverEnabled") == Some(true) && seen.nodes.len() < 2 {
            return refused(
                "InvalidParameterCombination",
                format!("Automatic failover cannot be enabled for {group}: it needs at least one replica."),
            );
        }
        let node = param(body, "PrimaryClusterId")?;
        if seen.automatic_failover {
            return refused(
                "InvalidParameterCombination",
                "Cannot promote a read replica to primary while Multi-AZ with automatic failover is enabled.".into(),
            );
        }
        if seen.sharded {
            return refused(
                "InvalidParameterCombination",
                "PrimaryClusterId is not supported for a cluster mode enabled replication group.".into(),
            );
        }
        if !seen.nodes.contains(&node) {
            return refused(
                "InvalidParameterValue",
                format!("Cache cluster {node} is not a member of replication group {group}."),
            );
        }
        if self.unavailable.contains(&node) {
            return refused(
                "InvalidCacheClusterState",
                format!("Cache cluster {node} is not in available state."),
            );
        }
        None
    }

    /// After moto answered: note a modification it accepted, and rewrite the roles (and status) it
    /// describes. Returns the body to send (`None`: moto's, unchanged).
    pub fn answered(&mut self, service: &str, action: &str, request: &str, status: u16, body: &str) -> Option<String> {
        if service != "elasticache" || status != 200 {
            return None;
        }
        match action {
            "ModifyReplicationGroup" => {
                let group = param(request, "ReplicationGroupId")?;
                if self.modifying_for > 0 {
                    self.busy.insert(group.clone(), self.modifying_for);
                }
                if let Some(node) = param(request, "PrimaryClusterId") {
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
            let automatic_failover = between(group, "<AutomaticFailover>", "</AutomaticFailover>") == Some("enabled");
            let multi_az = between(group, "<MultiAZ>", "</MultiAZ>") == Some("enabled");
            // The group's own status comes before its node groups' in moto's answer.
            let group = match self.busy.get_mut(id) {
                Some(left) if *left > 0 => {
                    *left -= 1;
                    group.replacen("<Status>available</Status>", "<Status>modifying</Status>", 1)
                }
                _ => group.to_owned(),
            };
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
            self.seen.insert(
                id.to_owned(),
                Seen {
                    nodes,
                    sharded,
                    automatic_failover,
                    multi_az,
                },
            );
            out.push_str(&rewritten);
        }
        out
    }
}
