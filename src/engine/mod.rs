//! The one flow every kind of zonal action goes through, for evacuate and recover alike:
//!
//! plan (every plugin, before anything changes) → per stage, per batch: acquire (locks + intent,
//! one transaction) → read again and compute each change from the live state → act (bounded
//! concurrency; a resource's lines in order) → read back (until the change shows, bounded) →
//! release (done mark or delete + unlock, one transaction) → settle (`--wait`).
//!
//! A plugin can only change a resource through a [`Guard`] of a [`Held`], which only [`Journal::acquire`] makes:
//! the write-ahead is enforced by the types, not by the order of calls in a command.
//!
//! The jobs are split by file: [`prepare`] (discover and plan), [`validate`] (the request's
//! checks), [`schedule`] (stages, per-type pipelines, batches, turns), [`line`] (one line
//! through the journal protocol: acquire, read again, act, release) and [`readback`] (the
//! read-back between act and release).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::aws::stats::Phases;
use crate::error::describe;
use crate::journal::{Audit, Journal, Lease};
use crate::model::{Command, Failure, Item, Plan, RecordFate, Status};
use crate::plugins::{Plugin, Stage};
use crate::process::interrupt::Interrupt;

mod line;
mod prepare;
mod readback;
mod schedule;
mod validate;

pub use prepare::prepare;
pub use readback::READ_BACK_ENV;
pub use validate::{known_types, validate, LONGEST_TEXT};

/// How old a batch's read under the lock may be when a line's turn to change comes, beyond the time
/// the changes started before it take at their services' paced rates ([`Settings::read_age`]);
/// older, and the line's resource is read again alone (a change is never computed from a stale read).
pub(super) const STALE: Duration = Duration::from_secs(5);
/// The most that pacing adds to [`STALE`]: a very low `--max-rate` must not make an old read fresh.
const PACED_AT_MOST: Duration = Duration::from_secs(25);
/// The order of a run's stages: what goes before capacity (evacuate: traffic away; recover: what
/// lets capacity launch again), capacity, and what waits for capacity (recover: traffic back).
/// A recovery in waves keeps the same order across its waves.
pub const STAGES: [Stage; 3] = [Stage::First, Stage::Capacity, Stage::Last];

/// How a run carries its plan out.
#[derive(Debug, Clone)]
pub struct Settings {
    /// How many resources change at once.
    pub concurrency: usize,
    /// Progress bars on a terminal.
    pub progress: bool,
    /// How long a lock is held between renewals.
    pub lease: Duration,
    /// `--wait`: how long to wait for changed resources to settle (`None`: do not wait).
    pub wait: Option<Duration>,
    /// Per resource type, the rate its changes are paced to (`--max-rate` and the defaults; see
    /// [`plugins::paced_rates`]); a type not listed is not paced.
    pub paced: BTreeMap<String, f64>,
    /// The longest one call may take (`--operation-timeout`): how long after its lease a call of
    /// this run may still land, which the locks tell other runs.
    pub in_flight: Duration,
    /// Ctrl-C / SIGTERM: start no more changes, let those in flight finish.
    pub interrupt: Interrupt,
    /// Emit the run's own start and end events (`run_started`, `run_ended`); false for one wave
    /// of a recovery in waves, whose run emits them once.
    pub run_events: bool,
}

impl Settings {
    /// How old a batch's read may be when a line changes after these lines (of these types) have
    /// started: [`STALE`], plus the time their changes take at their types' paced rates, at most
    /// [`PACED_AT_MOST`]. The 50th line of a batch behind a bucket of 10/s starts 5 s after the first
    /// by design; reading it again alone would put one more call on that bucket.
    pub fn read_age<'a>(&self, started_before: impl IntoIterator<Item = &'a str>) -> Duration {
        let paced: f64 = started_before
            .into_iter()
            .filter_map(|t| self.paced.get(t))
            .filter(|rate| **rate > 0.0)
            .map(|rate| 1.0 / rate)
            .sum();
        STALE + Duration::from_secs_f64(paced).min(PACED_AT_MOST)
    }
}

/// A plan ready to be carried out, with the plugins it was made with.
pub struct Prepared {
    /// The plan.
    pub plan: Plan,
    /// Wall-clock phases so far, for `--stats`.
    pub phases: Phases,
    plugins: Arc<[Box<dyn Plugin>]>,
}

impl Prepared {
    /// A plan made elsewhere, with the plugins that carry it out (the engine's own tests drive it
    /// with a fake plugin this way).
    pub fn new(plan: Plan, plugins: Vec<Box<dyn Plugin>>) -> Prepared {
        Prepared {
            plan,
            phases: Phases::start(),
            plugins: plugins.into(),
        }
    }

