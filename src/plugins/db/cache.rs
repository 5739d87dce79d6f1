//! ElastiCache (Redis OSS / Valkey) replication groups as databases of the `db` type: a primary
//! node in an impaired zone takes every write there. Cluster mode disabled: the replica chosen
//! outside the zone is promoted (`ModifyReplicationGroup` `PrimaryClusterId`, `ApplyImmediately`),
//! never `TestFailover`. ElastiCache refuses that promotion while automatic failover is on, so a
//! group with it on is moved in three steps (turn it off, promote, turn back on what was on), and
//! the journal says what azevac turned off ([`FailoverSettings::actions`]) until it is on again.
//! The three steps themselves are in [`super::sequence`].
//! Cluster mode enabled: listed as not movable, with why (see [`SHARDS_NOT_MOVABLE`]).

use std::collections::BTreeMap;
use std::time::Duration;

use aws_sdk_elasticache::types::{AutomaticFailoverStatus, MultiAzStatus, ReplicationGroup};
use serde::{Deserialize, Serialize};

use super::actions::{Action, Setting};
use super::decide::Decision;
use super::types::{Database, Failover, Kind, Member};
use crate::model::topology::Zones;
use crate::model::{timestamp, Identity};
use crate::{Error, Result};

/// Why the shards of a cluster-mode-enabled group are not moved: the control plane reports no
/// shard's primary, and its only per-shard failover lets the service choose the replica.
pub const SHARDS_NOT_MOVABLE: &str = "cluster mode enabled: ElastiCache reports no shard's primary \
     (CurrentRole is only for cluster mode disabled) and cannot promote a chosen replica of a shard \
     (PrimaryClusterId is for cluster mode disabled); TestFailover picks the replica itself (possibly \
     in this zone), is limited per day and may be blocked during large events; azevac does not use it";

/// A replication group's automatic failover and Multi-AZ: which are on now (as ElastiCache reports
/// them, `enabling` counting as on), or which azevac turned off (as the journal says). They differ:
/// automatic failover may be on with Multi-AZ off, never the other way round.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailoverSettings {
    /// `AutomaticFailoverEnabled`.
    pub automatic_failover: bool,
    /// `MultiAZEnabled`.
    pub multi_az: bool,
}

impl FailoverSettings {
    /// Whether either is on.
    pub fn any(self) -> bool {
        self.automatic_failover || self.multi_az
    }

    /// Whether everything `other` has on is on here too.
    pub fn covers(self, other: FailoverSettings) -> bool {
        (self.automatic_failover || !other.automatic_failover) && (self.multi_az || !other.multi_az)
    }

    /// What is on in either.
    pub fn union(self, other: FailoverSettings) -> FailoverSettings {
        FailoverSettings {
            automatic_failover: self.automatic_failover || other.automatic_failover,
            multi_az: self.multi_az || other.multi_az,
        }
    }

    /// In the operator's words (`Multi-AZ/automatic failover`).
    pub fn words(self) -> &'static str {
        match (self.multi_az, self.automatic_failover) {
            (true, true) => "Multi-AZ/automatic failover",
            (true, false) => "Multi-AZ",
            (false, _) => "automatic failover",
        }
    }

    /// `them` for both, `it` for one.
    pub fn them(self) -> &'static str {
        if self.multi_az && self.automatic_failover {
            "them"
        } else {
            "it"
        }
    }

    /// The journal actions saying azevac turned these off (automatic failover, then Multi-AZ):
    /// written ahead of turning them off, and kept (the journal joins a re-run's actions to the
    /// record's), so any later run knows to turn them on again.
    pub fn actions(self) -> Vec<Action> {
        [
            (self.automatic_failover, Setting::AutomaticFailover),
            (self.multi_az, Setting::MultiAz),
        ]
        .into_iter()
        .filter(|(on, _)| *on)
        .map(|(_, setting)| Action::TurnedOff { setting })
        .collect()
    }

    /// What a record's actions say azevac turned off (nothing, for no actions).
    pub fn journalled(actions: &[Action]) -> FailoverSettings {
        let turned_off = |setting: Setting| actions.contains(&Action::TurnedOff { setting });
        FailoverSettings {
            automatic_failover: turned_off(Setting::AutomaticFailover),
            multi_az: turned_off(Setting::MultiAz),
        }
    }
}

