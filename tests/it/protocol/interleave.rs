//! Two azevac processes interleaved exactly (issue 12): the proxy parks one chosen call of the
//! first process (`Proxy::hold`), the test waits until it is parked and the first process's other
//! calls are answered (`Proxy::wait_held`, `Proxy::wait_quiet`: the only synchronisation, no
//! sleeps, a bound on every wait), runs a second command to completion straight against moto,
//! releases the parked call (`Proxy::release`), and lets the first finish.
//!
//! What is proved, for every interleaving tried:
//! - No removed subnet is ever forgotten: at the pause (before and after the second command) and
//!   once both are done, every subnet a resource had at the start and lacks now is in
//!   `removed_subnets` of some journal record (any zone) of that resource. Journal records are the
//!   items with a `resource_type` attribute; lock items (`az_id = "#lock"`) are ignored here.
//! - No evacuation is silently undone: once both are done, no resource has a subnet that one of
//!   its records in state `done` says was taken.
//! - After `recover --yes` for every zone (run twice when the first exits 1) every resource is
//!   exactly as at the start, subnets in their original order (only membership for a resource
//!   seen journalled in two zones: a record knows the order of the subnets it saw, no more), and
//!   the table holds no items at all, records or locks.
//!
//! The `issue_12_*` tests replay the two known paths; `interleaving_sweep` parks each call of the
//! first command in turn, for four pairs of commands. Exit codes are free (the loser of a race
//! may exit 1) except where a test says otherwise: the invariants decide.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Seek};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use aws_config::SdkConfig;
use common::estate::{self, AsgSpec, Seeded, Spec, VpcSpec};
use common::proxy::{FailRule, Fault, Faults, Hold, Proxy};
use common::{attr_list, attr_s, azevac, command, journal_items, snapshot, table_items, Moto, Run, Snapshot, ZONE};

const AZ1: &str = "use1-az1";
const AZ3: &str = "use1-az3";
/// The longest a parked call is waited for.
const HOLD_WAIT: Duration = Duration::from_secs(30);
/// The longest any azevac run is waited for (a second command blocking on the parked first one
/// would be a failure of its own).
const RUN_WAIT: Duration = Duration::from_secs(60);

/// Four groups in three zones: `a` and `d` in all three, `b` in use1-az2 and use1-az3 only (one
/// evacuation leaves it a single subnet), `c` not in use1-az2.
fn estate() -> Spec {
    let asg = |name: &str, z: &[&str]| AsgSpec {
        name: name.into(),
        vpc: "main".into(),
        zones: z.iter().map(|z| z.to_string()).collect(),
        desired: 0,
        tags: BTreeMap::new(),
    };
    Spec {
        vpcs: vec![VpcSpec {
            name: "main".into(),
            cidr: "10.70.0.0/16".into(),
            zones: vec![AZ1.into(), ZONE.into(), AZ3.into()],
        }],
        auto_scaling_groups: vec![
            asg("a", &[AZ1, ZONE, AZ3]),
            asg("b", &[ZONE, AZ3]),
            asg("c", &[AZ3, AZ1]),
            asg("d", &[AZ1, ZONE, AZ3]),
        ],
        ..Spec::default()
    }
}

/// A fresh estate: moto reset and seeded. Returns what was seeded and a watch from the start.
async fn fresh(moto: &Moto, sdk: &SdkConfig) -> (Seeded, Watch) {
    moto.reset();
    let seeded = estate::seed(sdk, &estate()).await;
    let original = snapshot(sdk).await;
    (
        seeded,
        Watch {
            original,
            zones: BTreeMap::new(),
        },
    )
}

/// Evacuate one group (by name prefix) from one zone, unpaused, straight to moto.
fn evacuate_one(moto: &Moto, az_id: &str, group: &str) {
    azevac(
        moto,
        &[
            "evacuate",
            "--az-id",
            az_id,
            "--type",
            "asg",
            "--name-prefix",
            group,
            "--yes",
        ],
    )
    .expect_code(0);
}

/// A hold on the Auto Scaling group update of one group.
fn update_of(group: &str) -> Hold {
    Hold {
        label: Some("autoscaling:UpdateAutoScalingGroup".into()),
        body_contains: format!("AutoScalingGroupName={group}&"),
        nth: 1,
    }
}

/// An azevac process running in the background, its output going to files.
struct Running {
    child: Child,
    stdout: std::fs::File,
    stderr: std::fs::File,
}

impl Running {
    fn start(endpoint: &str, args: &[&str]) -> Running {
        Running::start_with(endpoint, args, &[])
    }

    fn start_with(endpoint: &str, args: &[&str], env: &[(&str, Option<&str>)]) -> Running {
        let (stdout, stderr) = (
            tempfile::tempfile().expect("tempfile"),
            tempfile::tempfile().expect("tempfile"),
        );
        let child = command(endpoint, args, env)
            .stdout(Stdio::from(stdout.try_clone().expect("clone")))
            .stderr(Stdio::from(stderr.try_clone().expect("clone")))
            .spawn()
            .expect("spawn azevac");
        Running { child, stdout, stderr }
    }

    /// What it has written to stderr so far.
    fn stderr_so_far(&mut self) -> String {
        let mut text = String::new();
        self.stderr.rewind().expect("rewind");
        self.stderr.read_to_string(&mut text).expect("read stderr");
        text
    }