    /// The lines at `picked` (indices into the plan, in that order) as a plan of their own, carried
    /// out by the same plugins: a recovery in waves carries its plan out a part at a time.
    pub fn part(&self, picked: &[usize]) -> Prepared {
        let mut plan = self.plan.clone();
        plan.items = picked.iter().map(|&i| self.plan.items[i].clone()).collect();
        Prepared {
            plan,
            phases: self.phases.clone(),
            plugins: Arc::clone(&self.plugins),
        }
    }

    /// The lines of `stage`, by index in the plan (recover: the first stage lets capacity launch
    /// into the zone again, the last one brings traffic back once capacity is back).
    pub fn in_stage(&self, stage: Stage) -> Vec<usize> {
        let command = self.plan.command;
        (0..self.plan.items.len())
            .filter(|&i| {
                let item = &self.plan.items[i];
                self.plugins
                    .iter()
                    .find(|p| p.resource_type() == item.resource_type)
                    .is_some_and(|p| p.stage(command, item) == stage)
            })
            .collect()
    }

    /// Carry the plan out, exactly: stage by stage (traffic, capacity, traffic again), each line
    /// through the journal protocol; then read back and settle. Returns the plan with every line's
    /// outcome.
    pub async fn carry_out(mut self, journal: &Journal, audit: &Audit, settings: &Settings) -> (Plan, Phases) {
        let lease = Lease::new(audit, settings.lease, settings.in_flight);
        let heartbeat = journal.heartbeat(lease.clone());
        let command = self.plan.command;
        let timeline = crate::process::events::Timeline::start(&self.plan, audit, settings.run_events);
        // What every read under the lock is told of the run (the plan itself is being changed).
        let request = self.plan.request.clone();
        let zone = self.plan.az_id.clone().map(|id| crate::model::topology::Zone {
            id,
            name: self.plan.az_name.clone().unwrap_or_default(),
        });
        let run = Run {
            journal,
            audit,
            lease: &lease,
            plugins: &self.plugins,
            settings,
            timeline: &timeline,
            request: &request,
            zone: zone.as_ref(),
        };
        for stage in STAGES {
            let in_stage = |plan: &Plan| -> Vec<usize> {
                (0..plan.items.len())
                    .filter(|&i| run.stage_of(command, &plan.items[i]) == Some(stage))
                    .collect()
            };
            let lines = in_stage(&self.plan);
            if lines.is_empty() {
                continue;
            }
            if settings.interrupt.requested() {
                not_started(&mut self.plan, &lines, &settings.interrupt);
                continue;
            }
            // A type that could not be planned (a problem) leaves its records, and so its capacity,
            // out of the zone just as a failed line does.
            let capacity_short = (settings.wait.is_some() && self.plan.count(Status::Failed) > 0)
                || (command == Command::Recover && !self.plan.problems.is_empty());
            if stage == Stage::Last && capacity_short {
                // Capacity did not come back everywhere: keep the traffic away until it has.
                for &i in &lines {
                    let item = &mut self.plan.items[i];
                    if item.status == Status::Planned {
                        item.fail(Failure::new(
                            crate::model::Stage::HeldBack,
                            RecordFate::Kept,
                            "capacity did not come back into the zone (see the failed lines and problems)",
                        ));
                    }
                }
                continue;
            }
            // Read back inside: each batch before its release.
            let done = run.stage(&mut self.plan, &lines).await;
            if stage == Stage::First {
                crate::model::plan::hold_back(&mut self.plan, &done);
            }
            if stage == Stage::Capacity {
                self.phases.end("apply (with journal writes)");
                if let Some(timeout) = settings.wait.filter(|_| !settings.interrupt.requested()) {
                    run.settle(&mut self.plan, &lines, timeout).await;
                    self.phases.end("wait");
                }
            }
        }
        drop(heartbeat);
        if let Some(quiet) = lease.quiet_after() {
            // A change given up in flight may still land until then; gone sooner, this process's
            // locks would be taken over at once by the next run on this host, which would trust a
            // read that change can still overtake.
            let wait = quiet.saturating_duration_since(Instant::now());
            if !wait.is_zero() {
                crate::say!(
                    "azevac: a change given up in flight may still land: waiting {}s before exiting, so that no \
                     other run trusts a read before then (interrupt again to stop now)",
                    wait.as_secs()
                );
                tokio::time::sleep(wait).await;
            }
        }
        self.phases.end("verify");
        timeline.end(&self.plan);
        (self.plan, self.phases)
    }
}

/// Mark the planned lines among `lines` as not started because the run was interrupted.
pub(super) fn not_started(plan: &mut Plan, lines: &[usize], interrupt: &Interrupt) {
    for &i in lines {
        let item = &mut plan.items[i];
        if item.status == Status::Planned {
            item.status = Status::Skipped;
            item.reason = Some(interrupt.reason());
        }
    }
}

