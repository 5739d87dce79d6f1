//! Databases as azevac sees them, whichever service reports them (RDS, ElastiCache): where each
//! writer is placed, and the failover a line carries out.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::actions::Action;
use super::cache::{FailoverSettings, Shard};
use crate::model::Identity;

/// How a database's writer is placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// A DB cluster (Aurora, DocumentDB, Neptune, RDS Multi-AZ DB cluster): instances, one writer.
    Cluster,
    /// An RDS Multi-AZ DB instance: a primary and a standby in another zone.
    MultiAz {
        /// The standby's AZ ID, if the service reports it.
        standby_az: Option<String>,
    },
    /// An instance whose data lives in one zone (single-AZ, or a read replica).
    SingleAz,
    /// An ElastiCache replication group with cluster mode disabled: one primary node, replicas.
    Cache,
    /// An ElastiCache replication group with cluster mode enabled: shards, never moved.
    CacheShards(Vec<Shard>),
}

impl Kind {
    /// What the service calls the writer and the others: `(writer, reader)` or `(primary, replica)`.
    pub fn roles(&self) -> (&'static str, &'static str) {
        match self {
            Kind::Cache | Kind::CacheShards(_) => ("primary", "replica"),
            _ => ("writer", "reader"),
        }
    }

    /// What a failover of a database of this kind calls.
    pub fn target(&self) -> Target {
        match self {
            Kind::Cluster => Target::RdsCluster,
            Kind::MultiAz { .. } | Kind::SingleAz => Target::RdsInstance,
            Kind::Cache | Kind::CacheShards(_) => Target::CacheGroup,
        }
    }
}

/// An instance of a database, as its service reports it now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The DB instance identifier.
    pub id: String,
    /// Its AZ ID (mapped from the zone name RDS reports).
    pub az_id: Option<String>,
    /// Whether it is the writer (a Multi-AZ or single-AZ instance is its own writer).
    pub writer: bool,
    /// Its promotion tier (0 is promoted first).
    pub tier: i32,
    /// Its instance class (`db.r6g.large`).
    pub class: String,
    /// Its status (`available`).
    pub status: String,
}

/// A cluster or an instance that is not in a cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Database {
    /// Its ARN (the journal key).
    pub arn: String,
    /// Its identifier.
    pub id: String,
    /// How its writer is placed.
    pub kind: Kind,
    /// Its status.
    pub status: String,
    /// Its instances (a lone instance: itself).
    pub members: Vec<Member>,
    /// Its tags, for `--tag`.
    pub tags: BTreeMap<String, String>,
    /// ElastiCache: whether automatic failover and Multi-AZ are on (ElastiCache refuses a chosen
    /// promotion while automatic failover is on). Off for RDS.
    pub failover_settings: FailoverSettings,
    /// What tells it from a later database of the same identifier (its ARN names it by that).
    pub identity: Option<Identity>,
}

impl Database {
    /// The writer instance.
    pub fn writer(&self) -> Option<&Member> {
        self.members.iter().find(|m| m.writer)
    }

    /// The writer's ID and AZ ID: `none` without a writer, `?` when its zone is not reported.
    pub fn writer_az(&self) -> (&str, &str) {
        self.writer()
            .map(|w| (w.id.as_str(), w.az_id.as_deref().unwrap_or("?")))
            .unwrap_or(("none", "?"))
    }
}

/// What a failover calls: one target each, so that no failover is both or neither.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// A DB cluster: `FailoverDBCluster` with the reader as its target.
    RdsCluster,
    /// A Multi-AZ DB instance: `RebootDBInstance` with `ForceFailover`, onto its standby.
    RdsInstance,
    /// An ElastiCache replication group: `ModifyReplicationGroup` `PrimaryClusterId`.
    CacheGroup,
}

