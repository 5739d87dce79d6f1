//! `azevac watch`: follow AWS's zonal autoshift onto the control plane. AWS moves a zone's
//! load-balancer traffic away when it finds the zone impaired; the watcher moves the rest (the
//! types the operator opted in) away with it, and back, in waves, once the autoshift ends.
//!
//! Level, not edge, as a Kubernetes controller works: a message from the queue only wakes the
//! watcher; what it does follows ARC's autoshifts (`ListAutoshifts`) and the zone it follows (kept
//! in its lease item, so a watcher that takes over inherits it). A lost, late or repeated event
//! costs a delay, never a wrong state, and every `--resync` the watcher looks again whatever the
//! queue said. It follows one zone at a time: a second zone's autoshift is reported, not followed.
//!
//! Exactly one watcher acts per region: the holder of the lease ([`crate::journal::Watcher`]).
//! Each evacuation and recovery it carries out is a run of its own, journalled and locked resource
//! by resource like an operator's, so a watcher and an operator never act on one resource at once;
//! one under way when the lease is lost finishes under those locks, and nothing new starts.

use std::collections::{BTreeMap, BTreeSet, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{Context, EXIT_OK};
use crate::app::autoshift::arc::{self, Away};
use crate::app::autoshift::event::{self, Change, Origin};
use crate::app::autoshift::queue::{Message, Queue};
use crate::app::health::{Beacon, State};
use crate::app::notify::Notifier;
use crate::cli;
use crate::journal::{Claim, Journal, Watcher};
use crate::model::text::clean;
use crate::{Error, Result};

/// How many event and message IDs are remembered as judged (a redelivery is recognised among them).
const REMEMBERED: usize = 10_000;
/// How often a wait looks at the interrupt: SIGTERM must not wait for a long poll to end.
const TICK: Duration = Duration::from_millis(250);
/// How long the watcher waits before it reads the queue again after a receive failed.
const RETRY: Duration = Duration::from_secs(5);

/// Slack on [`stall_bound`] for the work of a turn between its calls.
const STALL_SLACK: Duration = Duration::from_secs(30);

/// The longest a watcher that is well goes between two beats of its health: one AWS call at its
/// longest (`--operation-timeout`, the SDK's retries included: a claim, a receive, a renewal) and
/// the longest wait of its loop (a standby looks at the lease, and a holder renews it while it
/// evacuates or recovers, every third of `--lease`; a receive waits `--poll-wait`), and
/// [`STALL_SLACK`]. `azevac health` calls a watcher stalled past it, and systemd's `WatchdogSec=`
/// must exceed it.
pub fn stall_bound(lease: Duration, operation_timeout: Duration, poll_wait: Duration) -> Duration {
    operation_timeout + (lease / 3).max(poll_wait).max(RETRY) + STALL_SLACK
}

/// Run `azevac watch` until SIGTERM or Ctrl-C; returns the exit code.
pub async fn run(ctx: &Context, args: &cli::Watch) -> Result<i32> {
    let bound = stall_bound(ctx.lease, ctx.operation_timeout, args.poll_wait);
    let beacon =
        Arc::new(Beacon::start(args.health_file.clone(), &ctx.run_id, &ctx.region, bound).map_err(Error::BadInput)?);
    if let Some(watchdog) = crate::app::health::watchdog() {
        if watchdog <= bound {
            crate::say!(
                "azevac: warning: watch: systemd's WatchdogSec ({}) is not above the longest a healthy watcher goes \
                 between beats ({}: --operation-timeout, a third of --lease or --poll-wait, and 30s): a slow call \
                 may have a healthy watcher restarted; set WatchdogSec above it",
                humantime::format_duration(watchdog),
                humantime::format_duration(bound)
            );
        }
    }
    let ran = watch(ctx, args, &beacon).await;
    match &ran {
        Ok(_) => beacon.stopped("stopped on a signal"),
        Err(e) => beacon.stopped(&format!("stopped at start: {}", super::describe(e))),
    }
    ran
}

async fn watch(ctx: &Context, args: &cli::Watch, beacon: &Arc<Beacon>) -> Result<i32> {
    // Everything that can be wrong with the input is said before the watcher starts: the queue,
    // the journal, the alarms of the recovery's waves.
    let queue = Queue::new(&ctx.sdk, &args.queue);
    let queue_arn = queue.check().await?;
    if !args.dry_run {
        ctx.journal.require().await?;
    }
    let recovery = args.recover(None);
    let gates = super::waves::Gates::of(
        ctx,
        &recovery.request(),
        recovery.wait.wait_timeout,
        recovery.kube.kubeconfig.clone(),
    )?;
    if let Some(gates) = gates {
        gates.check("--alarm", "--alarm-prefix").await?;
    }
    beacon.beat();
    rehearse(ctx, args).await?;
    beacon.beat();
    let caller = match ctx.identity().await {
        Ok((arn, _)) => arn.clone(),
        Err(_) => "unknown".to_owned(),
    };
    crate::say!(
        "azevac: watching {} for ARC's autoshifts in {}{} (watcher {})",
        clean(&queue_arn),
        ctx.region,
        if args.dry_run {
            ", changing nothing (--dry-run)"
        } else {
            ""
        },
        ctx.run_id
    );
    let mut watch = Watch {
        me: Watcher {
            region: ctx.region.clone(),
            holder: ctx.run_id.clone(),
            caller: caller.clone(),
            queue: args.queue.clone(),
            since: now(),
            expires_at: 0,
            heard_at: None,
            following: None,
            acting: None,
            lease: ctx.lease.as_secs(),
        },
        ctx,
        args,
        queue,
        notifier: Notifier::new(&ctx.sdk, &args.notify.topics),
        interrupt: crate::process::interrupt::Interrupt::listen(),
        leader: None,
        judged: Remembered::default(),
        unfollowed: BTreeSet::new(),
        started_by: BTreeMap::new(),
        code: EXIT_OK,
        beacon: Arc::clone(beacon),
    };
    watch.run().await;
    Ok(watch.code)
}

/// Plan the evacuation the watcher would run, against the region's first zone, changing nothing:
/// whatever a kind refuses in it (a flag it cannot carry out, an alarm `--pace-alarm` names that is
/// not there) is one line and exit 2 now, not when AWS moves traffic away. Anything else (a
/// throttled service, an account that cannot be reached, a minute gone by) is a warning: the
/// watcher starts, and a restarted watcher is not kept down by a service having a bad day.
async fn rehearse(ctx: &Context, args: &cli::Watch) -> Result<()> {
    let planned = tokio::time::timeout(REHEARSAL, async {
        let ec2 = crate::client!(aws_sdk_ec2, &ctx.sdk);
        let zones = crate::model::topology::Zones::load(&ec2, &ctx.region).await?;
        let Some(zone) = zones.all().first() else {
            return Ok(Vec::new());
        };
        let evacuation = args.evacuate(&zone.id, "azevac watch: the plan checked at start".into());
        let request = evacuation.request();
        let prepared = ctx
            .prepare(
                crate::model::Command::Evacuate,
                Some(&zone.id),
                &request,
                args.kube.kubeconfig.clone(),
            )
            .await?;
        Ok(prepared.plan.problems)
    })
    .await;
    let warn = |what: String| {
        crate::say!(
            "azevac: warning: watch: the evacuation could not be planned at start: {}",
            crate::report::clean(&what)
        )
    };
    match planned {
        Ok(Ok(problems)) => {
            for problem in problems {
                warn(problem);
            }
            Ok(())
        }
        Ok(Err(e @ (Error::BadInput(_) | Error::Unsupported { .. } | Error::UnknownAz { .. }))) => Err(e),
        Ok(Err(e)) => {
            warn(super::describe(&e));
            Ok(())
        }
        Err(_) => {
            warn(format!("not done within {}s", REHEARSAL.as_secs()));
            Ok(())
        }
    }
}

/// How long the plan checked at start may take (with `--accounts org`, a role in every account).
const REHEARSAL: Duration = Duration::from_secs(60);

/// Why a run the watcher carries out stops when its lease is lost.
const LEASE_LOST: &str = "the watcher's lease was lost (another watcher may act now)";

/// One watcher's state.
struct Watch<'a> {
    ctx: &'a Context,
    args: &'a cli::Watch,
    queue: Queue,
    notifier: Notifier,
    interrupt: crate::process::interrupt::Interrupt,
    /// The lease, while this watcher holds it (never with `--dry-run`, which takes none).
    leader: Option<Leadership>,
    /// The lease item as this watcher would write it (the zone followed, when it last heard).
    me: Watcher,
    /// Event and message IDs already judged.
    judged: Remembered,
    /// Zones reported as not followed (reported once per autoshift).
    unfollowed: BTreeSet<String>,
    /// The event that started each zone's autoshift, for the evacuation's reason (kept while the
    /// zone is away or followed).
    started_by: BTreeMap<String, String>,
    /// The exit code: an evacuation or recovery interrupted by a signal ends the watcher with its code.
    code: i32,
    /// Its health, for the platform that runs it (the health file, systemd).
    beacon: Arc<Beacon>,
}

