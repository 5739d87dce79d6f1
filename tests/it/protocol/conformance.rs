//! Conformance (issue 31): one suite for every kind the registry lists (`azevac::plugins::REGISTRY`).
//! Each kind's fixture is a file of its own, `tests/it/kinds/<kind>.rs`, implementing
//! [`kinds::Fixture`]: how to seed a small estate of it (six resources an evacuation of use1-az2
//! changes, and others it must leave alone), the flags that evacuate and recover it, a snapshot of
//! its live state, a change an operator makes by hand and how its resource vanishes. The suite
//! looks each registered kind's fixture up by name. Every kind then gets every property, each its
//! own test (`conformance::<kind>::issue_31_*`):
//! - a round trip: evacuate, read back (the zone gone from exactly what changed), recover (the
//!   original exactly, no record and no lock left); a second evacuate and recover do nothing;
//! - a crash between intent and act: killed at the first changing call, before and after it lands;
//! - a kill at every journal write and every change of an evacuate and of a recover, and at a
//!   sample of the other calls, at the default concurrency with two batches in flight;
//! - a resource changed by hand between the plan and the change (held at the proxy meanwhile);
//! - a record whose resource vanished before recover: reported and kept, `--forget-missing` drops it.
//!
//! Every run is the real binary, through the fault-injecting proxy (AWS, and ARC's fake) and
//! watched by the fake Kubernetes API server, in journal batches of three lines (`AZEVAC_BATCH`),
//! so that six resources make two batches. A kind registered without a fixture fails
//! `every_registered_kind_has_a_fixture`. The figures printed ("conformance: ...", with
//! `--nocapture`) are the ones the manual's Reliability page (docs/src/reliability.md) quotes.

use crate::common;
use crate::kinds::{self, Fixture, CHANGED, ZONES};

use std::collections::{BTreeMap, BTreeSet};
use std::process::Child;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_config::SdkConfig;
use serde_json::Value;

use common::kill_points::{self, intent_batches, journal_write, named_points, Target};
use common::kube::{Cluster, FakeKube};
use common::proxy::{Faults, Hold, KillOn, KillWhen, Proxy};
use common::{attr_s, azevac_at, journal_items, lock_items, Run, ZONE};

/// Journal lines per batch in every run here: six resources make two batches, both in flight at
/// the default concurrency.
const BATCH: &str = "3";
/// The EKS cluster (and kube context `prod`) of the Kubernetes kinds.
const EKS_CLUSTER: &str = "arn:aws:eks:us-east-1:123456789012:cluster/prod";
/// How long a hold waits for its call.
const HOLD_WAIT: Duration = Duration::from_secs(60);

/// A kind, as the suite runs it: its fixture.
type Kind = &'static dyn Fixture;

/// A new kind gets the whole suite by registering and adding its fixture (a file in
/// tests/it/kinds/ and its line there): until it has one, this test names it.
#[test]
fn every_registered_kind_has_a_fixture() {
    let missing: Vec<&str> = azevac::plugins::REGISTRY
        .iter()
        .map(|r| r.name)
        .filter(|name| kinds::fixture(name).is_none())
        .collect();
    assert!(
        missing.is_empty(),
        "registered kinds without a conformance fixture in tests/it/kinds/: {missing:?}"
    );
    let gone: Vec<&str> = kinds::all()
        .iter()
        .map(|k| k.name())
        .filter(|name| !azevac::plugins::types().contains(name))
        .collect();
    assert!(gone.is_empty(), "fixtures of kinds no longer registered: {gone:?}");
}

/// A kind's live state as the suite compares it: each resource's state, by key.
pub type State = BTreeMap<String, Value>;

/// The two commands every property runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// `azevac evacuate`.
    Evacuate,
    /// `azevac recover`.
    Recover,
}

/// A freshly seeded estate: its state, and the state a complete evacuation leaves.
struct Start {
    original: State,
    evacuated: State,
}

