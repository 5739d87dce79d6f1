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
use crate::autoshift::arc::{self, Away};
use crate::autoshift::event::{self, Change, Origin};
use crate::autoshift::queue::{Message, Queue};
use crate::cli;
use crate::journal::{Claim, Journal, Watcher};
use crate::notify::Notifier;
use crate::text::clean;
use crate::Result;

/// How many event and message IDs are remembered as judged (a redelivery is recognised among them).
const REMEMBERED: usize = 10_000;
/// How often a wait looks at the interrupt: SIGTERM must not wait for a long poll to end.
const TICK: Duration = Duration::from_millis(250);
/// How long the watcher waits before it reads the queue again after a receive failed.
const RETRY: Duration = Duration::from_secs(5);

/// Run `azevac watch` until SIGTERM or Ctrl-C; returns the exit code.
pub async fn run(ctx: &Context, args: &cli::Watch) -> Result<i32> {
    // Everything that can be wrong with the input is said before the watcher starts: the queue,
    // the journal, the alarms of the recovery's waves.
    let queue = Queue::new(&ctx.sdk, &args.queue);
    let queue_arn = queue.check().await?;
    if !args.dry_run {
        ctx.journal.require().await?;
    }
    if let Some(gates) = super::waves::Gates::of(ctx, &args.recover(None)) {
        gates.check().await?;
    }
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
        },
        ctx,
        args,
        queue,
        notifier: Notifier::new(&ctx.sdk, &args.notify.topics),
        interrupt: crate::interrupt::Interrupt::listen(),
        judged: Remembered::default(),
        unfollowed: BTreeSet::new(),
        started_by: BTreeMap::new(),
        code: EXIT_OK,
    };
    watch.run().await;
    Ok(watch.code)
}

/// One watcher's state.
struct Watch<'a> {
    ctx: &'a Context,
    args: &'a cli::Watch,
    queue: Queue,
    notifier: Notifier,
    interrupt: crate::interrupt::Interrupt,
    /// The lease item as this watcher would write it (the zone followed, when it last heard).
    me: Watcher,
    /// Event and message IDs already judged.
    judged: Remembered,
    /// Zones reported as not followed (reported once per autoshift).
    unfollowed: BTreeSet<String>,
    /// The event that started each zone's autoshift, for the evacuation's reason.
    started_by: BTreeMap<String, String>,
    /// The exit code: an evacuation or recovery interrupted by a signal ends the watcher with its code.
    code: i32,
}

