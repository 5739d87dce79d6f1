//! Database writers out of the zone: a writer left in an impaired zone makes every write cross
//! into it. Aurora (and DocumentDB, Neptune) clusters and RDS Multi-AZ DB clusters fail over to the
//! best available reader in a healthy zone (`FailoverDBCluster` with a target, never a random one);
//! RDS Multi-AZ DB instances fail over to their standby (`RebootDBInstance` with `ForceFailover`);
//! single-AZ instances are listed as not movable. `recover` puts nothing back unless asked
//! (`--failback`): a second failover is a second outage. ElastiCache replication groups are
//! databases of this type too ([`cache`]): their primary node is their writer; one with automatic
//! failover on is moved (and failed back) in three journalled steps, each decided from a fresh
//! read so that any later run finishes what a killed one started.

pub mod cache;
pub mod flags;

pub use cache::FailoverSettings;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use aws_sdk_rds::types::{DbCluster, DbInstance, Tag};
use serde::{Deserialize, Serialize};

use super::{Acted, Plugin, Scope, Setup, Stage};
use crate::journal::{Guard, Held};
use crate::model::{Command, Item, Record, Resource, Status};
use crate::plan::{Filters, ALREADY_EVACUATED};
use crate::topology::Zones;
use crate::{Error, Result};

/// The `--type` value and journal `resource_type` of database failovers.
pub const TYPE: &str = "db";
/// The journal action that names the writer before the evacuation: `writer:<id>@<az-id>`.
const WRITER: &str = "writer:";
/// The journal action that names a replication group's primary node: `primary:<node>@<az-id>`.
const PRIMARY: &str = "primary:";
/// How a recovery line that fails the writer back starts.
const FAIL_BACK: &str = "fail back writer to ";
/// How a recovery line that promotes a replication group's original primary again starts.
const FAIL_BACK_PRIMARY: &str = "fail back primary to ";
/// Why a single-AZ instance in the zone is listed and left alone.
pub const NOT_MOVABLE: &str =
    "data lives only in this zone: restore from a snapshot or a read replica elsewhere; azevac cannot move it";
/// `--wait-timeout` when the request has none.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(900);

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
    CacheShards(Vec<cache::Shard>),
}

impl Kind {
    /// What the service calls the writer and the others: `(writer, reader)` or `(primary, replica)`.
    pub fn roles(&self) -> (&'static str, &'static str) {
        match self {
            Kind::Cache | Kind::CacheShards(_) => ("primary", "replica"),
            _ => ("writer", "reader"),
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
}

impl Database {
    /// The writer instance.
    pub fn writer(&self) -> Option<&Member> {
        self.members.iter().find(|m| m.writer)
    }

    /// The writer's AZ ID, `?` when not reported.
    fn writer_az(&self) -> (&str, &str) {
        self.writer()
            .map(|w| (w.id.as_str(), w.az_id.as_deref().unwrap_or("?")))
            .unwrap_or(("none", "?"))
    }
}

/// The failover a line carries out: the plugin's private state of a planned line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failover {
    /// The cluster or instance identifier.
    pub id: String,
    /// Whether it is a cluster (`FailoverDBCluster`) or an instance (`RebootDBInstance`).
    pub cluster: bool,
    /// The writer before.
    pub from: String,
    /// Its AZ ID.
    pub from_az: String,
    /// The writer after (an instance: itself, on its standby).
    pub to: String,
    /// Its AZ ID.
    pub to_az: String,
    /// Whether it is an ElastiCache replication group (`ModifyReplicationGroup` `PrimaryClusterId`).
    #[serde(default)]
    pub cache: bool,
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
    fn restoring(db: &Database, journalled: FailoverSettings) -> Failover {
        let (now, now_az) = db.writer_az();
        Failover {
            id: db.id.clone(),
            cluster: false,
            from: now.to_owned(),
            from_az: now_az.to_owned(),
            to: now.to_owned(),
            to_az: now_az.to_owned(),
            cache: true,
            turn_off: FailoverSettings::default(),
            turn_on: db.failover_settings.union(journalled),
        }
    }

    /// A replication group whose primary is already where it should be, with only its automatic
    /// failover to turn on again (a run killed after the promotion).
    fn restores_only(&self) -> bool {
        self.cache && self.from == self.to
    }

    /// In the operator's words.
    fn describe(&self) -> String {
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
    fn arrival(&self) -> String {
        format!("{} to become the {} in {}", self.to, self.role(), self.to_az)
    }

    /// Whether the database reports the new writer, and is available.
    fn arrived(&self, db: &Database) -> bool {
        db.writer()
            .is_some_and(|w| w.id == self.to && w.az_id.as_deref() == Some(&self.to_az))
            && db.status == "available"
    }

    /// The new writer, as the line shows it once it has arrived.
    fn arrived_words(&self) -> String {
        format!("{} now {} in {}", self.role(), self.to, self.to_az)
    }

    /// `writer`, or `primary` for a replication group.
    fn role(&self) -> &'static str {
        if self.cache {
            "primary"
        } else {
            "writer"
        }
    }

    /// The journal actions of an evacuation: the writer (primary) before the failover, and what
    /// azevac turns off (or turned off) on the way.
    fn actions(&self) -> Vec<String> {
        let prefix = if self.cache { PRIMARY } else { WRITER };
        let writer = (!self.restores_only()).then(|| format!("{prefix}{}@{}", self.from, self.from_az));
        writer.into_iter().chain(self.turn_on.actions()).collect()
    }
}

/// What to do with one database in the zone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The writer is not in the zone.
    Elsewhere,
    /// Fail over.
    Move(Failover),
    /// In the zone, but left alone, with why.
    Skip(String),
    /// No promotion can be planned, but azevac turned the group's automatic failover off and it is
    /// still off: turn it back on, the primary staying where it is; with why it cannot move.
    Restore(Failover, String),
    /// azevac turned the group's automatic failover off, it is still off, and nothing can be done
    /// now: the line fails (exit 1), with why, rather than a skip that hides it.
    Fail(String),
}

/// How big an instance class is, for choosing between readers of the same tier (bigger first).
pub fn class_rank(class: &str) -> u32 {
    let size = class.rsplit('.').next().unwrap_or_default();
    match size {
        "nano" => 1,
        "micro" => 2,
        "small" => 3,
        "medium" => 4,
        "large" => 5,
        "metal" => 10_000,
        _ => match size.strip_suffix("xlarge") {
            Some("") => 100,
            Some(n) => n.parse::<u32>().map_or(0, |n| 100 * n),
            None => 0,
        },
    }
}

/// The reader a cluster fails over to: available, in a known zone other than `az_id`; the best
/// promotion tier, then the largest instance class, then the name.
pub fn best_reader<'m>(members: &'m [Member], az_id: &str) -> Option<&'m Member> {
    members
        .iter()
        .filter(|m| !m.writer && m.status == "available")
        .filter(|m| m.az_id.as_deref().is_some_and(|z| z != az_id))
        .min_by(|a, b| {
            (a.tier, std::cmp::Reverse(class_rank(&a.class)), &a.id).cmp(&(
                b.tier,
                std::cmp::Reverse(class_rank(&b.class)),
                &b.id,
            ))
        })
}