/// One kind's estate: its own moto server, the proxy in front of it (ARC's fake included), a fake
/// Kubernetes API server and a kubeconfig naming it.
pub struct World {
    kind: Kind,
    moto: common::Moto,
    /// The proxy in front of moto, with ARC's fake.
    pub proxy: Proxy,
    /// The fake Kubernetes API server.
    pub kube: FakeKube,
    /// The SDK configuration that reaches moto directly.
    pub sdk: SdkConfig,
    dir: tempfile::TempDir,
    /// IDs learnt when seeding (subnets, NAT gateways, route tables), by name.
    ids: Mutex<BTreeMap<String, String>>,
}

impl World {
    async fn new(kind: Kind) -> World {
        let moto = common::Moto::start();
        let proxy = Proxy::start(&moto.endpoint);
        // Every kind answers to AWS's documented behaviour, not to the emulator's leniency.
        proxy.strict();
        let sdk = common::sdk(&moto).await;
        let kube = FakeKube::start(Cluster::default());
        let dir = tempfile::tempdir().expect("tempdir");
        kube.kubeconfig(dir.path(), &[("prod", EKS_CLUSTER)]);
        World {
            kind,
            moto,
            proxy,
            kube,
            sdk,
            dir,
            ids: Mutex::new(BTreeMap::new()),
        }
    }

    /// An ID learnt when seeding, by name.
    pub fn id(&self, name: &str) -> String {
        self.ids.lock().expect("ids")[name].clone()
    }

    /// The full arguments of `phase` (JSON output), with `extra`.
    fn args(&self, phase: Phase, extra: &[&str]) -> Vec<String> {
        self.args_in(ZONE, phase, extra)
    }

    /// The full arguments of `phase` (JSON output) in `zone` (evacuate), with `extra`.
    fn args_in(&self, zone: &str, phase: Phase, extra: &[&str]) -> Vec<String> {
        let name = self.kind.name();
        let mut args: Vec<String> = match phase {
            Phase::Evacuate => vec!["evacuate", "--az-id", zone, "--type", name, "--yes", "--output", "json"],
            Phase::Recover => vec!["recover", "--type", name, "--yes", "--output", "json"],
        }
        .into_iter()
        .map(str::to_owned)
        .collect();
        args.extend(self.kind.flags(phase).iter().map(|a| a.to_string()));
        if self.kind.kubernetes() {
            let kubeconfig = self.dir.path().join("kubeconfig").display().to_string();
            args.extend([
                "--kube-context".into(),
                "prod".into(),
                "--kubeconfig".into(),
                kubeconfig,
            ]);
        }
        args.extend(extra.iter().map(|a| a.to_string()));
        args
    }

