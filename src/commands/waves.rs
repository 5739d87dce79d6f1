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

use super::{Context, Fanout};
use crate::app::notify::Notifier;
use crate::app::waves::{Mark, Unit};
use crate::aws::alarms::{self, Alarms};
use crate::engine::{self, Settings};
use crate::journal::Audit;
use crate::model::OnAlarm;
use crate::model::{Command, Item, Plan, Request, Status};
use crate::plugins::Stage;
use crate::{Error, Result};

/// How often the alarms are read while a wave waits for them or bakes (and once more at the end of
/// each bake): CloudWatch evaluates a metric alarm once a period, a minute at the shortest for most.
const POLL: Duration = Duration::from_secs(10);
/// How often a wait looks at the interrupt between reads: Ctrl-C must not wait for the next read.
const TICK: Duration = Duration::from_millis(250);

/// What a recovery in waves is gated on, from the command line.
pub struct Gates {
    waves: crate::app::waves::Waves,
    bake: Duration,
    alarms: Option<Alarms>,
    on_alarm: OnAlarm,
    wait_timeout: Duration,
    first: Vec<(String, String)>,
    last: Vec<(String, String)>,
    kubeconfig: Option<std::path::PathBuf>,
}

impl Gates {
    /// The gates of a recovery's request (`None` without `--waves`): `recover`'s flags, or a saved
    /// plan's. Each wave waits for its alarms up to `wait_timeout`.
    pub fn of(
        ctx: &Context,
        request: &Request,
        wait_timeout: Duration,
        kubeconfig: Option<std::path::PathBuf>,
    ) -> Result<Option<Gates>> {
        let Some(asked) = &request.waves else {
            return Ok(None);
        };
        let bad = |why: String| Error::BadInput(format!("the waves: {why}"));
        let tags = |tags: &[String]| -> Result<Vec<(String, String)>> {
            tags.iter()
                .map(|tag| crate::model::parse_tag(tag).map_err(bad))
                .collect()
        };
        Ok(Some(Gates {
            waves: asked.steps.parse().map_err(bad)?,
            bake: Duration::from_secs(asked.bake_seconds),
            alarms: Alarms::new(&ctx.sdk, &asked.alarms, &asked.alarm_prefixes),
            on_alarm: asked.on_alarm,
            wait_timeout,
            first: tags(&asked.first_tags)?,
            last: tags(&asked.last_tags)?,
            kubeconfig,
        }))
    }

    /// Check the alarms before anything is planned or changed: each named one exists, each prefix
    /// names one (else bad input naming where they were given). Says how they stand.
    pub async fn check(&self, names_given: &str, prefixes_given: &str) -> Result<()> {
        let Some(alarms) = &self.alarms else {
            return Ok(());
        };
        let readings = alarms.check_as(names_given, prefixes_given).await?;
        let listed: Vec<String> = readings.iter().map(alarms::describe).collect();
        crate::say!(
            "azevac: waves gated on {} alarm(s): {}",
            readings.len(),
            listed.join(", ")
        );
        Ok(())
    }
}

/// A plan cut into waves: the resources to put back and which lines are each one's.
pub struct Cut {
    units: Vec<Unit>,
    names: Vec<String>,
    lines: Vec<Vec<usize>>,
    waves: Vec<Vec<usize>>,
    /// The waves that bring traffic back (after every wave of capacity).
    traffic_from: usize,
}

impl Cut {
    /// Cut `fanout`'s planned lines into `gates`' waves, a resource's lines always together: the
    /// first stage's resources join the first wave, the capacity is cut into the waves asked for,
    /// and the last stage's (traffic) into waves of their own after it, cut the same way.
    pub fn of(fanout: &Fanout, gates: &Gates) -> Cut {
        let plan = &fanout.plan;
        let (first, last) = (fanout.in_stage(Stage::First), fanout.in_stage(Stage::Last));
        // A resource's index among the units: a plan of many thousand lines is cut in one pass.
        let mut keys: std::collections::HashMap<(Option<&str>, &str, &str), usize> = Default::default();
        let mut cut = Cut {
            units: Vec::new(),
            names: Vec::new(),
            lines: Vec::new(),
            waves: Vec::new(),
            traffic_from: 0,
        };
        for (i, item) in plan.items.iter().enumerate() {
            if item.status != Status::Planned {
                continue;
            }
            let key = (
                item.account.as_deref(),
                item.resource_type.as_str(),
                item.resource.as_str(),
            );
            if let Some(&at) = keys.get(&key) {
                cut.lines[at].push(i);
                continue;
            }
            keys.insert(key, cut.units.len());
            cut.units.push(unit(item, gates));
            cut.names.push(item.name.clone());
            cut.lines.push(vec![i]);
        }
        let stage_of = |u: usize| {
            let lines = &cut.lines[u];
            if lines.iter().any(|i| last.contains(i)) {
                Stage::Last
            } else if lines.iter().any(|i| first.contains(i)) {
                Stage::First
            } else {
                Stage::Capacity
            }
        };
        let in_stage =
            |stage: Stage| -> Vec<usize> { (0..cut.units.len()).filter(|&u| stage_of(u) == stage).collect() };
        let (opening, capacity, traffic) = (in_stage(Stage::First), in_stage(Stage::Capacity), in_stage(Stage::Last));
        let mut waves = cut_into(&cut.units, &capacity, &gates.waves);
        if !opening.is_empty() {
            match waves.first_mut() {
                Some(wave) => {
                    wave.splice(0..0, opening);
                }
                None => waves.push(opening),
            }
        }
        cut.traffic_from = waves.len();
        waves.extend(cut_into(&cut.units, &traffic, &gates.waves));
        cut.waves = waves;
        cut
    }

