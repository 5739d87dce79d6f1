//! One line through the journal protocol: acquire (lock and intent), read again and compute the
//! change from the live state, act through a guard (bounded by the lease and an interrupt),
//! read back, release (done mark or delete), settle.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use super::Run;
use crate::error::describe;
use crate::journal::{Ahead, Declared, Evacuating, Guard, Held, Release, Released};
use crate::model::{Command, Failure, Item, Plan, RecordFate, Stage, Status};
use crate::plugins::{self, Refreshing};
use crate::{Error, Result};

/// How a bounded act ended.
pub(super) enum Bounded {
    /// The plugin returned.
    Ended(Result<plugins::Acted>),
    /// It was given up while a call may still be in flight: why.
    Abandoned(String),
}

/// How often an act in flight looks at its lease and at an interrupt.
pub(super) const WATCH_EVERY: Duration = Duration::from_millis(200);

/// A line being carried out: its index in the plan, once acquired its lock and intent, and once it
/// has ended how it is released (a line still held at the end changed nothing).
pub(super) struct Line {
    pub(super) index: usize,
    pub(super) held: Option<Held>,
    pub(super) release: Option<Release>,
}

impl Line {
    /// Take the hold, to end it.
    pub(super) fn end(&mut self, end: impl FnOnce(Held) -> Release) {
        if let Some(held) = self.held.take() {
            self.release = Some(end(held));
        }
    }

    /// How the line is released: as it ended, or untouched.
    pub(super) fn release(self) -> Option<Release> {
        self.release.or_else(|| self.held.map(Held::untouched))
    }
}

