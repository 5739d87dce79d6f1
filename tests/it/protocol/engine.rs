//! The engine's rules with a fake plugin (issue 31): what the journal keeps when an act declares a
//! step and fails, when an act reports what it never wrote ahead, when the lease cannot be renewed
//! while a change is in flight, and when the run is interrupted. The plugin is scripted; the journal
//! is real (a DynamoDB table on moto, through the fault-injecting proxy where a test needs faults).

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;

use azevac::engine::{Prepared, Settings};
use azevac::journal::{Audit, Guard, Journal};
use azevac::model::{Command, Failure, Item, Plan, Record, RecordFate, Resource, Stage, Status};
use azevac::plugins::{Acted, Plugin, Scope};
use azevac::process::interrupt::Interrupt;
use azevac::{Error, Result};

use common::proxy::{FailRule, Fault, Faults, Proxy};
use common::{attr_list, attr_s, journal_items, lock_items, Moto, ZONE};

const TYPE: &str = "fake";

/// What the fake plugin does when it carries a line out, by the line's name.
#[derive(Clone, Copy, Debug)]
enum Script {
    /// Declares `step-1` of the planned `[step-1, step-2]`, then fails.
    DeclareOneThenFail,
    /// Declares nothing (an empty cover: it read and found nothing to send), then fails.
    DeclareNothingThenFail,
    /// Reports `unplanned` done without having written it ahead.
    ReportUnplanned,
    /// Writes `extra` ahead, then reports the planned step and `extra` done.
    CoverExtra,
    /// Takes this long, then succeeds.
    Slow(Duration),
    /// Raises the run's interrupt as it starts (as a Ctrl-C would), then takes this long and succeeds.
    InterruptedWhile(Duration),
    /// Succeeds, but its read-back shows the change only from this try on (eventual consistency).
    ShowsAfter(usize),
    /// Succeeds, but no read-back ever shows the change.
    NeverShows,
}

struct Fake {
    scripts: BTreeMap<String, Script>,
    interrupt: Interrupt,
    /// Read-back tries so far, by line name.
    reads: std::sync::Mutex<BTreeMap<String, usize>>,
}

#[async_trait]
impl Plugin for Fake {
    fn resource_type(&self) -> &'static str {
        TYPE
    }

    async fn plan_evacuation(&self, _scope: &Scope<'_>) -> Result<Vec<Item>> {
        Ok(Vec::new())
    }

    async fn plan_recovery(&self, _records: Vec<Record>, _scope: &Scope<'_>) -> Result<Vec<Item>> {
        Ok(Vec::new())
    }

    async fn evacuate(&self, line: &Item, held: &Guard<'_>) -> Result<Acted> {
        let failed = || Error::BadInput(format!("{}: the service said no", line.name));
        match self.scripts[&line.name] {
            Script::DeclareOneThenFail => {
                held.cover(&[], &["step-1".to_owned()]).await?;
                Err(failed())
            }
            Script::DeclareNothingThenFail => {
                held.cover(&[], &[]).await?;
                Err(failed())
            }
            Script::ReportUnplanned => Ok(Acted {
                actions: Some(vec!["step-1".into(), "unplanned".into()]),
                ..Acted::default()
            }),
            Script::CoverExtra => {
                held.cover(&[], &["extra".to_owned()]).await?;
                Ok(Acted {
                    actions: Some(vec!["step-1".into(), "extra".into()]),
                    ..Acted::default()
                })
            }
            Script::Slow(how_long) => {
                tokio::time::sleep(how_long).await;
                Ok(Acted::default())
            }
            Script::InterruptedWhile(how_long) => {
                self.interrupt.raise(2);
                tokio::time::sleep(how_long).await;
                Ok(Acted::default())
            }
            Script::ShowsAfter(_) | Script::NeverShows => Ok(Acted::default()),
        }
    }

    async fn verify(&self, lines: &mut [&mut Item]) {
        for line in lines.iter_mut().filter(|l| l.status == Status::Done) {
            let mut reads = self.reads.lock().expect("reads");
            let tries = reads.entry(line.name.clone()).or_default();
            *tries += 1;
            let shows = match self.scripts.get(&line.name) {
                Some(Script::ShowsAfter(from)) => *tries >= *from,
                Some(Script::NeverShows) => false,
                _ => true,
            };
            if !shows {
                line.fail(Failure::read_back("read back does not show the change"));
            }
        }
    }

    async fn recover(&self, _line: &Item, _held: &Guard<'_>) -> Result<Acted> {
        Ok(Acted::default())
    }
}

/// A planned evacuation line of the fake type: `actions` about to be done to `name`.
fn line(name: &str, actions: &[&str]) -> Item {
    let mut item = Item::new(TYPE, &format!("fake:{name}"), name, ZONE);
    item.actions = Some(actions.iter().map(|a| a.to_string()).collect());
    // The fake kind's journal encoding is the words themselves: the engine treats steps as opaque.
    item.steps = actions.iter().map(|a| a.to_string()).collect();
    item.target = Some(Resource {
        resource_type: TYPE,
        id: format!("fake:{name}"),
        name: name.into(),
        subnets: Vec::new(),
        tags: BTreeMap::new(),
        unsupported: None,
        notes: Vec::new(),
        detail: serde_json::Value::Null,
        identity: None,
    });
    item
}

