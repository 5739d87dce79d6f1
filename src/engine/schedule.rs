//! Scheduling a stage: each resource type in its own pipeline, side by side, batches of a type
//! taking turns in plan order with `--concurrency` changes in flight, and the progress bar.

use std::collections::{BTreeMap, BTreeSet};
use std::io::IsTerminal;
use std::time::Instant;

use futures::StreamExt;

use super::line::{after_release, Line};
use super::{not_started, Run, STALE};
use crate::journal::batches;
use crate::model::{Command, Item, Plan, Status};

/// Batches of a type in flight: while one has its turn (reads its resources under the lock and
/// starts its changes), the other two take their locks ahead of it or release theirs behind it,
/// so the journal's transactions overlap the changes. With two, the changes waited for the next
/// batch's locks when the journal's transactions queued behind the other types' (1,000 mixed
/// resources at 50 ms a call, median of 3: 9.6 s; with three, 8.6 s; a fourth gained 0.2 s, within
/// the benchmark's noise, for a third more locks held at once). The turn passes on once the
/// batch's last change has started, so the next batch's read overlaps only the last changes in
/// flight, and the bucket never waits for a read.
pub(super) const BATCHES_IN_FLIGHT: usize = 3;

/// One resource type's pipeline: whose turn it is (batches take it in plan order, whichever's locks
/// come first) and its `--concurrency` slots, shared by its batches in flight.
pub(super) struct Pipeline {
    turn: tokio::sync::watch::Sender<usize>,
    slots: tokio::sync::Semaphore,
}

/// A batch's turn: passed on to the next batch once, when its last change has started or when the
/// batch ends however it ends (a turn never passed would stop the type).
pub(super) struct Turn<'a> {
    pipeline: &'a Pipeline,
    next: usize,
    passed: std::sync::atomic::AtomicBool,
}

impl<'a> Turn<'a> {
    /// Wait for batch `number`'s turn.
    pub(super) async fn take(pipeline: &'a Pipeline, number: usize) -> Turn<'a> {
        let mut turns = pipeline.turn.subscribe();
        // The sender lives in the pipeline, which outlives every batch: the wait cannot fail.
        let _ = turns.wait_for(|turn| *turn == number).await;
        Turn {
            pipeline,
            next: number + 1,
            passed: std::sync::atomic::AtomicBool::new(false),
        }
    }

    pub(super) fn pass(&self) {
        if !self.passed.swap(true, std::sync::atomic::Ordering::SeqCst) {
            self.pipeline.turn.send_replace(self.next);
        }
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        self.pass();
    }
}

impl Run<'_> {
    /// Carry out the planned lines among `lines`, [`crate::journal::batch_size`] at a time; a resource's lines stay in
    /// one batch, in plan order. Each resource type goes through its own batches, side by side with
    /// the others (each service has its own quota), with `--concurrency` changes in flight and up
    /// to [`BATCHES_IN_FLIGHT`] batches; `--concurrency 1` is one change at a time, in plan order.
    /// Each batch's done lines are read back before its release. Returns the resources whose change
    /// was made and confirmed.
    pub(super) async fn stage(&self, plan: &mut Plan, lines: &[usize]) -> BTreeSet<String> {
        let command = plan.command;
        let picked: Vec<usize> = lines
            .iter()
            .copied()
            .filter(|&i| plan.items[i].status == Status::Planned)
            .collect();
        let bar = progress_bar(self.settings.progress, picked.len());
        let serial = self.settings.concurrency <= 1;
        let mut parts: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for &i in &picked {
            let part = if serial {
                ""
            } else {
                plan.items[i].resource_type.as_str()
            };
            parts.entry(part).or_default().push(i);
        }
        let in_flight = BATCHES_IN_FLIGHT.min(self.settings.concurrency).max(1);
        let types: Vec<Pipeline> = parts
            .keys()
            .map(|_| Pipeline {
                turn: tokio::sync::watch::Sender::new(0),
                slots: tokio::sync::Semaphore::new(self.settings.concurrency.max(1)),
            })
            .collect();
        let bar = &bar;
        let pipelines = parts.values().zip(&types).map(|(part, pipeline)| {
            futures::stream::iter(batch_plans(plan, part).into_iter().enumerate())
                .map(move |(number, (indices, mut lines, local))| async move {
                    self.batch(&mut lines, command, local, bar, (pipeline, number)).await;
                    let lines: Vec<(usize, Item)> = indices.into_iter().zip(lines.items).collect();
                    lines
                })
                .buffer_unordered(in_flight)
                .boxed()
        });
        let mut ended = futures::stream::select_all(pipelines);
        let mut done = BTreeSet::new();
        while let Some(lines) = ended.next().await {
            let changed = lines.iter().filter(|(_, i)| i.status == Status::Done);
            done.extend(changed.map(|(_, i)| i.resource.clone()));
            for (i, item) in lines {
                plan.items[i] = item;
            }
            self.timeline.update(plan);
        }
        bar.finish_and_clear();
        done
    }

