//! The one flow every kind of zonal action goes through, for evacuate and recover alike:
//!
//! plan (every plugin, before anything changes) → per stage, per batch: acquire (locks + intent,
//! one transaction) → read again and compute each change from the live state → act (bounded
//! concurrency; a resource's lines in order) → release (done mark or delete + unlock, one
//! transaction) → verify (read back, each type once its batches have ended) → settle (`--wait`).
//!
//! A plugin can only change a resource through a [`Guard`] of a [`Held`], which only [`Journal::acquire`] makes:
//! the write-ahead is enforced by the types, not by the order of calls in a command.

use std::collections::{BTreeMap, BTreeSet};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_config::SdkConfig;
use futures::StreamExt;

use crate::error::describe;
use crate::interrupt::Interrupt;
use crate::journal::{batches, Ahead, Audit, Declared, Evacuating, Guard, Held, Journal, Lease, Release, Released};
use crate::model::{Command, Item, Plan, Record, Request, Status};
use crate::plugins::{self, Plugin, Scope, Setup, Stage};
use crate::stats::Phases;
use crate::topology::{self, Zones};
use crate::{Error, Result};

/// How old a batch's read under the lock may be when a line's turn to change comes, beyond the time
/// the changes started before it take at their services' paced rates ([`Settings::read_age`]);
/// older, and the line's resource is read again alone (a change is never computed from a stale read).
const STALE: Duration = Duration::from_secs(5);
/// The most that pacing adds to [`STALE`]: a very low `--max-rate` must not make an old read fresh.
const PACED_AT_MOST: Duration = Duration::from_secs(25);
/// Batches of a type in flight: while one has its turn (reads its resources under the lock and
/// starts its changes), the other two take their locks ahead of it or release theirs behind it,
/// so the journal's transactions overlap the changes. With two, the changes waited for the next
/// batch's locks when the journal's transactions queued behind the other types' (1,000 mixed
/// resources at 50 ms a call, median of 3: 9.6 s; with three, 8.6 s; a fourth gained 0.2 s, within
/// the benchmark's noise, for a third more locks held at once). The turn passes on once the
/// batch's last change has started, so the next batch's read overlaps only the last changes in
/// flight, and the bucket never waits for a read.
const BATCHES_IN_FLIGHT: usize = 3;

/// One resource type's pipeline: whose turn it is (batches take it in plan order, whichever's locks
/// come first) and its `--concurrency` slots, shared by its batches in flight.
struct Pipeline {
    turn: tokio::sync::watch::Sender<usize>,
    slots: tokio::sync::Semaphore,
}

/// A batch's turn: passed on to the next batch once, when its last change has started or when the
/// batch ends however it ends (a turn never passed would stop the type).
struct Turn<'a> {
    pipeline: &'a Pipeline,
    next: usize,
    passed: std::sync::atomic::AtomicBool,
}