    /// Run `phase` to its end.
    fn run(&self, phase: Phase, extra: &[&str]) -> Run {
        // An operator's next command comes later than a read lags a write: the strict layer's
        // stale reads live within one run (its read-back, its later batches, its second line).
        self.proxy.settle_reads();
        let args = self.args(phase, extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        azevac_at(&self.proxy.endpoint, &args, &[("AZEVAC_BATCH", Some(BATCH))])
    }

    /// Run `phase` in `zone` to its end.
    fn run_in(&self, zone: &str, phase: Phase) -> Run {
        self.proxy.settle_reads();
        let args = self.args_in(zone, phase, &[]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        azevac_at(&self.proxy.endpoint, &args, &[("AZEVAC_BATCH", Some(BATCH))])
    }

    /// Start `phase`, watched by the proxy and the fake API server (either may kill it).
    fn spawn(&self, phase: Phase) -> Arc<Mutex<Child>> {
        self.proxy.settle_reads();
        let args = self.args(phase, &[]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let child = common::spawn_quiet(&self.proxy.endpoint, &args, &[("AZEVAC_BATCH", Some(BATCH))]);
        self.proxy.watch(child.clone());
        self.kube.watch(child.clone());
        child
    }

    /// Run `phase` watched; its exit code (`None`: killed).
    fn run_watched(&self, phase: Phase) -> Option<i32> {
        common::wait_watched(&self.spawn(phase))
    }

    fn killed(&self) -> bool {
        self.proxy.killed() || self.kube.killed()
    }

    /// No fault, no kill point, no hold; the call logs emptied.
    fn disarm(&self) {
        self.proxy.set(Faults::default());
        self.kube.set_kill_on(None);
    }

    /// How the journal table differs from empty: its records and locks.
    async fn leftovers(&self) -> Vec<String> {
        let records = journal_items(&self.sdk).await.into_iter().map(|i| {
            format!(
                "record {} {} ({})",
                attr_s(&i, "resource_type"),
                attr_s(&i, "resource"),
                attr_s(&i, "state")
            )
        });
        let locks = lock_items(&self.sdk)
            .await
            .into_iter()
            .map(|i| format!("lock {}", attr_s(&i, "resource")));
        records.chain(locks).collect()
    }

    /// Recover until nothing is left to do: until a run leaves no record and no lock (the next
    /// would find nothing to do), three runs at most. Returns the problems met and how many runs it
    /// took. Killed before the journal table existed, recover asks for `azevac init`: nothing can
    /// have changed.
    async fn recover_fully(&self) -> (Vec<String>, usize) {
        let mut problems = Vec::new();
        for attempt in 1..=3 {
            let run = self.run(Phase::Recover, &[]);
            if run.code == 2 && run.stderr.contains("azevac init") {
                return (problems, attempt);
            }
            if run.code != 0 {
                problems.push(format!(
                    "recover #{attempt} exited {}: {}",
                    run.code,
                    failed_lines(&run)
                ));
            }
            if self.leftovers().await.is_empty() {
                return (problems, attempt);
            }
        }
        problems.push("records or locks left after three recovers".into());
        (problems, 3)
    }

    /// How the live state and the journal differ from `expected` and an empty table.
    async fn off(&self, expected: &State) -> Vec<String> {
        let mut off = diff(expected, &self.state().await);
        off.extend(self.leftovers().await);
        off
    }
}

/// The failed lines of a run's JSON result (name: reason), or its stderr if it printed none.
fn failed_lines(run: &Run) -> String {
    let doc: Value = serde_json::from_str(&run.stdout).unwrap_or_default();
    let failed: Vec<String> = doc["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["status"] == "failed")
        .map(|i| format!("{}: {}", i["name"], i["reason"]))
        .collect();
    if failed.is_empty() {
        run.stderr.trim().to_owned()
    } else {
        failed.join("; ")
    }
}

/// Whether a run's JSON result says it had nothing to do.
fn did_nothing(run: &Run) -> bool {
    let doc = run.json();
    ["planned", "done", "failed"]
        .iter()
        .all(|k| doc["summary"][k].as_u64().unwrap_or_default() == 0)
}

/// Each resource whose state differs, with both states.
fn diff(expected: &State, now: &State) -> Vec<String> {
    let keys: BTreeSet<&String> = expected.keys().chain(now.keys()).collect();
    keys.into_iter()
        .filter(|k| expected.get(*k) != now.get(*k))
        .map(|k| format!("{k}: {} (expected {})", show(now.get(k)), show(expected.get(k))))
        .collect()
}

fn show(value: Option<&Value>) -> String {
    value.map_or_else(|| "absent".to_owned(), Value::to_string)
}

/// Run `property` on a runtime of its own.
fn block_on(property: impl std::future::Future<Output = ()>) {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a Tokio runtime")
        .block_on(property)
}

impl World {
    /// A fresh estate of the kind: no fault, no kill point, the journal table gone.
    async fn reset(&self) -> Start {
        self.moto.reset();
        self.disarm();
        *self.kube.state.lock().expect("state") = Cluster::default();
        {
            let mut arc = self.proxy.arc.lock().expect("arc");
            arc.managed.clear();
            arc.shifts.clear();
        }
        let ids = self.kind.seed(self).await;
        *self.ids.lock().expect("ids") = ids;
        let original = self.state().await;
        let evacuated = self.evacuated(&original);
        Start { original, evacuated }
    }

    /// The kind's live state.
    async fn state(&self) -> State {
        self.kind.state(self).await
    }

    /// What a complete evacuation leaves: `r0`..`r5` out of the zone, the rest as it was.
    fn evacuated(&self, original: &State) -> State {
        let mut state = original.clone();
        for i in 0..CHANGED {
            let key = self.kind.key(i);
            let Some(resource) = state.get_mut(&key) else {
                panic!("{}: no {key} in {original:?}", self.kind.name());
            };
            self.kind.evacuated(self, i, resource);
        }
        state
    }

    /// What the journal's key of `ri`'s record (its ARN) ends with.
    fn record_of(&self, i: usize) -> String {
        self.kind.record_of(self, i)
    }

    /// An operator's own change to `r0`, made between azevac's plan and its change: a subnet
    /// outside the zone taken out (groups, services, functions), the node cordoned, a zone name
    /// taken out of the NodePool, a shift of their own started, the route moved to the table's
    /// own zone, the writer failed over by hand.
    async fn change_by_hand(&self) {
        self.kind.change_by_hand(self).await;
    }

    /// `r1` deleted by hand (a node or NodePool gone, a resource no longer registered with ARC).
    async fn delete_by_hand(&self) {
        self.kind.delete_by_hand(self).await;
    }
}

// ---------------------------------------------------------------------------------------------
// The properties.

/// Evacuate, read back, evacuate again (nothing to do), recover (the original exactly, the table
/// empty), recover again (nothing to do).
fn round_trip(kind: Kind) {
    block_on(async move {
        let world = World::new(kind).await;
        let start = world.reset().await;
        let run = world.run(Phase::Evacuate, &[]).expect_code(0);
        let batches = intent_batches(&world.proxy.requests());
        assert!(batches > 1, "{}: {batches} batch(es), not several", kind.name());
        let now = world.state().await;
        let off = diff(&start.evacuated, &now);
        assert!(
            off.is_empty(),
            "{}: evacuated state: {off:#?}\n{}",
            kind.name(),
            run.stdout
        );
        let records = journal_items(&world.sdk).await;
        assert_eq!(
            records.len(),
            CHANGED,
            "{}: one record per change: {records:?}",
            kind.name()
        );
        assert!(
            records.iter().all(|r| attr_s(r, "state") == "done"),
            "{}: {records:?}",
            kind.name()
        );
        assert!(
            lock_items(&world.sdk).await.is_empty(),
            "{}: locks released",
            kind.name()
        );

        let again = world.run(Phase::Evacuate, &[]).expect_code(0);
        assert!(
            did_nothing(&again),
            "{}: evacuated twice: {}",
            kind.name(),
            again.stdout
        );
        assert_eq!(
            world.state().await,
            now,
            "{}: the second evacuate changed nothing",
            kind.name()
        );

        let back = world.run(Phase::Recover, &[]).expect_code(0);
        let off = world.off(&start.original).await;
        assert!(
            off.is_empty(),
            "{}: recovered state: {off:#?}\n{}",
            kind.name(),
            back.stdout
        );
        let again = world.run(Phase::Recover, &[]).expect_code(0);
        assert!(
            did_nothing(&again),
            "{}: recovered twice: {}",
            kind.name(),
            again.stdout
        );
    });
}

/// Issue 50: evacuated from two zones, one run each, then recovered in one run (no `--az-id`),
/// through the strict layer: a resource with two records is one unit of work (a Lambda function's
/// second line sends the revision read after the first one's update completed), and the original
/// comes back exactly, the table empty.
fn two_zones_recovered_in_one_run(kind: Kind) {
    block_on(async move {
        let world = World::new(kind).await;
        let start = world.reset().await;
        world.run(Phase::Evacuate, &[]).expect_code(0);
        let second = world.run_in(ZONES[2], Phase::Evacuate);
        assert!(
            matches!(second.code, 0 | 1),
            "{}: the second zone's evacuation: {second:?}",
            kind.name()
        );
        let started = std::time::Instant::now();
        let back = world.run(Phase::Recover, &[]);
        let took = started.elapsed();
        assert_eq!(back.code, 0, "{}: {}", kind.name(), failed_lines(&back));
        let off = world.off(&start.original).await;
        assert!(
            off.is_empty(),
            "{}: after one recover of two zones: {off:#?}",
            kind.name()
        );
        let (stale, refusals) = world.proxy.strictness();
        eprintln!(
            "conformance: {}: two zones recovered in one run in {:.1}s ({stale} stale reads answered, refusals {refusals:?})",
            kind.name(),
            took.as_secs_f64()
        );
    });
}

/// The first call of `phase` (from an unkilled run) that changes the live state, as a kill point.
fn first_change(world: &World, phase: Phase) -> Target {
    world.disarm();
    assert_eq!(
        world.run_watched(phase),
        Some(0),
        "{}: the unkilled run",
        world.kind.name()
    );
    let aws = world.proxy.requests();
    let kube = world.kube.requests();
    named_points(&aws, &kube)
        .into_iter()
        .find(|t| !matches!(t, Target::Aws(on) if journal_write(&on.label)))
        .unwrap_or_else(|| panic!("{}: no changing call in {aws:?} {kube:?}", world.kind.name()))
}

/// Killed at the first change, before it lands and after: the intent is journalled, and recover
/// puts back exactly the original (exit 0), leaving the table empty.
fn crash_between_intent_and_act(kind: Kind) {
    block_on(async move {
        let world = World::new(kind).await;
        world.reset().await;
        let first = first_change(&world, Phase::Evacuate);
        for when in [KillWhen::BeforeForward, KillWhen::AfterForward] {
            let start = world.reset().await;
            let target = match &first {
                Target::Aws(on) => Target::Aws(KillOn { when, ..on.clone() }),
                Target::Kube(on) => Target::Kube(KillOn { when, ..on.clone() }),
                other => other.clone(),
            };
            world.arm(&target);
            let code = world.run_watched(Phase::Evacuate);
            assert!(
                world.killed(),
                "{}: killed at {target:?} ({when:?}): exit {code:?}",
                kind.name()
            );
            let records = journal_items(&world.sdk).await;
            assert!(
                records.iter().any(|r| attr_s(r, "state") == "intent"),
                "{}: the intent is written ahead of {target:?}: {records:?}",
                kind.name()
            );
            world.disarm();
            // The killed run's calls already sent still land, as at AWS, and the operator's recover
            // comes after them: azevac itself waits the dead run's longest call before taking its
            // locks over (tests/it/protocol/interleave.rs proves that wait); the harness waits for the proxy
            // to have answered them instead, which is what that wait stands for, in no time.
            assert!(
                world.proxy.wait_quiet(HOLD_WAIT),
                "{}: the killed run's calls never ended",
                kind.name()
            );
            let run = world.run(Phase::Recover, &[]);
            assert_eq!(run.code, 0, "{}: {when:?}: {run:?}", kind.name());
            let off = world.off(&start.original).await;
            assert!(
                off.is_empty(),
                "{}: killed {when:?} {target:?}, then recovered: {off:#?}",
                kind.name()
            );
        }
    });
}

impl World {
    /// Kill the next run at `target`; a named target is killed `when` it says.
    fn arm(&self, target: &Target) {
        self.disarm();
        kill_points::arm(target, &self.proxy, Some(&self.kube));
    }
}

/// What one part of a sweep found.
#[derive(Default)]
struct Tally {
    tried: usize,
    exact: usize,
    /// Kill points whose call the killed run never made (the run ended first).
    unreached: usize,
    /// Kill points that took more than one recover to put right.
    second_recovers: usize,
    problems: Vec<String>,
}

/// One part of the sweep: `phase` killed at each of its journal writes and changes, and at a
/// sample of its reads ([`sampled_reads`]); after each kill, recover until nothing is left to do:
/// the original state exactly, no record, no lock. One estate throughout, seeded again only after
/// a point that was not restored, or before one that needs the journal table not to exist yet.
async fn sweep(kind: Kind, phase: Phase) -> Tally {
    let world = World::new(kind).await;
    let name = kind.name();
    let mut start = world.reset().await;
    let prepare = |world: &World| {
        if phase == Phase::Recover {
            world.run(Phase::Evacuate, &[]).expect_code(0);
        }
    };
    prepare(&world);
    world.disarm();
    assert_eq!(world.run_watched(phase), Some(0), "{name}: the unkilled {phase:?}");
    let (aws, kube) = (world.proxy.requests(), world.kube.requests());
    if phase == Phase::Evacuate {
        assert!(intent_batches(&aws) > 1, "{name}: more than one batch: {aws:?}");
    }
    let targets = kill_points::every_point(&aws, &kube);
    let mut tally = Tally::default();
    // The unkilled evacuation left the estate evacuated.
    let mut clean = phase == Phase::Recover;
    for target in targets {
        if !clean || target.needs_no_table() {
            start = world.reset().await;
        }
        prepare(&world);
        world.arm(&target);
        let code = world.run_watched(phase);
        let point = format!("{name}: {phase:?} killed at {target:?}");
        if !world.killed() {
            assert_eq!(code, Some(0), "{point}: the run that went past it");
            tally.unreached += 1;
            clean = false;
            continue;
        }
        tally.tried += 1;
        world.disarm();
        // Calls the killed run had already sent still reach the service, as they would AWS's: the
        // operator's recover comes after them. (One that races them refuses the line it lost and asks
        // for a re-run, which tests/it/protocol/interleave.rs proves; here it would only make recover #1's exit
        // code depend on the machine's load.)
        assert!(
            world.proxy.wait_quiet(HOLD_WAIT),
            "{point}: the killed run's calls never ended"
        );
        let (mut problems, runs) = world.recover_fully().await;
        tally.second_recovers += usize::from(runs > 1);
        problems.extend(world.off(&start.original).await);
        clean = problems.is_empty();
        if clean {
            tally.exact += 1;
        } else {
            tally.problems.push(format!("{point}: {problems:#?}"));
        }
    }
    tally
}

/// Kill an evacuate and a recover at every journal write and every change (the odd calls of
/// each kind before they land, the even ones after, their answer never heard) and before the
/// first call and every tenth after it (a sample of the reads, each of which only ends the run
/// earlier); after each, recover until nothing is left to do. Default concurrency, batches of
/// three: two batches in flight. The two phases run side by side.
fn kill_at_every_call(kind: Kind) {
    let phases = vec![Phase::Evacuate, Phase::Recover];
    let tallies = common::on_threads(phases.clone(), |phase| sweep(kind, phase));
    let name = kind.name();
    let tried: usize = tallies.iter().map(|t| t.tried).sum();
    let exact: usize = tallies.iter().map(|t| t.exact).sum();
    let unreached: usize = tallies.iter().map(|t| t.unreached).sum();
    let second: usize = tallies.iter().map(|t| t.second_recovers).sum();
    let by_phase: Vec<String> = phases
        .iter()
        .zip(&tallies)
        .map(|(p, t)| format!("{p:?}: {}", t.tried))
        .collect();
    eprintln!(
        "conformance: {name}: kill points tried {tried}, restored exactly {exact} ({}; {unreached} not reached; \
         {second} needed a second recover)",
        by_phase.join(", ")
    );
    let problems: Vec<&String> = tallies.iter().flat_map(|t| &t.problems).collect();
    for problem in &problems {
        eprintln!("problem: {problem}");
    }
    assert!(
        problems.is_empty(),
        "{name}: {} kill points not restored exactly (above)",
        problems.len()
    );
    assert!(tallies.iter().all(|t| t.tried >= CHANGED), "{name}: {by_phase:?}");
    assert_eq!(exact, tried);
}

/// An operator changes `r0` while azevac holds its plan: its write-ahead is parked at the proxy
/// meanwhile. The change computed under the lock keeps the operator's, and recover undoes only
/// what azevac did: the state as the operator left it, the table empty.
fn changed_by_hand(kind: Kind) {
    block_on(async move {
        let world = World::new(kind).await;
        world.reset().await;
        world.proxy.hold(Hold {
            label: Some("dynamodb:TransactWriteItems".into()),
            body_contains: format!("{}\"", world.record_of(0)),
            nth: 1,
        });
        let child = world.spawn(Phase::Evacuate);
        let held = world
            .proxy
            .wait_held(Some(&mut child.lock().expect("child")), HOLD_WAIT);
        assert!(held.is_some(), "{}: r0's write-ahead was never sent", kind.name());
        world.change_by_hand().await;
        let by_hand = world.state().await;
        world.proxy.release();
        let code = common::wait_watched(&child);
        assert!(matches!(code, Some(0 | 1)), "{}: evacuate exited {code:?}", kind.name());
        let (problems, _) = world.recover_fully().await;
        assert!(problems.is_empty(), "{}: {problems:#?}", kind.name());
        let off = world.off(&by_hand).await;
        assert!(off.is_empty(), "{}: not as the operator left it: {off:#?}", kind.name());
    });
}

/// `r1` is deleted after the evacuation: recover puts the others back and reports it. A kind whose
/// change lives outside the object keeps its record for the operator to decide on (exit 1) until
/// `--forget-missing` drops it (exit 0); a kind whose change ended with the object drops its record
/// (exit 0). See [`Fixture::keeps_a_vanished_record`].
fn vanished(kind: Kind) {
    block_on(async move {
        let world = World::new(kind).await;
        let start = world.reset().await;
        world.run(Phase::Evacuate, &[]).expect_code(0);
        world.delete_by_hand().await;
        let gone = kind.key(1);
        let mut expected = start.original.clone();
        expected.remove(&gone);
        let mut problems = Vec::new();
        let run = world.run(Phase::Recover, &[]);
        let line = run.json()["items"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|i| {
                let name = i["name"].as_str().unwrap_or_default();
                name == gone || name.ends_with(&format!("/{gone}"))
            })
            .cloned();
        let reported = line.as_ref().is_some_and(|l| l.to_string().contains("no longer exist"));
        // A shift's record says nothing of the resource: cancelling the shift is the whole recovery.
        if !reported && kind.keeps_a_vanished_record() {
            problems.push(format!("{gone} is not reported as gone: {line:?}"));
        }
        problems.extend(diff(&expected, &world.state().await));
        let left = world.leftovers().await;
        if kind.keeps_a_vanished_record() {
            if run.code != 1 {
                problems.push(format!(
                    "recover kept a record to decide on but exited {}, not 1",
                    run.code
                ));
            }
            if !(left.len() == 1 && left[0].ends_with(&format!("{} (done)", world.record_of(1)))) {
                problems.push(format!("not only the record of {gone} is kept: {left:?}"));
            }
            let forget = world.run(Phase::Recover, &["--forget-missing"]);
            if forget.code != 0 {
                problems.push(format!("recover --forget-missing exited {}", forget.code));
            }
        } else {
            if run.code != 0 {
                problems.push(format!("recover exited {}, not 0", run.code));
            }
            if !left.is_empty() {
                problems.push(format!("the change ended with {gone}, its record too: {left:?}"));
            }
        }
        problems.extend(world.off(&expected).await);
        assert!(problems.is_empty(), "{}: {problems:#?}", kind.name());
    });
}

/// Each kind's tests, one module a kind (`conformance::<kind>::...`), for every fixture of
/// tests/it/kinds/.
macro_rules! kind_tests {
    ($($kind:ident),* $(,)?) => {
        $(
            mod $kind {
                use super::Kind;

                fn kind() -> Kind {
                    &crate::kinds::$kind::FIXTURE
                }

                #[test]
                fn issue_31_round_trip_is_exact() {
                    super::round_trip(kind());
                }

                #[test]
                fn issue_31_a_crash_between_intent_and_act_is_recovered() {
                    super::crash_between_intent_and_act(kind());
                }

                #[test]
                fn issue_31_a_kill_at_every_call_loses_nothing() {
                    super::kill_at_every_call(kind());
                }

                #[test]
                fn issue_31_a_change_by_hand_before_the_change_is_kept() {
                    super::changed_by_hand(kind());
                }

                #[test]
                fn issue_31_a_vanished_resource_is_reported() {
                    super::vanished(kind());
                }

                #[test]
                fn issue_50_two_zones_are_recovered_in_one_run() {
                    super::two_zones_recovered_in_one_run(kind());
                }
            }
        )*
    };
}

kinds::each_kind!(kind_tests);
