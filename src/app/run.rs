//! A run as a value: a plan prepared across its accounts and a schedule (at once, or in waves
//! behind alarms) in, a typed [`Outcome`] out (the plan as the run left it, what halted it, whether
//! a signal stopped it). The journal is made ready, the run is audited and the `--notify` topics
//! are told when it starts and ends; what the operator sees of the plan and its result goes
//! through a [`Screen`] the command hands in, so that the watcher's runs show exactly what an
//! operator's do.

use std::time::Duration;

use futures::future::LocalBoxFuture;

use super::waves::{Cut, Gates, Halt};
use super::{Context, Fanout};
use crate::aws::stats::Phases;
use crate::engine::Settings;
use crate::error::describe;
use crate::model::{Command, Plan, Request, Status};
use crate::{Error, Result};

/// Exit code: everything done.
pub const EXIT_OK: i32 = 0;
/// Exit code: some resources failed, or were left alone because another run holds them.
pub const EXIT_FAILED: i32 = 1;
/// Exit code: bad input or environment; nothing was changed.
pub const EXIT_BAD_INPUT: i32 = 2;

/// Where a run's plan and result are shown, and who is asked before anything changes: the
/// command's printer. The application layer decides when; the screen decides how.
pub trait Screen: Sync {
    /// Show `plan` as all there is: a dry run's, or one with nothing to change.
    fn alone<'a>(&'a self, ctx: &'a Context, plan: &'a Plan, dry_run: bool) -> LocalBoxFuture<'a, ()>;
    /// Show `plan` before it is carried out.
    fn ahead<'a>(&'a self, ctx: &'a Context, plan: &'a Plan) -> LocalBoxFuture<'a, ()>;
    /// Whether to go ahead with `plan` (`in_waves`: a recovery in waves).
    fn confirm(&self, ctx: &Context, plan: &Plan, in_waves: bool) -> Result<bool>;
    /// Show the plan as the run left it.
    fn result<'a>(&'a self, ctx: &'a Context, plan: &'a Plan) -> LocalBoxFuture<'a, ()>;
}

/// How a prepared plan is carried out.
#[derive(Clone, Copy)]
pub enum Schedule<'a> {
    /// Every line in the engine's stages, at once.
    AtOnce,
    /// A wave at a time behind alarms (`recover --waves`).
    Waves(&'a Gates),
}

/// What a run is asked to do besides its plan.
#[derive(Clone, Copy)]
pub struct Run<'a> {
    /// At once, or in waves.
    pub schedule: Schedule<'a>,
    /// `--wait`: how long changed resources may take to settle (`None`: no wait).
    pub wait: Option<Duration>,
    /// The `--notify` topics, told when the run starts and ends.
    pub notify: &'a [String],
    /// `--dry-run`: show the plan, change nothing.
    pub dry_run: bool,
}

/// How a run ended.
pub struct Outcome {
    /// The plan, every line as the run left it (as planned for a dry run or one not carried out).
    pub plan: Plan,
    /// Wall-clock phases, for `--stats`.
    pub phases: Phases,
    /// Why a recovery in waves stopped before its last wave.
    pub halted: Option<Halt>,
    /// The exit code of the signal that stopped the run (130 SIGINT, 143 SIGTERM), if one did.
    pub interrupted: Option<i32>,
    /// The operator declined: nothing changed.
    pub declined: bool,
}

impl Outcome {
    /// The plan, not carried out.
    fn shown(plan: Plan, phases: Phases, declined: bool) -> Outcome {
        Outcome {
            plan,
            phases,
            halted: None,
            interrupted: None,
            declined,
        }
    }

    /// The exit code the run ends with: a signal's, 1 when waves halted, else the plan's (0 when
    /// the operator declined).
    pub fn exit_code(&self) -> i32 {
        if self.declined {
            return EXIT_OK;
        }
        self.interrupted.unwrap_or(if self.halted.is_some() {
            EXIT_FAILED
        } else {
            exit_code(&self.plan)
        })
    }
}

/// Exit code for a finished plan: 1 when a line failed, was left alone for another live run, left a
/// record for the operator to decide on, or a journal item could not be read (reported, never acted
/// on, and not to be mistaken for success).
pub fn exit_code(plan: &Plan) -> i32 {
    let blocked = plan.items.iter().any(|i| i.blocked_by.is_some() || i.unfinished);
    if plan.count(Status::Failed) > 0 || blocked || !plan.problems.is_empty() {
        EXIT_FAILED
    } else {
        EXIT_OK
    }
}