impl<'a> Turn<'a> {
    /// Wait for batch `number`'s turn.
    async fn take(pipeline: &'a Pipeline, number: usize) -> Turn<'a> {
        let mut turns = pipeline.turn.subscribe();
        // The sender lives in the pipeline, which outlives every batch: the wait cannot fail.
        let _ = turns.wait_for(|turn| *turn == number).await;
        Turn {
            pipeline,
            next: number + 1,
            passed: std::sync::atomic::AtomicBool::new(false),
        }
    }

    fn pass(&self) {
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
    plugins: Vec<Box<dyn Plugin>>,
}

/// Discover and plan: the whole plan, before anything is changed. `az_id` is required to evacuate;
/// recover takes one zone or every zone.
pub async fn prepare(
    sdk: &SdkConfig,
    journal: &Journal,
    command: Command,
    az_id: Option<&str>,
    request: &Request,
    kubeconfig: Option<PathBuf>,
    account: Option<&str>,
) -> Result<Prepared> {
    validate(request)?;
    let mut phases = Phases::start();
    let region = crate::aws::region_of(sdk);
    let ec2 = crate::client!(aws_sdk_ec2, sdk);
    let zones = match az_id {
        Some(_) => Zones::load(&ec2, &region).await?,
        None => Zones::new(region.clone(), Vec::new()),
    };
    let zone = az_id.map(|az| zones.resolve(az)).transpose()?;
    if command == Command::Evacuate && zone.is_none() {
        return Err(Error::BadInput("evacuate needs --az-id AZ_ID".into()));
    }
    let setup = Setup {
        sdk: sdk.clone(),
        request: request.clone(),
        kubeconfig,
        account: account.map(str::to_owned),
    };
    let plugins = plugins::select(&setup).await?;
    let mut plan = Plan {
        command,
        region: region.clone(),
        az_id: zone.as_ref().map(|z| z.id.clone()),
        az_name: zone.as_ref().map(|z| z.name.clone()),
        request: request.clone(),
        items: Vec::new(),
        problems: Vec::new(),
        stats: None,
    };
    let none = BTreeSet::new();
    let no_records = BTreeMap::new();
    match command {
        Command::Evacuate => {
            let zone_id = zone.as_ref().map(|z| z.id.as_str()).unwrap_or_default();
            let (zone_subnets, (records, problems)) =
                futures::try_join!(topology::subnets_in_zone(&ec2, zone_id), zone_records(journal, zone_id))?;
            plan.problems = problems;
            let scope = Scope {
                command,
                zone: zone.as_ref(),
                zones: &zones,
                zone_subnets: &zone_subnets,
                records: &records,
                request,
                still_evacuated: &none,
            };
            let planned = futures::future::join_all(plugins.iter().map(|p| p.plan_evacuation(&scope))).await;
            for (plugin, lines) in plugins.iter().zip(planned) {
                match isolate(lines)? {
                    Ok(lines) => plan.items.extend(lines),
                    Err(e) => plan.problems.push(format!(
                        "{}: could not be planned, so nothing of this type is changed: {}",
                        plugin.resource_type(),
                        describe(&e)
                    )),
                }
            }
            review(&plugins, &mut plan, &scope).await?;
            headroom(&plugins, &mut plan, &scope, &ec2).await;
        }
        Command::Recover => {
            journal.require().await?;
            let types: Vec<&str> = plugins.iter().map(|p| p.resource_type()).collect();
            let (mut by_type, problems) = journal.records(&types, zone.as_ref().map(|z| z.id.as_str())).await?;
            plan.problems = problems;
            let still_evacuated = still_evacuated(journal, request, &types).await?;
            let scope = Scope {
                command,
                zone: zone.as_ref(),
                zones: &zones,
                zone_subnets: &none,
                records: &no_records,
                request,
                still_evacuated: &still_evacuated,
            };
            // Each type reads its resources from its own service: side by side, as evacuate plans.
            let reads = plugins.iter().map(|plugin| {
                let records = by_type.remove(plugin.resource_type()).unwrap_or_default();
                let kept = records.len();
                let scope = &scope;
                async move { (kept, plugin.plan_recovery(records, scope).await) }
            });
            let planned = futures::future::join_all(reads.collect::<Vec<_>>()).await;
            for (plugin, (kept, lines)) in plugins.iter().zip(planned) {
                match isolate(lines)? {
                    Ok(lines) => plan.items.extend(lines),
                    Err(e) => plan.problems.push(format!(
                        "{}: could not be planned, so its {kept} journal record(s) are kept for the next recover: {}",
                        plugin.resource_type(),
                        describe(&e)
                    )),
                }
            }
            // A record is checked against where things lie before its line may change anything, for
            // every kind here: an odd one is reported and kept, never acted on.
            for item in plan.items.iter_mut().filter(|i| i.status == Status::Planned) {
                if let Some(why) = crate::plan::odd_record(item) {
                    item.fail(why);
                }
            }
            review(&plugins, &mut plan, &scope).await?;
        }
    }
    // The plan lists lines stage by stage, types in registry order: the order they are carried out
    // in with --concurrency 1 (otherwise a stage's types go side by side).
    let stage = |item: &Item| {
        plugins
            .iter()
            .find(|p| p.resource_type() == item.resource_type)
            .map(|p| p.stage(command, item))
    };
    plan.items.sort_by_key(|item| stage(item));
    for item in &mut plan.items {
        item.account = account.map(str::to_owned);
    }
    phases.end("discover and plan");
    Ok(Prepared { plan, phases, plugins })
}

/// For `recover --failback`: the zones that keep records of types this run does not recover (a
/// `--type` that leaves some out). A failback into one of them would move a writer back into a zone
/// that is still evacuated.
async fn still_evacuated(journal: &Journal, request: &Request, recovered: &[&str]) -> Result<BTreeSet<String>> {
    if !request.failback {
        return Ok(BTreeSet::new());
    }
    let others: Vec<&str> = plugins::types()
        .into_iter()
        .filter(|t| !recovered.contains(t))
        .collect();
    if others.is_empty() {
        return Ok(BTreeSet::new());
    }
    let (by_type, _) = journal.records_of_every_account(&others, None).await?;
    Ok(by_type.values().flatten().map(|r| r.az_id.clone()).collect())
}

/// One type's planning outcome, split by what it calls for. An error that needs the operator to
/// change the input or the environment (exit 2: access denied, an endpoint that does not serve the
/// API) stops the run before any change, as bad input does; any other failure of one type (a
/// throttled or failing service, a resource that could not be read) is that type's problem only,
/// and the other types carry on. A service that cannot be reached is one of those: the region was
/// reached by the run's first calls (EC2's zones, the journal's table), so a service that drops
/// its connections now is failing, as services do in a zonal incident, not misconfigured.
fn isolate<T>(outcome: Result<T>) -> Result<Result<T>> {
    match outcome {
        Err(e @ Error::Unreachable { .. }) => Ok(Err(e)),
        Err(e) if e.exit_code() == 2 => Err(e),
        other => Ok(other),
    }
}

/// Let every plugin review the whole plan. A review is a safety check (the cross-zone guard), so a
/// review that fails fails its type's planned lines rather than letting them go ahead unchecked.
async fn review(plugins: &[Box<dyn Plugin>], plan: &mut Plan, scope: &Scope<'_>) -> Result<()> {
    for plugin in plugins {
        if let Err(e) = isolate(plugin.review(plan, scope).await)? {
            let why = format!("could not be checked before the change: {}", describe(&e));
            for item in plan
                .items
                .iter_mut()
                .filter(|i| i.resource_type == plugin.resource_type() && i.status == Status::Planned)
            {
                item.fail(why.clone());
            }
        }
    }
    Ok(())
}

/// The headroom check (evacuate): every type's demand on the subnets its planned lines keep, the
/// free addresses of all those subnets in batched reads, and the verdicts on the lines. A check that
/// cannot be made (access denied included: a policy from before the check lacks `ecs:ListTasks`) is
/// a note on the lines it concerns, never a stop: in an incident the reads may be failing too, and
/// the check guards capacity, not correctness.
async fn headroom(plugins: &[Box<dyn Plugin>], plan: &mut Plan, scope: &Scope<'_>, ec2: &aws_sdk_ec2::Client) {
    let mut demands = Vec::new();
    let mut unchecked: Vec<(String, String)> = Vec::new();
    // Each type's reads go to its own service and quota: side by side, the check takes as long as
    // the slowest type's reads, not their sum (ECS tasks and Lambda interfaces behind their rates).
    let reads = plugins.iter().filter_map(|plugin| {
        let lines: Vec<&Item> = plan
            .items
            .iter()
            .filter(|i| {
                i.resource_type == plugin.resource_type()
                    && i.status == Status::Planned
                    && i.removed_subnets.as_ref().is_some_and(|r| !r.is_empty())
            })
            .collect();
        (!lines.is_empty()).then_some(async move { (plugin.resource_type(), plugin.demand(&lines, scope).await) })
    });
    for (resource_type, found) in futures::future::join_all(reads).await {
        match found {
            Ok(found) => demands.extend(found),
            Err(e) => unchecked.push((resource_type.to_owned(), describe(&e))),
        }
    }
    let subnets: BTreeSet<String> = demands.iter().flat_map(|d| d.remaining.iter().cloned()).collect();
    let free = if subnets.is_empty() {
        Ok(BTreeMap::new())
    } else {
        topology::free_ips(ec2, &subnets).await
    };
    match free {
        Ok(free) => crate::headroom::apply(plan, &demands, &free, scope.request.force),
        Err(e) => unchecked.extend(demands.iter().map(|d| (d.resource.clone(), describe(&e)))),
    }
    for (what, why) in unchecked {
        for item in plan
            .items
            .iter_mut()
            .filter(|i| i.status == Status::Planned && (i.resource_type == what || i.resource == what))
        {
            item.notes.push(format!("headroom not checked: {why}"));
        }
    }
}

/// The longest wait a request may ask for: a week (and no overflow of the clock arithmetic).
const LONGEST_WAIT_SECONDS: u64 = 7 * 24 * 3600;

/// The longest operator's text azevac stores (`--reason`, in every journal record of the run): far
/// inside DynamoDB's 400 KB an item and 4 MB a transaction of 50 records.
pub const LONGEST_TEXT: usize = 1000;

/// Check a request in one place, whether it came from flags or from a saved plan file (which
/// bypasses every check the flags make): one line that says what is allowed.
pub fn validate(request: &Request) -> Result<()> {
    let known = plugins::types();
    if let Some(unknown) = request.types.iter().find(|t| !known.contains(&t.as_str())) {
        return Err(Error::BadInput(format!(
            "unknown type {unknown:?}; types: {}",
            known.join(", ")
        )));
    }
    crate::accounts::validate(&request.fleet, &request.types)?;
    for flags in plugins::flags() {
        (flags.validate)(request)?;
    }
    if request.pace == Some(0) {
        return Err(Error::BadInput("pace must be at least 1 instance at a time".into()));
    }
    for (name, seconds) in [
        ("drain_timeout_seconds", request.drain_timeout_seconds),
        ("pace_timeout_seconds", request.pace_timeout_seconds),
        ("wait_timeout_seconds", request.wait_timeout_seconds),
    ] {
        if seconds.is_some_and(|s| s > LONGEST_WAIT_SECONDS) {
            return Err(Error::BadInput(format!(
                "{name} is {}; at most {LONGEST_WAIT_SECONDS} (7 days)",
                seconds.unwrap_or_default()
            )));
        }
    }
    // The only operator's text the journal stores; the others (tags, prefix, contexts) filter.
    if let Some(length) = request
        .reason
        .as_ref()
        .map(|r| r.chars().count())
        .filter(|&n| n > LONGEST_TEXT)
    {
        return Err(Error::BadInput(format!(
            "--reason is {length} characters; at most {LONGEST_TEXT} (it is stored in every journal record)"
        )));
    }
    if let Some(expires_in) = &request.expires_in {
        plugins::zonal_shift::parse_expires_in(expires_in).map_err(Error::BadInput)?;
    }
    if let Some(bad) = request.tags.iter().find(|t| !t.contains('=') || t.starts_with('=')) {
        return Err(Error::BadInput(format!("tag filter {bad:?} is not KEY=VALUE")));
    }
    Ok(())
}

/// This zone's records by journal key, and the items that could not be read. A missing table
/// means nothing was journalled yet (a real run creates it before the first write).
async fn zone_records(journal: &Journal, az_id: &str) -> Result<(BTreeMap<String, Record>, Vec<String>)> {
    // Someone else's table under the journal's name is refused before the plan, not queried.
    match journal.check_schema().await {
        Ok(()) => {}
        Err(Error::TableMissing { .. }) => return Ok((BTreeMap::new(), Vec::new())),
        Err(e) => return Err(e),
    }
    let entries = match journal.in_zone(az_id).await {
        Ok(entries) => entries,
        Err(Error::TableMissing { .. }) => Vec::new(),
        Err(e) => return Err(e),
    };
    let mut records = BTreeMap::new();
    let mut problems = Vec::new();
    for entry in entries {
        match entry {
            Ok(record) => {
                records.insert(record.resource.clone(), record);
            }
            Err(e) => problems.push(e.to_string()),
        }
    }
    Ok((records, problems))
}

impl Prepared {
    /// A plan made elsewhere, with the plugins that carry it out (the engine's own tests drive it
    /// with a fake plugin this way).
    pub fn new(plan: Plan, plugins: Vec<Box<dyn Plugin>>) -> Prepared {
        Prepared {
            plan,
            phases: Phases::start(),
            plugins,
        }
    }

    /// Carry the plan out, exactly: stage by stage (traffic, capacity, traffic again), each line
    /// through the journal protocol; then read back and settle. Returns the plan with every line's
    /// outcome.
    pub async fn carry_out(mut self, journal: &Journal, audit: &Audit, settings: &Settings) -> (Plan, Phases) {
        let lease = Lease::new(audit, settings.lease, settings.in_flight);
        let heartbeat = journal.heartbeat(lease.clone());
        let command = self.plan.command;
        let timeline = crate::events::Timeline::start(&self.plan, audit);
        let run = Run {
            journal,
            audit,
            lease: &lease,
            plugins: &self.plugins,
            settings,
            timeline: &timeline,
        };
        for stage in [Stage::First, Stage::Capacity, Stage::Last] {
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
                        item.fail(
                            "not changed: capacity did not come back into the zone (see the failed lines and \
                             problems); journal record kept, run recover again once it has"
                                .into(),
                        );
                    }
                }
                continue;
            }
            // Read back inside: each type as soon as its own lines have ended.
            let done = run.stage(&mut self.plan, &lines).await;
            if stage == Stage::First {
                crate::plan::hold_back(&mut self.plan, &done);
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
fn not_started(plan: &mut Plan, lines: &[usize], interrupt: &Interrupt) {
    for &i in lines {
        let item = &mut plan.items[i];
        if item.status == Status::Planned {
            item.status = Status::Skipped;
            item.reason = Some(interrupt.reason());
        }
    }
}

/// How a bounded act ended.
enum Bounded {
    /// The plugin returned.
    Ended(Result<plugins::Acted>),
    /// It was given up while a call may still be in flight: why.
    Abandoned(String),
}

/// How often an act in flight looks at its lease and at an interrupt.
const WATCH_EVERY: Duration = Duration::from_millis(200);

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
struct Run<'a> {
    journal: &'a Journal,
    audit: &'a Audit,
    lease: &'a Arc<Lease>,
    plugins: &'a [Box<dyn Plugin>],
    settings: &'a Settings,
    /// `--log-format json`: the run's events, emitted as lines reach their status.
    timeline: &'a crate::events::Timeline,
}

/// What a part of a stage (one type's pipeline) hands back as it goes.
enum Ended {
    /// A batch's lines (`(index in the plan, line)` pairs), as it ended.
    Batch(Vec<(usize, Item)>),
    /// The part's lines, once every batch of it had ended, as their read-back left them.
    Verified(Vec<(usize, Item)>),
}

/// A line being carried out: its index in the plan, once acquired its lock and intent, and once it
/// has ended how it is released (a line still held at the end changed nothing).
struct Line {
    index: usize,
    held: Option<Held>,
    release: Option<Release>,
}

impl Line {
    /// Take the hold, to end it.
    fn end(&mut self, end: impl FnOnce(Held) -> Release) {
        if let Some(held) = self.held.take() {
            self.release = Some(end(held));
        }
    }

    /// How the line is released: as it ended, or untouched.
    fn release(self) -> Option<Release> {
        self.release.or_else(|| self.held.map(Held::untouched))
    }
}

impl Run<'_> {
    fn plugin(&self, resource_type: &str) -> Option<&dyn Plugin> {
        self.plugins
            .iter()
            .find(|p| p.resource_type() == resource_type)
            .map(|p| p.as_ref())
    }

    /// The stage of a line, if its plugin is in this run.
    fn stage_of(&self, command: Command, item: &Item) -> Option<Stage> {
        Some(self.plugin(&item.resource_type)?.stage(command, item))
    }

    /// Carry out the planned lines among `lines`, [`crate::journal::batch_size`] at a time; a resource's lines stay in
    /// one batch, in plan order. Each resource type goes through its own batches, side by side with
    /// the others (each service has its own quota), with `--concurrency` changes in flight and up
    /// to [`BATCHES_IN_FLIGHT`] batches; `--concurrency 1` is one change at a time, in plan order.
    /// Each type's done lines are read back once its last batch has ended. Returns the resources
    /// whose change was made (before their read-back).
    async fn stage(&self, plan: &mut Plan, lines: &[usize]) -> BTreeSet<String> {
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
            // Each batch's lines as they ended, for the read-back once the part's last batch ends.
            let ended = Arc::new(std::sync::Mutex::new(Vec::new()));
            let collected = Arc::clone(&ended);
            let batches = futures::stream::iter(batch_plans(plan, part).into_iter().enumerate())
                .map(move |(number, (indices, mut lines, local))| async move {
                    self.batch(&mut lines, command, local, bar, (pipeline, number)).await;
                    (indices, lines)
                })
                .buffer_unordered(in_flight)
                .map(move |(indices, lines)| {
                    let lines: Vec<(usize, Item)> = indices.into_iter().zip(lines.items).collect();
                    if let Ok(mut ended) = collected.lock() {
                        ended.extend(lines.iter().cloned());
                    }
                    Ended::Batch(lines)
                });
            // Read back as soon as the type is done, while the slower types still change: the
            // read-back of a fast type never waits for the last change of a slow one.
            let verified = futures::stream::once(async move {
                let mut lines = ended.lock().map(|mut e| std::mem::take(&mut *e)).unwrap_or_default();
                self.verify(&mut lines).await;
                Ended::Verified(lines)
            });
            batches.chain(verified).boxed()
        });
        let mut ended = futures::stream::select_all(pipelines);
        let mut done = BTreeSet::new();
        while let Some(part) = ended.next().await {
            let lines: Vec<(usize, Item)> = match part {
                Ended::Batch(lines) => {
                    let changed = lines.iter().filter(|(_, i)| i.status == Status::Done);
                    done.extend(changed.map(|(_, i)| i.resource.clone()));
                    lines
                }
                Ended::Verified(lines) => lines,
            };
            for (i, item) in lines {
                plan.items[i] = item;
            }
            self.timeline.update(plan);
        }
        bar.finish_and_clear();
        done
    }

    /// One batch (the `number`th of its type): acquire; then, with the type's turn, read again and
    /// start the changes (passing the turn on when the last has started); release once they end.
    async fn batch(
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
        let acted: Vec<(Item, Line)> = futures::stream::iter(work)
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
                let mut out = Vec::with_capacity(group.len());
                for (mut item, mut line) in group {
                    self.act(command, &mut item, &mut line, read_at, fresh_for).await;
                    bar.set_message(format!("{} {}", item.resource_type, item.name));
                    bar.inc(1);
                    out.push((item, line));
                }
                out
            })
            .buffer_unordered(self.settings.concurrency)
            .flat_map(futures::stream::iter)
            .collect()
            .await;
        // Also when no group had anything to change (then none passed it).
        turn.pass();
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

    /// Take every line's lock and journal its intent. A line whose resource another live run holds
    /// is skipped, naming that run; one whose record changed since the plan fails; neither changes.
    async fn acquire(&self, plan: &mut Plan, command: Command, indices: &[usize]) -> Vec<Line> {
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
            let results = self.journal.acquire(&aheads, self.lease, self.audit).await;
            of.into_iter().zip(results).collect()
        };
        for i in missing {
            let item = &mut plan.items[i];
            item.fail(format!("internal: no planned state or record for {}", item.resource));
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
                Err(e) => item.fail(format!("{}; nothing changed", describe(&e))),
            }
        }
        lines
    }

    /// Under the locks: each plugin reads its resources again and computes the changes from the
    /// live state; evacuation widens its intent first if the live state has more to take.
    async fn refresh(&self, plan: &mut Plan, command: Command, lines: &mut [Line]) {
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
    async fn refresh_lines(&self, plan: &mut Plan, command: Command, mut mine: Vec<&mut Line>) {
        let Some(first) = mine.first() else {
            return;
        };
        let Some(plugin) = self.plugin(&plan.items[first.index].resource_type) else {
            return;
        };
        // Items and handles paired by index, in the same order (lines of a resource in plan order).
        let order: Vec<usize> = mine.iter().map(|l| l.index).collect();
        let mut by_index: BTreeMap<usize, &mut Item> = plan
            .items
            .iter_mut()
            .enumerate()
            .filter(|(i, _)| order.contains(i))
            .collect();
        let mut items: Vec<&mut Item> = order.iter().filter_map(|i| by_index.remove(i)).collect();
        let held: Vec<&Held> = mine.iter().filter_map(|l| l.held.as_ref()).collect();
        if let Err(e) = plugin.refresh(command, &mut items, &held).await {
            for item in items.iter_mut() {
                item.fail(format!(
                    "could not read it again under the lock ({}); nothing changed",
                    describe(&e)
                ));
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
    async fn widen(&self, item: &mut Item, held: &mut Evacuating) {
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
            item.fail(format!("{}; nothing changed", describe(&e)));
        }
    }

    /// Carry one held line out and decide how it is released. A line whose batch was read again
    /// longer than `fresh_for` ago (slow changes before it, such as `--pace`) is read again alone
    /// first, so that no change is computed from an old read.
    async fn act(&self, command: Command, item: &mut Item, line: &mut Line, read_at: Instant, fresh_for: Duration) {
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
            item.fail("the lock's lease ran out before the change (renewals failed); nothing changed".into());
            return;
        }
        if self.settings.interrupt.requested() {
            item.status = Status::Skipped;
            item.reason = Some(self.settings.interrupt.reason());
            return;
        }
        let Some(plugin) = self.plugin(&item.resource_type) else {
            item.fail(format!("internal: no plugin for {}", item.resource_type));
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
        let release = match (held, acted) {
            (held, Bounded::Abandoned(why)) => {
                item.fail(format!(
                    "{why}; the change may still land, so its journal record is kept and its lock left to run out \
                     (recover reconciles it once the lock is free)"
                ));
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
                let taken = match done.removed.join(", ") {
                    taken if taken.is_empty() => String::new(),
                    taken => format!(" with {taken}"),
                };
                item.fail(format!(
                    "{}; journal record kept in state intent{taken} (recover reconciles it)",
                    describe(&e)
                ));
                tracing::warn!(resource = %item.resource, "change failed");
                held.failed(done)
            }
            (Held::Recovery(held), Bounded::Ended(Err(e))) => {
                item.fail(format!("{}; journal record kept", describe(&e)));
                tracing::warn!(resource = %item.resource, "change failed");
                held.kept()
            }
        };
        line.release = Some(release);
    }

    /// Run one act, giving it up when its lock's lease can no longer be trusted (renewals failed:
    /// another run may take the lock over) or when an interrupt's grace is over. A call given up
    /// may still land; the engine then keeps the record and leaves the lock to run out.
    async fn bounded(&self, key: &str, act: impl std::future::Future<Output = Result<plugins::Acted>>) -> Bounded {
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
                            crate::interrupt::GRACE.as_secs()
                        ));
                    }
                }
            }
        }
    }

    /// The engine's check of what an evacuation did against what its record covers: a plugin that
    /// did something it had not written ahead is a bug in azevac. What it did is journalled now (so
    /// that nothing is forgotten) and the line fails, never a silent merge.
    async fn cover_after(&self, item: &mut Item, held: &mut Evacuating, removed: &[String], actions: &[String]) {
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
        item.fail(format!(
            "internal: {} did [{}] without writing it ahead (a bug in azevac); {journalled}",
            item.resource_type,
            what.join(", ")
        ));
    }

    /// Trust, but verify: each plugin reads back its lines that are done (`(index, line)` pairs of
    /// one part of a stage, every batch of it ended).
    async fn verify(&self, lines: &mut [(usize, Item)]) {
        for plugin in self.plugins {
            let mut items: Vec<&mut Item> = lines
                .iter_mut()
                .map(|(_, item)| item)
                .filter(|item| item.resource_type == plugin.resource_type())
                .collect();
            if items.iter().any(|i| i.status == Status::Done) {
                plugin.verify(&mut items).await;
            }
        }
    }

    /// `--wait`: let every plugin wait for its changed resources, and fail the lines of those that
    /// did not settle in time.
    async fn settle(&self, plan: &mut Plan, lines: &[usize], timeout: Duration) {
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
                    item.fail(format!("changed and journalled, but {why}"));
                }
            }
        }
    }
}