    /// The plan's lines in wave `n`, in plan order.
    fn lines_of(&self, n: usize) -> Vec<usize> {
        let mut lines: Vec<usize> = self.waves[n].iter().flat_map(|&u| self.lines[u].clone()).collect();
        lines.sort_unstable();
        lines
    }

    /// `wave N/M` (with `(traffic)` for the waves that bring traffic back).
    fn title(&self, n: usize) -> String {
        let traffic = if n >= self.traffic_from { " (traffic)" } else { "" };
        format!("wave {}/{}{traffic}", n + 1, self.waves.len())
    }

    /// One line per wave for the operator: its size, types and first names.
    pub fn say(&self, gates: &Gates) {
        const NAMES: usize = 5;
        for (n, wave) in self.waves.iter().enumerate() {
            let mut names: Vec<String> = wave
                .iter()
                .take(NAMES)
                .map(|&u| crate::model::text::clean(&self.names[u]))
                .collect();
            if wave.len() > NAMES {
                names.push(format!("and {} more", wave.len() - NAMES));
            }
            crate::say!(
                "azevac: {}: {} resource(s) ({}): {}",
                self.title(n),
                wave.len(),
                crate::app::waves::summary(&self.units, wave),
                names.join(", ")
            );
        }
        if !self.waves.is_empty() {
            crate::say!(
                "azevac: each wave settles and bakes {} before the next{}",
                humantime::format_duration(gates.bake),
                match gates.on_alarm {
                    OnAlarm::Stop => "; an alarm in ALARM stops the recovery",
                    OnAlarm::Evacuate =>
                        "; an alarm in ALARM stops the recovery and takes the last wave back out of the zone",
                }
            );
        }
    }
}

/// How the order sees `item`'s resource: its type, account, cluster and the operator's mark.
fn unit(item: &Item, gates: &Gates) -> Unit {
    let tags = item.target.as_ref().map(|t| &t.tags);
    let tagged =
        |wanted: &[(String, String)]| tags.is_some_and(|tags| wanted.iter().any(|(k, v)| tags.get(k) == Some(v)));
    let mark = if tagged(&gates.first) {
        Mark::First
    } else if tagged(&gates.last) {
        Mark::Last
    } else {
        Mark::Middle
    };
    let cluster = crate::plugins::REGISTRY
        .iter()
        .find(|r| r.name == item.resource_type)
        .and_then(|r| (r.cluster)(&item.resource))
        .map(str::to_owned);
    Unit {
        resource_type: item.resource_type.clone(),
        account: item.account.clone(),
        cluster,
        mark,
    }
}

/// `picked` (indices into `units`) cut into `waves`, as indices into `units`.
fn cut_into(units: &[Unit], picked: &[usize], waves: &crate::app::waves::Waves) -> Vec<Vec<usize>> {
    let some: Vec<Unit> = picked.iter().map(|&u| units[u].clone()).collect();
    crate::app::waves::cut(&some, waves)
        .into_iter()
        .map(|wave| wave.into_iter().map(|i| picked[i]).collect())
        .collect()
}

/// Why a recovery in waves stopped before its last wave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Halt {
    /// An alarm went into ALARM (or was deleted) while a wave baked.
    Alarm(String),
    /// The alarms were not all OK before a wave within `--wait-timeout`.
    Waited(String),
    /// A wave's lines failed: the next wave would build on capacity that is not there.
    Failed(String),
}

impl std::fmt::Display for Halt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Halt::Alarm(why) | Halt::Waited(why) | Halt::Failed(why) => f.write_str(why),
        }
    }
}

/// How a recovery in waves ended.
pub struct Outcome {
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
    ) -> Outcome {
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
            let summary = crate::app::waves::summary(&cut.units, &cut.waves[n]);
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
                .carry_out_part(audit, &wave_settings, self.account_concurrency)
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
        Outcome { plan, phases, halted }
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
                    crate::report::clean(&super::describe(&e))
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
                            crate::report::clean(&super::describe(&e))
                        ))))
                    }
                    // The next read tells.
                    Err(e) => crate::say!(
                        "azevac: warning: could not read the alarms while baking: {}",
                        crate::report::clean(&super::describe(&e))
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
                    self.account_concurrency,
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
            let (result, _) = part.carry_out_part(&audit, settings, self.account_concurrency).await;
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