impl Run<'_> {
    /// Take every line's lock and journal its intent. A line whose resource another live run holds
    /// is skipped, naming that run; one whose record changed since the plan fails; neither changes.
    pub(super) async fn acquire(&self, plan: &mut Plan, command: Command, indices: &[usize]) -> Vec<Line> {
        let mut missing = Vec::new();
        let outcomes: Vec<(usize, Result<Held>)> = {
            let mut aheads: Vec<Ahead<'_>> = Vec::new();
            let mut of: Vec<usize> = Vec::new();
            for &i in indices {
                let item = &plan.items[i];
                let ahead = match command {
                    Command::Evacuate => item.target.as_ref().map(|resource| Ahead::Evacuate {
                        az_id: &item.az_id,
                        resource,
                        removed: item.removed_subnets.as_deref().unwrap_or_default(),
                        actions: &item.steps,
                        existing: item.record.as_ref(),
                    }),
                    Command::Recover => item.record.as_ref().map(|record| Ahead::Recover { record }),
                };
                match ahead {
                    Some(ahead) => {
                        aheads.push(ahead);
                        of.push(i);
                    }
                    None => missing.push(i),
                }
            }
            let results = self
                .journal
                .acquire(&aheads, self.lease, self.audit, &self.settings.interrupt)
                .await;
            of.into_iter().zip(results).collect()
        };
        for i in missing {
            let item = &mut plan.items[i];
            item.fail(Failure::internal(
                RecordFate::Untouched,
                format!("no planned state or record for {}", item.resource),
            ));
        }
        let mut lines = Vec::new();
        for (index, outcome) in outcomes {
            let item = &mut plan.items[index];
            match outcome {
                Ok(held) => lines.push(Line {
                    index,
                    held: Some(held),
                    release: None,
                }),
                Err(Error::Locked {
                    resource,
                    run_id,
                    caller,
                    until,
                }) => {
                    let why = Error::Locked {
                        resource,
                        run_id: run_id.clone(),
                        caller,
                        until,
                    };
                    item.status = Status::Skipped;
                    item.reason = Some(why.to_string());
                    item.blocked_by = Some(run_id);
                }
                Err(e) => item.fail(Failure::new(Stage::JournalAhead, RecordFate::Untouched, describe(&e))),
            }
        }
        lines
    }

    /// Under the locks: each plugin reads its resources again and computes the changes from the
    /// live state; evacuation widens its intent first if the live state has more to take.
    pub(super) async fn refresh(&self, plan: &mut Plan, command: Command, lines: &mut [Line]) {
        let types: BTreeSet<String> = lines
            .iter()
            .filter(|l| l.held.is_some())
            .map(|l| plan.items[l.index].resource_type.clone())
            .collect();
        for resource_type in types {
            let mine: Vec<&mut Line> = lines
                .iter_mut()
                .filter(|l| l.held.is_some() && plan.items[l.index].resource_type == resource_type)
                .collect();
            self.refresh_lines(plan, command, mine).await;
        }
    }

    /// Read these held lines' resources again (one plugin's, one batched read), recompute, widen.
    pub(super) async fn refresh_lines(&self, plan: &mut Plan, command: Command, mut mine: Vec<&mut Line>) {
        let Some(first) = mine.first() else {
            return;
        };
        let Some(plugin) = self.plugin(&plan.items[first.index].resource_type) else {
            return;
        };
        // Items and handles paired by index, in the same order (lines of a resource in plan order).
        let order: Vec<usize> = mine.iter().map(|l| l.index).collect();
        // From the run, not `plan`: a line read again alone comes in a plan of its own.
        let run = Refreshing {
            command,
            request: self.request,
            zone: self.zone,
        };
        let mut by_index: BTreeMap<usize, &mut Item> = plan
            .items
            .iter_mut()
            .enumerate()
            .filter(|(i, _)| order.contains(i))
            .collect();
        let mut items: Vec<&mut Item> = order.iter().filter_map(|i| by_index.remove(i)).collect();
        let held: Vec<&Held> = mine.iter().filter_map(|l| l.held.as_ref()).collect();
        if let Err(e) = plugin.refresh(run, &mut items, &held).await {
            for item in items.iter_mut() {
                item.fail(Failure::new(Stage::Read, RecordFate::Untouched, describe(&e)));
            }
        }
        drop(items);
        if command != Command::Evacuate {
            return;
        }
        for line in mine.iter_mut() {
            let item = &mut plan.items[line.index];
            if let Some(Held::Evacuation(held)) = line.held.as_mut() {
                self.widen(item, held).await;
            }
        }
    }

    /// The live state has more to take than the intent holds (it changed between the plan and the
    /// lock): widen the record first, so the write-ahead still covers the change.
    pub(super) async fn widen(&self, item: &mut Item, held: &mut Evacuating) {
        if item.status != Status::Planned {
            return;
        }
        let missing = |want: &[String], have: &[String]| -> Vec<String> {
            want.iter().filter(|s| !have.contains(s)).cloned().collect()
        };
        let removed = missing(
            item.removed_subnets.as_deref().unwrap_or_default(),
            &held.record().removed_subnets,
        );
        let actions = missing(&item.steps, &held.record().actions);
        if removed.is_empty() && actions.is_empty() {
            return;
        }
        if let Err(e) = self.journal.widen(held, &removed, &actions).await {
            item.fail(Failure::new(Stage::JournalAhead, RecordFate::Untouched, describe(&e)));
        }
    }

    /// Carry one resource's lines out, in order. Where the plugin folds a resource's lines into one
    /// change ([`plugins::Plugin::folds_lines`], a recovery of several zones), the last line still
    /// planned carries it and the lines before it share its outcome: one fresh read, one change,
    /// one outcome. A read grown old is read again for all the lines together, never for the
    /// carrier alone (which would forget what the others put back).
    pub(super) async fn act_resource(
        &self,
        command: Command,
        mut group: Vec<(Item, Line)>,
        read_at: Instant,
        fresh_for: Duration,
    ) -> Vec<(Item, Line)> {
        let folds = command == Command::Recover
            && group.len() > 1
            && group
                .first()
                .and_then(|(item, _)| self.plugin(&item.resource_type))
                .is_some_and(|p| p.folds_lines());
        if !folds {
            for (item, line) in group.iter_mut() {
                self.act(command, item, line, read_at, fresh_for).await;
            }
            return group;
        }
        let changing = |group: &[(Item, Line)]| {
            group
                .iter()
                .any(|(i, l)| l.held.is_some() && i.status == Status::Planned)
        };
        if read_at.elapsed() > fresh_for && changing(&group) {
            let mut together = Plan {
                items: group.iter().map(|(item, _)| item.clone()).collect(),
                ..Plan::empty(command)
            };
            let mut lines: Vec<Line> = (0..group.len())
                .map(|n| Line {
                    index: n,
                    held: group[n].1.held.take(),
                    release: None,
                })
                .collect();
            self.refresh_lines(
                &mut together,
                command,
                lines.iter_mut().filter(|l| l.held.is_some()).collect(),
            )
            .await;
            for ((slot, fresh), line) in group.iter_mut().zip(together.items).zip(lines) {
                slot.0 = fresh;
                slot.1.held = line.held;
            }
        }
        let carrier = group
            .iter()
            .rposition(|(item, line)| line.held.is_some() && item.status == Status::Planned);
        let now = Instant::now();
        let Some(carrier) = carrier else {
            for (item, line) in group.iter_mut() {
                self.act(command, item, line, now, fresh_for).await;
            }
            return group;
        };
        {
            let (item, line) = &mut group[carrier];
            self.act(command, item, line, now, fresh_for).await;
        }
        let (done, why, zone) = {
            let item = &group[carrier].0;
            // The carrier's failure, in the phrase table's words; a carrier stopped before it acted
            // (a signal, a lost lease) or left alone on its fresh read has only its reason.
            let why = item
                .failure
                .as_ref()
                .map(ToString::to_string)
                .or_else(|| item.reason.clone());
            (item.status == Status::Done, why, item.az_id.clone())
        };
        for n in (0..group.len()).filter(|&n| n != carrier) {
            let (item, line) = &mut group[n];
            let rides = n < carrier && line.held.is_some() && item.changes_resource();
            if !rides {
                self.act(command, item, line, now, fresh_for).await;
            } else if done {
                line.end(|held| match held {
                    Held::Recovery(held) => held.recovered(),
                    other => other.untouched(),
                });
                item.done();
                item.notes
                    .push(format!("put back in one change with its record of {zone}"));
            } else {
                line.end(Held::untouched);
                item.fail(
                    Failure::new(
                        Stage::Act,
                        RecordFate::Kept,
                        why.as_deref().unwrap_or("no reason given"),
                    )
                    .carried_by(zone.as_str()),
                );
            }
        }
        group
    }

    /// Carry one held line out and decide how it is released. A line whose batch was read again
    /// longer than `fresh_for` ago (slow changes before it, such as `--pace`) is read again alone
    /// first, so that no change is computed from an old read.
    pub(super) async fn act(
        &self,
        command: Command,
        item: &mut Item,
        line: &mut Line,
        read_at: Instant,
        fresh_for: Duration,
    ) {
        if line.held.is_none() {
            return;
        }
        if item.status == Status::Planned && read_at.elapsed() > fresh_for {
            // The line alone, as line 0 of a plan of one.
            let mut alone = Line {
                index: 0,
                held: line.held.take(),
                release: None,
            };
            let mut plan_of_one = Plan {
                items: vec![item.clone()],
                ..Plan::empty(command)
            };
            self.refresh_lines(&mut plan_of_one, command, vec![&mut alone]).await;
            if let Some(fresh) = plan_of_one.items.pop() {
                *item = fresh;
            }
            line.held = alone.held;
        }
        let Some(held) = line.held.as_ref() else {
            return;
        };
        if item.status != Status::Planned {
            return;
        }
        if !item.changes_resource() {
            // Recover: nothing to put back, the record goes. Evacuate: nothing to take after all.
            line.end(|held| match held {
                Held::Recovery(held) => held.recovered(),
                Held::Evacuation(held) => held.untouched(),
            });
            match command {
                Command::Recover => item.done(),
                Command::Evacuate => {
                    item.status = Status::Skipped;
                    item.reason.get_or_insert_with(|| "nothing to change any more".into());
                }
            }
            return;
        }
        if !self.lease.is_live(held.key()) {
            item.fail(Failure::new(
                Stage::Act,
                RecordFate::Untouched,
                "the lock's lease ran out before the change (renewals failed)",
            ));
            return;
        }
        if self.settings.interrupt.requested() {
            item.status = Status::Skipped;
            item.reason = Some(self.settings.interrupt.reason());
            return;
        }
        let Some(plugin) = self.plugin(&item.resource_type) else {
            item.fail(Failure::internal(
                RecordFate::Untouched,
                format!("no plugin for {}", item.resource_type),
            ));
            return;
        };
        let Some(held) = line.held.take() else {
            return;
        };
        let key = held.key().to_owned();
        let guard = Guard::new(self.journal, self.lease, held);
        let acted = self
            .bounded(&key, async {
                match command {
                    Command::Evacuate => plugin.evacuate(item, &guard).await,
                    Command::Recover => plugin.recover(item, &guard).await,
                }
            })
            .await;
        let (held, declared) = guard.finish();
        // Each kind of hold ends only in the ways its kind can end.
        // A call that timed out may still land: the line ends as one given up in flight does.
        let acted = match acted {
            Bounded::Ended(Err(e)) if e.may_still_land() => Bounded::Abandoned(describe(&e)),
            other => other,
        };
        let release = match (held, acted) {
            (held, Bounded::Abandoned(why)) => {
                item.fail(Failure::new(Stage::Act, RecordFate::InFlight, why));
                tracing::warn!(resource = %item.resource, "change given up while in flight");
                held.abandoned()
            }
            (Held::Evacuation(mut held), Bounded::Ended(Ok(acted))) => {
                item.done();
                let actions = acted.actions.clone().unwrap_or_else(|| item.steps.clone());
                let removed = item.removed_subnets.clone().unwrap_or_default();
                if !acted.replace_actions {
                    self.cover_after(item, &mut held, &removed, &actions).await;
                }
                shown(item, acted.shown, acted.problem);
                held.evacuated(removed, actions, acted.replace_actions)
            }
            (Held::Recovery(held), Bounded::Ended(Ok(acted))) => {
                item.done();
                shown(item, acted.shown, acted.problem);
                held.recovered()
            }
            (Held::Evacuation(held), Bounded::Ended(Err(e))) => {
                // The most the act can have done: what it declared before its calls, or (a plugin
                // that declares nothing) the change computed from the fresh read.
                let done = declared.unwrap_or_else(|| Declared {
                    removed: item.removed_subnets.clone().unwrap_or_default(),
                    actions: item.steps.clone(),
                });
                item.fail(Failure::new(Stage::Act, RecordFate::Intent, describe(&e)).taken(done.removed.clone()));
                tracing::warn!(resource = %item.resource, "change failed");
                held.failed(done)
            }
            (Held::Recovery(held), Bounded::Ended(Err(e))) => {
                item.fail(Failure::new(Stage::Act, RecordFate::Kept, describe(&e)));
                tracing::warn!(resource = %item.resource, "change failed");
                held.kept()
            }
        };
        line.release = Some(release);
    }

    /// Run one act, giving it up when its lock's lease can no longer be trusted (renewals failed:
    /// another run may take the lock over) or when an interrupt's grace is over. A call given up
    /// may still land; the engine then keeps the record and leaves the lock to run out.
    pub(super) async fn bounded(
        &self,
        key: &str,
        act: impl std::future::Future<Output = Result<plugins::Acted>>,
    ) -> Bounded {
        tokio::pin!(act);
        loop {
            tokio::select! {
                acted = &mut act => return Bounded::Ended(acted),
                () = tokio::time::sleep(WATCH_EVERY) => {
                    if !self.lease.is_live(key) {
                        return Bounded::Abandoned(
                            "given up in flight: the lock's lease could not be renewed (the journal is not answering)".into(),
                        );
                    }
                    if self.settings.interrupt.grace_is_over() {
                        return Bounded::Abandoned(format!(
                            "given up in flight: interrupted, and still running {}s later",
                            crate::process::interrupt::GRACE.as_secs()
                        ));
                    }
                }
            }
        }
    }

    /// The engine's check of what an evacuation did against what its record covers: a plugin that
    /// did something it had not written ahead is a bug in azevac. What it did is journalled now (so
    /// that nothing is forgotten) and the line fails, never a silent merge.
    pub(super) async fn cover_after(
        &self,
        item: &mut Item,
        held: &mut Evacuating,
        removed: &[String],
        actions: &[String],
    ) {
        let missing = |want: &[String], have: &[String]| -> Vec<String> {
            want.iter().filter(|w| !have.contains(w)).cloned().collect()
        };
        let record = held.record();
        let (removed, actions) = (
            missing(removed, &record.removed_subnets),
            missing(actions, &record.actions),
        );
        if removed.is_empty() && actions.is_empty() {
            return;
        }
        let what: Vec<String> = removed.iter().chain(&actions).cloned().collect();
        let journalled = match self.journal.widen(held, &removed, &actions).await {
            Ok(()) => "journalled now".to_owned(),
            Err(e) => format!("NOT journalled ({})", describe(&e)),
        };
        item.fail(Failure::internal(
            RecordFate::Kept,
            format!(
                "{} did [{}] without writing it ahead (a bug in azevac); {journalled}",
                item.resource_type,
                what.join(", ")
            ),
        ));
    }

    /// `--wait`: let every plugin wait for its changed resources, and fail the lines of those that
    /// did not settle in time.
    pub(super) async fn settle(&self, plan: &mut Plan, lines: &[usize], timeout: Duration) {
        for plugin in self.plugins {
            let changed: Vec<&Item> = lines
                .iter()
                .map(|&i| &plan.items[i])
                .filter(|i| i.status == Status::Done && i.resource_type == plugin.resource_type())
                .collect();
            if changed.is_empty() {
                continue;
            }
            let unsettled = match plugin.settle(&changed, timeout).await {
                Ok(unsettled) => unsettled,
                Err(e) => changed.iter().map(|i| (i.resource.clone(), describe(&e))).collect(),
            };
            for (id, why) in unsettled {
                for item in plan
                    .items
                    .iter_mut()
                    .filter(|i| i.resource == id && i.status == Status::Done)
                {
                    item.fail(Failure::new(Stage::Settle, RecordFate::Done, why.clone()));
                }
            }
        }
    }
}