/// The failover a line carries out: the plugin's private state of a planned line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failover {
    /// The cluster, instance or replication group identifier.
    pub id: String,
    /// What the failover calls.
    pub target: Target,
    /// The writer before.
    pub from: String,
    /// Its AZ ID.
    pub from_az: String,
    /// The writer after (an instance: itself, on its standby).
    pub to: String,
    /// Its AZ ID.
    pub to_az: String,
    /// ElastiCache: what is on at the plan and is turned off before the promotion.
    #[serde(default)]
    pub turn_off: FailoverSettings,
    /// ElastiCache: what is turned on again after it: what was on before azevac turned it off
    /// (the fresh read's, and the journal's from a run that was killed half-way).
    #[serde(default)]
    pub turn_on: FailoverSettings,
}

impl Failover {
    /// The line that only turns back on what azevac turned off (`journalled`) and what is on now,
    /// the primary staying wherever it is.
    pub fn restoring(db: &Database, journalled: FailoverSettings) -> Failover {
        let (now, now_az) = db.writer_az();
        Failover {
            id: db.id.clone(),
            target: Target::CacheGroup,
            from: now.to_owned(),
            from_az: now_az.to_owned(),
            to: now.to_owned(),
            to_az: now_az.to_owned(),
            turn_off: FailoverSettings::default(),
            turn_on: db.failover_settings.union(journalled),
        }
    }

    /// Whether it is a replication group's (its primary node, its settings, ElastiCache's calls).
    pub fn is_cache(&self) -> bool {
        self.target == Target::CacheGroup
    }

    /// A replication group whose primary is already where it should be, with only its automatic
    /// failover to turn on again (a run killed after the promotion).
    pub fn restores_only(&self) -> bool {
        self.is_cache() && self.from == self.to
    }

    /// In the operator's words.
    pub fn describe(&self) -> String {
        let fail_over = format!(
            "fail over {} {} ({}) -> {} ({})",
            self.role(),
            self.from,
            self.from_az,
            self.to,
            self.to_az
        );
        let (off, on) = (self.turn_off, self.turn_on);
        if !on.any() {
            return fail_over;
        }
        if self.restores_only() {
            return format!(
                "turn {} back on (azevac turned {} off; primary {} is in {})",
                on.words(),
                on.them(),
                self.to,
                self.to_az
            );
        }
        let back_on = match on == off {
            true => format!("turn {} back on", on.them()),
            false => format!("turn {} back on", on.words()),
        };
        match off.any() {
            true => format!("turn off {}, {fail_over}, {back_on}", off.words()),
            false => format!("{fail_over}, {back_on}"),
        }
    }

    /// What the wait for the new writer waits for, in the operator's words.
    pub fn arrival(&self) -> String {
        format!("{} to become the {} in {}", self.to, self.role(), self.to_az)
    }

    /// Whether the database reports the new writer, and is available.
    pub fn arrived(&self, db: &Database) -> bool {
        db.writer()
            .is_some_and(|w| w.id == self.to && w.az_id.as_deref() == Some(&self.to_az))
            && db.status == "available"
    }

    /// The new writer, as the line shows it once it has arrived.
    pub fn arrived_words(&self) -> String {
        format!("{} now {} in {}", self.role(), self.to, self.to_az)
    }

    /// `writer`, or `primary` for a replication group.
    pub fn role(&self) -> &'static str {
        match self.target {
            Target::CacheGroup => "primary",
            Target::RdsCluster | Target::RdsInstance => "writer",
        }
    }

    /// The journal actions of an evacuation: the writer (primary) before the failover, and what
    /// azevac turns off (or turned off) on the way.
    pub fn actions(&self) -> Vec<Action> {
        let (id, az_id) = (self.from.clone(), self.from_az.clone());
        let writer = match self.target {
            _ if self.restores_only() => None,
            Target::CacheGroup => Some(Action::Primary { node: id, az_id }),
            Target::RdsCluster | Target::RdsInstance => Some(Action::Writer { id, az_id }),
        };
        writer.into_iter().chain(self.turn_on.actions()).collect()
    }
}
