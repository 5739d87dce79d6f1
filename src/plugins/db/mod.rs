//! Database writers out of the zone: a writer left in an impaired zone makes every write cross
//! into it. Aurora (and DocumentDB, Neptune) clusters and RDS Multi-AZ DB clusters fail over to the
//! best available reader in a healthy zone (`FailoverDBCluster` with a target, never a random one);
//! RDS Multi-AZ DB instances fail over to their standby (`RebootDBInstance` with `ForceFailover`);
//! single-AZ instances are listed as not movable. `recover` puts nothing back unless asked
//! (`--failback`): a second failover is a second outage. ElastiCache replication groups are
//! databases of this type too ([`cache`]): their primary node is their writer; one with automatic
//! failover on is moved (and failed back) in three journalled steps, each decided from a fresh
//! read so that any later run finishes what a killed one started.
//!
//! The kind's story, file by file: [`types`] (databases as read, the failover a line carries
//! out), [`actions`] (what the journal holds), [`decide`] (pure decisions: plan lines from
//! databases and records), [`rds`] and [`cache`] (the two services' clients), [`sequence`] (a
//! replication group's three steps), and here the plugin that ties them to the engine.

pub mod actions;
pub mod cache;
pub mod decide;
pub mod flags;
pub mod rds;
pub mod sequence;
pub mod types;

pub use actions::Action;
pub use cache::FailoverSettings;
pub use types::{Database, Failover, Kind, Member, Target};

use std::time::{Duration, Instant};

use async_trait::async_trait;

use super::wait::{self, Poll};
use super::{Acted, Plugin, Refreshing, Scope, Setup, Stage};
use crate::journal::{Guard, Held};
use crate::model::topology::Zones;
use crate::model::{Command, Item, Record, Status};
use crate::{Error, Result};
use decide::{exposed, fails_back, recovery, restore_words, Decision};
use rds::Rds;

/// The `--type` value and journal `resource_type` of database failovers.
pub const TYPE: &str = "db";

/// How the registry knows this kind: its calls, its IAM actions, its options.
pub const REGISTRATION: super::Registration = super::Registration {
    name: TYPE,
    services: &["rds", "elasticache"],
    changes_through: &["rds", "elasticache"],
    iam_actions: &[
        "rds:DescribeDBClusters",
        "rds:DescribeDBInstances",
        "rds:FailoverDBCluster",
        "rds:RebootDBInstance",
        "elasticache:DescribeReplicationGroups",
        "elasticache:ListTagsForResource",
        "elasticache:ModifyReplicationGroup",
    ],
    build: plugin,
    flags: Some(&flags::FLAGS),
    describe: crate::model::Record::words_as::<Action>,
    cluster: super::no_cluster,
    expiring: None,
};
/// Why a single-AZ instance in the zone is listed and left alone.
pub const NOT_MOVABLE: &str =
    "data lives only in this zone: restore from a snapshot or a read replica elsewhere; azevac cannot move it";
/// `--wait-timeout` when the request has none.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(900);

/// Database failovers as a plugin.
pub struct Databases {
    rds: Rds,
    cache: cache::ElastiCache,
    timeout: Duration,
    failback: bool,
    forget_missing: bool,
}

/// Registry constructor.
pub fn plugin(setup: &Setup) -> futures::future::BoxFuture<'_, Result<Option<Box<dyn Plugin>>>> {
    Box::pin(async move {
        let request = &setup.request;
        Ok(Some(Box::new(Databases {
            rds: Rds::new(&setup.sdk),
            cache: cache::ElastiCache::new(&setup.sdk),
            timeout: request
                .wait_timeout_seconds
                .map_or(DEFAULT_TIMEOUT, Duration::from_secs),
            failback: request.options_as::<flags::Options>()?.failback,
            forget_missing: request.forget_missing,
        }) as Box<dyn Plugin>))
    })
}