/// What evacuating `az_id` means for one database (pure), given what its journal record says azevac
/// turned off (`journalled`): a replication group whose primary is out of the zone but whose
/// automatic failover azevac turned off and is still off is not done yet.
pub fn decide(db: &Database, az_id: &str, journalled: FailoverSettings) -> Decision {
    if let Kind::CacheShards(shards) = &db.kind {
        return cache::decide_shards(shards, az_id);
    }
    let unfinished = !db.failover_settings.covers(journalled);
    // What azevac turned off and is still off goes back on even when the primary cannot move
    // (it stays in the zone): a group is never left unprotected by azevac; when not even that can
    // be done now, the line fails and says so.
    let restore = |why: String| {
        if db.status != "available" {
            return Decision::Fail(format!(
                "{} is off (azevac turned {} off) and {} is {}, so it cannot be turned back on now ({why}); run again once it is available",
                journalled.words(),
                journalled.them(),
                db.id,
                db.status
            ));
        }
        Decision::Restore(Failover::restoring(db, journalled), why)
    };
    // No writer reported (a failover under way, a headless cluster): not "already evacuated".
    let Some(writer) = db.writer() else {
        let why = format!(
            "{} reports no writer/primary now (status {}): run again once it does",
            db.id, db.status
        );
        return match unfinished {
            true => restore(why),
            false => Decision::Skip(why),
        };
    };
    let in_zone = writer.az_id.as_deref() == Some(az_id);
    if !in_zone && !unfinished {
        return Decision::Elsewhere;
    }
    if db.kind == Kind::SingleAz {
        return Decision::Skip(NOT_MOVABLE.to_owned());
    }
    if db.status != "available" {
        let step = if in_zone { "a failover" } else { "turning it back on" };
        let why = format!(
            "{} is {}; {step} needs it available: run again once it is",
            db.id, db.status
        );
        return match unfinished {
            true => restore(why),
            false => Decision::Skip(why),
        };
    }
    let failover = |to: &str, to_az: &str| Failover {
        id: db.id.clone(),
        cluster: db.kind == Kind::Cluster,
        from: writer.id.clone(),
        from_az: writer.az_id.clone().unwrap_or_default(),
        to: to.to_owned(),
        to_az: to_az.to_owned(),
        cache: db.kind == Kind::Cache,
        turn_off: db.failover_settings,
        turn_on: db.failover_settings.union(journalled),
    };
    if !in_zone {
        // Only a replication group has settings to be unfinished: its primary stays, they go on.
        return Decision::Move(failover(&writer.id, writer.az_id.as_deref().unwrap_or("?")));
    }
    let (_, reader_word) = db.kind.roles();
    match &db.kind {
        Kind::MultiAz {
            standby_az: Some(standby),
        } if standby != az_id => Decision::Move(failover(&writer.id, standby)),
        Kind::MultiAz { .. } => Decision::Skip(format!(
            "its standby is not reported outside {az_id}; a failover would stay in the zone"
        )),
        Kind::Cluster | Kind::Cache => match best_reader(&db.members, az_id) {
            Some(reader) => Decision::Move(failover(&reader.id, reader.az_id.as_deref().unwrap_or_default())),
            None => {
                let readers: Vec<String> = db
                    .members
                    .iter()
                    .filter(|m| !m.writer)
                    .map(|m| format!("{} in {} ({})", m.id, m.az_id.as_deref().unwrap_or("?"), m.status))
                    .collect();
                let readers = if readers.is_empty() {
                    format!("it has no {reader_word}s")
                } else {
                    format!("{reader_word}s: {}", readers.join(", "))
                };
                let why = format!("no available {reader_word} outside {az_id} to fail over to ({readers})");
                match unfinished {
                    true => restore(why),
                    false => Decision::Skip(why),
                }
            }
        },
        Kind::SingleAz => Decision::Skip(NOT_MOVABLE.to_owned()),
        Kind::CacheShards(shards) => cache::decide_shards(shards, az_id),
    }
}

/// The journal action naming the writer before the evacuation.
pub fn writer_action(id: &str, az_id: &str) -> String {
    format!("{WRITER}{id}@{az_id}")
}

/// The writer (or primary node) a record says was in the zone: `(id, az_id)`.
pub fn journalled_writer(record: &Record) -> Option<(&str, &str)> {
    record
        .actions
        .iter()
        .find_map(|a| a.strip_prefix(WRITER).or_else(|| a.strip_prefix(PRIMARY)))
        .and_then(|w| w.split_once('@'))
}

/// The reason of a line that only turns settings back on, the primary staying where it is.
fn restore_words(failover: &Failover, why: &str) -> String {
    format!("{}; the primary cannot leave the zone now: {why}", failover.describe())
}

fn skip(item: &mut Item, reason: String) {
    item.status = Status::Skipped;
    item.reason = Some(reason);
    item.actions = Some(Vec::new());
}

/// The exposure findings of the databases whose writer is in `az_id` (pure).
pub fn exposed(databases: &[Database], az_id: &str) -> Vec<super::Finding> {
    databases
        .iter()
        .filter_map(|db| {
            let decision = decide(db, az_id, FailoverSettings::default());
            if decision == Decision::Elsewhere {
                return None;
            }
            let (writer, _) = db.writer_az();
            let found = super::Finding::new(TYPE, &db.arn, &db.id, vec![writer.to_owned()]);
            Some(match decision {
                Decision::Move(failover) => {
                    let mut found = found.moved_by(TYPE);
                    found.notes.push(failover.describe());
                    found
                }
                Decision::Skip(why) | Decision::Fail(why) => found.not_movable(why),
                Decision::Restore(failover, why) => {
                    let mut found = found.not_movable(why);
                    found.notes.push(failover.describe());
                    found
                }
                Decision::Elsewhere => found,
            })
        })
        .collect()
}

/// The evacuation lines of the databases in the zone (pure): one per database whose writer is in
/// the zone, and one per database an earlier run moved (already evacuated).
pub fn evacuation(
    databases: &[Database],
    az_id: &str,
    records: &BTreeMap<String, Record>,
    filters: &Filters,
) -> Vec<Item> {
    let mut items = Vec::new();
    for db in databases {
        let record = records.get(&db.arn);
        let decision = decide(db, az_id, FailoverSettings::journalled(record));
        if decision == Decision::Elsewhere && record.is_none() {
            continue;
        }
        let mut target = Resource {
            resource_type: TYPE,
            id: db.arn.clone(),
            name: db.id.clone(),
            tags: db.tags.clone(),
            ..Resource::default()
        };
        let mut item = Item {
            record: record.cloned(),
            ..Item::new(TYPE, &db.arn, &db.id, az_id)
        };
        if let Some(mut why) = Filters::rejects(filters, &target) {
            let journalled = FailoverSettings::journalled(record);
            if !db.failover_settings.covers(journalled) {
                why.push_str(&format!(
                    "; note: azevac's earlier run left {} off (the journal record says so): run without the filter to turn {} back on",
                    journalled.words(),
                    journalled.them()
                ));
            }
            skip(&mut item, why);
            items.push(item);
            continue;
        }
        match decision {
            Decision::Elsewhere => {
                let (writer, az) = db.writer_az();
                let role = db.kind.roles().0;
                skip(&mut item, format!("{ALREADY_EVACUATED}: {role} {writer} in {az}"));
            }
            Decision::Skip(why) => skip(&mut item, why),
            Decision::Fail(why) => {
                item.fail(why);
                item.actions = Some(Vec::new());
            }
            Decision::Move(failover) => {
                item.actions = Some(failover.actions());
                item.reason = Some(failover.describe());
                target.set_detail(&failover);
            }
            Decision::Restore(failover, why) => {
                item.actions = Some(failover.actions());
                item.reason = Some(restore_words(&failover, &why));
                target.set_detail(&failover);
            }
        }
        item.target = Some(target);
        items.push(item);
    }
    items
}