/// Whether an ARN is an ElastiCache resource's (`arn:aws:elasticache:...`).
pub fn is_cache_arn(arn: &str) -> bool {
    arn.split(':').nth(2) == Some("elasticache")
}

/// One shard of a cluster-mode-enabled group: its ID and its nodes' `(id, AZ ID)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shard {
    /// The node group ID (`0001`).
    pub id: String,
    /// Its nodes and their AZ IDs.
    pub nodes: Vec<(String, Option<String>)>,
}

/// What evacuating `az_id` means for a cluster-mode-enabled group (pure): nothing when none of its
/// nodes is in the zone, otherwise a skip that names each shard with a node there.
pub fn decide_shards(shards: &[Shard], az_id: &str) -> Decision {
    let in_zone = |n: &(String, Option<String>)| n.1.as_deref() == Some(az_id);
    let touched: Vec<String> = shards
        .iter()
        .filter(|s| s.nodes.iter().any(in_zone))
        .map(|s| {
            let here: Vec<&str> = s.nodes.iter().filter(|n| in_zone(n)).map(|n| n.0.as_str()).collect();
            let outside = s.nodes.len() - here.len();
            let replicas = if outside == 0 {
                "no node outside the zone".to_owned()
            } else {
                format!("{outside} node(s) outside")
            };
            format!("shard {} ({} here; {replicas})", s.id, here.join(", "))
        })
        .collect();
    if touched.is_empty() {
        return Decision::Elsewhere;
    }
    Decision::Skip(format!(
        "{SHARDS_NOT_MOVABLE}; nodes in {az_id}: {}",
        touched.join(", ")
    ))
}

/// Replication groups as databases (pure): nodes with their AZ IDs and roles.
pub fn assemble(
    groups: &[ReplicationGroup],
    tags: &BTreeMap<String, BTreeMap<String, String>>,
    zones: &Zones,
) -> Vec<Database> {
    let az_of = |name: Option<&str>| name.map(|n| zones.id_of(n).unwrap_or(n).to_owned());
    groups
        .iter()
        .map(|g| {
            let arn = g.arn().unwrap_or_default().to_owned();
            let sharded = g.cluster_enabled() == Some(true) || g.node_groups().len() > 1;
            let kind = if sharded {
                Kind::CacheShards(
                    g.node_groups()
                        .iter()
                        .map(|s| Shard {
                            id: s.node_group_id().unwrap_or_default().to_owned(),
                            nodes: s
                                .node_group_members()
                                .iter()
                                .map(|m| {
                                    (
                                        m.cache_cluster_id().unwrap_or_default().to_owned(),
                                        az_of(m.preferred_availability_zone()),
                                    )
                                })
                                .collect(),
                        })
                        .collect(),
                )
            } else {
                Kind::Cache
            };
            // A node's own state is not in this answer: its node group's stands for it, and
            // ElastiCache itself refuses to promote a node that is not available.
            let members = if sharded {
                Vec::new()
            } else {
                g.node_groups()
                    .iter()
                    .flat_map(|s| {
                        let status = s.status().unwrap_or_default().to_owned();
                        s.node_group_members().iter().map(move |m| (m, status.clone()))
                    })
                    .map(|(m, status)| Member {
                        id: m.cache_cluster_id().unwrap_or_default().to_owned(),
                        az_id: az_of(m.preferred_availability_zone()),
                        writer: m.current_role() == Some("primary"),
                        tier: 0,
                        class: g.cache_node_type().unwrap_or_default().to_owned(),
                        status,
                    })
                    .collect()
            };
            // `enabling` counts as on: what is on its way back needs no turning on, and a group
            // in the middle of it is `modifying`, which no step starts from.
            let failover_settings = FailoverSettings {
                automatic_failover: matches!(
                    g.automatic_failover(),
                    Some(AutomaticFailoverStatus::Enabled | AutomaticFailoverStatus::Enabling)
                ),
                multi_az: matches!(g.multi_az(), Some(MultiAzStatus::Enabled)),
            };
            Database {
                failover_settings,
                tags: tags.get(&arn).cloned().unwrap_or_default(),
                arn,
                id: g.replication_group_id().unwrap_or_default().to_owned(),
                kind,
                status: g.status().unwrap_or_default().to_owned(),
                members,
                // A replication group has no resource ID; `ReplicationGroupCreateTime` tells a
                // re-created one apart (<https://docs.aws.amazon.com/AmazonElastiCache/latest/APIReference/API_ReplicationGroup.html>).
                identity: Identity::created_at(g.replication_group_create_time().and_then(timestamp)),
            }
        })
        .collect()
}