#[async_trait]
impl Plugin for Databases {
    fn resource_type(&self) -> &'static str {
        TYPE
    }

    /// Out of the zone right after the data plane (zonal shifts come first in the registry), before
    /// capacity changes; back (`--failback`) last, once capacity has returned to the zone.
    fn stage(&self, command: Command, _line: &Item) -> Stage {
        match command {
            Command::Evacuate => Stage::First,
            Command::Recover => Stage::Last,
        }
    }

    /// The databases whose writer (or primary) is in the zone: the failover that moves it, or why
    /// there is none.
    async fn exposure(&self, scope: &Scope<'_>) -> Result<Vec<super::Finding>> {
        let mut databases = self.rds.databases(scope.zones).await?;
        databases.extend(self.cache.groups(scope.zones, false).await?);
        Ok(exposed(&databases, scope.az_id()))
    }

    async fn plan_evacuation(&self, scope: &Scope<'_>) -> Result<Vec<Item>> {
        let filters = scope.filters();
        let mut databases = self.rds.databases(scope.zones).await?;
        // ElastiCache unreadable (a policy from before it was supported) must not hold back the
        // RDS failovers: its own line fails (exit 1) and says so.
        let unread = match self.cache.groups(scope.zones, !filters.tags.is_empty()).await {
            Ok(groups) => {
                databases.extend(groups);
                None
            }
            Err(e) => Some(e),
        };
        let mut items = decide::evacuation(&databases, scope.az_id(), scope.records, &filters);
        if let Some(e) = unread {
            let mut item = Item::new(TYPE, "elasticache", "ElastiCache replication groups", scope.az_id());
            item.fail(crate::model::Failure::plan(format!(
                "{}; their primaries were not checked",
                crate::error::describe(&e)
            )));
            items.push(item);
        }
        Ok(items)
    }

    async fn plan_recovery(&self, mut records: Vec<Record>, scope: &Scope<'_>) -> Result<Vec<Item>> {
        if records.is_empty() {
            return Ok(Vec::new());
        }
        // A writer failed over twice (two zones) fails back the way it came: the last first.
        crate::model::plan::latest_first(&mut records);
        let zones = self.rds.zones().await?;
        let mut databases = self.read(&zones, records.iter().map(|r| r.resource.as_str())).await?;
        let mut items = Vec::with_capacity(records.len());
        for r in &records {
            let item = {
                let db = databases.iter().find(|d| d.arn == r.resource);
                let mut item = recovery(r, db, self.failback, self.forget_missing);
                if item.status == Status::Planned && fails_back(&item) && scope.still_evacuated.contains(&r.az_id) {
                    let why = format!(
                        "no failback: {} is still evacuated (the journal holds records of other types there; \
                         recover them first)",
                        r.az_id
                    );
                    // What azevac turned off still goes back on (and the record with it).
                    let finish = recovery(r, db, false, self.forget_missing);
                    if finish.changes_resource() {
                        item = finish;
                        item.reason = Some(format!("{why}; {}", item.reason.as_deref().unwrap_or_default()));
                    } else {
                        item.skip(format!("{why}; journal record kept"));
                        item.actions = Some(Vec::new());
                    }
                }
                item
            };
            // A database failed over from two zones fails back the way it came: the next record
            // plans on the writer this line leaves (the subnet kinds build each line on the last).
            if item.status == Status::Planned && fails_back(&item) {
                leaves_writer(&mut databases, &item);
            }
            items.push(item);
        }
        Ok(items)
    }

    /// Under the lock: the writer may have moved since the plan (someone failed over, or the
    /// service did), automatic failover may have been turned on or off: decide again from a fresh
    /// read and the record as held (which holds what this run's intent added).
    async fn refresh(&self, run: Refreshing<'_>, lines: &mut [&mut Item], held: &[&Held]) -> Result<()> {
        if run.command != Command::Evacuate || lines.iter().all(|l| l.status != Status::Planned) {
            return Ok(());
        }
        let zones = self.rds.zones().await?;
        let planned = lines.iter().filter(|l| l.status == Status::Planned);
        let databases = self.read(&zones, planned.map(|l| l.resource.as_str())).await?;
        for line in lines.iter_mut().filter(|l| l.status == Status::Planned) {
            let Some(db) = databases.iter().find(|d| d.arn == line.resource) else {
                line.fail(crate::model::Failure::plan("no longer exists; nothing changed"));
                continue;
            };
            let record = held
                .iter()
                .map(|h| h.record())
                .find(|r| r.resource == line.resource)
                .or(line.record.as_ref());
            let journalled = match record.map(Record::actions_as::<Action>).transpose() {
                Ok(actions) => FailoverSettings::journalled(actions.as_deref().unwrap_or_default()),
                Err(e) => {
                    line.fail(crate::model::Failure::plan(format!(
                        "{}; nothing changed",
                        crate::error::describe(&e)
                    )));
                    continue;
                }
            };
            match decide::decide(db, &line.az_id, journalled) {
                Decision::Move(failover) => {
                    line.take_actions(&failover.actions());
                    line.reason = Some(failover.describe());
                    if let Some(target) = line.target.as_mut() {
                        target.set_detail(&failover);
                    }
                }
                Decision::Elsewhere => {
                    let (writer, az) = db.writer_az();
                    let role = db.kind.roles().0;
                    line.skip(format!(
                        "{role} {writer} is already in {az}: nothing to change any more"
                    ));
                    line.take_actions::<Action>(&[]);
                }
                Decision::Restore(failover, why) => {
                    line.take_actions(&failover.actions());
                    line.reason = Some(restore_words(&failover, &why));
                    if let Some(target) = line.target.as_mut() {
                        target.set_detail(&failover);
                    }
                }
                Decision::Skip(why) => {
                    line.skip(why);
                    line.take_actions::<Action>(&[]);
                }
                Decision::Fail(why) => line.fail(crate::model::Failure::plan(why)),
            }
        }
        Ok(())
    }

    async fn evacuate(&self, line: &Item, _held: &Guard<'_>) -> Result<Acted> {
        self.fail_over(line).await
    }

    async fn recover(&self, line: &Item, _held: &Guard<'_>) -> Result<Acted> {
        if line.target.is_none() {
            return Ok(Acted::default());
        }
        self.fail_over(line).await
    }

    async fn probe(&self) -> Vec<super::Check> {
        vec![self.rds.probe().await, self.cache.probe().await]
    }
}

