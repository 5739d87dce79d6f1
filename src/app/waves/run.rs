//! `recover --waves`: the plan carried out a wave at a time, as a careful deployment goes out. Before
//! each wave every alarm must be OK (waited for, up to `--wait-timeout`); each wave's lines go
//! through the engine as any recovery's do, and its capacity settles (`--wait`); then the wave
//! bakes while the alarms are watched. An alarm in ALARM stops the recovery: the waves not started
//! keep their records (a later recover puts them back), and with `--on-alarm evacuate` the last
//! wave is taken out of the zone again, journalled like any evacuation.
//!
//! The engine's stages hold across the waves: what lets capacity launch into the zone again (the
//! first stage) comes back with the first wave, the capacity in the waves asked for, and the
//! traffic (the last stage) only once every wave of capacity is back, in waves of its own.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use super::{Cut, Gates, Halt};
use crate::app::notify::Notifier;
use crate::app::{Context, Fanout};
use crate::aws::alarms::{self, Alarms};
use crate::engine::{self, Settings};
use crate::error::describe;
use crate::journal::Audit;
use crate::model::OnAlarm;
use crate::model::{Command, Item, Plan, Request, Status};

/// How often the alarms are read while a wave waits for them or bakes (and once more at the end of
/// each bake): CloudWatch evaluates a metric alarm once a period, a minute at the shortest for most.
const POLL: Duration = Duration::from_secs(10);
/// How often a wait looks at the interrupt between reads: Ctrl-C must not wait for the next read.
const TICK: Duration = Duration::from_millis(250);

/// How a recovery in waves ended.
pub struct Waved {
    /// The plan, every line as its wave left it (the waves not started: skipped, records kept).
    pub plan: Plan,
    /// Wall-clock phases of the first wave, for `--stats`.
    pub phases: crate::aws::stats::Phases,
    /// Why it stopped before the last wave, if it did (an interrupt is the interrupt's to say).
    pub halted: Option<Halt>,
}

/// How a wait (for the alarms, or a bake) ended when it did not end well.
enum Stop {
    /// Ctrl-C or SIGTERM: the interrupt says so, and nothing else is done.
    Interrupted,
    /// A reason to stop the recovery.
    Halted(Halt),
}

impl Stop {
    /// The recovery's reason to stop, if it is one (an interrupt is the interrupt's to say).
    fn halt(self) -> Option<Halt> {
        match self {
            Stop::Interrupted => None,
            Stop::Halted(halt) => Some(halt),
        }
    }
}

impl Context {
    /// Carry `prepared` out in `gates`' waves (see the module's documentation).
    pub async fn in_waves(
        &self,
        prepared: Fanout,
        gates: &Gates,
        audit: &Audit,
        settings: &Settings,
        notifier: &Notifier,
    ) -> Waved {
        let mut plan = prepared.plan.clone();
        let cut = Cut::of(&prepared, gates);
        let total = cut.waves.len();
        let timeline = crate::process::events::Timeline::start(&plan, audit, true);
        let wave_settings = Settings {
            run_events: false,
            ..settings.clone()
        };
        let mut phases = prepared.phases.clone();
        let mut halted = None;
        let mut last_wave: Vec<usize> = Vec::new();
        let mut started: BTreeSet<usize> = BTreeSet::new();
        for n in 0..total {
            let title = cut.title(n);
            if let Some(alarms) = &gates.alarms {
                if let Err(stop) = self.wait_until_ok(alarms, gates.wait_timeout, settings, &title).await {
                    halted = stop.halt();
                    break;
                }
            }
            if settings.interrupt.requested() {
                break;
            }
            let lines = cut.lines_of(n);
            let summary = super::summary(&cut.units, &cut.waves[n]);
            crate::say!(
                "azevac: {title}: putting back {} resource(s) ({summary})",
                cut.waves[n].len()
            );
            crate::process::events::note(
                "INFO",
                "wave_started",
                serde_json::json!({"run_id": audit.run_id, "wave": n + 1, "waves": total,
                                   "traffic": n >= cut.traffic_from,
                                   "resources": cut.waves[n].len(), "lines": lines.len()}),
            );
            started.extend(lines.iter().copied());
            let (part, order) = prepared.part(&lines);
            let (result, wave_phases) = part
                .carry_out_part(audit, &wave_settings, self.settings.account_concurrency)
                .await;
            if n == 0 {
                phases = wave_phases;
            }
            for (at, item) in order.into_iter().zip(result.items) {
                plan.items[at] = item;
            }
            timeline.seen(&plan);
            let count = |s: Status| lines.iter().filter(|&&i| plan.items[i].status == s).count();
            let (done, failed) = (count(Status::Done), count(Status::Failed));
            crate::process::events::note(
                if failed > 0 { "WARN" } else { "INFO" },
                "wave_done",
                serde_json::json!({"run_id": audit.run_id, "wave": n + 1, "waves": total,
                                   "done": done, "failed": failed, "bake_s": gates.bake.as_secs()}),
            );
            last_wave = lines;
            if settings.interrupt.requested() {
                break;
            }
            let what = format!("{title} done: {done} line(s) done, {failed} failed");
            if failed > 0 && n + 1 < total {
                halted = Some(Halt::Failed(format!(
                    "{title}: {failed} line(s) failed (see their reasons); the next wave would build on them"
                )));
                break;
            }
            crate::say!("azevac: {what}; baking {}", humantime::format_duration(gates.bake));
            notifier
                .publish(&crate::app::notify::wave(
                    &plan,
                    audit,
                    &format!("wave-{}", n + 1),
                    &what,
                    &[
                        format!("types: {summary}"),
                        format!("bake: {}", humantime::format_duration(gates.bake)),
                    ],
                ))
                .await;
            if let Err(stop) = self.bake(gates, settings).await {
                halted = stop.halt();
                break;
            }
        }
        let reason = match (&halted, settings.interrupt.requested()) {
            (Some(halt), _) => Some(format!(
                "not started: {halt}; journal record kept: run recover again once the zone is healthy"
            )),
            (None, true) => Some(settings.interrupt.reason()),
            (None, false) => None,
        };
        if let Some(reason) = reason {
            for (i, item) in plan.items.iter_mut().enumerate() {
                if item.status == Status::Planned && !started.contains(&i) {
                    item.skip(reason.clone());
                }
            }
        }
        if let Some(halt) = &halted {
            crate::say!("azevac: error: recovery stopped: {halt}");
            crate::process::events::note(
                "ERROR",
                "waves_stopped",
                serde_json::json!({"run_id": audit.run_id, "why": halt.to_string()}),
            );
            notifier
                .publish(&crate::app::notify::wave(
                    &plan,
                    audit,
                    "stopped",
                    &format!("recovery stopped: {halt}"),
                    &[],
                ))
                .await;
            if let (Halt::Alarm(why), OnAlarm::Evacuate) = (halt, gates.on_alarm) {
                let problems = self
                    .evacuate_again(&prepared, &plan, &last_wave, gates, audit, &wave_settings, why)
                    .await;
                plan.problems.extend(problems);
            }
        } else if prepared.everyone_reached() && !settings.interrupt.requested() {
            engine::sweep_dead_locks(&self.journal, &plan).await;
        }
        timeline.end(&plan);
        Waved { plan, phases, halted }
    }