impl Watch<'_> {
    async fn run(&mut self) {
        let mut standing_by_for: Option<String> = None;
        let mut next_resync = Instant::now();
        // Set at the start and when the lease was just taken: ARC is read before the first long
        // poll, not after it.
        let mut look_now = true;
        self.beacon.ready(match self.args.dry_run {
            true => "started: reading its queue, changing nothing (--dry-run)",
            false => "started: claiming the watcher's lease",
        });
        while !self.interrupt.requested() {
            self.beacon.beat();
            if !self.args.dry_run && !self.holds() {
                if let Some(lost) = self.leader.take() {
                    let why = lost.why_lost();
                    lost.stop();
                    self.beacon.set(State::LeaseLost, &why);
                    // The zone followed is the lease item's to say from now on, not this memory's.
                    self.me.following = None;
                    self.me.acting = None;
                    self.decide(
                        "lease_lost",
                        "lease lost: this watcher stopped acting and stands by".into(),
                        vec![],
                    )
                    .await;
                }
                // The lease's deadline is counted from before the claim was sent: the item's
                // expiry is written after, so this watcher's own clock never runs past it.
                let asked = Instant::now();
                match self.ctx.journal.claim_watch(&self.me, self.ctx.lease).await {
                    Ok(Claim::Held(held)) => {
                        let took_over = standing_by_for.take();
                        self.me.following = held.following.clone();
                        self.me.since = held.since;
                        let what = match (&took_over, &held.following) {
                            (Some(other), Some(zone)) => {
                                format!("took the lease over from watcher {other}, following {zone}")
                            }
                            (Some(other), None) => format!("took the lease over from watcher {other}"),
                            (None, Some(zone)) => format!("holds the lease, following {zone}"),
                            (None, None) => "holds the lease".to_owned(),
                        };
                        self.beacon.set(State::Healthy, &what);
                        self.leader = Some(Leadership::start(
                            &self.ctx.journal,
                            held,
                            self.ctx.lease,
                            asked,
                            &self.beacon,
                        ));
                        self.decide("lease_held", what, vec![]).await;
                        next_resync = Instant::now();
                        look_now = true;
                    }
                    Ok(Claim::Standby(other)) => {
                        if standing_by_for.as_deref() != Some(&other.holder) {
                            crate::say!(
                                "azevac: watch: standing by: watcher {} ({}) holds the lease",
                                clean(&other.holder),
                                clean(&other.caller)
                            );
                            standing_by_for = Some(other.holder.clone());
                        }
                        self.beacon.set(
                            State::Healthy,
                            &format!(
                                "standing by: watcher {} ({}) holds the lease",
                                other.holder, other.caller
                            ),
                        );
                        self.pause(self.ctx.lease / 3).await;
                        continue;
                    }
                    Err(e) => {
                        let why = format!("cannot claim the watcher's lease: {}", super::describe(&e));
                        crate::say!("azevac: warning: watch: {}", crate::report::clean(&why));
                        self.beacon.set(State::LeaseLost, &why);
                        self.pause(self.ctx.lease / 3).await;
                        continue;
                    }
                }
            }
            let wake = if std::mem::take(&mut look_now) {
                false
            } else {
                match self.hear().await {
                    Some(wake) => wake,
                    None => break,
                }
            };
            let resync = Instant::now() >= next_resync;
            if (wake || resync) && !self.interrupt.requested() && self.holds() {
                self.reconcile(resync).await;
                if resync {
                    if !self.interrupt.requested() {
                        self.renew_shifts().await;
                    }
                    next_resync = Instant::now() + self.args.resync;
                }
            }
        }
        if let Some(leader) = self.leader.take() {
            leader.stop();
            self.me.acting = None;
            match self.ctx.journal.release_watch(&self.me).await {
                Ok(()) => crate::say!("azevac: watch: stopped; lease released"),
                Err(e) => crate::say!(
                    "azevac: warning: watch: stopped; the lease could not be released (it runs out on its own): {}",
                    crate::report::clean(&super::describe(&e))
                ),
            }
        } else {
            crate::say!("azevac: watch: stopped");
        }
    }

    /// Whether this watcher may act now: it holds the lease with time to spare (a dry run changes
    /// nothing and takes no lease).
    fn holds(&self) -> bool {
        self.args.dry_run || self.leader.as_ref().is_some_and(Leadership::holds)
    }

    /// One long poll of the queue, each message judged and (unless a dry run) deleted. Whether a
    /// message asks the watcher to look at ARC's autoshifts now; `None` when a signal came first.
    async fn hear(&mut self) -> Option<bool> {
        let received = tokio::select! {
            received = self.queue.receive(self.args.poll_wait) => received,
            () = self.interrupted() => return None,
        };
        let messages = match received {
            Ok(messages) => messages,
            Err(e) => {
                let why = format!("cannot read the queue: {}", super::describe(&e));
                crate::say!("azevac: warning: watch: {}; trying again", crate::report::clean(&why));
                self.beacon.set(State::QueueUnreadable, &why);
                self.pause(RETRY).await;
                return Some(false);
            }
        };
        self.me.heard_at = Some(now());
        self.share();
        // Only while it may act: a lease lost during the receive is the next turn's to say.
        if self.holds() {
            self.beacon.set(State::Healthy, &self.reading());
        }
        let mut wake = false;
        for message in messages {
            wake |= self.judge(&message).await;
            // A dry run leaves every message for the watcher that acts (it comes back to this one
            // after the queue's visibility timeout, and is recognised).
            if self.args.dry_run {
                continue;
            }
            if let Err(e) = self.queue.delete(&message).await {
                crate::say!(
                    "azevac: warning: watch: cannot delete message {} from the queue (it comes back and is \
                     recognised): {}",
                    clean(&message.id),
                    crate::report::clean(&super::describe(&e))
                );
            }
            self.beacon.beat();
        }
        Some(wake)
    }

    /// What a watcher that reads its queue is doing, for its health.
    fn reading(&self) -> String {
        let following = match &self.me.following {
            Some(zone) => format!(", following {zone}"),
            None => String::new(),
        };
        match self.args.dry_run {
            true => "reads its queue, changing nothing (--dry-run)".to_owned(),
            false => format!("holds the lease{following}; reads its queue"),
        }
    }

    /// Hand what the lease item says (heard, following, acting) to the next renewal.
    fn share(&self) {
        if let Some(leader) = &self.leader {
            leader.update(&self.me);
        }
    }

    /// Judge one message: report what it is and what the watcher makes of it, once. Whether it
    /// asks the watcher to look at ARC's autoshifts now.
    async fn judge(&mut self, message: &Message) -> bool {
        let event = match event::parse(&message.body, &self.ctx.region) {
            Ok(event) => event,
            Err(rejected) => {
                if self.judged.insert(&format!("message {}", message.id)) {
                    let verb = if self.args.dry_run { "left" } else { "deleted" };
                    self.decide(
                        "message_rejected",
                        format!("message {} {verb} unread: {rejected}", message.id),
                        vec![],
                    )
                    .await;
                }
                return false;
            }
        };
        if !self.judged.insert(&event.id) {
            tracing::info!(event = %event.id, "an event already judged: nothing to do");
            return false;
        }
        match &event.change {
            Change::Started { origin, zone } | Change::Ended { origin, zone }
                if *origin != Origin::Autoshift && !self.args.follow_practice =>
            {
                self.decide(
                    "event_ignored",
                    format!(
                        "{} {} away from {zone} ignored (--follow-practice follows it)",
                        origin.phrase(),
                        event.id
                    ),
                    vec![],
                )
                .await;
                false
            }
            Change::Started { origin, zone } => {
                self.started_by.entry(zone.clone()).or_insert_with(|| event.id.clone());
                tracing::info!(event = %event.id, %zone, "{} started", origin.phrase());
                true
            }
            Change::Ended { origin, zone } => {
                tracing::info!(event = %event.id, %zone, "{} ended", origin.phrase());
                true
            }
            Change::Other { detail_type } => {
                self.decide(
                    "event_ignored",
                    format!("event {} ({detail_type}) is not an autoshift: nothing to do", event.id),
                    vec![],
                )
                .await;
                false
            }
        }
    }

    /// Compare ARC's autoshifts with the zone followed and act: follow a zone traffic is away
    /// from, evacuate it again on a resync (extending azevac's shifts), recover it once traffic
    /// is back (or once a real autoshift outranks the rehearsal followed).
    async fn reconcile(&mut self, resync: bool) {
        let away = match arc::away_now(&self.ctx.sdk, self.args.follow_practice).await {
            Ok(away) => away,
            Err(e) => {
                crate::say!(
                    "azevac: warning: watch: cannot read ARC's autoshifts: {}; looking again at the next event \
                     or in {}",
                    crate::report::clean(&super::describe(&e)),
                    humantime::format_duration(self.args.resync)
                );
                return;
            }
        };
        self.unfollowed.retain(|zone| away.contains_key(zone));
        let following = self.me.following.clone();
        self.started_by
            .retain(|zone, _| away.contains_key(zone) || following.as_deref() == Some(zone.as_str()));
        // One zone after another: a recovery done, the next zone traffic is away from is followed.
        loop {
            if !self.holds() || self.interrupt.requested() {
                return;
            }
            match self.me.following.clone() {
                None => {
                    let Some((zone, since)) = strongest(&away) else {
                        return;
                    };
                    self.report_unfollowed(&away, &zone).await;
                    // The zone is written to the lease before anything is changed: a watcher that
                    // takes over must know to recover it.
                    self.me.following = Some(zone.clone());
                    if let Some(leader) = &self.leader {
                        if !leader.write(&self.me).await {
                            self.me.following = None;
                            return;
                        }
                    }
                    let reason = match self.started_by.get(&zone) {
                        Some(id) => format!("autoshift {id}"),
                        None => format!("autoshift away from {zone} since {}", rfc3339(since.since)),
                    };
                    self.decide(
                        "following",
                        format!("{} away from {zone}: evacuating {zone}", since.origin.phrase()),
                        vec![
                            format!("reason: {reason}"),
                            format!("types: {}", self.args.types.join(", ")),
                        ],
                    )
                    .await;
                    self.evacuate(&zone, reason).await;
                    return;
                }
                Some(zone) if away.contains_key(&zone) && outranked(&away, &zone).is_none() => {
                    self.report_unfollowed(&away, &zone).await;
                    if resync {
                        tracing::info!(%zone, "resync: evacuating the followed zone again");
                        let reason = format!("autoshift away from {zone}: resync");
                        self.evacuate(&zone, reason).await;
                    }
                    return;
                }
                Some(zone) => {
                    let why = match outranked(&away, &zone) {
                        Some(other) => format!(
                            "the autoshift away from {other} outranks the {} away from {zone}: recovering {zone} \
                             first",
                            away[&zone].origin.phrase()
                        ),
                        None => format!("autoshift away from {zone} has ended: recovering {zone}"),
                    };
                    self.decide("recovering", why, vec![]).await;
                    let code = self.recover(&zone).await;
                    let left = match code {
                        EXIT_OK => self.records_left(&zone).await,
                        _ => None,
                    };
                    if code != EXIT_OK || left.is_some() {
                        let what = left.unwrap_or_else(|| format!("exit {code}"));
                        let next = if self.interrupt.requested() {
                            format!("the watcher that runs next recovers {zone}")
                        } else if !self.holds() {
                            format!("the watcher that holds the lease recovers {zone}")
                        } else {
                            format!(
                                "the watcher tries again in {}",
                                humantime::format_duration(self.args.resync)
                            )
                        };
                        self.decide(
                            "recovery_incomplete",
                            format!("the recovery of {zone} did not finish ({what}): its records stay; {next}"),
                            vec![],
                        )
                        .await;
                        return;
                    }
                    self.me.following = None;
                    if let Some(leader) = &self.leader {
                        if !leader.write(&self.me).await {
                            return;
                        }
                    }
                    self.started_by.remove(&zone);
                    self.unfollowed.remove(&zone);
                    self.decide("recovered", format!("{zone} recovered: following no zone"), vec![])
                        .await;
                }
            }
        }
    }

    /// What stays in the journal of `zone` for the watcher's types after a recovery that ended
    /// well (a run stopped before every line, a record locked by another run): `None` when nothing
    /// does, and the zone is no longer followed. A dry run's recovery changes nothing.
    async fn records_left(&self, zone: &str) -> Option<String> {
        if self.args.dry_run {
            return None;
        }
        let every = crate::plugins::types();
        let read = self
            .ctx
            .journal
            .fresh()
            .records_of_every_account(&every, Some(zone))
            .await;
        let (by_type, unreadable) = match read {
            Ok(read) => read,
            Err(e) => return Some(format!("the journal could not be read: {}", super::describe(&e))),
        };
        let count = |mine: bool| -> usize {
            by_type
                .iter()
                .filter(|(kind, _)| self.args.types.contains(kind) == mine)
                .map(|(_, records)| records.len())
                .sum()
        };
        // A record that cannot be read may be one of this watcher's: the zone stays followed.
        let left = count(true) + unreadable.len();
        if left > 0 {
            return Some(format!("{left} records of {zone} left in the journal"));
        }
        let others = count(false);
        if others > 0 {
            // Another party's (an operator's, or a watcher of more types): not this watcher's to
            // recover, and not forgotten either: status lists them.
            crate::say!(
                "azevac: watch: {others} records of {zone} of types this watcher does not follow stay in the \
                 journal: `azevac recover --az-id {zone}` puts them back"
            );
        }
        None
    }

    /// Extend azevac's zonal shifts (the caller's own account's) that end within the hour, zone by
    /// zone, as `azevac shift extend` does: the watcher keeps them from lapsing in a long incident,
    /// whoever started them and whatever zone it follows.
    async fn renew_shifts(&mut self) {
        // Every kind whose changes end by themselves, through what it declares (zonal shifts).
        for (kind, expiring) in crate::plugins::expiring::kinds() {
            let what = format!("azevac's {}s", expiring.noun);
            let records: Vec<_> = match self.ctx.journal.of_type(kind, None).await {
                Ok(entries) => entries
                    .into_iter()
                    .filter_map(std::result::Result::ok)
                    .filter(|r| r.account_id.is_none())
                    .collect(),
                Err(e) => {
                    crate::say!(
                        "azevac: warning: watch: cannot read {what} from the journal: {}",
                        crate::report::clean(&super::describe(&e))
                    );
                    continue;
                }
            };
            if records.is_empty() {
                continue;
            }
            let within = expiring.renew_within;
            let ending: BTreeSet<String> = match (expiring.read)(&self.ctx.sdk, &records, within).await {
                Ok(read) => read
                    .into_iter()
                    .flatten()
                    .filter(|e| e.due(within))
                    .map(|e| e.az_id)
                    .collect(),
                Err(e) => {
                    crate::say!(
                        "azevac: warning: watch: cannot read from {} when {what} end: {}",
                        expiring.source,
                        crate::report::clean(&super::describe(&e))
                    );
                    continue;
                }
            };
            for zone in ending {
                if !self.holds() || self.interrupt.requested() {
                    return;
                }
                self.decide(
                    "shifts_extended",
                    format!("{what} away from {zone} end within the hour: extending them"),
                    vec![],
                )
                .await;
                let mut ctx = self.ctx.for_another_run(self.guarded());
                ctx.heading = Some(expiring.renewed_as);
                let request = (expiring.renewal)();
                let confirm = self.args.evacuate(&zone, String::new()).confirm;
                let no_wait = cli::Wait {
                    wait: false,
                    wait_timeout: Duration::ZERO,
                };
                self.acting(Some(format!("extending {what} away from {zone}")));
                let extended = super::shift::extend(&ctx, &zone, &request, &confirm, &no_wait).await;
                self.acting(None);
                match extended {
                    Ok(code) => self.note_interrupted(code),
                    Err(e) => crate::say!(
                        "azevac: warning: watch: could not extend {what} away from {zone}: {}",
                        crate::report::clean(&super::describe(&e))
                    ),
                }
            }
        }
    }

    /// Say once per autoshift which zones traffic is away from that the watcher does not follow.
    async fn report_unfollowed(&mut self, away: &BTreeMap<String, Away>, following: &str) {
        let others: Vec<String> = away
            .keys()
            .filter(|zone| zone.as_str() != following && !self.unfollowed.contains(*zone))
            .cloned()
            .collect();
        for zone in others {
            self.decide(
                "not_followed",
                format!(
                    "{} away from {zone} not followed: the watcher follows {following}, one zone at a time",
                    away[&zone].origin.phrase()
                ),
                vec![],
            )
            .await;
            self.unfollowed.insert(zone);
        }
    }

    /// The interrupt of one run the watcher carries out: stopped by the watcher's signals, and by
    /// the loss of its lease (from then on another watcher may act).
    fn guarded(&self) -> crate::process::interrupt::Interrupt {
        let run = self.interrupt.linked();
        if let Some(leader) = &self.leader {
            leader.guard(&run);
        }
        run
    }

    /// Say in the lease item what keeps the watcher from its queue (`None`: nothing now, and the
    /// run guarded is over).
    fn acting(&mut self, what: Option<String>) {
        if what.is_none() {
            if let Some(leader) = &self.leader {
                leader.unguard();
            }
        }
        if let Some(what) = &what {
            // A run starts only under the lease (or as a dry run): that is the watcher at work, even
            // right after a failed receive (the next receive says again if the queue still fails).
            // Left `queue-unreadable`, its beats would send no `WATCHDOG=1` for the whole run.
            if matches!(self.beacon.state(), State::Healthy | State::QueueUnreadable) {
                let detail = match self.args.dry_run {
                    true => format!("{what}, changing nothing (--dry-run)"),
                    false => format!("holds the lease; {what}"),
                };
                self.beacon.set(State::Healthy, &detail);
            }
        }
        self.me.acting = what;
        self.share();
    }

    async fn evacuate(&mut self, zone: &str, reason: String) {
        let ctx = self.ctx.for_another_run(self.guarded());
        let args = self.args.evacuate(zone, reason);
        self.acting(Some(format!("evacuating {zone}")));
        let ran = super::evacuate::run(&ctx, &args).await;
        self.acting(None);
        match ran {
            Ok(code) => self.note_interrupted(code),
            Err(e) => {
                self.decide(
                    "evacuation_failed",
                    format!("the evacuation of {zone} failed: {}", super::describe(&e)),
                    vec![],
                )
                .await
            }
        }
    }

    async fn recover(&mut self, zone: &str) -> i32 {
        let ctx = self.ctx.for_another_run(self.guarded());
        let args = self.args.recover(Some(zone));
        self.acting(Some(format!("recovering {zone}")));
        let ran = super::recover::run(&ctx, &args).await;
        self.acting(None);
        let code = match ran {
            Ok(code) => code,
            Err(e) => {
                crate::say!(
                    "azevac: error: watch: the recovery of {zone} failed: {}",
                    crate::report::clean(&super::describe(&e))
                );
                e.exit_code()
            }
        };
        self.note_interrupted(code);
        code
    }

    /// A run a signal stopped ends the watcher with its exit code.
    fn note_interrupted(&mut self, code: i32) {
        if code > 128 {
            self.code = code;
        }
    }

    /// Tell the operator (stderr or the JSON log, and `--notify`) what the watcher decided.
    async fn decide(&self, event: &str, what: String, details: Vec<String>) {
        if crate::process::events::json() {
            crate::process::events::note(
                "INFO",
                &format!("watch_{event}"),
                serde_json::json!({
                    "watcher": self.me.holder,
                    "region": self.ctx.region,
                    "message": what,
                    "details": details,
                    "dry_run": self.args.dry_run,
                }),
            );
        } else {
            crate::say!("azevac: watch: {}", clean(&what));
            for line in &details {
                crate::say!("  {}", clean(line));
            }
        }
        let what = match self.args.dry_run {
            true => format!("(dry run) {what}"),
            false => what,
        };
        let message = crate::app::notify::watcher(&self.ctx.region, &self.me.caller, event, &what, &details);
        self.notifier.publish(&message).await;
    }

    /// Wait `how_long`, or less when a signal comes.
    async fn pause(&self, how_long: Duration) {
        tokio::select! {
            () = tokio::time::sleep(how_long) => {}
            () = self.interrupted() => {}
        }
    }

    /// Returns once a signal has asked the watcher to stop.
    async fn interrupted(&self) {
        while !self.interrupt.requested() {
            tokio::time::sleep(TICK).await;
        }
    }
}