    /// Wait for the exit, at most `timeout` (then kill it and return `None`).
    fn finish(mut self, timeout: Duration) -> Option<Run> {
        let deadline = Instant::now() + timeout;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                break status;
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return None;
            }
            // Polls the exit only; it orders nothing between the processes.
            std::thread::sleep(Duration::from_millis(5));
        };
        let read = |file: &mut std::fs::File| {
            let mut text = String::new();
            file.rewind().expect("rewind");
            file.read_to_string(&mut text).expect("read output");
            text
        };
        Some(Run {
            code: status.code().unwrap_or(-1),
            stdout: read(&mut self.stdout),
            stderr: read(&mut self.stderr),
        })
    }
}

impl Drop for Running {
    /// A test that panics leaves no process behind.
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Run to completion, straight to moto, within [`RUN_WAIT`]; `what` names it in the problem.
fn run_bounded(moto: &Moto, args: &[&str], what: &str, problems: &mut Vec<String>) -> Option<Run> {
    let run = Running::start(&moto.endpoint, args).finish(RUN_WAIT);
    if run.is_none() {
        problems.push(format!("{what}: {args:?} did not finish within {RUN_WAIT:?}"));
    }
    run
}

/// The estate at the start, and the zones each resource was seen journalled in since.
struct Watch {
    original: Snapshot,
    /// AZ IDs of the records seen per resource name: a resource evacuated from two zones keeps
    /// only its membership through recovery (a record knows the order only of the subnets it saw).
    zones: BTreeMap<String, BTreeSet<String>>,
}

impl Watch {
    /// Every subnet a resource had at the start, lacks now, and no journal record of it holds.
    async fn forgotten(&mut self, sdk: &SdkConfig) -> Vec<String> {
        let now = snapshot(sdk).await;
        let mut journalled: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for item in journal_items(sdk)
            .await
            .iter()
            .filter(|i| i.contains_key("resource_type"))
        {
            let name = attr_s(item, "resource_name");
            self.zones
                .entry(name.clone())
                .or_default()
                .insert(attr_s(item, "az_id"));
            journalled
                .entry(name)
                .or_default()
                .extend(attr_list(item, "removed_subnets"));
        }
        let (before, after) = (subnet_lists(&self.original), subnet_lists(&now));
        let mut lost = Vec::new();
        for (name, subnets) in &before {
            let live = after.get(name).cloned().unwrap_or_default();
            for subnet in subnets.iter().filter(|s| !live.contains(s)) {
                if !journalled.get(name).is_some_and(|j| j.contains(subnet)) {
                    lost.push(format!(
                        "forgotten: {name} lacks {subnet} and no record holds it (live {live:?})"
                    ));
                }
            }
        }
        lost
    }

    /// Every subnet a resource has again although a record in state done says it was taken: an
    /// evacuation that reported done was silently undone (a planned list written over it).
    async fn undone(&self, sdk: &SdkConfig) -> Vec<String> {
        let live = subnet_lists(&snapshot(sdk).await);
        let mut undone = Vec::new();
        for item in journal_items(sdk).await.iter().filter(|i| attr_s(i, "state") == "done") {
            let name = attr_s(item, "resource_name");
            let subnets = live.get(&name).cloned().unwrap_or_default();
            for subnet in attr_list(item, "removed_subnets")
                .iter()
                .filter(|s| subnets.contains(s))
            {
                undone.push(format!(
                    "undone: {name} has {subnet} again, though its done record in {} says it was taken",
                    attr_s(item, "az_id")
                ));
            }
        }
        undone
    }