    /// Wait until every alarm is OK, reading them every [`POLL`]; [`Halt::Waited`] names the ones
    /// still not OK when `timeout` ran out.
    async fn wait_until_ok(
        &self,
        alarms: &Alarms,
        timeout: Duration,
        settings: &Settings,
        title: &str,
    ) -> std::result::Result<(), Stop> {
        let deadline = Instant::now() + timeout;
        let mut said = String::new();
        loop {
            let holding = match alarms.read().await {
                Ok(readings) => {
                    let holding: Vec<String> = alarms::holding(&readings).into_iter().map(alarms::describe).collect();
                    if holding.is_empty() {
                        return Ok(());
                    }
                    holding.join(", ")
                }
                // Not knowing how the alarms stand is not knowing that the zone is healthy.
                Err(e) => format!(
                    "the alarms could not be read: {}",
                    crate::model::text::clean(&describe(&e))
                ),
            };
            if Instant::now() >= deadline {
                return Err(Stop::Halted(Halt::Waited(format!(
                    "before {title}, after waiting {}: {holding}",
                    humantime::format_duration(Duration::from_secs(timeout.as_secs()))
                ))));
            }
            if holding != said {
                crate::say!("azevac: {title} waits for the alarms to be OK (up to --wait-timeout): {holding}");
                said = holding;
            }
            if !pause(deadline.min(Instant::now() + POLL), settings).await {
                return Err(Stop::Interrupted);
            }
        }
    }

    /// Let a wave bake for `gates.bake`, reading the alarms every [`POLL`] and once at the end;
    /// [`Halt::Alarm`] names the alarms that went into ALARM (or were deleted).
    async fn bake(&self, gates: &Gates, settings: &Settings) -> std::result::Result<(), Stop> {
        let end = Instant::now() + gates.bake;
        loop {
            let at_end = Instant::now() >= end;
            if let Some(alarms) = &gates.alarms {
                match alarms.read().await {
                    Ok(readings) => {
                        let firing: Vec<String> = alarms::firing(&readings).into_iter().map(alarms::describe).collect();
                        if !firing.is_empty() {
                            return Err(Stop::Halted(Halt::Alarm(format!("alarm {}", firing.join(", ")))));
                        }
                    }
                    // At the end, not knowing how the alarms stand is not knowing that the wave is
                    // healthy: after the last wave no wait for the next would catch it.
                    Err(e) if at_end => {
                        return Err(Stop::Halted(Halt::Waited(format!(
                            "the alarms could not be read at the end of the bake: {}",
                            crate::model::text::clean(&describe(&e))
                        ))))
                    }
                    // The next read tells.
                    Err(e) => crate::say!(
                        "azevac: warning: could not read the alarms while baking: {}",
                        crate::model::text::clean(&describe(&e))
                    ),
                }
            }
            if at_end {
                return Ok(());
            }
            if !pause(end.min(Instant::now() + POLL), settings).await {
                return Err(Stop::Interrupted);
            }
        }
    }