/// The zone to follow: an autoshift before a FIS experiment before a practice run, then the zone
/// traffic has been away from longest (ties: by AZ ID).
fn strongest(away: &BTreeMap<String, Away>) -> Option<(String, Away)> {
    away.iter()
        .min_by_key(|(zone, a)| (a.origin.rank(), a.since, zone.as_str()))
        .map(|(zone, a)| (zone.clone(), a.clone()))
}

/// The zone, if any, whose shift outranks the one away from `following` (a real autoshift while
/// a practice run is followed): the rehearsal gives way.
fn outranked(away: &BTreeMap<String, Away>, following: &str) -> Option<String> {
    let held = away.get(following)?;
    strongest(away)
        .filter(|(zone, other)| zone != following && other.origin.rank() < held.origin.rank())
        .map(|(zone, _)| zone)
}

/// The event and message IDs judged, the oldest forgotten first.
#[derive(Default)]
struct Remembered {
    ids: HashSet<String>,
    order: VecDeque<String>,
}

impl Remembered {
    /// Remember `id`; whether it is new.
    fn insert(&mut self, id: &str) -> bool {
        if !self.ids.insert(id.to_owned()) {
            return false;
        }
        self.order.push_back(id.to_owned());
        if self.order.len() > REMEMBERED {
            if let Some(oldest) = self.order.pop_front() {
                self.ids.remove(&oldest);
            }
        }
        true
    }
}