    /// `recover --yes` for every zone (again if the first exits 1), then: every resource exactly as
    /// at the start (in the original order, unless it was seen journalled in two zones: then its
    /// membership), and no item at all in the table.
    async fn recover_all_exactly(&mut self, moto: &Moto, sdk: &SdkConfig) -> Vec<String> {
        let mut found = self.forgotten(sdk).await;
        found.extend(self.undone(sdk).await);
        let mut problems: Vec<String> = found
            .into_iter()
            .map(|l| format!("before the final recover: {l}"))
            .collect();
        let recover = ["recover", "--yes"];
        if let Some(run) = run_bounded(moto, &recover, "final recover", &mut problems) {
            if run.code == 1 {
                run_bounded(moto, &recover, "final recover (again)", &mut problems);
            }
        }
        let now = subnet_lists(&snapshot(sdk).await);
        for (name, subnets) in &subnet_lists(&self.original) {
            let live = now.get(name).cloned().unwrap_or_default();
            let (mut a, mut b) = (live.clone(), subnets.clone());
            a.sort();
            b.sort();
            let zones = self.zones.get(name).map(BTreeSet::len).unwrap_or_default();
            if a != b {
                problems.push(format!(
                    "not restored: after recover {name} is {live:?}, was {subnets:?}"
                ));
            } else if &live != subnets && zones < 2 {
                problems.push(format!("order: after recover {name} is {live:?}, was {subnets:?}"));
            }
        }
        let items = table_items(sdk).await;
        if !items.is_empty() {
            let keys: Vec<String> = items
                .iter()
                .map(|i| format!("{}/{}", attr_s(i, "az_id"), attr_s(i, "resource")))
                .collect();
            problems.push(format!("items left: {} after recover: {keys:?}", items.len()));
        }
        problems
    }
}

/// Every resource's subnets by name: groups, services, functions.
fn subnet_lists(snapshot: &Snapshot) -> BTreeMap<String, Vec<String>> {
    let (groups, services, functions) = snapshot;
    groups
        .iter()
        .map(|(n, v)| (n.clone(), v.clone()))
        .chain(services.iter().map(|(n, v)| (n.clone(), v.0.clone())))
        .chain(functions.iter().map(|(n, v)| (n.clone(), v.0.clone())))
        .collect()
}

/// Park `hold` in `first` (through the proxy), run `second` to completion while it is parked,
/// release, and let `first` finish. Checks the invariant at the pause, before and after `second`
/// ([`Watch::recover_all_exactly`] checks it once `first` is done). Returns the label of the
/// parked call (`None`: never reached), the second run and the problems found.
async fn interleave(
    moto: &Moto,
    proxy: &Proxy,
    sdk: &SdkConfig,
    watch: &mut Watch,
    hold: Hold,
    first: &[&str],
    second: &[&str],
) -> (Option<String>, Option<Run>, Vec<String>) {
    let mut problems = Vec::new();
    proxy.set(Faults::default());
    proxy.hold(hold.clone());
    let mut running = Running::start(&proxy.endpoint, first);
    let Some(label) = proxy.wait_held(Some(&mut running.child), HOLD_WAIT) else {
        proxy.release();
        if running.finish(RUN_WAIT).is_none() {
            problems.push(format!("{first:?} did not finish within {RUN_WAIT:?}"));
        }
        return (None, None, problems);
    };
    if !proxy.wait_quiet(HOLD_WAIT) {
        problems.push(format!(
            "{first:?}: calls beside the parked {label} still unanswered after {HOLD_WAIT:?}"
        ));
    }
    let at =
        |when: &str, lost: Vec<String>| -> Vec<String> { lost.into_iter().map(|l| format!("{when}: {l}")).collect() };
    problems.extend(at(&format!("parked at {label}"), watch.forgotten(sdk).await));
    let run = run_bounded(moto, second, "second command", &mut problems);
    problems.extend(at(
        &format!("parked at {label}, after the second command"),
        watch.forgotten(sdk).await,
    ));
    proxy.release();
    if running.finish(RUN_WAIT).is_none() {
        problems.push(format!(
            "{first:?} did not finish within {RUN_WAIT:?} after the release"
        ));
    }
    (Some(label), run, problems)
}

/// Panic with every problem, one per line, unless there are none.
fn assert_none(problems: &[String]) {
    assert!(
        problems.is_empty(),
        "{} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// The JSON line of `name` in a run's `--output json` document.
/// A evacuates every group with `flags` and `env` while `b`'s update is parked at the proxy:
/// A, once it has sent that update.
fn evacuate_with_b_parked(proxy: &Proxy, flags: &[&str], env: &[(&str, Option<&str>)]) -> Running {
    proxy.hold(update_of("b"));
    let mut args = vec![
        "evacuate", "--az-id", ZONE, "--type", "asg", "--yes", "--output", "json",
    ];
    args.extend_from_slice(flags);
    let mut a = Running::start_with(&proxy.endpoint, &args, env);
    assert!(
        proxy.wait_held(Some(&mut a.child), HOLD_WAIT).is_some(),
        "A never sent b's update"
    );
    a
}

/// B recovers the zone while A's update of `b` may still land: B must leave `b` alone (exit 1).
fn b_leaves_b_alone(moto: &Moto, why: &str, problems: &mut Vec<String>) {
    let b_args = ["recover", "--az-id", ZONE, "--type", "asg", "--yes", "--output", "json"];
    if let Some(run) = run_bounded(moto, &b_args, "B", problems) {
        let line = line_of(&run, "b");
        if line["status"] == "done" || run.code != 1 {
            problems.push(format!("B must leave b alone while {why} (exit {}): {line}", run.code));
        }
    }
}

fn line_of(run: &Run, name: &str) -> serde_json::Value {
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap_or_default();
    doc["items"]
        .as_array()
        .and_then(|items| items.iter().find(|i| i["name"] == name))
        .cloned()
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_12_path_1_recover_leaves_a_live_write_ahead_alone() {
    let moto = Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    let sdk = common::sdk(&moto).await;
    let (_, mut watch) = fresh(&moto, &sdk).await;
    // A has written its intent records and changed a, d; b's change is parked.
    let (reached, recovered, mut problems) = interleave(
        &moto,
        &proxy,
        &sdk,
        &mut watch,
        update_of("b"),
        &["evacuate", "--az-id", ZONE, "--type", "asg", "--yes"],
        &["recover", "--az-id", ZONE, "--type", "asg", "--yes", "--output", "json"],
    )
    .await;
    assert!(reached.is_some(), "A never sent b's UpdateAutoScalingGroup");
    if let Some(run) = &recovered {
        let b = line_of(run, "b");
        let reason = b["reason"].as_str().unwrap_or_default();
        if b["status"] != "skipped" || !reason.contains("being changed by run") {
            problems.push(format!(
                "recover did not leave b alone while A was changing it: {} {reason:?}",
                b["status"]
            ));
        }
        if run.code != 1 {
            problems.push(format!("recover exited {}, expected 1 (a line skipped)", run.code));
        }
    }
    problems.extend(watch.recover_all_exactly(&moto, &sdk).await);
    assert_none(&problems);
}

/// Issue 31, case 1: a change still in flight when its lease runs out is never forgotten. A
/// evacuates every group (`--lease 2s`, `--operation-timeout 8s`); `b`'s update is parked at the
/// proxy, and from then on every journal write of A fails, so A can neither renew nor release.
/// Before the fix, B's `recover` took the expired locks over, read `b` still whole, deleted every
/// intent record, and then A's update landed: `b` lacked its subnet and no record said so. Now a
/// lock is free only once its lease has run out *and* the holder's longest call (its
/// `--operation-timeout`) can have ended: B leaves `b` alone (exit 1, records kept); A gives the
/// change up once its lease cannot be trusted (the call still lands at the proxy, later, as it
/// would at AWS); and once A is gone, recover puts everything back exactly. The waits that are not
/// holds are the lease running out (time by nature: 2 s lease, 3.5 s wait).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_31_a_change_in_flight_when_its_lease_runs_out_is_not_forgotten() {
    let moto = Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    let sdk = common::sdk(&moto).await;
    let (_, mut watch) = fresh(&moto, &sdk).await;
    let env = [("AZEVAC_LEASE", Some("2s")), ("AWS_MAX_ATTEMPTS", Some("2"))];
    let a = evacuate_with_b_parked(&proxy, &["--operation-timeout", "8s"], &env);
    // Every journal write of A from now on fails (a hold keeps `b`'s update parked).
    let failing = |label: &str| FailRule {
        label: label.into(),
        body_contains: String::new(),
        fault: Fault::ServerError,
    };
    proxy.fail_too(
        [
            "dynamodb:UpdateItem",
            "dynamodb:TransactWriteItems",
            "dynamodb:PutItem",
            "dynamodb:DeleteItem",
        ]
        .into_iter()
        .map(failing)
        .collect(),
        // Slow too, so that A is still alive (not a dead holder) when B runs.
        Duration::from_millis(300),
    );
    std::thread::sleep(Duration::from_millis(3500));
    let mut problems = Vec::new();
    b_leaves_b_alone(&moto, "A's update may be in flight", &mut problems);
    problems.extend(watch.forgotten(&sdk).await);
    // A's update lands now, after A gave it up.
    proxy.release();
    assert!(proxy.wait_quiet(HOLD_WAIT), "the parked update never ended");
    match a.finish(RUN_WAIT) {
        None => problems.push("A did not finish".into()),
        Some(run) => {
            if line_of(&run, "b")["status"] != "failed" {
                problems.push(format!("A cannot know how b ended: {}", line_of(&run, "b")));
            }
        }
    }
    problems.extend(watch.forgotten(&sdk).await);
    problems.extend(watch.recover_all_exactly(&moto, &sdk).await);
    assert_none(&problems);
}

/// A change is never computed from a stale read: one resource at a time, `a`'s update is held past
/// the engine's staleness bound (5 s) while someone adds a subnet to `b`; `b`'s turn then reads `b`
/// again and keeps that subnet (the batch read, made before the hold, did not have it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_12_a_slow_batch_reads_each_resource_again_before_its_change() {
    let moto = Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    let sdk = common::sdk(&moto).await;
    let (seeded, _) = fresh(&moto, &sdk).await;
    proxy.set(Faults::default());
    proxy.hold(update_of("a"));
    let args = [
        "evacuate",
        "--az-id",
        ZONE,
        "--type",
        "asg",
        "--concurrency",
        "1",
        "--yes",
        "--output",
        "json",
    ];
    let mut first = Running::start(&proxy.endpoint, &args);
    assert!(
        proxy.wait_held(Some(&mut first.child), HOLD_WAIT).is_some(),
        "a's update never came"
    );
    // Someone adds a subnet to b while azevac is busy with a (the staleness bound is time itself).
    let (az2, az3, az1) = (
        seeded.subnet("main", ZONE),
        seeded.subnet("main", AZ3),
        seeded.subnet("main", AZ1),
    );
    aws_sdk_autoscaling::Client::new(&sdk)
        .update_auto_scaling_group()
        .auto_scaling_group_name("b")
        .vpc_zone_identifier([az2.as_str(), az3.as_str(), az1.as_str()].join(","))
        .send()
        .await
        .expect("someone else's update of b");
    std::thread::sleep(Duration::from_millis(5500));
    proxy.release();
    let run = first.finish(RUN_WAIT).expect("evacuate finished");
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let b = snapshot(&sdk).await.0["b"].clone();
    assert_eq!(b, vec![az3, az1.clone()], "b keeps the subnet added during the run");
    let record = journal_items(&sdk)
        .await
        .into_iter()
        .find(|i| attr_s(i, "resource_name") == "b")
        .expect("b's record");
    assert_eq!(attr_list(&record, "removed_subnets"), vec![az2.clone()]);
    azevac(&moto, &["recover", "--yes"]).expect_code(0);
    assert!(snapshot(&sdk).await.0["b"].contains(&az1), "recover keeps it too");
    assert!(table_items(&sdk).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_12_path_2_a_planned_list_never_overwrites_a_later_change() {
    let moto = Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    let sdk = common::sdk(&moto).await;
    let x = ["evacuate", "--az-id", AZ3, "--type", "asg", "--yes"];
    let y = ["recover", "--az-id", ZONE, "--type", "asg", "--yes"];
    let mut problems = Vec::new();

    // X parked at its change of a: planned from [a1, a3] while Y puts a2 back.
    let (_, mut watch) = fresh(&moto, &sdk).await;
    azevac(&moto, &["evacuate", "--az-id", ZONE, "--yes"]).expect_code(0);
    let (reached, _, found) = interleave(&moto, &proxy, &sdk, &mut watch, update_of("a"), &x, &y).await;
    assert!(reached.is_some(), "X never sent a's UpdateAutoScalingGroup");
    problems.extend(found.into_iter().map(|p| format!("X parked at a's update: {p}")));
    let found = watch.recover_all_exactly(&moto, &sdk).await;
    problems.extend(found.into_iter().map(|p| format!("X parked at a's update: {p}")));

    // X parked after planning, before any write: find that call in an unpaused run.
    fresh(&moto, &sdk).await;
    azevac(&moto, &["evacuate", "--az-id", ZONE, "--yes"]).expect_code(0);
    proxy.set(Faults::default());
    common::azevac_at(&proxy.endpoint, &x, &[]).expect_code(0);
    let hold = after_planning(&proxy.calls());
    eprintln!("interleave: X parked at its first DynamoDB call after discovery: {hold:?}");

    let (seeded, mut watch) = fresh(&moto, &sdk).await;
    azevac(&moto, &["evacuate", "--az-id", ZONE, "--yes"]).expect_code(0);
    let (reached, _, found) = interleave(&moto, &proxy, &sdk, &mut watch, hold, &x, &y).await;
    assert!(reached.is_some(), "X never reached the call after planning");
    problems.extend(found.into_iter().map(|p| format!("X parked after planning: {p}")));
    let a = snapshot(&sdk).await.0["a"].clone();
    let expected = vec![seeded.subnet("main", AZ1), seeded.subnet("main", ZONE)];
    if a != expected {
        problems.push(format!(
            "X parked after planning: X should take only use1-az3's subnet from the live [a1, a2, a3]: \
             a is {a:?}, expected {expected:?}"
        ));
    }
    let found = watch.recover_all_exactly(&moto, &sdk).await;
    problems.extend(found.into_iter().map(|p| format!("X parked after planning: {p}")));
    assert_none(&problems);
}

/// The hold on the first DynamoDB call after discovery (the zone's journal read, the groups and
/// the subnets) in `calls` of an unpaused evacuation: as (label, its occurrence), which does not
/// depend on how the concurrent discovery calls happened to be ordered.
fn after_planning(calls: &[String]) -> Hold {
    let first = |label: &str| {
        calls
            .iter()
            .position(|c| c == label)
            .unwrap_or_else(|| panic!("no {label} in {calls:?}"))
    };
    let discovered = first("autoscaling:DescribeAutoScalingGroups")
        .max(first("ec2:DescribeSubnets"))
        .max(first("dynamodb:Query"));
    let at = discovered
        + 1
        + calls[discovered + 1..]
            .iter()
            .position(|c| c.starts_with("dynamodb:"))
            .unwrap_or_else(|| panic!("no DynamoDB call after discovery in {calls:?}"));
    let writes = ["dynamodb:TransactWriteItems", "dynamodb:PutItem", "dynamodb:UpdateItem"];
    assert!(
        !calls[..at]
            .iter()
            .any(|c| writes.contains(&c.as_str()) || c == "autoscaling:UpdateAutoScalingGroup"),
        "a write before call {} in {calls:?}",
        at + 1
    );
    let label = calls[at].clone();
    Hold {
        nth: calls[..=at].iter().filter(|c| **c == label).count(),
        label: Some(label),
        body_contains: String::new(),
    }
}

/// A hold on call `k` (1-based) of `calls` (an unpaused run's requests) that picks the same point
/// in another run however its concurrent calls happen to be ordered: its label's nth occurrence,
/// and for a group's update, that group's (each group is its own line, run concurrently).
fn nth_call(calls: &[(String, String)], k: usize) -> Hold {
    let (label, body) = &calls[k - 1];
    let body_contains = if label == "autoscaling:UpdateAutoScalingGroup" {
        let name = body
            .split('&')
            .find(|kv| kv.starts_with("AutoScalingGroupName="))
            .expect("a group name in UpdateAutoScalingGroup");
        format!("{name}&")
    } else {
        String::new()
    };
    Hold {
        nth: calls[..k]
            .iter()
            .filter(|(l, b)| l == label && b.contains(&body_contains))
            .count(),
        label: Some(label.clone()),
        body_contains,
    }
}

/// What kind of violation a problem line reports, for the sweep's counts.
fn kind(problem: &str) -> &'static str {
    if problem.contains("undone:") {
        "undone"
    } else if problem.contains("forgotten:") {
        if problem.contains("before the final recover:") {
            "forgotten (both done)"
        } else {
            "forgotten (at the pause)"
        }
    } else if problem.contains("not restored:") {
        "not restored"
    } else if problem.contains("order:") {
        "order"
    } else if problem.contains("items left:") {
        "items left"
    } else if problem.contains("did not finish") {
        "timed out"
    } else {
        "other"
    }
}

/// One pair of the sweep: `first` is parked at each of its calls in turn while `second` runs.
struct Pair {
    name: &'static str,
    first: &'static [&'static str],
    /// `PLAN` stands for the recover plan saved before `first` starts.
    second: &'static [&'static str],
}

const EVACUATE_AZ2: &[&str] = &["evacuate", "--az-id", ZONE, "--type", "asg", "--yes"];
const EVACUATE_AZ3: &[&str] = &["evacuate", "--az-id", AZ3, "--type", "asg", "--yes"];
const RECOVER_AZ2: &[&str] = &["recover", "--az-id", ZONE, "--type", "asg", "--yes"];

/// What the sweep of one pair found: calls tried, calls parked, pauses in which the second run met
/// the first one's lock, problems.
type PairTally = (usize, usize, usize, Vec<String>);

/// One pair of the sweep below, on a moto server and proxy of its own.
async fn sweep_pair(pair: &Pair) -> PairTally {
    let moto = Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    let sdk = common::sdk(&moto).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let plan_path = dir.path().join("recover-az2.json");
    let plan_file = plan_path.to_str().expect("utf-8 path");
    // Every estate starts with d already evacuated from use1-az2 (a done record), so that every
    // pair also meets a record written before it began; for the recover pairs it is what makes
    // the second command put something back that the first one plans around.
    let setup = |save_plan: bool| {
        let (moto, sdk) = (&moto, &sdk);
        async move {
            let (_, watch) = fresh(moto, sdk).await;
            evacuate_one(moto, ZONE, "d");
            if save_plan {
                let saved = azevac(
                    moto,
                    &[
                        "recover",
                        "--az-id",
                        ZONE,
                        "--type",
                        "asg",
                        "--dry-run",
                        "--output",
                        "json",
                    ],
                )
                .expect_code(0);
                std::fs::write(Path::new(plan_file), &saved.stdout).expect("write plan");
            }
            watch
        }
    };
    let mut problems = Vec::new();
    // JSON, to tell a second run that acted from one that only met the first run's locks.
    let second: Vec<&str> = pair
        .second
        .iter()
        .map(|a| if *a == "PLAN" { plan_file } else { a })
        .chain(["--output", "json"])
        .collect();
    let apply = pair.second.contains(&"PLAN");
    // Unpaused, one after the other: the number of calls to park, and the baseline.
    let mut watch = setup(apply).await;
    proxy.set(Faults::default());
    common::azevac_at(&proxy.endpoint, pair.first, &[]);
    let calls = proxy.requests();
    let mut baseline = watch.forgotten(&sdk).await;
    run_bounded(&moto, &second, "second command", &mut baseline);
    baseline.extend(watch.recover_all_exactly(&moto, &sdk).await);
    problems.extend(baseline.into_iter().map(|p| format!("{}: unpaused: {p}", pair.name)));

    let (mut tried, mut held, mut violated, mut met_lock) = (0, 0, 0, 0);
    let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
    // Every call of the first command: the sweep stays small (12 to 14 calls a command).
    for k in 1..=calls.len() {
        let mut watch = setup(apply).await;
        let hold = nth_call(&calls, k);
        tried += 1;
        let (reached, run, mut found) = interleave(&moto, &proxy, &sdk, &mut watch, hold, pair.first, &second).await;
        let Some(label) = reached else {
            eprintln!("interleave: {}: call {k} not reached", pair.name);
            problems.extend(found.into_iter().map(|p| format!("{}: call {k}: {p}", pair.name)));
            continue;
        };
        held += 1;
        // A second run that only found the first one's locks and left those resources alone proves
        // the lock, not the protocol's reads and writes: counted apart.
        if run.as_ref().is_some_and(met_a_lock) {
            met_lock += 1;
        }
        found.extend(watch.recover_all_exactly(&moto, &sdk).await);
        if !found.is_empty() {
            violated += 1;
            for p in &found {
                *kinds.entry(kind(p)).or_default() += 1;
            }
            problems.extend(
                found
                    .into_iter()
                    .map(|p| format!("{}: parked at call {k} ({label}): {p}", pair.name)),
            );
        }
    }
    eprintln!(
        "interleave: {}: tried {tried}, held {held} (the second run met the first's lock in {met_lock}, acted \
         beside it in {}), interleavings with violations {violated} {kinds:?}",
        pair.name,
        held - met_lock
    );
    (tried, held, met_lock, problems)
}

/// Whether a run left some line alone because another live run held its lock.
fn met_a_lock(run: &Run) -> bool {
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap_or_default();
    doc["items"]
        .as_array()
        .is_some_and(|items| items.iter().any(|i| !i["blocked_by"].is_null()))
}

/// Four pairs of commands, each swept on its own estate; the pairs run side by side.
#[test]
fn interleaving_sweep() {
    let pairs = vec![
        Pair {
            name: "evacuate az2 | recover az2",
            first: EVACUATE_AZ2,
            second: RECOVER_AZ2,
        },
        Pair {
            name: "evacuate az2 | evacuate az3",
            first: EVACUATE_AZ2,
            second: EVACUATE_AZ3,
        },
        Pair {
            name: "evacuate az3 | recover az2",
            first: EVACUATE_AZ3,
            second: RECOVER_AZ2,
        },
        Pair {
            name: "evacuate az3 | apply recover-az2 plan",
            first: EVACUATE_AZ3,
            second: &["apply", "PLAN", "--yes"],
        },
    ];
    let started = Instant::now();
    let tallies = common::on_threads(pairs, |pair| async move { sweep_pair(&pair).await });
    let tried_all: usize = tallies.iter().map(|t| t.0).sum();
    let held_all: usize = tallies.iter().map(|t| t.1).sum();
    let locked_all: usize = tallies.iter().map(|t| t.2).sum();
    let mut problems: Vec<String> = tallies.into_iter().flat_map(|t| t.3).collect();
    eprintln!(
        "interleave: tried {tried_all}, held {held_all} (the second run met the first's lock in {locked_all}, \
         acted beside it in {}) in {:?}",
        held_all - locked_all,
        started.elapsed()
    );
    if held_all != tried_all {
        problems.push(format!("only {held_all} of {tried_all} calls were parked"));
    }
    assert_none(&problems);
}

/// Issue 31, case 7: Ctrl-C is taken the way Terraform takes it. One change at a time, `b`'s
/// update parked; SIGINT then: no more changes start, the one in flight finishes once released,
/// its done mark is written, every lock is released and the result so far printed, exit 130.
/// Before the fix the process died at once, leaving every lock held for its lease and every
/// record in state intent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_31_ctrl_c_finishes_what_is_in_flight_and_releases_every_lock() {
    let moto = Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    let sdk = common::sdk(&moto).await;
    let (_, mut watch) = fresh(&moto, &sdk).await;
    proxy.hold(update_of("b"));
    let args = [
        "evacuate",
        "--az-id",
        ZONE,
        "--type",
        "asg",
        "--concurrency",
        "1",
        "--yes",
        "--output",
        "json",
    ];
    let mut a = Running::start(&proxy.endpoint, &args);
    assert!(
        proxy.wait_held(Some(&mut a.child), HOLD_WAIT).is_some(),
        "A never sent b's update"
    );
    let signalled = std::process::Command::new("kill")
        .args(["-INT", &a.child.id().to_string()])
        .status()
        .expect("kill -INT");
    assert!(signalled.success());
    // The signal is taken (its line on stderr) before the parked call is let go.
    assert!(
        said(&mut a, "interrupted"),
        "no word of the interrupt: {}",
        a.stderr_so_far()
    );
    proxy.release();
    let mut problems = Vec::new();
    match a.finish(RUN_WAIT) {
        None => problems.push("A did not finish".into()),
        Some(run) => {
            if run.code != 130 {
                problems.push(format!("exit {} (130 expected): {}", run.code, run.stderr));
            }
            if line_of(&run, "b")["status"] != "done" {
                problems.push(format!("the change in flight finishes: {}", line_of(&run, "b")));
            }
            let d = line_of(&run, "d");
            if d["status"] != "skipped" || !d["reason"].to_string().contains("interrupted") {
                problems.push(format!("no change starts after the signal: {d}"));
            }
        }
    }
    if !common::lock_items(&sdk).await.is_empty() {
        problems.push("every lock is released".into());
    }
    let states: BTreeMap<String, String> = journal_items(&sdk)
        .await
        .iter()
        .map(|i| (attr_s(i, "resource_name"), attr_s(i, "state")))
        .collect();
    if states.values().any(|s| s != "done") || !states.contains_key("b") || states.contains_key("d") {
        problems.push(format!("done marks for what was done, nothing else: {states:?}"));
    }
    problems.extend(watch.forgotten(&sdk).await);
    problems.extend(watch.recover_all_exactly(&moto, &sdk).await);
    assert_none(&problems);
}