/// The batches of `lines` (indices into `plan`), a resource's lines in one batch: for each, the
/// lines' indices in `plan`, a plan of those lines alone (so that several batches can be in flight
/// and their lines go back into `plan` as each ends), and its groups (a resource's lines) as indices
/// into that plan.
fn batch_plans(plan: &Plan, lines: &[usize]) -> Vec<(Vec<usize>, Plan, Vec<Vec<usize>>)> {
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

/// What carrying a line out showed: its actions in the operator's words, and a problem that fails it
/// although it was done and journalled.
fn shown(item: &mut Item, shown: Option<Vec<String>>, problem: Option<String>) {
    if let Some(shown) = shown {
        item.actions = Some(shown);
    }
    if let Some(problem) = problem {
        item.fail(problem);
    }
}

/// Bring the line up to date with how its journal writes ended.
fn after_release(command: Command, item: &mut Item, result: Result<Released>) {
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
            let what = match command {
                Command::Evacuate => "changed, but the journal record stays in state intent (recover reconciles it)",
                Command::Recover => "put back, but the journal record was kept",
            };
            item.fail(format!("{}; {what}", describe(&e)));
        }
        // Nothing was changed, but the intent could not be rolled back (or the lock released): the
        // record claims more than was taken until a recover reads the live state. Not a success.
        Err(e) if item.status != Status::Failed => item.fail(format!(
            "nothing changed, but the journal could not be brought back ({}); recover reconciles it",
            describe(&e)
        )),
        Err(e) => tracing::warn!(resource = %item.resource, error = %describe(&e), "journal not brought up to date"),
    }
}

/// A progress bar on a terminal (unless `--no-progress`); hidden otherwise, where the result table
/// and the stderr lines say all there is.
fn progress_bar(enabled: bool, len: usize) -> indicatif::ProgressBar {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(paced: &[(&str, f64)]) -> Settings {
        Settings {
            concurrency: 16,
            progress: false,
            lease: Duration::from_secs(60),
            wait: None,
            paced: paced.iter().map(|(t, r)| (t.to_string(), *r)).collect(),
            in_flight: Duration::from_secs(180),
            interrupt: Interrupt::default(),
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
        let rate = |per_second| Some(crate::pacing::Rate { per_second, burst: 20 });
        let limits = crate::pacing::Limits::default().with_overrides(&[
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