/// The ElastiCache API.
#[derive(Debug, Clone)]
pub struct ElastiCache {
    client: aws_sdk_elasticache::Client,
    /// How often a promotion's progress is read.
    pub poll: Duration,
}

impl ElastiCache {
    /// `azevac doctor`: one page of replication groups (20 is the least a page may ask for).
    pub async fn probe(&self) -> crate::model::check::Check {
        let listed = self.client.describe_replication_groups().max_records(20).send().await;
        crate::model::check::Check::answered(super::TYPE, "elasticache:DescribeReplicationGroups", listed)
    }

    /// A client from the shared configuration.
    pub fn new(sdk: &aws_config::SdkConfig) -> Self {
        ElastiCache {
            client: crate::client!(aws_sdk_elasticache, sdk),
            poll: Duration::from_secs(5),
        }
    }

    /// Every replication group, with tags when `with_tags` (one call per group: only for `--tag`).
    pub async fn groups(&self, zones: &Zones, with_tags: bool) -> Result<Vec<Database>> {
        let groups: Vec<ReplicationGroup> = self
            .client
            .describe_replication_groups()
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .map_err(|e| Error::from_sdk("elasticache:DescribeReplicationGroups", e))?;
        let mut tags = BTreeMap::new();
        for arn in groups.iter().filter(|_| with_tags).filter_map(|g| g.arn()) {
            let out = self
                .client
                .list_tags_for_resource()
                .resource_name(arn)
                .send()
                .await
                .map_err(|e| Error::from_sdk("elasticache:ListTagsForResource", e))?;
            let pairs = crate::plugins::tags::fold(out.tag_list().iter().map(|t| (t.key(), t.value())));
            tags.insert(arn.to_owned(), pairs);
        }
        Ok(assemble(&groups, &tags, zones))
    }

    /// Turn automatic failover and Multi-AZ on or off as `to` says, at once (one call: ElastiCache
    /// refuses automatic failover off while Multi-AZ stays on).
    pub async fn set_failover(&self, id: &str, to: FailoverSettings) -> Result<()> {
        self.client
            .modify_replication_group()
            .replication_group_id(id)
            .automatic_failover_enabled(to.automatic_failover)
            .multi_az_enabled(to.multi_az)
            .apply_immediately(true)
            .send()
            .await
            .map_err(|e| Error::from_sdk("elasticache:ModifyReplicationGroup", e))?;
        Ok(())
    }

    /// Promote the failover's target to primary, at once.
    pub async fn start(&self, failover: &Failover) -> Result<()> {
        self.client
            .modify_replication_group()
            .replication_group_id(&failover.id)
            .primary_cluster_id(&failover.to)
            .apply_immediately(true)
            .send()
            .await
            .map_err(|e| Error::from_sdk("elasticache:ModifyReplicationGroup", e))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shard(id: &str, nodes: &[(&str, &str)]) -> Shard {
        Shard {
            id: id.into(),
            nodes: nodes
                .iter()
                .map(|(n, z)| (n.to_string(), Some(z.to_string())))
                .collect(),
        }
    }

    #[test]
    fn shards_with_a_node_in_the_zone_are_listed_as_not_movable() {
        let shards = [
            shard("0001", &[("s-0001-001", "use1-az2"), ("s-0001-002", "use1-az1")]),
            shard("0002", &[("s-0002-001", "use1-az2")]),
            shard("0003", &[("s-0003-001", "use1-az1")]),
        ];
        let Decision::Skip(why) = decide_shards(&shards, "use1-az2") else {
            panic!("not skipped");
        };
        assert!(why.starts_with(SHARDS_NOT_MOVABLE), "{why}");
        assert!(why.contains("shard 0001 (s-0001-001 here; 1 node(s) outside)"), "{why}");
        assert!(
            why.contains("shard 0002 (s-0002-001 here; no node outside the zone)"),
            "{why}"
        );
        assert!(!why.contains("0003"), "{why}");
        assert_eq!(decide_shards(&shards, "use1-az4"), Decision::Elsewhere);
    }
}