/// Where a planned failback leaves the writer, in `databases` as read: the failover's target becomes
/// the writer (a Multi-AZ instance is its own writer, and is left as read).
fn leaves_writer(databases: &mut [types::Database], line: &Item) {
    let Some(Ok(failover)) = line.target.as_ref().map(|t| t.detail_as::<types::Failover>()) else {
        return;
    };
    let Some(db) = databases.iter_mut().find(|d| d.arn == line.resource) else {
        return;
    };
    if matches!(db.kind, types::Kind::MultiAz { .. }) {
        return;
    }
    for member in db.members.iter_mut() {
        member.writer = member.id == failover.to;
    }
}

impl Databases {
    /// The databases of these ARNs' services (RDS, ElastiCache), read fresh; a service no ARN
    /// names is not called.
    async fn read(&self, zones: &Zones, arns: impl Iterator<Item = &str>) -> Result<Vec<Database>> {
        let (mut rds, mut cache) = (false, false);
        for arn in arns {
            if cache::is_cache_arn(arn) {
                cache = true;
            } else {
                rds = true;
            }
        }
        let mut databases = Vec::new();
        if rds {
            databases.extend(self.rds.databases(zones).await?);
        }
        if cache {
            databases.extend(self.cache.groups(zones, false).await?);
        }
        Ok(databases)
    }

    /// Carry the line's failover out: RDS starts it and waits until it reports the new writer; a
    /// replication group goes through [`Databases::cache_sequence`].
    async fn fail_over(&self, line: &Item) -> Result<Acted> {
        let target = line
            .target
            .as_ref()
            .ok_or_else(|| Error::Internal(format!("no failover planned for {}", line.name)))?;
        let failover: Failover = target.detail_as()?;
        if failover.is_cache() {
            let zones = self.rds.zones().await?;
            return self.cache_sequence(line, &failover, &zones).await;
        }
        self.rds.start(&failover).await?;
        let zones = self.rds.zones().await?;
        self.wait_until(&zones, line, &failover, &failover.arrival(), |d| failover.arrived(d))
            .await?;
        Ok(Acted {
            shown: Some(vec![failover.arrived_words()]),
            ..Acted::default()
        })
    }

    /// One database of these ARNs' service, read fresh (`None`: gone).
    async fn read_one(&self, zones: &Zones, arn: &str, cache: bool) -> Result<Option<Database>> {
        let all = match cache {
            true => self.cache.groups(zones, false).await?,
            false => self.rds.databases(zones).await?,
        };
        Ok(all.into_iter().find(|d| d.arn == arn))
    }

    /// Read the line's database again until `reached` holds (at most the timeout, with progress
    /// on stderr) and return that read; `what` is what is waited for, in the operator's words.
    /// Not the SDK's waiters: they wait for a status (`available`), and a cluster is `available`
    /// again before, as well as after, the writer moved; only the writer's ID and zone (a group's
    /// settings) say that this step happened.
    async fn wait_until(
        &self,
        zones: &Zones,
        line: &Item,
        failover: &Failover,
        what: &str,
        reached: impl Fn(&Database) -> bool + Send + Sync,
    ) -> Result<Database> {
        let poll = if failover.is_cache() {
            self.cache.poll
        } else {
            self.rds.poll
        };
        let started = Instant::now();
        let reached = &reached;
        let waited = wait::until(self.timeout, poll, |_| async move {
            let db = match self.read_one(zones, &line.resource, failover.is_cache()).await? {
                Some(db) if reached(&db) => return Ok(Poll::Reached(db)),
                other => other,
            };
            let elapsed = started.elapsed();
            if elapsed < self.timeout {
                let progress = format!(
                    "azevac: db {}: waiting for {what} ({}s)",
                    failover.id,
                    elapsed.as_secs()
                );
                crate::say!("{}", crate::model::text::clean(&progress));
            }
            Ok(Poll::Pending(db))
        })
        .await?;
        waited.map_err(|db| {
            let (w, az) = db.as_ref().map_or(("none", "?"), Database::writer_az);
            Error::NotSettled {
                resource: failover.id.clone(),
                why: format!(
                    "still waiting for {what} after {}s (now {} {w} in {az}, {})",
                    started.elapsed().as_secs(),
                    failover.role(),
                    db.as_ref().map_or("gone", |d| d.status.as_str())
                ),
            }
        })
    }
}

#[cfg(test)]
mod tests;