/// Issue 31: interleavings in which the second run is paused too, not only run to its end. The
/// first run is parked at each of its journal writes and changes in turn (at the default
/// concurrency); the second, through a proxy of its own, is then parked at its first change, or at
/// its second journal transaction (the release of its batch); the first is let go and ends, then the
/// second. At every pause and at the end no subnet is forgotten and no done record undone; after
/// `recover` everything is exactly as it was. A second run that never reached its parking point
/// (it found the first run's locks and left those groups alone) is counted apart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_31_interleavings_with_both_runs_paused() {
    let moto = Moto::start();
    let (proxy_a, proxy_b) = (Proxy::start(&moto.endpoint), Proxy::start(&moto.endpoint));
    let sdk = common::sdk(&moto).await;
    let (first, second) = (EVACUATE_AZ2, EVACUATE_AZ3);
    let (_, _) = fresh(&moto, &sdk).await;
    proxy_a.set(Faults::default());
    common::azevac_at(&proxy_a.endpoint, first, &[]);
    let calls = proxy_a.requests();
    let parking: Vec<usize> = (1..=calls.len())
        .filter(|&k| {
            let label = calls[k - 1].0.as_str();
            label == "autoscaling:UpdateAutoScalingGroup" || label == "dynamodb:TransactWriteItems"
        })
        .collect();
    let second_holds = [
        Hold {
            label: Some("autoscaling:UpdateAutoScalingGroup".into()),
            body_contains: String::new(),
            nth: 1,
        },
        Hold {
            label: Some("dynamodb:TransactWriteItems".into()),
            body_contains: String::new(),
            nth: 2,
        },
    ];
    let (mut tried, mut both, mut met_lock) = (0, 0, 0);
    let mut problems = Vec::new();
    for &k in &parking {
        for hold_b in &second_holds {
            let (_, mut watch) = fresh(&moto, &sdk).await;
            tried += 1;
            let at = format!(
                "first parked at call {k} ({}), second at {:?}",
                calls[k - 1].0,
                hold_b.label
            );
            proxy_a.set(Faults::default());
            proxy_a.hold(nth_call(&calls, k));
            let mut a = Running::start(&proxy_a.endpoint, first);
            if proxy_a.wait_held(Some(&mut a.child), HOLD_WAIT).is_none() {
                problems.push(format!("{at}: the first run never reached it"));
                continue;
            }
            proxy_b.set(Faults::default());
            proxy_b.hold(hold_b.clone());
            let mut b = Running::start(&proxy_b.endpoint, second);
            let b_parked = proxy_b.wait_held(Some(&mut b.child), HOLD_WAIT).is_some();
            if b_parked {
                both += 1;
            } else {
                met_lock += 1;
            }
            let mut found = watch.forgotten(&sdk).await;
            proxy_a.release();
            if a.finish(RUN_WAIT).is_none() {
                found.push("the first run did not finish".into());
            }
            found.extend(watch.forgotten(&sdk).await);
            proxy_b.release();
            if b.finish(RUN_WAIT).is_none() {
                found.push("the second run did not finish".into());
            }
            found.extend(watch.forgotten(&sdk).await);
            found.extend(watch.undone(&sdk).await);
            found.extend(watch.recover_all_exactly(&moto, &sdk).await);
            problems.extend(found.into_iter().map(|p| format!("{at}: {p}")));
        }
    }
    eprintln!(
        "interleave (both paused): tried {tried}, both runs parked in {both}, the second met the first's lock \
         before its parking point in {met_lock}"
    );
    assert!(both > 0, "no interleaving parked both runs");
    assert_none(&problems);
}