/// An evacuation or recovery asked for: what to plan, and how to carry it out.
pub struct Order<'a> {
    /// The zone (evacuate: always; recover: `None` for every evacuated zone).
    pub az_id: Option<&'a str>,
    /// The plan's inputs.
    pub request: &'a Request,
    /// The kubeconfig for the Kubernetes kinds.
    pub kubeconfig: Option<std::path::PathBuf>,
    /// `--wait`.
    pub wait: bool,
    /// How long `--wait` waits (and each wave waits for its alarms).
    pub wait_timeout: Duration,
    /// The `--notify` topics.
    pub notify: &'a [String],
    /// `--dry-run`.
    pub dry_run: bool,
}

impl Context {
    /// Plan and carry out an evacuation of `order.az_id` (shown on `screen`).
    pub async fn evacuate(&self, screen: &dyn Screen, order: Order<'_>) -> Result<Outcome> {
        let prepared = self
            .prepare(Command::Evacuate, order.az_id, order.request, order.kubeconfig)
            .await?;
        let run = Run {
            schedule: Schedule::AtOnce,
            wait: order.wait.then_some(order.wait_timeout),
            notify: order.notify,
            dry_run: order.dry_run,
        };
        self.carry_out(screen, prepared, run).await
    }

    /// Plan and carry out a recovery, in waves when the request asks for them (shown on `screen`).
    pub async fn recover(&self, screen: &dyn Screen, order: Order<'_>) -> Result<Outcome> {
        let gates = Gates::of(self, order.request, order.wait_timeout, order.kubeconfig.clone())?;
        // Alarms that are not there are bad input: said before anything is planned.
        if let Some(gates) = &gates {
            gates.check("--alarm", "--alarm-prefix").await?;
        }
        let prepared = self
            .prepare(Command::Recover, order.az_id, order.request, order.kubeconfig)
            .await?;
        if let Some(gates) = &gates {
            Cut::of(&prepared, gates).say(gates);
        }
        // A wave bakes once its capacity is in service: a bake that starts while the instances and
        // tasks are still launching would watch alarms that cannot have seen them yet.
        let wait = order.wait || gates.is_some();
        let run = Run {
            schedule: gates.as_ref().map_or(Schedule::AtOnce, Schedule::Waves),
            wait: wait.then_some(order.wait_timeout),
            notify: order.notify,
            dry_run: order.dry_run,
        };
        self.carry_out(screen, prepared, run).await
    }

    /// Show the plan, ask, and carry it out as `run` says; a dry run (or a plan with nothing to
    /// change) is shown and not carried out.
    pub async fn carry_out(&self, screen: &dyn Screen, prepared: Fanout, run: Run<'_>) -> Result<Outcome> {
        let plan = &prepared.plan;
        let changes = plan.items.iter().filter(|i| i.changes_resource()).count();
        let nothing = match plan.command {
            Command::Evacuate => changes == 0,
            Command::Recover => plan.count(Status::Planned) == 0,
        };
        // Nothing to change is still a failure when a line failed at planning or a journal item
        // could not be read: the outcome's plan says so.
        if run.dry_run || nothing {
            let Fanout { mut plan, phases, .. } = prepared;
            self.attach_stats(&mut plan, &phases);
            screen.alone(self, &plan, run.dry_run).await;
            return Ok(Outcome::shown(plan, phases, false));
        }
        screen.ahead(self, plan).await;
        let in_waves = matches!(run.schedule, Schedule::Waves(_));
        if !screen.confirm(self, plan, in_waves)? {
            crate::say!("azevac: nothing changed");
            let Fanout { plan, phases, .. } = prepared;
            return Ok(Outcome::shown(plan, phases, true));
        }
        let mut outcome = self.run(prepared, run).await?;
        self.attach_stats(&mut outcome.plan, &outcome.phases);
        screen.result(self, &outcome.plan).await;
        Ok(outcome)
    }

