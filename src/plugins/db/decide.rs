//! What evacuating or recovering a zone means for each database (pure: databases as read and
//! journal records in, plan lines out): which reader takes over, what is left alone and why, what
//! a record lets `recover` and `--failback` do.

use std::collections::BTreeMap;

use super::actions::{journalled_writer, Action};
use super::cache::{self, FailoverSettings};
use super::types::{Database, Failover, Kind, Member};
use super::{NOT_MOVABLE, TYPE};
use crate::model::plan::{Filters, ALREADY_EVACUATED};
use crate::model::{Item, Record, Resource};

/// How a recovery line that fails the writer back starts.
const FAIL_BACK: &str = "fail back writer to ";
/// How a recovery line that promotes a replication group's original primary again starts.
const FAIL_BACK_PRIMARY: &str = "fail back primary to ";

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
        target: db.kind.target(),
        from: writer.id.clone(),
        from_az: writer.az_id.clone().unwrap_or_default(),
        to: to.to_owned(),
        to_az: to_az.to_owned(),
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

/// The reason of a line that only turns settings back on, the primary staying where it is.
pub(super) fn restore_words(failover: &Failover, why: &str) -> String {
    format!("{}; the primary cannot leave the zone now: {why}", failover.describe())
}

/// The exposure findings of the databases whose writer is in `az_id` (pure).
pub fn exposed(databases: &[Database], az_id: &str) -> Vec<crate::plugins::Finding> {
    databases
        .iter()
        .filter_map(|db| {
            let decision = decide(db, az_id, FailoverSettings::default());
            if decision == Decision::Elsewhere {
                return None;
            }
            let (writer, _) = db.writer_az();
            let found = crate::plugins::Finding::new(TYPE, &db.arn, &db.id, vec![writer.to_owned()]);
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
/// the zone, and one per database an earlier run moved (already evacuated). A database whose
/// record's actions do not parse fails its line, nothing changed.
pub fn evacuation(
    databases: &[Database],
    az_id: &str,
    records: &BTreeMap<String, Record>,
    filters: &Filters,
) -> Vec<Item> {
    let mut items = Vec::new();
    for db in databases {
        // A record of an earlier database of the same identifier moved nothing of this one.
        let record = records.get(&db.arn).filter(|r| r.is_about(db.identity.as_ref()));
        let actions = record.map(Record::actions_as::<Action>).transpose();
        let journalled = match &actions {
            Ok(actions) => FailoverSettings::journalled(actions.as_deref().unwrap_or_default()),
            Err(_) => FailoverSettings::default(),
        };
        let decision = decide(db, az_id, journalled);
        if decision == Decision::Elsewhere && record.is_none() {
            continue;
        }
        let mut target = Resource {
            resource_type: TYPE,
            id: db.arn.clone(),
            name: db.id.clone(),
            tags: db.tags.clone(),
            identity: db.identity.clone(),
            ..Resource::default()
        };
        let mut item = Item {
            actions: Some(Vec::new()),
            record: record.cloned(),
            ..Item::new(TYPE, &db.arn, &db.id, az_id)
        };
        if let Some(mut why) = Filters::rejects(filters, &target) {
            if !db.failover_settings.covers(journalled) {
                why.push_str(&format!(
                    "; note: azevac's earlier run left {} off (the journal record says so): run without the filter to turn {} back on",
                    journalled.words(),
                    journalled.them()
                ));
            }
            item.skip(why);
            items.push(item);
            continue;
        }
        if let Err(e) = actions {
            item.fail(crate::model::Failure::plan(crate::error::describe(&e)));
            item.target = Some(target);
            items.push(item);
            continue;
        }
        match decision {
            Decision::Elsewhere => {
                let (writer, az) = db.writer_az();
                let role = db.kind.roles().0;
                item.skip(format!("{ALREADY_EVACUATED}: {role} {writer} in {az}"));
            }
            Decision::Skip(why) => item.skip(why),
            Decision::Fail(why) => item.fail(crate::model::Failure::plan(why)),
            Decision::Move(failover) => {
                item.take_actions(&failover.actions());
                item.reason = Some(failover.describe());
                item.change = Some(format!("fail over to {} ({})", failover.to, failover.to_az));
                target.set_detail(&failover);
            }
            Decision::Restore(failover, why) => {
                item.take_actions(&failover.actions());
                item.reason = Some(restore_words(&failover, &why));
                item.change = Some(format!("fail over to {} ({})", failover.to, failover.to_az));
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
        crate::model::plan::missing(&mut item, name, forget_missing);
        return item;
    };
    // Deleted and created again under the same identifier: not the database azevac moved.
    if !record.is_about(db.identity.as_ref()) {
        crate::model::plan::recreated(&mut item, record, db.identity.as_ref(), forget_missing);
        return item;
    }
    // Never a guess: a record this version cannot read fails its line, and is kept.
    let actions = match record.actions_as::<Action>() {
        Ok(actions) => actions,
        Err(e) => {
            item.fail(crate::model::Failure::plan_kept(format!(
                "{}; nothing changed, journal record kept",
                crate::error::describe(&e)
            )));
            return item;
        }
    };
    let (now, now_az) = db.writer_az();
    let role = db.kind.roles().0;
    let Some((was, was_az)) = journalled_writer(&actions) else {
        item.reason = Some(format!(
            "no {role} journalled ({role} {now} in {now_az}): journal record will be deleted"
        ));
        return item;
    };
    let stays = format!("{role} {now} stays in {now_az}; was {was} in {was_az}");
    let journalled = FailoverSettings::journalled(&actions);
    let unfinished = !db.failover_settings.covers(journalled);
    // Turn back on what azevac turned off, the primary staying where it is (or say why not now);
    // false: nothing to turn on.
    let finish = |item: &mut Item, why: &str| {
        if !unfinished {
            return false;
        }
        let on = journalled;
        if db.status != "available" {
            item.skip(format!(
                "{why}{} is off (azevac turned {} off) and {} is {}: run again once it is available; journal record kept",
                on.words(),
                on.them(),
                db.id,
                db.status
            ));
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
        item.skip(format!(
            "no failback: {why}; {role} {now} stays in {now_az}; journal record kept (recover without --failback deletes it)"
        ));
        return item;
    }
    let failover = Failover {
        id: db.id.clone(),
        target: db.kind.target(),
        from: now.to_owned(),
        from_az: now_az.to_owned(),
        to: was.to_owned(),
        to_az: was_az.to_owned(),
        turn_off: db.failover_settings,
        turn_on: db.failover_settings.union(journalled),
    };
    let fail_back = if failover.is_cache() {
        FAIL_BACK_PRIMARY
    } else {
        FAIL_BACK
    };
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
    item.change = Some(format!("fail back to {} ({})", failover.to, failover.to_az));
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
pub(super) fn fails_back(item: &Item) -> bool {
    item.target
        .as_ref()
        .is_some_and(|t| t.detail_as::<Failover>().is_ok_and(|f| !f.restores_only()))
}