/// The lease held: renewed every third of a lease in the background (evacuations and waves take
/// longer than a lease), and whether it is still safe to act under. The run in flight is stopped
/// the moment it is not.
struct Leadership {
    state: Arc<LeaseState>,
    heartbeat: tokio::task::JoinHandle<()>,
}

struct LeaseState {
    journal: Journal,
    lease: Duration,
    /// The item as the next renewal writes it.
    item: Mutex<Watcher>,
    /// One write of the item at a time, each with the item as it is when its turn comes: a
    /// renewal that read the item before the zone followed was set must not land after the write
    /// that set it.
    writing: tokio::sync::Mutex<()>,
    /// Until when the lease holds by this machine's monotonic clock.
    until: Mutex<Instant>,
    /// Set when a renewal found the lease another's.
    lost: AtomicBool,
    /// The interrupt of the run the watcher carries out now, stopped once the lease is lost.
    run: Mutex<Option<crate::process::interrupt::Interrupt>>,
    /// The last renewal's error, until one succeeds: why the lease was lost, if it is.
    failed: Mutex<Option<String>>,
    /// The watcher's health: a renewal while a run is in flight is its beat (the loop does not
    /// turn meanwhile), and a lease lost is said at once.
    beacon: Arc<Beacon>,
}

impl LeaseState {
    /// Renew the lease with what `item` says; whether it is still this watcher's.
    async fn renew(&self) -> bool {
        let _one_at_a_time = self.writing.lock().await;
        if self.lost.load(Ordering::SeqCst) {
            return false;
        }
        let item = self.item.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let asked = Instant::now();
        match self.journal.renew_watch(&item, self.lease).await {
            Ok(true) => {
                *self.until.lock().unwrap_or_else(|e| e.into_inner()) = asked + self.lease;
                *self.failed.lock().unwrap_or_else(|e| e.into_inner()) = None;
                if self.run.lock().unwrap_or_else(|e| e.into_inner()).is_some() {
                    self.beacon.beat();
                }
                true
            }
            Ok(false) => {
                self.lost.store(true, Ordering::SeqCst);
                false
            }
            Err(e) => {
                // The lease runs out on its own if this goes on: the watcher then stops acting.
                let why = format!("cannot renew the watcher's lease: {}", super::describe(&e));
                crate::say!("azevac: warning: watch: {}", crate::report::clean(&why));
                *self.failed.lock().unwrap_or_else(|e| e.into_inner()) = Some(why);
                false
            }
        }
    }