    /// One batch (the `number`th of its type): acquire; then, with the type's turn, read again and
    /// start the changes (passing the turn on when the last has started); once they end, read the
    /// done ones back, then release.
    pub(super) async fn batch(
        &self,
        plan: &mut Plan,
        command: Command,
        groups: Vec<Vec<usize>>,
        bar: &indicatif::ProgressBar,
        (pipeline, number): (&Pipeline, usize),
    ) {
        let indices: Vec<usize> = groups.iter().flatten().copied().collect();
        if self.settings.interrupt.requested() {
            not_started(plan, &indices, &self.settings.interrupt);
            // Passed on (dropped) at once: the batches behind it stop the same way.
            let _turn = Turn::take(pipeline, number).await;
            return;
        }
        let mut lines = self.acquire(plan, command, &indices).await;
        let turn = Turn::take(pipeline, number).await;
        // Interrupted meanwhile: no read (the acts below start nothing, and the locks go).
        if !self.settings.interrupt.requested() {
            self.refresh(plan, command, &mut lines).await;
        }
        let read_at = Instant::now();
        // Act: groups (resources) at once up to the concurrency, a resource's lines in order.
        let mut by_index: BTreeMap<usize, Line> = lines.into_iter().map(|l| (l.index, l)).collect();
        let work: Vec<Vec<(Item, Line)>> = groups
            .iter()
            .map(|g| {
                g.iter()
                    .filter_map(|i| by_index.remove(i).map(|l| (plan.items[*i].clone(), l)))
                    .collect()
            })
            .collect();
        let changing = |group: &[(Item, Line)]| {
            group
                .iter()
                .any(|(item, line)| line.held.is_some() && item.status == Status::Planned)
        };
        let unstarted = std::sync::atomic::AtomicUsize::new(work.iter().filter(|g| changing(g)).count());
        // The types of the lines started so far: each line's read may be as old as their changes take.
        let started: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
        let (unstarted, started, turn, changing) = (&unstarted, &started, &turn, &changing);
        let mut acted: Vec<(Item, Line)> = futures::stream::iter(work)
            .map(|group| async move {
                let mut fresh_for = STALE;
                // Nothing to change (skipped at acquire, failed at the read): no slot, no wait.
                let _slot = if changing(&group) {
                    // The bound on changes in flight, shared with the type's next batch once it has
                    // the turn (the semaphore is FIFO: this batch's groups go first).
                    let slot = pipeline.slots.acquire().await;
                    if let Ok(mut started) = started.lock() {
                        fresh_for = self.settings.read_age(started.iter().map(String::as_str));
                        started.extend(group.iter().map(|(item, _)| item.resource_type.clone()));
                    }
                    if unstarted.fetch_sub(1, std::sync::atomic::Ordering::SeqCst) == 1 {
                        turn.pass();
                    }
                    Some(slot)
                } else {
                    None
                };
                let out = self.act_resource(command, group, read_at, fresh_for).await;
                for (item, _) in &out {
                    bar.set_message(format!("{} {}", item.resource_type, item.name));
                    bar.inc(1);
                }
                out
            })
            .buffer_unordered(self.settings.concurrency)
            .flat_map(futures::stream::iter)
            .collect()
            .await;
        // Also when no group had anything to change (then none passed it).
        turn.pass();
        // Read back before the release: no record is marked done or deleted on trust.
        self.read_back(&mut acted).await;
        let mut releasing = Vec::new();
        let mut order = Vec::new();
        for (item, line) in acted {
            let index = line.index;
            plan.items[index] = item;
            if let Some(release) = line.release() {
                releasing.push(release);
                order.push(index);
            }
        }
        let released = self.journal.release(releasing, self.lease).await;
        for (index, result) in order.into_iter().zip(released) {
            after_release(command, &mut plan.items[index], result);
        }
    }
}

/// The batches of `lines` (indices into `plan`), a resource's lines in one batch: for each, the
/// lines' indices in `plan`, a plan of those lines alone (so that several batches can be in flight
/// and their lines go back into `plan` as each ends), and its groups (a resource's lines) as indices
/// into that plan.
pub(super) fn batch_plans(plan: &Plan, lines: &[usize]) -> Vec<(Vec<usize>, Plan, Vec<Vec<usize>>)> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut by_key: BTreeMap<&str, usize> = BTreeMap::new();
    for &i in lines {
        let g = *by_key.entry(plan.items[i].resource.as_str()).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[g].push(i);
    }
    let sizes: Vec<usize> = groups.iter().map(Vec::len).collect();
    batches(&sizes, crate::journal::batch_size())
        .into_iter()
        .map(|batch| {
            let indices: Vec<usize> = batch.iter().flat_map(|&g| groups[g].iter().copied()).collect();
            let mut next = 0;
            let local: Vec<Vec<usize>> = batch
                .iter()
                .map(|&g| {
                    let group: Vec<usize> = (next..next + groups[g].len()).collect();
                    next += groups[g].len();
                    group
                })
                .collect();
            let of_batch = Plan {
                command: plan.command,
                region: plan.region.clone(),
                az_id: plan.az_id.clone(),
                az_name: plan.az_name.clone(),
                request: plan.request.clone(),
                items: indices.iter().map(|&i| plan.items[i].clone()).collect(),
                problems: Vec::new(),
                stats: None,
            };
            (indices, of_batch, local)
        })
        .collect()
}

/// A progress bar on a terminal (unless `--no-progress`); hidden otherwise, where the result table
/// and the stderr lines say all there is.
pub(super) fn progress_bar(enabled: bool, len: usize) -> indicatif::ProgressBar {
    if !enabled || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(len as u64);
    let style =
        indicatif::ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {wide_msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
    bar.set_style(style);
    bar
}