/// What recovering one record means (pure), given the database now (`None`: gone). Without
/// `failback` the writer stays where it is and only the record goes; with it, the writer fails back
/// to the journalled instance if that is available in the record's zone. Either way, automatic
/// failover that the record says azevac turned off, and that is off now (a run killed half-way), is
/// turned back on before the record goes.
pub fn recovery(record: &Record, db: Option<&Database>, failback: bool, forget_missing: bool) -> Item {
    let name = record.resource_name.as_deref().unwrap_or(&record.resource);
    let mut item = Item {
        actions: Some(Vec::new()),
        record: Some(record.clone()),
        ..Item::new(TYPE, &record.resource, name, &record.az_id)
    };
    let Some(db) = db else {
        crate::plan::missing(&mut item, name, forget_missing);
        return item;
    };
    let (now, now_az) = db.writer_az();
    let role = db.kind.roles().0;
    let Some((was, was_az)) = journalled_writer(record) else {
        item.reason = Some(format!(
            "no {role} journalled ({role} {now} in {now_az}): journal record will be deleted"
        ));
        return item;
    };
    let stays = format!("{role} {now} stays in {now_az}; was {was} in {was_az}");
    let journalled = FailoverSettings::journalled(Some(record));
    let unfinished = !db.failover_settings.covers(journalled);
    // Turn back on what azevac turned off, the primary staying where it is (or say why not now);
    // false: nothing to turn on.
    let finish = |item: &mut Item, why: &str| {
        if !unfinished {
            return false;
        }
        let on = journalled;
        if db.status != "available" {
            skip(
                item,
                format!(
                    "{why}{} is off (azevac turned {} off) and {} is {}: run again once it is available; journal record kept",
                    on.words(),
                    on.them(),
                    db.id,
                    db.status
                ),
            );
            return true;
        }
        let failover = Failover::restoring(db, journalled);
        item.actions = Some(vec![format!("turn {} back on", on.words())]);
        plan_failover(item, db, &failover, format!("{why}{}; {stays}", failover.describe()));
        true
    };
    if !failback || now == was && now_az == was_az {
        if !finish(&mut item, "") {
            item.reason = Some(stays);
        }
        return item;
    }
    let original = db.members.iter().find(|m| m.id == was);
    let unfit = match original {
        // A failback that turned automatic failover off and was killed before turning it on again
        // must be resumable: only a record that says it was on lets a later run know.
        _ if !journalled.covers(db.failover_settings) => Some(format!(
            "{} is on, and the journal record does not say it was on at the evacuation, so an \
             interrupted failback could leave it off: turn it off by hand and run again (then back \
             on), or recover without --failback",
            db.failover_settings.words()
        )),
        None => Some(format!("{was} is no longer part of {}", db.id)),
        Some(m) if m.status != "available" || db.status != "available" => {
            Some(format!("{was} is {} ({} is {})", m.status, db.id, db.status))
        }
        // A Multi-AZ instance is its own original: its standby's zone is what must match (below).
        Some(m) if !matches!(db.kind, Kind::MultiAz { .. }) && m.az_id.as_deref() != Some(was_az) => Some(format!(
            "{was} is now in {}, not {was_az}",
            m.az_id.as_deref().unwrap_or("?")
        )),
        Some(_) => match &db.kind {
            Kind::MultiAz { standby_az } if standby_az.as_deref() != Some(was_az) => {
                Some(format!("its standby is not in {was_az}"))
            }
            _ => None,
        },
    };
    if let Some(why) = unfit {
        // Never left without the automatic failover azevac turned off: it goes back on, and the
        // record with it (a failback is a choice; a group without automatic failover is a risk).
        if finish(&mut item, &format!("no failback: {why}; ")) {
            return item;
        }
        skip(
            &mut item,
            format!(
                "no failback: {why}; {role} {now} stays in {now_az}; journal record kept (recover without --failback deletes it)"
            ),
        );
        return item;
    }
    let failover = Failover {
        id: db.id.clone(),
        cluster: db.kind == Kind::Cluster,
        from: now.to_owned(),
        from_az: now_az.to_owned(),
        to: was.to_owned(),
        to_az: was_az.to_owned(),
        cache: db.kind == Kind::Cache,
        turn_off: db.failover_settings,
        turn_on: db.failover_settings.union(journalled),
    };
    let fail_back = if failover.cache { FAIL_BACK_PRIMARY } else { FAIL_BACK };
    let mut actions = Vec::new();
    if failover.turn_off.any() {
        actions.push(format!("turn off {}", failover.turn_off.words()));
    }
    actions.push(format!("{fail_back}{was} ({was_az})"));
    if failover.turn_on.any() {
        actions.push(format!("turn {} back on", failover.turn_on.words()));
    }
    item.actions = Some(actions);
    plan_failover(&mut item, db, &failover, failover.describe());
    item
}

/// Plan `failover` on a recovery line: why, and the failover as its target's detail.
fn plan_failover(item: &mut Item, db: &Database, failover: &Failover, reason: String) {
    item.reason = Some(reason);
    let mut target = Resource {
        resource_type: TYPE,
        id: db.arn.clone(),
        name: db.id.clone(),
        ..Resource::default()
    };
    target.set_detail(failover);
    item.target = Some(target);
}

/// Whether a recovery line moves the writer back (not only turns automatic failover back on).
fn fails_back(item: &Item) -> bool {
    item.target
        .as_ref()
        .is_some_and(|t| t.detail_as::<Failover>().is_ok_and(|f| !f.restores_only()))
}

/// What a replication group's failover does, decided from the act's fresh read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheSteps {
    /// What is turned off before the promotion (what is on now).
    pub turn_off: FailoverSettings,
    /// Whether the target is promoted.
    pub promote: bool,
    /// What is on at the end: what was on at this read, and what the line says was on before
    /// azevac turned it off. Also what a failure after the turn-off turns back on.
    pub turn_on: FailoverSettings,
}