/// What carrying a line out showed: its actions in the operator's words, and a problem that fails it
/// although it was done and journalled.
pub(super) fn shown(item: &mut Item, shown: Option<Vec<String>>, problem: Option<String>) {
    if let Some(shown) = shown {
        item.actions = Some(shown);
    }
    if let Some(problem) = problem {
        item.fail(Failure::new(Stage::Act, RecordFate::Done, problem));
    }
}

/// Bring the line up to date with how its journal writes ended.
pub(super) fn after_release(command: Command, item: &mut Item, result: Result<Released>) {
    match result {
        Ok(released) => {
            item.record = released.record;
            if released.repaired {
                item.notes.push(
                    "another run changed the journal record meanwhile; it was written back with what this run took"
                        .into(),
                );
            }
        }
        Err(e) if item.status == Status::Done => {
            let record = match command {
                Command::Evacuate => RecordFate::Intent,
                Command::Recover => RecordFate::Kept,
            };
            item.fail(Failure::new(Stage::JournalDone, record, describe(&e)));
        }
        // Nothing was changed, but the intent could not be rolled back (or the lock released): the
        // record claims more than was taken until a recover reads the live state. Not a success.
        Err(e) if item.status != Status::Failed => {
            item.fail(Failure::new(Stage::JournalDone, RecordFate::Stale, describe(&e)))
        }
        Err(e) => tracing::warn!(resource = %item.resource, error = %describe(&e), "journal not brought up to date"),
    }
}