    /// Why the lease is no longer this watcher's to act under, in one line.
    fn why_lost(&self) -> String {
        if self.lost.load(Ordering::SeqCst) {
            return "lease lost: another watcher took it over (this one's renewals had not landed in time)".to_owned();
        }
        match self.failed.lock().unwrap_or_else(|e| e.into_inner()).as_deref() {
            Some(why) => format!("lease lost: not renewed in time ({why})"),
            None => "lease lost: not renewed in time".to_owned(),
        }
    }

    /// When this watcher stops acting: a quarter of a lease before the lease runs out by its clock
    /// (a standby takes over only a quarter of a lease after it ran out by the item's).
    fn deadline(&self) -> Instant {
        *self.until.lock().unwrap_or_else(|e| e.into_inner()) - self.lease / 4
    }

    fn holds(&self) -> bool {
        !self.lost.load(Ordering::SeqCst) && Instant::now() < self.deadline()
    }

    /// Stop the run in flight, if any: the lease can no longer be trusted.
    fn stop_run(&self) {
        if let Some(run) = self.run.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            if !run.requested() {
                crate::say!(
                    "azevac: watch: the lease can no longer be trusted: the run in flight starts nothing more (the \
                     changes under way finish under their locks)"
                );
            }
            run.stop(LEASE_LOST);
        }
    }

    /// Renew every third of a lease; stop the run in flight at the deadline when renewals failed
    /// (a renewal that hangs too), and for good once another watcher holds the lease.
    async fn beat(&self) {
        let deadline = |state: &LeaseState| tokio::time::Instant::from_std(state.deadline());
        let mut next = tokio::time::Instant::now() + self.lease / 3;
        loop {
            tokio::select! {
                () = tokio::time::sleep_until(next) => {}
                () = tokio::time::sleep_until(deadline(self)), if self.holds() => {}
            }
            if tokio::time::Instant::now() >= next {
                next = tokio::time::Instant::now() + self.lease / 3;
                let renewal = self.renew();
                tokio::pin!(renewal);
                tokio::select! {
                    _ = &mut renewal => {}
                    () = tokio::time::sleep_until(deadline(self)), if self.holds() => {
                        self.stop_run();
                        renewal.await;
                    }
                }
            }
            if !self.holds() {
                if self.beacon.state() != State::LeaseLost {
                    self.beacon.set(State::LeaseLost, &self.why_lost());
                }
                self.stop_run();
                if self.lost.load(Ordering::SeqCst) {
                    return;
                }
            }
        }
    }
}