    /// Take the resources of `wave` (lines of `plan` put back just before an alarm fired) out of
    /// their zone again: an evacuation of them alone, in the accounts they are in and through the
    /// same targets, with each kind's default options, journalled as any (the reason names the
    /// alarm). Returns problems: every resource of the wave that did not go out again is one.
    #[allow(clippy::too_many_arguments)]
    async fn evacuate_again(
        &self,
        prepared: &Fanout,
        plan: &Plan,
        wave: &[usize],
        gates: &Gates,
        audit: &Audit,
        settings: &Settings,
        why: &str,
    ) -> Vec<String> {
        let back: Vec<&Item> = wave
            .iter()
            .map(|&i| &plan.items[i])
            .filter(|i| i.status == Status::Done)
            .collect();
        let zones: BTreeSet<&str> = back.iter().map(|i| i.az_id.as_str()).collect();
        // CloudWatch's state reasons can be long: the journal's reason stays within what --reason may be.
        let reason: String = format!("recovery in waves stopped by {why}")
            .chars()
            .take(crate::engine::LONGEST_TEXT)
            .collect();
        let audit = Audit {
            reason: Some(reason.clone()),
            ..audit.clone()
        };
        let mut problems = Vec::new();
        for zone in zones {
            let here: Vec<&&Item> = back.iter().filter(|i| i.az_id == zone).collect();
            let resources: BTreeSet<(Option<&str>, &str, &str)> = here
                .iter()
                .map(|i| (i.account.as_deref(), i.resource_type.as_str(), i.resource.as_str()))
                .collect();
            let types: BTreeSet<String> = here.iter().map(|i| i.resource_type.clone()).collect();
            let accounts: BTreeSet<Option<String>> = here.iter().map(|i| i.account.clone()).collect();
            let types: Vec<String> = types.into_iter().collect();
            let request = Request {
                options: crate::plugins::asked_for(&types),
                types,
                kube_contexts: plan.request.kube_contexts.clone(),
                reason: Some(reason.clone()),
                fleet: plan.request.fleet.clone(),
                ..Request::default()
            };
            let shown = crate::model::text::clean(zone);
            crate::say!(
                "azevac: taking the last wave back out of {shown} ({} resource(s))",
                resources.len()
            );
            let evacuation = prepared
                .replan(
                    Command::Evacuate,
                    zone,
                    &request,
                    gates.kubeconfig.clone(),
                    &accounts,
                    self.settings.account_concurrency,
                )
                .await;
            problems.extend(evacuation.plan.problems.iter().cloned());
            let picked: Vec<usize> = (0..evacuation.plan.items.len())
                .filter(|&n| {
                    let i = &evacuation.plan.items[n];
                    i.changes_resource()
                        && resources.contains(&(i.account.as_deref(), i.resource_type.as_str(), i.resource.as_str()))
                })
                .collect();
            let (part, _) = evacuation.part(&picked);
            let (result, _) = part
                .carry_out_part(&audit, settings, self.settings.account_concurrency)
                .await;
            let out: BTreeSet<(Option<&str>, &str, &str)> = result
                .items
                .iter()
                .filter(|i| i.status == Status::Done)
                .map(|i| (i.account.as_deref(), i.resource_type.as_str(), i.resource.as_str()))
                .collect();
            crate::say!(
                "azevac: the last wave is out of {shown} again: {} resource(s) evacuated",
                out.len()
            );
            crate::process::events::note(
                if out.len() < resources.len() { "WARN" } else { "INFO" },
                "wave_evacuated",
                serde_json::json!({"run_id": audit.run_id, "az_id": zone, "evacuated": out.len(),
                                   "resources": resources.len()}),
            );
            let mut told = BTreeSet::new();
            for item in &here {
                let key = (
                    item.account.as_deref(),
                    item.resource_type.as_str(),
                    item.resource.as_str(),
                );
                if out.contains(&key) || !told.insert(key) {
                    continue;
                }
                let why = result
                    .items
                    .iter()
                    .chain(&evacuation.plan.items)
                    .find(|i| (i.account.as_deref(), i.resource_type.as_str(), i.resource.as_str()) == key)
                    .and_then(|i| i.reason.clone())
                    .unwrap_or_else(|| "the evacuation found nothing of it in the zone to take out".into());
                problems.push(format!(
                    "{} {} was not taken back out of {shown}: {why}",
                    item.resource_type, item.name
                ));
            }
        }
        problems
    }
}

/// Sleep until `until`, looking at the interrupt every [`TICK`]; false when interrupted.
async fn pause(until: Instant, settings: &Settings) -> bool {
    while Instant::now() < until {
        if settings.interrupt.requested() {
            return false;
        }
        tokio::time::sleep(TICK.min(until.saturating_duration_since(Instant::now()))).await;
    }
    !settings.interrupt.requested()
}