/// The steps of `failover` given the group as read at the act (pure), or why the line fails with
/// nothing changed. A line that only turns settings back on never promotes, wherever the primary
/// is now. A promotion turns off only what the line planned to (and so journalled): anything on
/// that it did not plan for means the group changed since the plan.
pub fn cache_steps(failover: &Failover, db: &Database) -> Result<CacheSteps, String> {
    let on = db.failover_settings;
    let turn_on = on.union(failover.turn_on);
    let promote = !failover.restores_only() && db.writer().is_none_or(|w| w.id != failover.to);
    if !promote {
        if turn_on != on && db.status != "available" {
            return Err(format!(
                "{} is {}: turning {} back on needs it available; nothing changed — run again once it is",
                db.id,
                db.status,
                turn_on.words()
            ));
        }
        return Ok(CacheSteps {
            turn_off: FailoverSettings::default(),
            promote: false,
            turn_on,
        });
    }
    if !failover.turn_off.covers(on) {
        return Err(format!(
            "changed since the plan ({} is now on); nothing changed — run again",
            on.words()
        ));
    }
    Ok(CacheSteps {
        turn_off: on,
        promote: true,
        turn_on,
    })
}

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
        let mut items = evacuation(&databases, scope.az_id(), scope.records, &filters);
        if let Some(e) = unread {
            let mut item = Item::new(TYPE, "elasticache", "ElastiCache replication groups", scope.az_id());
            item.fail(format!(
                "{}; their primaries were not checked",
                crate::error::describe(&e)
            ));
            items.push(item);
        }
        Ok(items)
    }

    async fn plan_recovery(&self, records: Vec<Record>, scope: &Scope<'_>) -> Result<Vec<Item>> {
        if records.is_empty() {
            return Ok(Vec::new());
        }
        let zones = self.rds.zones().await?;
        let databases = self.read(&zones, records.iter().map(|r| r.resource.as_str())).await?;
        Ok(records
            .iter()
            .map(|r| {
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
                        skip(&mut item, format!("{why}; journal record kept"));
                    }
                }
                item
            })
            .collect())
    }

    /// Under the lock: the writer may have moved since the plan (someone failed over, or the
    /// service did), automatic failover may have been turned on or off: decide again from a fresh
    /// read and the record as held (which holds what this run's intent added).
    async fn refresh(&self, command: Command, lines: &mut [&mut Item], held: &[&Held]) -> Result<()> {
        if command != Command::Evacuate || lines.iter().all(|l| l.status != Status::Planned) {
            return Ok(());
        }
        let zones = self.rds.zones().await?;
        let planned = lines.iter().filter(|l| l.status == Status::Planned);
        let databases = self.read(&zones, planned.map(|l| l.resource.as_str())).await?;
        for line in lines.iter_mut().filter(|l| l.status == Status::Planned) {
            let Some(db) = databases.iter().find(|d| d.arn == line.resource) else {
                line.fail("no longer exists; nothing changed".into());
                continue;
            };
            let record = held
                .iter()
                .map(|h| h.record())
                .find(|r| r.resource == line.resource)
                .or(line.record.as_ref());
            match decide(db, &line.az_id, FailoverSettings::journalled(record)) {
                Decision::Move(failover) => {
                    line.actions = Some(failover.actions());
                    line.reason = Some(failover.describe());
                    if let Some(target) = line.target.as_mut() {
                        target.set_detail(&failover);
                    }
                }
                Decision::Elsewhere => {
                    let (writer, az) = db.writer_az();
                    let role = db.kind.roles().0;
                    skip(
                        line,
                        format!("{role} {writer} is already in {az}: nothing to change any more"),
                    );
                }
                Decision::Restore(failover, why) => {
                    line.actions = Some(failover.actions());
                    line.reason = Some(restore_words(&failover, &why));
                    if let Some(target) = line.target.as_mut() {
                        target.set_detail(&failover);
                    }
                }
                Decision::Skip(why) => skip(line, why),
                Decision::Fail(why) => line.fail(why),
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
        // 20 is the least a page of DescribeDBClusters may ask for.
        let listed = self.rds.client.describe_db_clusters().max_records(20).send().await;
        vec![
            super::Check::answered(TYPE, "rds:DescribeDBClusters", listed),
            self.cache.probe().await,
        ]
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
        if failover.cache {
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

    /// A replication group's failover, each step decided from a fresh read by [`cache_steps`], so
    /// that the next run finishes what a killed one started: turn automatic failover (and Multi-AZ)
    /// off if it is on (ElastiCache refuses a chosen promotion while it is), promote the target
    /// unless it is the primary already (a line that only turns settings back on never promotes),
    /// turn back on what was on. Any failure after the turn-off tries to turn them back on at once
    /// and says so in the error; the journal record keeps its markers either way.
    async fn cache_sequence(&self, line: &Item, failover: &Failover, zones: &Zones) -> Result<Acted> {
        let Some(mut db) = self.read_one(zones, &line.resource, true).await? else {
            return Err(Error::NotSettled {
                resource: failover.id.clone(),
                why: "no longer in DescribeReplicationGroups; nothing changed".into(),
            });
        };
        let steps = cache_steps(failover, &db).map_err(|why| Error::NotSettled {
            resource: failover.id.clone(),
            why,
        })?;
        let mut shown = Vec::new();
        if steps.turn_off.any() {
            let turned_off = async {
                self.cache
                    .set_failover(&failover.id, FailoverSettings::default())
                    .await?;
                let off = format!("{} to be off", steps.turn_off.words());
                self.wait_until(zones, line, failover, &off, |d| {
                    d.status == "available" && !d.failover_settings.any()
                })
                .await
            };
            if let Err(e) = turned_off.await {
                let step = format!("turning {} off", steps.turn_off.words());
                return Err(self.turn_back_on(failover, steps.turn_on, step, e).await);
            }
            shown.push(format!("{} off", steps.turn_off.words()));
        }
        if steps.promote {
            let promoted = async {
                self.cache.start(failover).await?;
                self.wait_until(zones, line, failover, &failover.arrival(), |d| failover.arrived(d))
                    .await
            };
            db = match promoted.await {
                Ok(db) => db,
                Err(e) => {
                    let step = format!("promoting {} to primary", failover.to);
                    return Err(self.turn_back_on(failover, steps.turn_on, step, e).await);
                }
            };
            shown.push(failover.arrived_words());
        } else if failover.restores_only() {
            let (now, now_az) = db.writer_az();
            shown.push(format!("primary {now} stays in {now_az}"));
        }
        let want = db.failover_settings.union(steps.turn_on);
        if want != db.failover_settings {
            let turned_on = async {
                self.cache.set_failover(&failover.id, want).await?;
                let on = format!("{} to be on", want.words());
                self.wait_until(zones, line, failover, &on, |d| {
                    d.status == "available" && d.failover_settings.covers(want)
                })
                .await
            };
            if let Err(e) = turned_on.await {
                return Err(Error::StepFailed {
                    step: format!("turning {} back on", want.words()),
                    undone: format!(
                        "{} may still be off: the journal record says azevac turned {} off, and the next evacuate or recover turns {} on",
                        want.words(),
                        want.them(),
                        want.them()
                    ),
                    source: Box::new(e),
                });
            }
            shown.push(format!("{} back on", want.words()));
        }
        Ok(Acted {
            shown: (!shown.is_empty()).then_some(shown),
            ..Acted::default()
        })
    }

    /// After a failed step that followed the turn-off: request the turn-on of `on` at once (best
    /// effort; not waited for), and say so in the error. The journal record keeps saying azevac
    /// turned them off, so the next run turns them on if this does not.
    async fn turn_back_on(&self, failover: &Failover, on: FailoverSettings, step: String, failed: Error) -> Error {
        if !on.any() {
            return failed;
        }
        let undone = match self.cache.set_failover(&failover.id, on).await {
            Ok(()) => format!(
                "turning {} back on (requested, not waited for; the next evacuate or recover checks it)",
                on.words()
            ),
            Err(e) => format!(
                "{} is still off ({}): the journal record says azevac turned {} off, and the next evacuate or recover turns {} back on",
                on.words(),
                crate::error::describe(&e),
                on.them(),
                on.them()
            ),
        };
        Error::StepFailed {
            step,
            undone,
            source: Box::new(failed),
        }
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
    async fn wait_until(
        &self,
        zones: &Zones,
        line: &Item,
        failover: &Failover,
        what: &str,
        reached: impl Fn(&Database) -> bool + Send + Sync,
    ) -> Result<Database> {
        let poll = if failover.cache { self.cache.poll } else { self.rds.poll };
        let started = Instant::now();
        // A loop of our own: the SDK's waiters wait for a status (`available`), and a cluster is
        // `available` again before, as well as after, the writer moved; only the writer's ID and
        // zone (a group's settings) say that this step happened.
        loop {
            let db = match self.read_one(zones, &line.resource, failover.cache).await? {
                Some(db) if reached(&db) => return Ok(db),
                other => other,
            };
            let elapsed = started.elapsed();
            if elapsed >= self.timeout {
                let (w, az) = db.as_ref().map_or(("none", "?"), Database::writer_az);
                return Err(Error::NotSettled {
                    resource: failover.id.clone(),
                    why: format!(
                        "still waiting for {what} after {}s (now {} {w} in {az}, {})",
                        elapsed.as_secs(),
                        failover.role(),
                        db.as_ref().map_or("gone", |d| d.status.as_str())
                    ),
                });
            }
            let progress = format!(
                "azevac: db {}: waiting for {what} ({}s)",
                failover.id,
                elapsed.as_secs()
            );
            crate::say!("{}", crate::text::clean(&progress));
            tokio::time::sleep(poll.min(self.timeout - elapsed)).await;
        }
    }
}

/// The RDS API.
#[derive(Debug, Clone)]
pub struct Rds {
    client: aws_sdk_rds::Client,
    ec2: Option<aws_sdk_ec2::Client>,
    region: String,
    /// How often a failover's progress is read.
    pub poll: Duration,
}

fn tags(list: &[Tag]) -> BTreeMap<String, String> {
    list.iter()
        .filter_map(|t| Some((t.key()?.to_owned(), t.value().unwrap_or_default().to_owned())))
        .collect()
}

impl Rds {
    /// A client from the shared configuration.
    pub fn new(sdk: &aws_config::SdkConfig) -> Self {
        Rds {
            client: crate::client!(aws_sdk_rds, sdk),
            ec2: Some(crate::client!(aws_sdk_ec2, sdk)),
            region: crate::aws::region_of(sdk),
            poll: Duration::from_secs(5),
        }
    }

    /// A client as given (tests), with these zones.
    pub fn from_client(client: aws_sdk_rds::Client, poll: Duration) -> Self {
        Rds {
            client,
            ec2: None,
            region: String::new(),
            poll,
        }
    }

    /// The region's zones (recover plans without a zone; RDS speaks in zone names).
    async fn zones(&self) -> Result<Zones> {
        match &self.ec2 {
            Some(ec2) => Zones::load(ec2, &self.region).await,
            None => Ok(Zones::new(self.region.clone(), Vec::new())),
        }
    }

    /// Every DB cluster and every instance outside a cluster, with their instances' zones as AZ IDs.
    pub async fn databases(&self, zones: &Zones) -> Result<Vec<Database>> {
        let clusters: Vec<DbCluster> = self
            .client
            .describe_db_clusters()
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .map_err(|e| Error::from_sdk("rds:DescribeDBClusters", e))?;
        let instances: Vec<DbInstance> = self
            .client
            .describe_db_instances()
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .map_err(|e| Error::from_sdk("rds:DescribeDBInstances", e))?;
        Ok(assemble(&clusters, &instances, zones))
    }

    /// Start a failover.
    pub async fn start(&self, failover: &Failover) -> Result<()> {
        if failover.cluster {
            self.client
                .failover_db_cluster()
                .db_cluster_identifier(&failover.id)
                .target_db_instance_identifier(&failover.to)
                .send()
                .await
                .map_err(|e| Error::from_sdk("rds:FailoverDBCluster", e))?;
        } else {
            self.client
                .reboot_db_instance()
                .db_instance_identifier(&failover.id)
                .force_failover(true)
                .send()
                .await
                .map_err(|e| Error::from_sdk("rds:RebootDBInstance", e))?;
        }
        Ok(())
    }
}

/// Clusters with their members' placement, and instances outside clusters (pure).
pub fn assemble(clusters: &[DbCluster], instances: &[DbInstance], zones: &Zones) -> Vec<Database> {
    let az_of = |name: Option<&str>| name.map(|n| zones.id_of(n).unwrap_or(n).to_owned());
    let member = |i: &DbInstance, writer: bool, tier: i32| Member {
        id: i.db_instance_identifier().unwrap_or_default().to_owned(),
        az_id: az_of(i.availability_zone()),
        writer,
        tier,
        class: i.db_instance_class().unwrap_or_default().to_owned(),
        status: i.db_instance_status().unwrap_or_default().to_owned(),
    };
    let mut out = Vec::new();
    for c in clusters {
        let members = c
            .db_cluster_members()
            .iter()
            .map(|m| {
                let id = m.db_instance_identifier().unwrap_or_default();
                let writer = m.is_cluster_writer().unwrap_or(false);
                let tier = m.promotion_tier().unwrap_or(1);
                match instances.iter().find(|i| i.db_instance_identifier() == Some(id)) {
                    Some(i) => member(i, writer, tier),
                    None => Member {
                        id: id.to_owned(),
                        az_id: None,
                        writer,
                        tier,
                        class: String::new(),
                        status: "unknown".to_owned(),
                    },
                }
            })
            .collect();
        out.push(Database {
            arn: c.db_cluster_arn().unwrap_or_default().to_owned(),
            id: c.db_cluster_identifier().unwrap_or_default().to_owned(),
            kind: Kind::Cluster,
            status: c.status().unwrap_or_default().to_owned(),
            members,
            tags: tags(c.tag_list()),
            failover_settings: FailoverSettings::default(),
        });
    }
    for i in instances.iter().filter(|i| i.db_cluster_identifier().is_none()) {
        let kind = if i.multi_az().unwrap_or(false) {
            Kind::MultiAz {
                standby_az: az_of(i.secondary_availability_zone()),
            }
        } else {
            Kind::SingleAz
        };
        out.push(Database {
            arn: i.db_instance_arn().unwrap_or_default().to_owned(),
            id: i.db_instance_identifier().unwrap_or_default().to_owned(),
            kind,
            status: i.db_instance_status().unwrap_or_default().to_owned(),
            members: vec![member(i, true, 0)],
            tags: tags(i.tag_list()),
            failover_settings: FailoverSettings::default(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::State;

    const ARN: &str = "arn:aws:rds:us-east-1:123456789012:cluster:orders";

    fn member(id: &str, az: &str, writer: bool, tier: i32, class: &str) -> Member {
        Member {
            id: id.into(),
            az_id: Some(az.into()),
            writer,
            tier,
            class: class.into(),
            status: "available".into(),
        }
    }

    fn orders(members: Vec<Member>) -> Database {
        Database {
            arn: ARN.into(),
            id: "orders".into(),
            kind: Kind::Cluster,
            status: "available".into(),
            members,
            tags: BTreeMap::new(),
            failover_settings: FailoverSettings::default(),
        }
    }

    fn record(actions: &[&str]) -> Record {
        Record {
            az_id: "use1-az2".into(),
            resource: ARN.into(),
            resource_type: TYPE.into(),
            removed_subnets: vec![],
            state: State::Done,
            version: 2,
            resource_name: Some("orders".into()),
            original_subnets: vec![],
            actions: actions.iter().map(|a| a.to_string()).collect(),
            run_id: Some("run-1".into()),
            evacuated_by: None,
            reason: None,
            azevac_version: None,
            created_at: None,
            updated_at: None,
            account_id: None,
            identity: None,
        }
    }

    #[test]
    fn classes_rank_by_size() {
        assert!(class_rank("db.r6g.large") < class_rank("db.r6g.xlarge"));
        assert!(class_rank("db.r6g.xlarge") < class_rank("db.r6g.2xlarge"));
        assert!(class_rank("db.r6g.2xlarge") < class_rank("db.r6g.16xlarge"));
        assert!(class_rank("db.t3.micro") < class_rank("db.t3.medium"));
        assert_eq!(class_rank("db.serverless"), 0);
    }

    #[test]
    fn the_reader_is_chosen_by_tier_then_class_then_name_outside_the_zone() {
        let members = vec![
            member("w", "use1-az2", true, 0, "db.r6g.large"),
            member("same-zone", "use1-az2", false, 0, "db.r6g.16xlarge"),
            member("tier2-big", "use1-az1", false, 2, "db.r6g.16xlarge"),
            member("tier1-b", "use1-az4", false, 1, "db.r6g.large"),
            member("tier1-a", "use1-az1", false, 1, "db.r6g.large"),
            member("tier1-big", "use1-az4", false, 1, "db.r6g.2xlarge"),
        ];
        assert_eq!(
            best_reader(&members, "use1-az2").map(|m| m.id.as_str()),
            Some("tier1-big")
        );
        let mut members = members;
        members.retain(|m| m.id != "tier1-big");
        assert_eq!(
            best_reader(&members, "use1-az2").map(|m| m.id.as_str()),
            Some("tier1-a")
        );
        members.iter_mut().for_each(|m| m.status = "rebooting".into());
        assert_eq!(best_reader(&members, "use1-az2"), None);
    }

    #[test]
    fn decisions_move_skip_or_leave_alone() {
        let db = orders(vec![
            member("a", "use1-az2", true, 1, "db.r6g.large"),
            member("b", "use1-az1", false, 1, "db.r6g.large"),
        ]);
        match decide(&db, "use1-az2", FailoverSettings::default()) {
            Decision::Move(f) => assert_eq!(
                (f.from.as_str(), f.to.as_str(), f.to_az.as_str()),
                ("a", "b", "use1-az1")
            ),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            decide(&db, "use1-az4", FailoverSettings::default()),
            Decision::Elsewhere
        );
        let alone = orders(vec![
            member("a", "use1-az2", true, 1, "db.r6g.large"),
            member("b", "use1-az2", false, 1, "db.r6g.large"),
        ]);
        assert!(
            matches!(decide(&alone, "use1-az2", FailoverSettings::default()), Decision::Skip(why) if why.contains("b in use1-az2 (available)"))
        );
        let mut busy = db.clone();
        busy.status = "failing-over".into();
        assert!(
            matches!(decide(&busy, "use1-az2", FailoverSettings::default()), Decision::Skip(why) if why.contains("failing-over"))
        );
        let single = Database {
            kind: Kind::SingleAz,
            members: vec![member("r", "use1-az2", true, 0, "db.t3.micro")],
            ..db.clone()
        };
        assert_eq!(
            decide(&single, "use1-az2", FailoverSettings::default()),
            Decision::Skip(NOT_MOVABLE.into())
        );
        let multi = |standby: &str| Database {
            kind: Kind::MultiAz {
                standby_az: Some(standby.into()),
            },
            members: vec![member("m", "use1-az2", true, 0, "db.m6g.large")],
            ..db.clone()
        };
        match decide(&multi("use1-az4"), "use1-az2", FailoverSettings::default()) {
            Decision::Move(f) => assert!(!f.cluster && f.to == "m" && f.to_az == "use1-az4"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            decide(&multi("use1-az2"), "use1-az2", FailoverSettings::default()),
            Decision::Skip(_)
        ));
    }

    #[test]
    fn evacuation_journals_the_writer_and_filters_apply() {
        let db = orders(vec![
            member("a", "use1-az2", true, 1, "db.r6g.large"),
            member("b", "use1-az1", false, 1, "db.r6g.large"),
        ]);
        let items = evacuation(
            std::slice::from_ref(&db),
            "use1-az2",
            &BTreeMap::new(),
            &Filters::default(),
        );
        assert_eq!(
            items[0].actions.as_deref(),
            Some(&["writer:a@use1-az2".to_string()][..])
        );
        let detail: Failover = items[0].target.as_ref().expect("target").detail_as().expect("detail");
        assert_eq!(detail.to, "b");
        let filters = Filters {
            tags: vec![("team".into(), "pay".into())],
            name_prefix: None,
        };
        let items = evacuation(std::slice::from_ref(&db), "use1-az2", &BTreeMap::new(), &filters);
        assert_eq!(items[0].status, Status::Skipped);
        // Moved by an earlier run: listed as already evacuated.
        let moved = orders(vec![
            member("a", "use1-az2", false, 1, "db.r6g.large"),
            member("b", "use1-az1", true, 1, "db.r6g.large"),
        ]);
        let records = BTreeMap::from([(ARN.to_string(), record(&["writer:a@use1-az2"]))]);
        let items = evacuation(&[moved], "use1-az2", &records, &Filters::default());
        assert_eq!(
            items[0].reason.as_deref(),
            Some("already evacuated: writer b in use1-az1")
        );
    }

    #[test]
    fn exposure_lists_writers_in_the_zone_with_their_failover_or_why_not() {
        let movable = orders(vec![
            member("a", "use1-az2", true, 1, "db.r6g.large"),
            member("b", "use1-az1", false, 1, "db.r6g.large"),
        ]);
        let found = exposed(std::slice::from_ref(&movable), "use1-az2");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].moved_by.as_deref(), Some(TYPE));
        assert_eq!(found[0].in_zone, ["a"]);
        let alone = orders(vec![member("a", "use1-az2", true, 1, "db.r6g.large")]);
        let found = exposed(&[alone], "use1-az2");
        assert!(found[0].not_movable.is_some(), "{found:?}");
        assert!(
            exposed(&[movable], "use1-az1").is_empty(),
            "the writer is not in use1-az1"
        );
    }

    #[test]
    fn recovery_keeps_the_writer_unless_failback_and_fails_back_only_to_an_available_original() {
        let moved = orders(vec![
            member("a", "use1-az2", false, 1, "db.r6g.large"),
            member("b", "use1-az1", true, 1, "db.r6g.large"),
        ]);
        let rec = record(&["writer:a@use1-az2"]);
        let item = recovery(&rec, Some(&moved), false, false);
        assert!(!item.changes_resource());
        assert_eq!(
            item.reason.as_deref(),
            Some("writer b stays in use1-az1; was a in use1-az2")
        );
        let item = recovery(&rec, Some(&moved), true, false);
        assert_eq!(item.status, Status::Planned);
        assert!(item.changes_resource());
        let back: Failover = item.target.as_ref().expect("target").detail_as().expect("detail");
        assert_eq!((back.to.as_str(), back.to_az.as_str()), ("a", "use1-az2"));
        let mut down = moved.clone();
        down.members[0].status = "stopped".into();
        let item = recovery(&rec, Some(&down), true, false);
        assert_eq!(item.status, Status::Skipped);
        assert!(item
            .reason
            .as_deref()
            .unwrap_or_default()
            .contains("journal record kept"));
        let gone = recovery(&rec, None, false, false);
        assert_eq!(gone.status, Status::Skipped);
        assert_eq!(recovery(&rec, None, false, true).status, Status::Planned);
    }

    /// Regression (issue 15): a Multi-AZ instance's primary is the same instance after the failover,
    /// now in its standby's old zone; failback checks the standby's zone, not the instance's.
    #[test]
    fn a_multi_az_instance_fails_back_when_its_standby_is_in_the_journalled_zone() {
        let moved = |standby: &str| Database {
            kind: Kind::MultiAz {
                standby_az: Some(standby.into()),
            },
            members: vec![member("billing", "use1-az4", true, 0, "db.m6g.large")],
            ..orders(Vec::new())
        };
        let rec = record(&["writer:billing@use1-az2"]);
        let item = recovery(&rec, Some(&moved("use1-az2")), true, false);
        assert_eq!(item.status, Status::Planned, "{:?}", item.reason);
        let back: Failover = item.target.as_ref().expect("target").detail_as().expect("detail");
        assert_eq!(
            (back.to.as_str(), back.to_az.as_str(), back.cluster),
            ("billing", "use1-az2", false)
        );
        let item = recovery(&rec, Some(&moved("use1-az1")), true, false);
        assert_eq!(item.status, Status::Skipped);
    }

    #[test]
    fn a_replication_group_speaks_of_its_primary_and_journals_it() {
        let group = Database {
            kind: Kind::Cache,
            members: vec![
                member("s-001", "use1-az2", true, 0, "cache.r7g.large"),
                member("s-003", "use1-az1", false, 0, "cache.r7g.large"),
                member("s-002", "use1-az4", false, 0, "cache.r7g.large"),
                member("s-004", "use1-az2", false, 0, "cache.r7g.large"),
            ],
            ..orders(Vec::new())
        };
        let items = evacuation(
            std::slice::from_ref(&group),
            "use1-az2",
            &BTreeMap::new(),
            &Filters::default(),
        );
        assert_eq!(
            items[0].actions.as_deref(),
            Some(&["primary:s-001@use1-az2".to_string()][..])
        );
        assert_eq!(
            items[0].reason.as_deref(),
            Some("fail over primary s-001 (use1-az2) -> s-002 (use1-az4)"),
            "available, outside the zone, then by name"
        );
        let rec = record(&["primary:s-001@use1-az2"]);
        let mut moved = group.clone();
        moved.members[0].writer = false;
        moved.members[2].writer = true;
        let item = recovery(&rec, Some(&moved), false, false);
        assert_eq!(
            item.reason.as_deref(),
            Some("primary s-002 stays in use1-az4; was s-001 in use1-az2")
        );
        let item = recovery(&rec, Some(&moved), true, false);
        let back: Failover = item.target.as_ref().expect("target").detail_as().expect("detail");
        assert!(back.cache && back.to == "s-001");
        assert_eq!(
            item.actions.as_deref(),
            Some(&["fail back primary to s-001 (use1-az2)".to_string()][..])
        );
    }

    const BOTH: FailoverSettings = FailoverSettings {
        automatic_failover: true,
        multi_az: true,
    };
    const OFF: FailoverSettings = FailoverSettings {
        automatic_failover: false,
        multi_az: false,
    };

    /// `guarded`: primary s-001 in use1-az2, replica s-002 in use1-az4, with these settings on.
    fn guarded(primary: &str, on: FailoverSettings) -> Database {
        Database {
            kind: Kind::Cache,
            members: vec![
                member("s-001", "use1-az2", primary == "s-001", 0, "cache.r7g.large"),
                member("s-002", "use1-az4", primary == "s-002", 0, "cache.r7g.large"),
            ],
            failover_settings: on,
            ..orders(Vec::new())
        }
    }

    fn planned(db: &Database, records: &BTreeMap<String, Record>) -> (Item, Failover) {
        let items = evacuation(std::slice::from_ref(db), "use1-az2", records, &Filters::default());
        let item = items.into_iter().next().expect("a line");
        assert_eq!(item.status, Status::Planned, "{:?}", item.reason);
        let failover = item.target.as_ref().expect("target").detail_as().expect("detail");
        (item, failover)
    }

    fn strings(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn issue_15_a_group_with_automatic_failover_on_is_moved_in_three_journalled_steps() {
        let (item, failover) = planned(&guarded("s-001", BOTH), &BTreeMap::new());
        assert_eq!(
            item.actions.as_deref(),
            Some(
                &strings(&[
                    "primary:s-001@use1-az2",
                    "turned-off:automatic-failover",
                    "turned-off:multi-az"
                ])[..]
            )
        );
        assert_eq!(
            item.reason.as_deref(),
            Some(
                "turn off Multi-AZ/automatic failover, fail over primary s-001 (use1-az2) -> s-002 (use1-az4), \
                 turn them back on"
            )
        );
        assert_eq!(
            (failover.turn_off, failover.turn_on, failover.to.as_str()),
            (BOTH, BOTH, "s-002")
        );
        // Automatic failover on, Multi-AZ off: only what was on is journalled and turned on again.
        let only = FailoverSettings {
            automatic_failover: true,
            multi_az: false,
        };
        let (item, failover) = planned(&guarded("s-001", only), &BTreeMap::new());
        assert_eq!(
            item.actions.as_deref(),
            Some(&strings(&["primary:s-001@use1-az2", "turned-off:automatic-failover"])[..])
        );
        assert!(
            item.reason
                .as_deref()
                .unwrap_or_default()
                .starts_with("turn off automatic failover, ")
                && item
                    .reason
                    .as_deref()
                    .unwrap_or_default()
                    .ends_with(", turn it back on"),
            "{:?}",
            item.reason
        );
        assert_eq!(failover.turn_on, only);
        // The settings as read now, nothing journalled: not what ElastiCache would refuse any more.
        let mut busy = guarded("s-001", BOTH);
        busy.status = "modifying".into();
        assert!(matches!(decide(&busy, "use1-az2", OFF), Decision::Skip(why) if why.contains("modifying")));
    }

    #[test]
    fn issue_15_a_run_killed_after_turning_automatic_failover_off_promotes_then_turns_it_on() {
        let records = BTreeMap::from([(
            ARN.to_string(),
            record(&[
                "primary:s-001@use1-az2",
                "turned-off:automatic-failover",
                "turned-off:multi-az",
            ]),
        )]);
        let (item, failover) = planned(&guarded("s-001", OFF), &records);
        assert_eq!(
            (failover.turn_off, failover.turn_on),
            (OFF, BOTH),
            "what goes back on comes from the record"
        );
        assert_eq!(
            item.reason.as_deref(),
            Some("fail over primary s-001 (use1-az2) -> s-002 (use1-az4), turn Multi-AZ/automatic failover back on")
        );
        // The same decision under the lock, from the record as held.
        match decide(
            &guarded("s-001", OFF),
            "use1-az2",
            FailoverSettings::journalled(records.get(ARN)),
        ) {
            Decision::Move(f) => assert_eq!(f, failover),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn issue_15_a_run_killed_after_the_promotion_turns_automatic_failover_back_on() {
        let journalled = [
            "primary:s-001@use1-az2",
            "turned-off:automatic-failover",
            "turned-off:multi-az",
        ];
        let records = BTreeMap::from([(ARN.to_string(), record(&journalled))]);
        let (item, failover) = planned(&guarded("s-002", OFF), &records);
        assert!(failover.restores_only() && failover.to == "s-002", "{failover:?}");
        assert_eq!(
            item.actions.as_deref(),
            Some(&strings(&journalled[1..])[..]),
            "the record's markers, no primary of its own"
        );
        assert_eq!(
            item.reason.as_deref(),
            Some("turn Multi-AZ/automatic failover back on (azevac turned them off; primary s-002 is in use1-az4)")
        );
        // On again (the sequence finished), or never turned off by azevac: already evacuated.
        let items = evacuation(&[guarded("s-002", BOTH)], "use1-az2", &records, &Filters::default());
        assert_eq!(
            items[0].reason.as_deref(),
            Some("already evacuated: primary s-002 in use1-az4")
        );
        let plain = BTreeMap::from([(ARN.to_string(), record(&journalled[..1]))]);
        let items = evacuation(&[guarded("s-002", OFF)], "use1-az2", &plain, &Filters::default());
        assert_eq!(items[0].status, Status::Skipped);
        let mut busy = guarded("s-002", OFF);
        busy.status = "modifying".into();
        let items = evacuation(&[busy], "use1-az2", &records, &Filters::default());
        // Settings azevac left off are never a silent skip (review B3): the line fails.
        assert_eq!(items[0].status, Status::Failed);
        assert!(
            items[0]
                .reason
                .as_deref()
                .unwrap_or_default()
                .contains("run again once it is"),
            "{:?}",
            items[0].reason
        );
    }

    #[test]
    fn issue_15_recover_turns_back_on_what_azevac_turned_off_before_the_record_goes() {
        let rec = record(&[
            "primary:s-001@use1-az2",
            "turned-off:automatic-failover",
            "turned-off:multi-az",
        ]);
        for (primary, failback) in [("s-002", false), ("s-001", false), ("s-001", true)] {
            let item = recovery(&rec, Some(&guarded(primary, OFF)), failback, false);
            assert_eq!(item.status, Status::Planned, "{:?}", item.reason);
            assert_eq!(
                item.actions.as_deref(),
                Some(&strings(&["turn Multi-AZ/automatic failover back on"])[..])
            );
            let back: Failover = item.target.as_ref().expect("target").detail_as().expect("detail");
            assert!(
                back.restores_only() && back.to == primary && back.turn_on == BOTH,
                "{back:?}"
            );
            assert!(!fails_back(&item));
        }
        // On again: only the record goes.
        let item = recovery(&rec, Some(&guarded("s-002", BOTH)), false, false);
        assert!(!item.changes_resource());
        // A failback that cannot happen still turns them back on.
        let mut down = guarded("s-002", OFF);
        down.members[0].status = "rebooting".into();
        let item = recovery(&rec, Some(&down), true, false);
        assert!(item.changes_resource());
        assert!(
            item.reason
                .as_deref()
                .unwrap_or_default()
                .starts_with("no failback: s-001 is rebooting"),
            "{:?}",
            item.reason
        );
        // A group that is not available: kept for a later run.
        let mut busy = guarded("s-002", OFF);
        busy.status = "modifying".into();
        let item = recovery(&rec, Some(&busy), false, false);
        assert_eq!(item.status, Status::Skipped);
        assert!(item
            .reason
            .as_deref()
            .unwrap_or_default()
            .ends_with("journal record kept"));
    }

    #[test]
    fn issue_15_failback_of_a_group_with_automatic_failover_on_is_the_sequence_in_reverse() {
        let rec = record(&[
            "primary:s-001@use1-az2",
            "turned-off:automatic-failover",
            "turned-off:multi-az",
        ]);
        let item = recovery(&rec, Some(&guarded("s-002", BOTH)), true, false);
        assert_eq!(item.status, Status::Planned, "{:?}", item.reason);
        assert_eq!(
            item.actions.as_deref(),
            Some(
                &strings(&[
                    "turn off Multi-AZ/automatic failover",
                    "fail back primary to s-001 (use1-az2)",
                    "turn Multi-AZ/automatic failover back on"
                ])[..]
            )
        );
        let back: Failover = item.target.as_ref().expect("target").detail_as().expect("detail");
        assert_eq!((back.to.as_str(), back.turn_off, back.turn_on), ("s-001", BOTH, BOTH));
        assert!(fails_back(&item));
        // Killed after turning them off: the promotion and the turning on are left.
        let item = recovery(&rec, Some(&guarded("s-002", OFF)), true, false);
        let back: Failover = item.target.as_ref().expect("target").detail_as().expect("detail");
        assert_eq!((back.to.as_str(), back.turn_off, back.turn_on), ("s-001", OFF, BOTH));
        // On now, but the record does not say so: an interrupted failback could not be finished.
        let plain = record(&["primary:s-001@use1-az2"]);
        let item = recovery(&plain, Some(&guarded("s-002", BOTH)), true, false);
        assert_eq!(item.status, Status::Skipped);
        assert!(
            item.reason
                .as_deref()
                .unwrap_or_default()
                .contains("does not say it was on"),
            "{:?}",
            item.reason
        );
    }

    #[test]
    fn a_failover_of_before_the_sequence_parses_with_nothing_to_turn_on() {
        let old = serde_json::json!({"id": "s", "cluster": false, "from": "a", "from_az": "use1-az2",
            "to": "b", "to_az": "use1-az4", "cache": true});
        let failover: Failover = serde_json::from_value(old).expect("parses");
        assert_eq!((failover.turn_off, failover.turn_on), (OFF, OFF));
        assert_eq!(failover.describe(), "fail over primary a (use1-az2) -> b (use1-az4)");
    }

    #[test]
    fn what_azevac_turned_off_round_trips_through_the_journal_actions() {
        let only = FailoverSettings {
            automatic_failover: true,
            multi_az: false,
        };
        let both = FailoverSettings {
            automatic_failover: true,
            multi_az: true,
        };
        assert_eq!(only.actions(), ["turned-off:automatic-failover"]);
        assert_eq!(both.actions(), ["turned-off:automatic-failover", "turned-off:multi-az"]);
        assert!(FailoverSettings::default().actions().is_empty());
        let record = record(&["primary:s-001@use1-az2", "turned-off:automatic-failover"]);
        assert_eq!(FailoverSettings::journalled(Some(&record)), only);
        assert_eq!(FailoverSettings::journalled(None), FailoverSettings::default());
        assert!(both.covers(only) && !only.covers(both) && only.covers(FailoverSettings::default()));
        assert_eq!(only.union(both), both);
        assert_eq!(
            (only.words(), both.words(), both.them()),
            ("automatic failover", "Multi-AZ/automatic failover", "them")
        );
    }

    mod sdk {
        //! Paging, the wait for the new writer, and the service's refusal, against aws-smithy-mocks.
        use super::*;
        use aws_sdk_rds::operation::describe_db_clusters::DescribeDbClustersOutput;
        use aws_sdk_rds::operation::describe_db_instances::DescribeDbInstancesOutput;
        use aws_sdk_rds::operation::failover_db_cluster::FailoverDBClusterError;
        use aws_sdk_rds::types::error::InvalidDbClusterStateFault;
        use aws_sdk_rds::types::DbClusterMember;
        use aws_smithy_mocks::{mock, mock_client, RuleMode};

        fn zones() -> Zones {
            Zones::new(
                "us-east-1",
                vec![
                    crate::topology::Zone {
                        id: "use1-az2".into(),
                        name: "us-east-1c".into(),
                    },
                    crate::topology::Zone {
                        id: "use1-az1".into(),
                        name: "us-east-1b".into(),
                    },
                ],
            )
        }

        fn cluster(writer: &str, status: &str) -> DbCluster {
            DbCluster::builder()
                .db_cluster_arn(ARN)
                .db_cluster_identifier("orders")
                .status(status)
                .db_cluster_members(
                    DbClusterMember::builder()
                        .db_instance_identifier("a")
                        .is_cluster_writer(writer == "a")
                        .promotion_tier(1)
                        .build(),
                )
                .db_cluster_members(
                    DbClusterMember::builder()
                        .db_instance_identifier("b")
                        .is_cluster_writer(writer == "b")
                        .promotion_tier(1)
                        .build(),
                )
                .build()
        }

        fn instance(id: &str, az: &str) -> DbInstance {
            DbInstance::builder()
                .db_instance_identifier(id)
                .db_cluster_identifier("orders")
                .db_instance_class("db.r6g.large")
                .db_instance_status("available")
                .availability_zone(az)
                .build()
        }

        fn instances() -> DescribeDbInstancesOutput {
            DescribeDbInstancesOutput::builder()
                .db_instances(instance("a", "us-east-1c"))
                .db_instances(instance("b", "us-east-1b"))
                .build()
        }

        #[tokio::test]
        async fn clusters_are_read_across_pages_with_zone_ids() {
            let page1 = mock!(aws_sdk_rds::Client::describe_db_clusters)
                .match_requests(|r| r.marker().is_none())
                .then_output(|| {
                    DescribeDbClustersOutput::builder()
                        .db_clusters(cluster("a", "available"))
                        .marker("m2")
                        .build()
                });
            let page2 = mock!(aws_sdk_rds::Client::describe_db_clusters)
                .match_requests(|r| r.marker() == Some("m2"))
                .then_output(|| DescribeDbClustersOutput::builder().build());
            let dbs = mock!(aws_sdk_rds::Client::describe_db_instances).then_output(instances);
            let client = mock_client!(aws_sdk_rds, RuleMode::MatchAny, [&page1, &page2, &dbs]);
            let found = Rds::from_client(client, Duration::from_millis(1))
                .databases(&zones())
                .await
                .expect("databases");
            assert_eq!(found.len(), 1);
            assert_eq!(found[0].writer().and_then(|w| w.az_id.as_deref()), Some("use1-az2"));
            assert_eq!(found[0].members[1].az_id.as_deref(), Some("use1-az1"));
            assert_eq!((page1.num_calls(), page2.num_calls()), (1, 1));
        }

        #[tokio::test]
        async fn a_failover_in_progress_is_refused_with_the_services_words() {
            let refused = mock!(aws_sdk_rds::Client::failover_db_cluster)
                .match_requests(|r| {
                    r.db_cluster_identifier() == Some("orders") && r.target_db_instance_identifier() == Some("b")
                })
                .then_error(|| {
                    FailoverDBClusterError::InvalidDbClusterStateFault(
                        InvalidDbClusterStateFault::builder()
                            .message("Cluster orders is failing-over")
                            .build(),
                    )
                });
            let client = mock_client!(aws_sdk_rds, RuleMode::MatchAny, [&refused]);
            let failover = Failover {
                id: "orders".into(),
                cluster: true,
                from: "a".into(),
                from_az: "use1-az2".into(),
                to: "b".into(),
                to_az: "use1-az1".into(),
                cache: false,
                turn_off: FailoverSettings::default(),
                turn_on: FailoverSettings::default(),
            };
            let err = Rds::from_client(client, Duration::from_millis(1))
                .start(&failover)
                .await
                .expect_err("refused");
            let text = crate::error::describe(&err);
            assert!(
                text.contains("FailoverDBCluster") && text.contains("failing-over"),
                "{text}"
            );
        }
    }

    fn guarded_failover(from: &str, to: &str, turn_off: FailoverSettings, turn_on: FailoverSettings) -> Failover {
        let az = |id: &str| if id == "s-001" { "use1-az2" } else { "use1-az4" };
        Failover {
            id: "orders".into(),
            cluster: false,
            from: from.into(),
            from_az: az(from).into(),
            to: to.into(),
            to_az: az(to).into(),
            cache: true,
            turn_off,
            turn_on,
        }
    }

    #[test]
    fn review_b1_a_promotion_never_turns_off_what_it_did_not_plan_to() {
        // A failback planned while everything was off; the operator turned both on since.
        let planned_off = guarded_failover("s-002", "s-001", OFF, OFF);
        let why = cache_steps(&planned_off, &guarded("s-002", BOTH)).expect_err("must not act");
        assert!(
            why.contains("changed since the plan (Multi-AZ/automatic failover is now on); nothing changed"),
            "{why}"
        );
        // Planned as on: turned off, promoted, and what was on at the act read goes back on, even
        // when the line's own turn_on says less.
        let planned_on = guarded_failover("s-002", "s-001", BOTH, OFF);
        assert_eq!(
            cache_steps(&planned_on, &guarded("s-002", BOTH)),
            Ok(CacheSteps {
                turn_off: BOTH,
                promote: true,
                turn_on: BOTH
            })
        );
        // Only automatic failover planned, Multi-AZ turned on since: refused too.
        let af = FailoverSettings {
            automatic_failover: true,
            multi_az: false,
        };
        let planned_af = guarded_failover("s-002", "s-001", af, af);
        assert!(cache_steps(&planned_af, &guarded("s-002", BOTH)).is_err());
        assert_eq!(
            cache_steps(&planned_af, &guarded("s-002", af)).map(|s| (s.turn_off, s.turn_on)),
            Ok((af, af))
        );
    }

    #[test]
    fn review_b2_a_restores_only_line_never_promotes() {
        let restore = guarded_failover("s-001", "s-001", OFF, BOTH);
        let only_on = Ok(CacheSteps {
            turn_off: OFF,
            promote: false,
            turn_on: BOTH,
        });
        // The operator promoted s-002 by hand since the plan: it stays the primary.
        assert_eq!(cache_steps(&restore, &guarded("s-002", OFF)), only_on);
        assert_eq!(cache_steps(&restore, &guarded("s-001", OFF)), only_on);
        // No primary reported: never `PrimaryClusterId=none`.
        let mut headless = guarded("s-001", OFF);
        headless.members.iter_mut().for_each(|m| m.writer = false);
        assert_eq!(cache_steps(&restore, &headless), only_on);
        // Not available: nothing called.
        let mut busy = guarded("s-002", OFF);
        busy.status = "modifying".into();
        assert!(cache_steps(&restore, &busy).is_err_and(|why| why.contains("modifying")));
    }

    const MARKED: [&str; 3] = [
        "primary:s-001@use1-az2",
        "turned-off:automatic-failover",
        "turned-off:multi-az",
    ];

    #[test]
    fn review_b3_settings_azevac_left_off_go_back_on_when_the_primary_cannot_move() {
        let records = BTreeMap::from([(ARN.to_string(), record(&MARKED))]);
        // Killed after step 1; now the replica outside the zone is not available.
        let mut stuck = guarded("s-001", OFF);
        stuck.members[1].status = "rebooting".into();
        let (item, failover) = planned(&stuck, &records);
        assert!(failover.restores_only() && failover.to == "s-001", "{failover:?}");
        assert_eq!((failover.turn_off, failover.turn_on), (OFF, BOTH));
        let reason = item.reason.as_deref().unwrap_or_default();
        assert!(
            reason.starts_with("turn Multi-AZ/automatic failover back on")
                && reason.contains("no available replica outside use1-az2"),
            "{reason}"
        );
        // No primary reported: turned back on too.
        let mut headless = guarded("s-001", OFF);
        headless.members.iter_mut().for_each(|m| m.writer = false);
        let (item, failover) = planned(&headless, &records);
        assert!(failover.restores_only(), "{failover:?}");
        assert!(item
            .reason
            .as_deref()
            .unwrap_or_default()
            .contains("reports no writer/primary"));
        // Not available: the line fails (exit 1), saying the settings are off.
        let mut busy = guarded("s-001", OFF);
        busy.status = "modifying".into();
        let items = evacuation(std::slice::from_ref(&busy), "use1-az2", &records, &Filters::default());
        assert_eq!(items[0].status, Status::Failed, "{:?}", items[0].reason);
        assert!(items[0]
            .reason
            .as_deref()
            .unwrap_or_default()
            .starts_with("Multi-AZ/automatic failover is off (azevac turned them off)"));
        assert!(matches!(decide(&busy, "use1-az2", BOTH), Decision::Fail(_)));
        // Filtered out: still a skip, which says what azevac left off.
        let filters = Filters {
            name_prefix: Some("other".into()),
            ..Filters::default()
        };
        let items = evacuation(std::slice::from_ref(&stuck), "use1-az2", &records, &filters);
        assert_eq!(items[0].status, Status::Skipped);
        assert!(
            items[0]
                .reason
                .as_deref()
                .unwrap_or_default()
                .contains("azevac's earlier run left Multi-AZ/automatic failover off"),
            "{:?}",
            items[0].reason
        );
        // Without markers nothing changes: a skip.
        assert!(matches!(decide(&stuck, "use1-az2", OFF), Decision::Skip(_)));
    }
}
