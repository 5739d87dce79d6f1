//! Read-back, a step of the protocol between the act and the release: a line's record is marked
//! done or deleted only once its resource, read again, is as the line says it should be (the
//! finalizer's rule: the marker goes once the cleanup is confirmed). AWS's control planes are
//! eventually consistent ("Eventual consistency in the Amazon EC2 API", and the same of Auto
//! Scaling, ECS and the others): a read right after a write may answer with the state from before
//! it. So a read-back that does not confirm is tried again, as AWS's own waiters poll, until it
//! does or its bound runs out; only then does the line fail, its record kept.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use backon::BackoffBuilder;

use super::line::Line;
use super::Run;
use crate::model::{Failure, Item, Status};

/// How long a read-back waits for a change to show, at most: AWS documents eventual consistency
/// in seconds ("typically a few seconds; in rare cases, longer"); a minute bounds it the way a
/// published waiter bounds its polls.
pub(super) const READ_BACK_WAIT: Duration = Duration::from_secs(60);
/// The first pause before a read-back is tried again (then doubling, at most [`READ_BACK_STEP`]).
const FIRST_PAUSE: Duration = Duration::from_millis(250);
/// The longest pause between two tries.
const READ_BACK_STEP: Duration = Duration::from_secs(8);
/// Seconds a read-back may wait, in place of [`READ_BACK_WAIT`]: the tests' way to see a read-back
/// that never confirms end in seconds.
pub const READ_BACK_ENV: &str = "AZEVAC_READ_BACK_WAIT";

/// The bound on one batch's read-back.
fn read_back_wait() -> Duration {
    std::env::var(READ_BACK_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(READ_BACK_WAIT, |s| Duration::from_secs(s.min(READ_BACK_WAIT.as_secs())))
}

impl Run<'_> {
    /// Read back the lines of one batch that are done, before any of them is released: each
    /// plugin's lines together (one batched read a try), the resources not yet confirmed tried
    /// again until they are or the bound runs out. A line whose change is never confirmed fails,
    /// and its release can no longer forget the change ([`crate::journal::Release::unconfirmed`]).
    pub(super) async fn read_back(&self, lines: &mut [(Item, Line)]) {
        // What the verification compares with: the record as the release will leave it (a zonal
        // shift's names the shift started). Only while verifying: the release says what it left.
        let planned: Vec<_> = lines
            .iter_mut()
            .map(|(item, line)| match (item.status, line.release.as_ref()) {
                (Status::Done, Some(release)) => Some(std::mem::replace(&mut item.record, release.record_after())),
                _ => None,
            })
            .collect();
        let wait = read_back_wait();
        for plugin in self.plugins {
            let mine: Vec<usize> = (0..lines.len())
                .filter(|&n| lines[n].0.status == Status::Done && lines[n].0.resource_type == plugin.resource_type())
                .collect();
            if !mine.is_empty() {
                self.confirm(plugin.as_ref(), lines, mine, wait).await;
            }
        }
        for ((item, _), record) in lines.iter_mut().zip(planned) {
            if let Some(record) = record {
                item.record = record;
            }
        }
    }

    /// Verify `pending` (indices into `lines`, all of one plugin) until every resource is confirmed
    /// or `wait` has passed; write each line's final verdict back.
    async fn confirm(
        &self,
        plugin: &dyn crate::plugins::Plugin,
        lines: &mut [(Item, Line)],
        pending: Vec<usize>,
        wait: Duration,
    ) {
        let started = Instant::now();
        let mut pauses = backon::ExponentialBuilder::default()
            .with_min_delay(FIRST_PAUSE)
            .with_max_delay(READ_BACK_STEP)
            .without_max_times()
            .build();
        let mut pending = pending;
        loop {
            let mut trial: Vec<Item> = pending.iter().map(|&n| lines[n].0.clone()).collect();
            {
                let mut refs: Vec<&mut Item> = trial.iter_mut().collect();
                plugin.verify(&mut refs).await;
            }
            // A resource is tried again whole: its last line says what it should look like.
            let unconfirmed: BTreeSet<String> = trial
                .iter()
                .filter(|t| t.status == Status::Failed)
                .map(|t| t.resource.clone())
                .collect();
            let pause = pauses
                .next()
                .filter(|_| !unconfirmed.is_empty() && !self.settings.interrupt.requested())
                .filter(|pause| started.elapsed() + *pause <= wait);
            let Some(pause) = pause else {
                let waited = started.elapsed();
                for (n, mut item) in pending.into_iter().zip(trial) {
                    // A resource is one unit: every line of one not confirmed keeps its record.
                    if unconfirmed.contains(&item.resource) && item.status == Status::Done {
                        item.fail(Failure::read_back(
                            "read back did not confirm its resource's change (see its other line)",
                        ));
                    }
                    settle_line(&mut lines[n], item, waited);
                }
                return;
            };
            let mut still = Vec::new();
            for (n, item) in pending.into_iter().zip(trial) {
                if unconfirmed.contains(&item.resource) {
                    still.push(n);
                } else {
                    settle_line(&mut lines[n], item, started.elapsed());
                }
            }
            pending = still;
            tracing::info!(
                resources = unconfirmed.len(),
                ?pause,
                "read-back does not show the change yet (eventual consistency); reading again"
            );
            tokio::time::sleep(pause).await;
        }
    }
}

/// A line as its read-back left it: confirmed, or failed with its release made unable to forget
/// the change.
fn settle_line((item, line): &mut (Item, Line), verified: Item, waited: Duration) {
    let unconfirmed = item.status == Status::Done && verified.status == Status::Failed;
    *item = verified;
    if unconfirmed {
        if let Some(failure) = item.failure.as_mut() {
            if waited >= Duration::from_secs(1) {
                failure.read_back_secs = Some(waited.as_secs());
                item.reason = Some(failure.to_string());
            }
        }
        line.release = line.release.take().map(crate::journal::Release::unconfirmed);
    }
}