fn settings(concurrency: usize, lease: Duration, interrupt: &Interrupt) -> Settings {
    Settings {
        concurrency,
        progress: false,
        lease,
        wait: None,
        paced: BTreeMap::new(),
        in_flight: Duration::from_secs(3),
        interrupt: interrupt.clone(),
        run_events: true,
    }
}

/// Carry `lines` out with the fake plugin scripted by `scripts`, the journal at `endpoint`.
async fn run(endpoint: &str, lines: Vec<Item>, scripts: &[(&str, Script)], settings: &Settings) -> Plan {
    run_as(Command::Evacuate, endpoint, lines, scripts, settings).await
}

/// [`run`], for `command`.
async fn run_as(
    command: Command,
    endpoint: &str,
    lines: Vec<Item>,
    scripts: &[(&str, Script)],
    settings: &Settings,
) -> Plan {
    let sdk = common::sdk_at(endpoint).await;
    let journal = Journal::new(&sdk, "azevac-journal");
    journal.create().await.expect("journal table");
    let plan = Plan {
        az_id: Some(ZONE.into()),
        items: lines,
        ..Plan::empty(command)
    };
    let fake = Fake {
        scripts: scripts.iter().map(|(n, s)| (n.to_string(), *s)).collect(),
        interrupt: settings.interrupt.clone(),
        reads: std::sync::Mutex::new(BTreeMap::new()),
    };
    let audit = Audit {
        run_id: "run-fake".into(),
        caller: "arn:aws:iam::123456789012:user/op".into(),
        reason: None,
        account_id: None,
    };
    Prepared::new(plan, vec![Box::new(fake)])
        .carry_out(&journal, &audit, settings)
        .await
        .0
}

fn item<'a>(plan: &'a Plan, name: &str) -> &'a Item {
    plan.items.iter().find(|i| i.name == name).expect("line")
}

async fn records(moto: &Moto) -> BTreeMap<String, (String, Vec<String>)> {
    journal_items(&common::sdk(moto).await)
        .await
        .iter()
        .map(|i| {
            (
                attr_s(i, "resource_name"),
                (attr_s(i, "state"), attr_list(i, "actions")),
            )
        })
        .collect()
}

/// A failed line keeps what its act declared and nothing of the plan's guess; an act that declared
/// nothing before failing leaves no record at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_31_a_failed_act_leaves_what_it_declared_and_no_more() {
    let moto = Moto::start();
    let never = Interrupt::default();
    let plan = run(
        &moto.endpoint,
        vec![line("one", &["step-1", "step-2"]), line("none", &["step-1"])],
        &[
            ("one", Script::DeclareOneThenFail),
            ("none", Script::DeclareNothingThenFail),
        ],
        &settings(16, Duration::from_secs(60), &never),
    )
    .await;
    assert_eq!(item(&plan, "one").status, Status::Failed);
    assert_eq!(item(&plan, "none").status, Status::Failed);
    let stored = records(&moto).await;
    assert_eq!(
        stored.get("one"),
        Some(&("intent".to_owned(), vec!["step-1".to_owned()])),
        "{stored:?}"
    );
    assert!(!stored.contains_key("none"), "nothing can have been done: {stored:?}");
    assert!(lock_items(&common::sdk(&moto).await).await.is_empty(), "locks released");
}

/// An act that reports a step it never wrote ahead is a bug: the line fails naming it, and the
/// step is journalled all the same (never forgotten); a step written ahead through the guard is
/// simply done.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_31_an_outcome_the_record_does_not_cover_fails_its_line() {
    let moto = Moto::start();
    let never = Interrupt::default();
    let plan = run(
        &moto.endpoint,
        vec![line("sneaky", &["step-1"]), line("careful", &["step-1"])],
        &[("sneaky", Script::ReportUnplanned), ("careful", Script::CoverExtra)],
        &settings(16, Duration::from_secs(60), &never),
    )
    .await;
    let sneaky = item(&plan, "sneaky");
    assert_eq!(sneaky.status, Status::Failed);
    let failure = sneaky.failure.clone().expect("a failure");
    assert!(
        failure.stage == Stage::Internal
            && failure.error.contains("unplanned")
            && failure.error.contains("journalled now"),
        "{failure:?}"
    );
    assert_eq!(item(&plan, "careful").status, Status::Done);
    let stored = records(&moto).await;
    assert_eq!(
        stored["sneaky"],
        ("done".to_owned(), vec!["step-1".to_owned(), "unplanned".to_owned()])
    );
    assert_eq!(
        stored["careful"],
        ("done".to_owned(), vec!["step-1".to_owned(), "extra".to_owned()])
    );
}