    /// Carry `prepared` out as `run` says: the journal made ready, the run audited, the `--notify`
    /// topics told when it starts and ends. Prints nothing of the plan.
    pub async fn run(&self, prepared: Fanout, run: Run<'_>) -> Result<Outcome> {
        let plan = &prepared.plan;
        let journal_ready = async {
            if plan.command == Command::Evacuate {
                if self.journal.create().await? {
                    crate::say!("azevac: created journal table {}", self.journal.table());
                    // Protection must not hold up an evacuation: a failure is one warning line.
                    if let Err(e) = self.journal.protect().await {
                        crate::say!(
                            "azevac: warning: could not turn on point-in-time recovery for the journal: {}; \
                             run `azevac init` later",
                            crate::model::text::clean(&describe(&e))
                        );
                    }
                } else {
                    self.warn_if_unprotected().await;
                }
            }
            Ok::<(), Error>(())
        };
        // Side by side: the journal's check and the caller's identity are each a round trip
        // before the first change.
        let (journal_ready, audit) = tokio::join!(journal_ready, self.audit(plan.request.reason.clone()));
        journal_ready?;
        let settings = Settings {
            concurrency: self.settings.concurrency,
            progress: self.settings.progress,
            lease: self.settings.lease,
            wait: run.wait,
            paced: crate::plugins::paced_rates(&self.settings.pacing),
            in_flight: self.settings.operation_timeout,
            interrupt: self
                .interrupt
                .clone()
                .unwrap_or_else(crate::process::interrupt::Interrupt::listen),
            run_events: true,
        };
        let notifier = super::notify::Notifier::new(&self.sdk, run.notify);
        let started = std::time::Instant::now();
        // The start message goes out first but never holds the first change back: a slow or
        // unreachable SNS endpoint costs the evacuation nothing.
        let start = super::notify::started(plan, &audit);
        let carried = async {
            match run.schedule {
                Schedule::AtOnce => {
                    let (plan, phases) = prepared
                        .carry_out(&self.journal, &audit, &settings, self.settings.account_concurrency)
                        .await;
                    (plan, phases, None)
                }
                Schedule::Waves(gates) => {
                    let waved = self.in_waves(prepared, gates, &audit, &settings, &notifier).await;
                    (waved.plan, waved.phases, waved.halted)
                }
            }
        };
        let (_, (plan, phases, halted)) = tokio::join!(notifier.publish(&start), carried);
        notifier
            .publish(&super::notify::ended(&plan, &audit, started.elapsed()))
            .await;
        Ok(Outcome {
            plan,
            phases,
            halted,
            interrupted: settings.interrupt.exit_code(),
            declined: false,
        })
    }

    /// One warning line when the journal lacks deletion protection or point-in-time recovery; a
    /// check that fails is a warning too, never a reason to stop an evacuation.
    async fn warn_if_unprotected(&self) {
        match self.journal.protection().await {
            Ok(protection) => {
                if let Some(warning) = protection.warning(self.journal.table()) {
                    crate::say!("azevac: warning: {warning}");
                }
            }
            Err(e) => crate::say!(
                "azevac: warning: could not check the journal's protection: {}",
                crate::model::text::clean(&describe(&e))
            ),
        }
    }

    /// With `--stats`: attach the counts and times to the plan and say them on stderr.
    fn attach_stats(&self, plan: &mut Plan, phases: &Phases) {
        if self.settings.stats {
            let stats = phases.stats();
            crate::say!("{}", stats.render().trim_end());
            plan.stats = Some(stats);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(plan: Plan) -> Outcome {
        Outcome::shown(plan, Phases::start(), false)
    }

    /// The exit codes a run ended with before runs were values: a signal's over everything, 1 for
    /// waves that halted, the plan's otherwise, and 0 when the operator said no.
    #[test]
    fn an_outcome_exits_as_the_command_did() {
        let mut failed = Plan::empty(Command::Recover);
        failed.problems.push("account 1: not reached".into());
        assert_eq!(outcome(Plan::empty(Command::Recover)).exit_code(), EXIT_OK);
        assert_eq!(outcome(failed.clone()).exit_code(), EXIT_FAILED);
        let halted = Outcome {
            halted: Some(Halt::Alarm("alarm a".into())),
            ..outcome(Plan::empty(Command::Recover))
        };
        assert_eq!(halted.exit_code(), EXIT_FAILED);
        let interrupted = Outcome {
            interrupted: Some(143),
            halted: Some(Halt::Alarm("alarm a".into())),
            ..outcome(failed.clone())
        };
        assert_eq!(interrupted.exit_code(), 143);
        assert_eq!(Outcome::shown(failed, Phases::start(), true).exit_code(), EXIT_OK);
    }
}