/// Issue 50, case 10: a call that timed out may still land (AWS carries out a request whose answer
/// its caller never read). A evacuates every group with `--operation-timeout 2s`; `b`'s update is
/// parked at the proxy, so A's SDK gives it up. Before, the line failed and its lock was released at
/// once: B's `recover` could read `b` still whole and delete its record before A's update landed.
/// Now the line ends as one given up in flight: record kept, lock left to run out. B leaves `b`
/// alone (exit 1); once the parked update has landed and A is gone, recover puts everything back
/// exactly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_50_a_change_that_timed_out_keeps_its_lock_until_it_can_no_longer_land() {
    let moto = Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    let sdk = common::sdk(&moto).await;
    let (_, mut watch) = fresh(&moto, &sdk).await;
    let env = [("AZEVAC_LEASE", Some("3s")), ("AWS_MAX_ATTEMPTS", Some("1"))];
    let a = evacuate_with_b_parked(&proxy, &["--operation-timeout", "2s"], &env);
    // A's SDK gives the update up after 2 s; A is then still alive, waiting for the call to be
    // unable to land (its lease plus its operation timeout) before it exits.
    std::thread::sleep(Duration::from_millis(3000));
    let mut problems = Vec::new();
    b_leaves_b_alone(&moto, "A's timed-out update may still land", &mut problems);
    problems.extend(watch.forgotten(&sdk).await);
    // A's update lands now, after A's SDK gave it up.
    proxy.release();
    assert!(proxy.wait_quiet(HOLD_WAIT), "the parked update never ended");
    match a.finish(RUN_WAIT) {
        None => problems.push("A did not finish".into()),
        Some(run) => {
            let line = line_of(&run, "b");
            let reason = line["reason"].as_str().unwrap_or_default();
            if line["status"] != "failed" || !reason.contains("may still") {
                problems.push(format!("A must say b's change may still land: {line}"));
            }
        }
    }
    problems.extend(watch.forgotten(&sdk).await);
    problems.extend(watch.recover_all_exactly(&moto, &sdk).await);
    assert_none(&problems);
}