/// No act outlives its lease: with every renewal refused, a change still running when less than a
/// quarter of the lease is left is given up; its record stays `intent` and its lock is left to run
/// out (another run takes it over only after `quiet_at`, the lease plus the run's longest call).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_31_an_act_is_given_up_when_its_lease_cannot_be_renewed() {
    let moto = Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    let renewal = |label: &str| FailRule {
        label: label.into(),
        body_contains: "SET #lease = :until".into(),
        fault: Fault::AccessDenied,
    };
    proxy.set(Faults {
        rules: vec![renewal("dynamodb:UpdateItem"), renewal("dynamodb:TransactWriteItems")],
        ..Faults::default()
    });
    let never = Interrupt::default();
    let started = std::time::Instant::now();
    let plan = run(
        &proxy.endpoint,
        vec![line("slow", &["step-1"])],
        &[("slow", Script::Slow(Duration::from_secs(30)))],
        &settings(16, Duration::from_secs(2), &never),
    )
    .await;
    assert!(started.elapsed() < Duration::from_secs(20), "given up, not waited out");
    let slow = item(&plan, "slow");
    assert_eq!(slow.status, Status::Failed);
    let failure = slow.failure.as_ref().expect("a failure");
    assert!(
        failure.stage == Stage::Act
            && failure.record == RecordFate::InFlight
            && failure.error.starts_with("given up in flight"),
        "{slow:?}"
    );
    let sdk = common::sdk(&moto).await;
    assert_eq!(records(&moto).await["slow"].0, "intent");
    let locks = lock_items(&sdk).await;
    assert_eq!(locks.len(), 1, "the lock is left to run out");
    let number = |name: &str| {
        locks[0]
            .get(name)
            .and_then(|v| v.as_n().ok())
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or_default()
    };
    assert!(
        number("quiet_at") >= number("lease_expires_at") + 3,
        "the lock says when the holder's calls can have ended"
    );
}

/// An interrupt: the change in flight finishes and is marked done, no other starts (their intents
/// are rolled back), every lock is released.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_31_an_interrupt_lets_the_change_in_flight_finish_and_starts_no_other() {
    let moto = Moto::start();
    let interrupt = Interrupt::default();
    let slow = Script::Slow(Duration::from_secs(1));
    let plan = run(
        &moto.endpoint,
        vec![
            line("first", &["step-1"]),
            line("second", &["step-1"]),
            line("third", &["step-1"]),
        ],
        &[
            ("first", Script::InterruptedWhile(Duration::from_secs(1))),
            ("second", slow),
            ("third", slow),
        ],
        &settings(1, Duration::from_secs(60), &interrupt),
    )
    .await;
    assert_eq!(item(&plan, "first").status, Status::Done);
    for name in ["second", "third"] {
        let line = item(&plan, name);
        assert_eq!(line.status, Status::Skipped, "{line:?}");
        assert_eq!(line.reason.as_deref(), Some("not started: interrupted (SIGINT)"));
    }
    assert_eq!(interrupt.exit_code(), Some(130));
    let stored = records(&moto).await;
    assert_eq!(stored.keys().collect::<Vec<_>>(), ["first"], "{stored:?}");
    assert!(lock_items(&common::sdk(&moto).await).await.is_empty(), "locks released");
}

/// Issue 50: AWS may answer a read right after a write with the state from before it. A change
/// whose read-back shows it only on the third try is read again until it does: done, its record
/// marked done.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_50_a_change_that_shows_late_is_read_again_until_it_does() {
    let moto = Moto::start();
    let interrupt = Interrupt::default();
    let plan = run(
        &moto.endpoint,
        vec![line("late", &["step-1"])],
        &[("late", Script::ShowsAfter(3))],
        &settings(16, Duration::from_secs(60), &interrupt),
    )
    .await;
    let late = item(&plan, "late");
    assert_eq!(late.status, Status::Done, "{late:?}");
    assert_eq!(records(&moto).await["late"].0, "done");
}

/// Issue 50: a recovery whose read-back never shows the change keeps its record (the record goes
/// only once the change is confirmed, the finalizer's rule); before, the record was deleted first
/// and the read-back's failure came after, with nothing left to recover from.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_50_a_recovery_never_read_back_keeps_its_record() {
    std::env::set_var(azevac::engine::READ_BACK_ENV, "2");
    let moto = Moto::start();
    let interrupt = Interrupt::default();
    let settings = settings(16, Duration::from_secs(60), &interrupt);
    let evacuated = run(
        &moto.endpoint,
        vec![line("stuck", &["step-1"])],
        &[("stuck", Script::Slow(Duration::ZERO))],
        &settings,
    )
    .await;
    let record = item(&evacuated, "stuck").record.clone().expect("a done record");
    let mut back = line("stuck", &["step-1"]);
    back.record = Some(record);
    let started = std::time::Instant::now();
    let plan = run_as(
        Command::Recover,
        &moto.endpoint,
        vec![back],
        &[("stuck", Script::NeverShows)],
        &settings,
    )
    .await;
    let stuck = item(&plan, "stuck");
    assert_eq!(stuck.status, Status::Failed, "{stuck:?}");
    assert!(
        stuck
            .failure
            .as_ref()
            .is_some_and(|f| f.stage == Stage::ReadBack && f.record == RecordFate::Kept),
        "{stuck:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the read-back wait is bounded"
    );
    assert_eq!(records(&moto).await["stuck"].0, "done", "the record is kept");
}