impl Leadership {
    /// The lease `held`, claimed by a call sent at `asked`.
    fn start(journal: &Journal, held: Watcher, lease: Duration, asked: Instant, beacon: &Arc<Beacon>) -> Leadership {
        let state = Arc::new(LeaseState {
            journal: journal.clone(),
            lease,
            item: Mutex::new(held),
            writing: tokio::sync::Mutex::new(()),
            until: Mutex::new(asked + lease),
            lost: AtomicBool::new(false),
            run: Mutex::new(None),
            failed: Mutex::new(None),
            beacon: Arc::clone(beacon),
        });
        let beating = Arc::clone(&state);
        let heartbeat = tokio::spawn(async move { beating.beat().await });
        Leadership { state, heartbeat }
    }

    /// Whether the lease is still this watcher's with a quarter of it to spare: past that, it
    /// stops acting (a standby takes over only a quarter of a lease after it ran out).
    fn holds(&self) -> bool {
        self.state.holds()
    }

    /// Why the lease was lost, in one line.
    fn why_lost(&self) -> String {
        self.state.why_lost()
    }

    /// The run guarded is over: a later loss of the lease has nothing to stop.
    fn unguard(&self) {
        *self.state.run.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// Stop `run` once the lease is lost (at once if it already is).
    fn guard(&self, run: &crate::process::interrupt::Interrupt) {
        *self.state.run.lock().unwrap_or_else(|e| e.into_inner()) = Some(run.clone());
        if !self.holds() {
            run.stop(LEASE_LOST);
        }
    }

    /// What the next renewal writes.
    fn update(&self, item: &Watcher) {
        let mut held = self.state.item.lock().unwrap_or_else(|e| e.into_inner());
        held.heard_at = item.heard_at;
        held.following = item.following.clone();
        held.acting = item.acting.clone();
    }

    /// Write `item` now (the zone followed changed); whether the lease is still this watcher's.
    async fn write(&self, item: &Watcher) -> bool {
        self.update(item);
        self.state.renew().await && self.holds()
    }

    fn stop(self) {
        drop(self);
    }
}

impl Drop for Leadership {
    fn drop(&mut self) {
        self.heartbeat.abort();
    }
}

/// Seconds since the epoch, now.
fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

/// An instant in seconds since the epoch, as RFC 3339.
fn rfc3339(seconds: i64) -> String {
    let at = std::time::UNIX_EPOCH + Duration::from_secs(u64::try_from(seconds).unwrap_or_default());
    humantime::format_rfc3339_seconds(at).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redelivered_id_is_recognised_and_the_oldest_forgotten() {
        let mut judged = Remembered::default();
        assert!(judged.insert("a"));
        assert!(!judged.insert("a"));
        for i in 0..REMEMBERED {
            judged.insert(&i.to_string());
        }
        assert!(judged.insert("a"), "the oldest is forgotten once the memory is full");
        assert_eq!(judged.order.len(), REMEMBERED);
    }

    #[test]
    fn a_real_autoshift_outranks_a_rehearsal_followed() {
        let away = BTreeMap::from([
            (
                "use1-az1".to_owned(),
                Away {
                    origin: Origin::PracticeRun,
                    since: 10,
                },
            ),
            (
                "use1-az3".to_owned(),
                Away {
                    origin: Origin::Autoshift,
                    since: 20,
                },
            ),
        ]);
        assert_eq!(strongest(&away).map(|(z, _)| z).as_deref(), Some("use1-az3"));
        assert_eq!(outranked(&away, "use1-az1").as_deref(), Some("use1-az3"));
        assert_eq!(outranked(&away, "use1-az3"), None);
        assert_eq!(outranked(&away, "use1-az2"), None, "a zone no longer away has ended");
    }

    #[test]
    fn the_zone_away_longest_is_followed() {
        let at = |since| Away {
            origin: Origin::Autoshift,
            since,
        };
        let away = BTreeMap::from([("use1-az3".to_owned(), at(10)), ("use1-az1".to_owned(), at(20))]);
        assert_eq!(strongest(&away).map(|(z, _)| z).as_deref(), Some("use1-az3"));
        assert_eq!(strongest(&BTreeMap::new()), None);
        assert_eq!(outranked(&away, "use1-az1"), None, "an autoshift gives way to none");
    }
}
