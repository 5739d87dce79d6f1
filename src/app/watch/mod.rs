//! The watcher: follow AWS's zonal autoshift onto the control plane. AWS moves a zone's
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
//!
//! The jobs are split by file: [`turns`] (the loop: the lease, the queue, the resync), [`hear`]
//! (the queue's messages judged, once), [`follow`] (ARC's autoshifts against the zone followed:
//! evacuate, recover) and [`renew`] (azevac's zonal shifts kept from lapsing). The lease's
//! heartbeat is the journal's ([`crate::journal::Leadership`]).

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use crate::app::autoshift::queue::Queue;
use crate::app::health::{Beacon, State};
use crate::app::notify::Notifier;
use crate::app::{Context, Order, Screen, EXIT_OK};
use crate::error::describe;
use crate::journal::{Leadership, Watcher};
use crate::model::text::clean;
use crate::model::Request;
use crate::{Error, Result};

mod follow;
mod hear;
mod renew;
mod turns;

use hear::Remembered;

/// What the watcher is asked to do, from its flags.
pub struct Orders {
    /// The SQS queue an EventBridge rule feeds with ARC zonal shift's events.
    pub queue: String,
    /// The types the watcher evacuates and recovers.
    pub types: Vec<String>,
    /// The evacuation it runs (its reason is each run's own).
    pub evacuation: Request,
    /// The recovery it runs (in waves when it asks for them).
    pub recovery: Request,
    /// The kubeconfig for the Kubernetes kinds.
    pub kubeconfig: Option<std::path::PathBuf>,
    /// `--wait`.
    pub wait: bool,
    /// How long `--wait` waits (and each wave waits for its alarms).
    pub wait_timeout: Duration,
    /// The `--notify` topics.
    pub notify: Vec<String>,
    /// Follow practice runs and FIS experiments too.
    pub follow_practice: bool,
    /// Change nothing and take no lease.
    pub dry_run: bool,
    /// How often the watcher compares ARC's autoshifts with what it follows, whatever the queue says.
    pub resync: Duration,
    /// How long one receive waits for a message.
    pub poll_wait: Duration,
}

impl Orders {
    /// The run of `request` in `zone`, as the watcher's flags say to carry it out.
    fn order<'a>(&'a self, zone: &'a str, request: &'a Request) -> Order<'a> {
        Order {
            az_id: Some(zone),
            request,
            kubeconfig: self.kubeconfig.clone(),
            wait: self.wait,
            wait_timeout: self.wait_timeout,
            notify: &self.notify,
            dry_run: self.dry_run,
        }
    }
}

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

/// Watch until SIGTERM or Ctrl-C, as `orders` say, showing each run on `screen`; returns the exit
/// code (an evacuation or recovery a signal stopped ends the watcher with its code).
pub async fn watch(ctx: &Context, orders: &Orders, beacon: &Arc<Beacon>, screen: &dyn Screen) -> Result<i32> {
    // Everything that can be wrong with the input is said before the watcher starts: the queue,
    // the journal, the alarms of the recovery's waves.
    let queue = Queue::new(&ctx.sdk, &orders.queue);
    let queue_arn = queue.check().await?;
    if !orders.dry_run {
        ctx.journal.require().await?;
    }
    let gates = crate::app::waves::Gates::of(ctx, &orders.recovery, orders.wait_timeout, orders.kubeconfig.clone())?;
    if let Some(gates) = gates {
        gates.check("--alarm", "--alarm-prefix").await?;
    }
    beacon.beat();
    rehearse(ctx, orders).await?;
    beacon.beat();
    let caller = match ctx.identity().await {
        Ok((arn, _)) => arn.clone(),
        Err(_) => "unknown".to_owned(),
    };
    crate::say!(
        "azevac: watching {} for ARC's autoshifts in {}{} (watcher {})",
        clean(&queue_arn),
        ctx.region,
        if orders.dry_run {
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
            queue: orders.queue.clone(),
            since: now(),
            expires_at: 0,
            heard_at: None,
            following: None,
            acting: None,
            lease: ctx.settings.lease.as_secs(),
        },
        ctx,
        orders,
        screen,
        queue,
        notifier: Notifier::new(&ctx.sdk, &orders.notify),
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
async fn rehearse(ctx: &Context, orders: &Orders) -> Result<()> {
    let planned = tokio::time::timeout(REHEARSAL, async {
        let ec2 = crate::client!(aws_sdk_ec2, &ctx.sdk);
        let zones = crate::model::topology::Zones::load(&ec2, &ctx.region).await?;
        let Some(zone) = zones.all().first() else {
            return Ok(Vec::new());
        };
        let request = Request {
            reason: Some("azevac watch: the plan checked at start".into()),
            ..orders.evacuation.clone()
        };
        let prepared = ctx
            .prepare(
                crate::model::Command::Evacuate,
                Some(&zone.id),
                &request,
                orders.kubeconfig.clone(),
            )
            .await?;
        Ok(prepared.plan.problems)
    })
    .await;
    let warn = |what: String| {
        crate::say!(
            "azevac: warning: watch: the evacuation could not be planned at start: {}",
            crate::model::text::clean(&what)
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
            warn(describe(&e));
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

/// One watcher's state.
struct Watch<'a> {
    ctx: &'a Context,
    orders: &'a Orders,
    /// Where each run's plan and result are shown.
    screen: &'a dyn Screen,
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
    /// Whether this watcher may act now: it holds the lease with time to spare (a dry run changes
    /// nothing and takes no lease).
    fn holds(&self) -> bool {
        self.orders.dry_run || self.leader.as_ref().is_some_and(Leadership::holds)
    }

    /// Hand what the lease item says (heard, following, acting) to the next renewal.
    fn share(&self) {
        if let Some(leader) = &self.leader {
            leader.update(&self.me);
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
                let detail = match self.orders.dry_run {
                    true => format!("{what}, changing nothing (--dry-run)"),
                    false => format!("holds the lease; {what}"),
                };
                self.beacon.set(State::Healthy, &detail);
            }
        }
        self.me.acting = what;
        self.share();
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
                    "dry_run": self.orders.dry_run,
                }),
            );
        } else {
            crate::say!("azevac: watch: {}", clean(&what));
            for line in &details {
                crate::say!("  {}", clean(line));
            }
        }
        let what = match self.orders.dry_run {
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