/// After a recovery of everything (every zone, every type, every account: it knows every record),
/// remove the locks of dead runs that protect no record. Run once, after every account's part: an
/// account's part alone knows only its own records.
pub async fn sweep_dead_locks(journal: &Journal, plan: &Plan) {
    let everything = plan.command == Command::Recover
        && plan.az_id.is_none()
        && plan.request.types.is_empty()
        && plan.request.fleet.is_empty();
    if !everything {
        return;
    }
    let keep: BTreeSet<String> = plan
        .items
        .iter()
        .filter(|i| i.record.is_some())
        .map(|i| i.resource.clone())
        .collect();
    match journal.sweep_locks(&keep).await {
        Ok(0) => {}
        Ok(n) => crate::say!("azevac: removed {n} lock(s) left by runs that died"),
        Err(e) => tracing::warn!(error = %describe(&e), "stale locks not swept"),
    }
}

/// What one run's stages share.
pub(super) struct Run<'a> {
    journal: &'a Journal,
    audit: &'a Audit,
    lease: &'a Arc<Lease>,
    plugins: &'a [Box<dyn Plugin>],
    settings: &'a Settings,
    /// `--log-format json`: the run's events, emitted as lines reach their status.
    timeline: &'a crate::process::events::Timeline,
    /// What the operator asked for, as planned.
    request: &'a crate::model::Request,
    /// The zone (evacuate always; recover with `--az-id`).
    zone: Option<&'a crate::model::topology::Zone>,
}

impl Run<'_> {
    pub(super) fn plugin(&self, resource_type: &str) -> Option<&dyn Plugin> {
        self.plugins
            .iter()
            .find(|p| p.resource_type() == resource_type)
            .map(|p| p.as_ref())
    }

    /// The stage of a line, if its plugin is in this run.
    pub(super) fn stage_of(&self, command: Command, item: &Item) -> Option<Stage> {
        Some(self.plugin(&item.resource_type)?.stage(command, item))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins;

    fn settings(paced: &[(&str, f64)]) -> Settings {
        Settings {
            concurrency: 16,
            progress: false,
            lease: Duration::from_secs(60),
            wait: None,
            paced: paced.iter().map(|(t, r)| (t.to_string(), *r)).collect(),
            in_flight: Duration::from_secs(180),
            interrupt: Interrupt::default(),
            run_events: true,
        }
    }

    /// A read is fresh for 5 s plus the time the changes started before the line take at their
    /// paced rates: after 50 Auto Scaling lines at 10/s 5 s more, after 15 Lambda ones at 15/s one
    /// more; an unpaced type adds nothing, and pacing adds at most 25 s.
    #[test]
    fn a_paced_batch_keeps_its_read_for_the_changes_before_each_line() {
        let paced = settings(&[("asg", 10.0), ("lambda", 15.0)]);
        assert_eq!(paced.read_age(["asg"; 50]), Duration::from_secs(10));
        assert_eq!(paced.read_age([]), STALE);
        assert_eq!(paced.read_age(["ecs"; 50]), STALE);
        let mixed = paced.read_age(["lambda"; 15].into_iter().chain(["ecs"; 10]));
        assert!((mixed.as_secs_f64() - 6.0).abs() < 1e-9, "{mixed:?}");
        assert_eq!(settings(&[("asg", 0.0)]).read_age(["asg"; 50]), STALE);
        assert_eq!(settings(&[("asg", 0.1)]).read_age(["asg"; 50]), STALE + PACED_AT_MOST);
    }

    /// The services a type changes through are among those its IAM actions are listed under (the
    /// policy's drift test covers those).
    #[test]
    fn every_type_changes_through_services_it_is_authorized_for() {
        for registration in plugins::REGISTRY {
            for service in registration.changes_through {
                assert!(
                    registration.services.contains(service),
                    "{}: {service}",
                    registration.name
                );
            }
        }
    }

    /// A type is paced by the service its changes go through (Auto Scaling's reads of load
    /// balancers do not count), of several the fastest; a type with an unpaced one is not paced.
    #[test]
    fn each_type_is_paced_by_the_service_it_changes_through() {
        let rate = |per_second| Some(crate::aws::pacing::Rate { per_second, burst: 20 });
        let limits = crate::aws::pacing::Limits::default().with_overrides(&[
            ("autoscaling".to_owned(), rate(10.0)),
            ("elasticloadbalancing".to_owned(), rate(1.0)),
            ("rds".to_owned(), rate(2.0)),
        ]);
        let rates = plugins::paced_rates(&limits);
        assert_eq!(rates.get("asg"), Some(&10.0));
        assert_eq!(rates.get("lambda"), Some(&15.0));
        assert_eq!(rates.get("nat"), Some(&20.0));
        assert_eq!(rates.get("db"), None, "ElastiCache is not paced");
        assert_eq!(rates.get("ecs"), None);
        assert_eq!(rates.get("eks"), None);
        let both = limits.with_overrides(&[("elasticache".to_owned(), rate(4.0))]);
        assert_eq!(plugins::paced_rates(&both).get("db"), Some(&4.0));
    }
}