/// Wait until `run` has written `text` to stderr; `false` if it exited first or `HOLD_WAIT` passed.
fn said(run: &mut Running, text: &str) -> bool {
    let deadline = Instant::now() + HOLD_WAIT;
    while !run.stderr_so_far().contains(text) {
        if Instant::now() >= deadline || run.child.try_wait().expect("try_wait").is_some() {
            return run.stderr_so_far().contains(text);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// Issue 50, case 10, its second half: A is SIGKILLed on this host with b's update sent. AWS carries
/// such a call out all the same, later. The operator's next run (a recover) must not take A's locks
/// over and read b until that call can no longer land: it waits A's longest call (its
/// `--operation-timeout`, which A's locks record), saying so. Ctrl-C during that wait stops the run
/// with nothing changed. Before the fix the recover took over at once, read b still in the zone,
/// deleted b's record as having nothing to put back, and A's update then landed: b out of the zone
/// with nothing left to bring it back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_50_a_killed_runs_change_in_flight_lands_before_its_locks_are_taken_over() {
    let moto = Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    let sdk = common::sdk(&moto).await;
    let (_, mut watch) = fresh(&moto, &sdk).await;
    let mut a = evacuate_with_b_parked(&proxy, &["--operation-timeout", "6s"], &[]);
    assert!(proxy.wait_quiet(HOLD_WAIT), "A's other calls never ended");
    a.child.kill().expect("SIGKILL A");
    a.child.wait().expect("reap A");
    let recover = ["recover", "--az-id", ZONE, "--type", "asg", "--yes", "--output", "json"];
    // The real wait, not the harness's none.
    let env = [(azevac::journal::TAKEOVER_WAIT_ENV, None)];
    let mut problems = Vec::new();

    // B is interrupted while it waits: it takes nothing over and changes nothing.
    let mut b = Running::start_with(&moto.endpoint, &recover, &env);
    if said(&mut b, "may still land") {
        let signalled = std::process::Command::new("kill")
            .args(["-INT", &b.child.id().to_string()])
            .status()
            .expect("kill -INT");
        assert!(signalled.success());
        match b.finish(RUN_WAIT) {
            None => problems.push("B did not stop on Ctrl-C".into()),
            Some(run) => {
                let line = line_of(&run, "b");
                if run.code != 130 || line["status"] == "done" {
                    problems.push(format!(
                        "B, interrupted while waiting, changes nothing (exit {}): {line}",
                        run.code
                    ));
                }
            }
        }
    } else {
        problems.push(format!(
            "B took A's locks over at once: {}",
            b.finish(RUN_WAIT).map(|r| r.stderr).unwrap_or_default()
        ));
    }
    problems.extend(watch.forgotten(&sdk).await);

    // C waits too; A's update lands meanwhile, and C recovers from the state it left. One group at a
    // time, so one batch after another finds A's locks: the wait runs from C's first sight of A's
    // death, once, not once a batch.
    let one_at_a_time: Vec<&str> = recover.iter().copied().chain(["--concurrency", "1"]).collect();
    let mut c = Running::start_with(&moto.endpoint, &one_at_a_time, &env);
    if !said(&mut c, "may still land") {
        problems.push("C took A's locks over at once".into());
    }
    proxy.release();
    assert!(proxy.wait_quiet(HOLD_WAIT), "the parked update never ended");
    match c.finish(RUN_WAIT) {
        None => problems.push("C did not finish".into()),
        Some(run) => {
            if run.code != 0 || line_of(&run, "b")["status"] != "done" {
                problems.push(format!(
                    "C puts b back once A's update has landed (exit {}): {}\n{}",
                    run.code,
                    line_of(&run, "b"),
                    run.stderr
                ));
            }
            let waits = run.stderr.matches("may still land").count();
            if waits != 1 {
                problems.push(format!("C waits once for A's calls, not {waits} times: {}", run.stderr));
            }
        }
    }
    problems.extend(watch.recover_all_exactly(&moto, &sdk).await);
    assert_none(&problems);
}