impl Watch<'_> {
    async fn run(&mut self) {
        let mut leader: Option<Leadership> = None;
        let mut standing_by_for: Option<String> = None;
        let mut next_resync = Instant::now();
        while !self.interrupt.requested() {
            if !self.args.dry_run && leader.as_ref().is_none_or(|l| !l.holds()) {
                if let Some(lost) = leader.take() {
                    lost.stop();
                    self.decide(
                        "lease_lost",
                        "lease lost: this watcher stopped acting and stands by".into(),
                        vec![],
                    )
                    .await;
                }
                match self.ctx.journal.claim_watch(&self.me, self.ctx.lease).await {
                    Ok(Claim::Held(held)) => {
                        let took_over = standing_by_for.take();
                        self.me.following = held.following.clone();
                        let what = match (&took_over, &held.following) {
                            (Some(other), Some(zone)) => {
                                format!("took the lease over from watcher {other}, following {zone}")
                            }
                            (Some(other), None) => format!("took the lease over from watcher {other}"),
                            (None, Some(zone)) => format!("holds the lease, following {zone}"),
                            (None, None) => "holds the lease".to_owned(),
                        };
                        self.decide("lease_held", what, vec![]).await;
                        leader = Some(Leadership::start(&self.ctx.journal, held, self.ctx.lease));
                        next_resync = Instant::now();
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
                        self.pause(self.ctx.lease / 3).await;
                        continue;
                    }
                    Err(e) => {
                        crate::say!(
                            "azevac: warning: watch: cannot claim the watcher's lease: {}",
                            crate::report::clean(&super::describe(&e))
                        );
                        self.pause(self.ctx.lease / 3).await;
                        continue;
                    }
                }
            }
            let mut wake = false;
            match self.receive().await {
                Some(Ok(messages)) => {
                    self.me.heard_at = Some(now());
                    if let Some(leader) = &leader {
                        leader.update(&self.me);
                    }
                    for message in messages {
                        wake |= self.judge(&message).await;
                        if let Err(e) = self.queue.delete(&message).await {
                            crate::say!(
                                "azevac: warning: watch: cannot delete message {} from the queue (it comes back \
                                 and is recognised): {}",
                                clean(&message.id),
                                crate::report::clean(&super::describe(&e))
                            );
                        }
                    }
                }
                Some(Err(e)) => {
                    crate::say!(
                        "azevac: warning: watch: cannot read the queue: {}; trying again",
                        crate::report::clean(&super::describe(&e))
                    );
                    self.pause(RETRY).await;
                }
                None => break,
            }
            let resync = Instant::now() >= next_resync;
            if (wake || resync) && !self.interrupt.requested() {
                if leader.as_ref().is_some_and(|l| !l.holds()) {
                    continue;
                }
                self.reconcile(resync, leader.as_ref()).await;
                if resync {
                    if !self.interrupt.requested() {
                        self.renew_shifts().await;
                    }
                    next_resync = Instant::now() + self.args.resync;
                }
            }
        }
        if let Some(leader) = leader {
            leader.stop();
            self.me.expires_at = 0;
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

    /// One long poll of the queue; `None` when a signal came first.
    async fn receive(&self) -> Option<Result<Vec<Message>>> {
        tokio::select! {
            received = self.queue.receive(self.args.poll_wait) => Some(received),
            () = self.interrupted() => None,
        }
    }

    /// Judge one message: report what it is and what the watcher makes of it, once. Whether it
    /// asks the watcher to look at ARC's autoshifts now.
    async fn judge(&mut self, message: &Message) -> bool {
        let event = match event::parse(&message.body, &self.ctx.region) {
            Ok(event) => event,
            Err(rejected) => {
                if self.judged.insert(&format!("message {}", message.id)) {
                    self.decide(
                        "message_rejected",
                        format!("message {} deleted unread: {rejected}", message.id),
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
    /// is back.
    async fn reconcile(&mut self, resync: bool, leader: Option<&Leadership>) {
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
        // One zone after another: a recovery done, the next zone traffic is away from is followed.
        loop {
            match self.me.following.clone() {
                None => {
                    let Some((zone, since)) = earliest(&away) else {
                        return;
                    };
                    self.report_unfollowed(&away, &zone).await;
                    // The zone is written to the lease before anything is changed: a watcher that
                    // takes over must know to recover it.
                    self.me.following = Some(zone.clone());
                    if let Some(leader) = leader {
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
                Some(zone) if away.contains_key(&zone) => {
                    self.report_unfollowed(&away, &zone).await;
                    if resync {
                        tracing::info!(%zone, "resync: evacuating the followed zone again");
                        let reason = format!("autoshift away from {zone}: resync");
                        self.evacuate(&zone, reason).await;
                    }
                    return;
                }
                Some(zone) => {
                    self.decide(
                        "recovering",
                        format!("autoshift away from {zone} has ended: recovering {zone}"),
                        vec![],
                    )
                    .await;
                    let code = self.recover(&zone).await;
                    if code != EXIT_OK {
                        self.decide(
                            "recovery_incomplete",
                            format!(
                                "the recovery of {zone} did not finish (exit {code}): its records stay; the \
                                 watcher tries again in {}",
                                humantime::format_duration(self.args.resync)
                            ),
                            vec![],
                        )
                        .await;
                        return;
                    }
                    self.me.following = None;
                    if let Some(leader) = leader {
                        leader.write(&self.me).await;
                    }
                    self.started_by.remove(&zone);
                    self.decide("recovered", format!("{zone} recovered: following no zone"), vec![])
                        .await;
                    if self.interrupt.requested() {
                        return;
                    }
                }
            }
        }
    }

    /// Extend azevac's zonal shifts (the caller's own account's) that end within the hour, zone by
    /// zone, as `azevac shift extend` does: the watcher keeps them from lapsing in a long incident,
    /// whoever started them and whatever zone it follows.
    async fn renew_shifts(&mut self) {
        use crate::plugins::zonal_shift::{expiry, RENEW_WITHIN, TYPE};
        let records: Vec<_> = match self.ctx.journal.of_type(TYPE, None).await {
            Ok(entries) => entries
                .into_iter()
                .filter_map(std::result::Result::ok)
                .filter(|r| r.account_id.is_none())
                .collect(),
            Err(e) => {
                crate::say!(
                    "azevac: warning: watch: cannot read azevac's zonal shifts from the journal: {}",
                    crate::report::clean(&super::describe(&e))
                );
                return;
            }
        };
        if records.is_empty() {
            return;
        }
        let ending: BTreeSet<String> = match expiry::of(&self.ctx.sdk, &records, RENEW_WITHIN).await {
            Ok(shifts) => shifts
                .into_iter()
                .flatten()
                .filter(|s| s.standing == expiry::Standing::Active && s.expiring(RENEW_WITHIN))
                .map(|s| s.az_id)
                .collect(),
            Err(e) => {
                crate::say!(
                    "azevac: warning: watch: cannot read from ARC when azevac's zonal shifts end: {}",
                    crate::report::clean(&super::describe(&e))
                );
                return;
            }
        };
        for zone in ending {
            self.decide(
                "shifts_extended",
                format!("azevac's zonal shifts away from {zone} end within the hour: extending them"),
                vec![],
            )
            .await;
            let mut ctx = self.ctx.for_another_run();
            ctx.heading = Some("shift extend");
            let extend = cli::ShiftExtend {
                az_id: Some(zone.clone()),
                expiry: crate::plugins::zonal_shift::flags::Expiry {
                    expires_in: crate::plugins::zonal_shift::DEFAULT_EXPIRES_IN.to_owned(),
                },
                confirm: self.args.evacuate(&zone, String::new()).confirm,
            };
            let no_wait = cli::Wait {
                wait: false,
                wait_timeout: Duration::ZERO,
            };
            match super::shift::extend(&ctx, &zone, &extend.request(), &extend.confirm, &no_wait).await {
                Ok(code) => self.note_interrupted(code),
                Err(e) => crate::say!(
                    "azevac: warning: watch: could not extend azevac's zonal shifts away from {zone}: {}",
                    crate::report::clean(&super::describe(&e))
                ),
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

    async fn evacuate(&mut self, zone: &str, reason: String) {
        let ctx = self.ctx.for_another_run();
        let args = self.args.evacuate(zone, reason);
        let code = match super::evacuate::run(&ctx, &args).await {
            Ok(code) => code,
            Err(e) => {
                self.decide(
                    "evacuation_failed",
                    format!("the evacuation of {zone} failed: {}", super::describe(&e)),
                    vec![],
                )
                .await;
                return;
            }
        };
        self.note_interrupted(code);
    }

    async fn recover(&mut self, zone: &str) -> i32 {
        let ctx = self.ctx.for_another_run();
        let args = self.args.recover(Some(zone));
        let code = match super::recover::run(&ctx, &args).await {
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
        // A dry run's recovery changes nothing: the zone stays followed, and is planned again.
        if self.args.dry_run && code == EXIT_OK {
            return EXIT_OK;
        }
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
        if crate::events::json() {
            crate::events::note(
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
        let message = crate::notify::watcher(&self.ctx.region, &self.me.caller, event, &what, &details);
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

/// The zone traffic has been away from longest (ties: by AZ ID).
fn earliest(away: &BTreeMap<String, Away>) -> Option<(String, Away)> {
    away.iter()
        .min_by_key(|(zone, a)| (a.since, zone.as_str()))
        .map(|(zone, a)| (zone.clone(), a.clone()))
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
/// longer than a lease), and whether it is still safe to act under.
struct Leadership {
    state: Arc<LeaseState>,
    heartbeat: tokio::task::JoinHandle<()>,
}

struct LeaseState {
    journal: Journal,
    lease: Duration,
    /// The item as the next renewal writes it.
    item: Mutex<Watcher>,
    /// Until when the lease holds by this machine's monotonic clock.
    until: Mutex<Instant>,
    /// Set when a renewal found the lease another's.
    lost: AtomicBool,
}

impl LeaseState {
    /// Renew the lease with what `item` says; whether it is still this watcher's.
    async fn renew(&self) -> bool {
        let item = self.item.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let asked = Instant::now();
        match self.journal.renew_watch(&item, self.lease).await {
            Ok(true) => {
                *self.until.lock().unwrap_or_else(|e| e.into_inner()) = asked + self.lease;
                true
            }
            Ok(false) => {
                self.lost.store(true, Ordering::SeqCst);
                false
            }
            Err(e) => {
                // The lease runs out on its own if this goes on: the watcher then stops acting.
                crate::say!(
                    "azevac: warning: watch: cannot renew the watcher's lease: {}",
                    crate::report::clean(&super::describe(&e))
                );
                false
            }
        }
    }
}

impl Leadership {
    fn start(journal: &Journal, held: Watcher, lease: Duration) -> Leadership {
        let state = Arc::new(LeaseState {
            journal: journal.clone(),
            lease,
            item: Mutex::new(held),
            until: Mutex::new(Instant::now() + lease),
            lost: AtomicBool::new(false),
        });
        let beating = Arc::clone(&state);
        let heartbeat = tokio::spawn(async move {
            loop {
                tokio::time::sleep(beating.lease / 3).await;
                beating.renew().await;
                if beating.lost.load(Ordering::SeqCst) {
                    return;
                }
            }
        });
        Leadership { state, heartbeat }
    }

    /// Whether the lease is still this watcher's with a quarter of it to spare: past that, it
    /// stops acting (a standby takes over only a quarter of a lease after it ran out).
    fn holds(&self) -> bool {
        let until = *self.state.until.lock().unwrap_or_else(|e| e.into_inner());
        !self.state.lost.load(Ordering::SeqCst) && Instant::now() + self.state.lease / 4 < until
    }

    /// What the next renewal writes.
    fn update(&self, item: &Watcher) {
        let mut held = self.state.item.lock().unwrap_or_else(|e| e.into_inner());
        held.heard_at = item.heard_at;
        held.following = item.following.clone();
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
    fn the_zone_away_longest_is_followed() {
        let at = |since| Away {
            origin: Origin::Autoshift,
            since,
        };
        let away = BTreeMap::from([("use1-az3".to_owned(), at(10)), ("use1-az1".to_owned(), at(20))]);
        assert_eq!(earliest(&away).map(|(z, _)| z).as_deref(), Some("use1-az3"));
        assert_eq!(earliest(&BTreeMap::new()), None);
    }
}
