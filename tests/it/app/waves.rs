//! `recover --waves` (issue 33, part 3): the zone's resources come back a wave at a time, each wave
//! behind CloudWatch alarms and a bake; an alarm that fires stops the recovery with the rest still
//! journalled, and `--on-alarm evacuate` takes the last wave back out. Real binary, moto's alarms
//! (set with `SetAlarmState`) through the test proxy, which speaks CloudWatch's CBOR to the SDK.

use crate::common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::Stdio;

use aws_sdk_cloudwatch::types::StateValue;
use common::estate::{self, LambdaSpec, Spec};
use common::proxy::Proxy;
use common::{azevac_at, journal_items, live_groups, Moto, ZONE};

/// Six Auto Scaling groups (`canary` tagged to go first) and two Lambda functions, in use1-az1 and
/// use1-az2.
fn estate() -> Spec {
    let mut spec =
        estate::groups_in_two_zones("10.33.0.0/16", &["canary", "web-1", "web-2", "web-3", "web-4", "web-5"]);
    spec.auto_scaling_groups[0].tags = BTreeMap::from([("wave".to_owned(), "first".to_owned())]);
    let function = |name: &str| LambdaSpec {
        name: name.into(),
        vpc: Some("main".into()),
        zones: vec!["use1-az1".into(), "use1-az2".into()],
        published_alias: false,
        tags: BTreeMap::new(),
    };
    spec.lambda_functions = vec![function("api-fn"), function("jobs-fn")];
    spec
}

/// An alarm in `state`, set by the test (in moto, through a proxy or not).
pub(crate) async fn alarm(sdk: &aws_config::SdkConfig, name: &str, state: StateValue) {
    estate::alarm(sdk, name, state, "set by the test").await;
}

/// Set an alarm's state, as the test.
pub(crate) async fn set(sdk: &aws_config::SdkConfig, name: &str, state: StateValue) {
    estate::set_alarm_state(sdk, name, state, "set by the test").await;
}

/// The estate evacuated from use1-az2, through the proxy; returns the live groups before.
async fn evacuated(proxy: &Proxy, sdk: &aws_config::SdkConfig) -> BTreeMap<String, Vec<String>> {
    estate::seed(sdk, &estate()).await;
    let before = live_groups(sdk).await;
    azevac_at(&proxy.endpoint, &["evacuate", "--az-id", ZONE, "--yes"], &[]).expect_code(0);
    assert_eq!(
        journal_items(sdk).await.len(),
        8,
        "six groups and two functions journalled"
    );
    before
}

/// The estate evacuated from use1-az2 through a proxy, and the alarm `checkout-5xx` OK: where a
/// recovery in waves starts from. Returns the live groups before the evacuation too.
async fn evacuated_behind_an_ok_alarm() -> (Moto, Proxy, aws_config::SdkConfig, BTreeMap<String, Vec<String>>) {
    let moto = Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    let sdk = common::sdk_at(&proxy.endpoint).await;
    let before = evacuated(&proxy, &sdk).await;
    alarm(&sdk, "checkout-5xx", StateValue::Ok).await;
    (moto, proxy, sdk, before)
}

/// The groups whose subnets are back as they were.
fn back(before: &BTreeMap<String, Vec<String>>, now: &BTreeMap<String, Vec<String>>) -> Vec<String> {
    let sorted = |v: &Vec<String>| {
        let mut v = v.clone();
        v.sort();
        v
    };
    before
        .iter()
        .filter(|(name, subnets)| now.get(*name).map(sorted) == Some(sorted(subnets)))
        .map(|(name, _)| name.clone())
        .collect()
}

#[tokio::test]
async fn issue_33_a_recovery_in_waves_puts_everything_back_a_wave_at_a_time_behind_the_alarm() {
    let (_moto, proxy, sdk, before) = evacuated_behind_an_ok_alarm().await;
    let args = [
        "recover",
        "--az-id",
        ZONE,
        "--waves",
        "1,50%",
        "--bake",
        "1s",
        "--alarm",
        "checkout-5xx",
        "--first-tag",
        "wave=first",
    ];

    // The dry run says the waves, changes nothing.
    let mut dry = args.to_vec();
    dry.push("--dry-run");
    let plan = azevac_at(&proxy.endpoint, &dry, &[]).expect_code(0);
    assert!(
        plan.stderr.contains("waves gated on 1 alarm(s): checkout-5xx (OK"),
        "{}",
        plan.stderr
    );
    assert!(
        plan.stderr.contains("wave 1/3: 1 resource(s) (asg 1): canary\n"),
        "{}",
        plan.stderr
    );
    // 50% of 8 is 4: three more, both types among them.
    assert!(
        plan.stderr.contains("wave 2/3: 3 resource(s) (asg 2, lambda 1)"),
        "{}",
        plan.stderr
    );
    assert!(
        plan.stderr.contains("wave 3/3: 4 resource(s) (asg 3, lambda 1)"),
        "{}",
        plan.stderr
    );
    assert_eq!(journal_items(&sdk).await.len(), 8);

    let mut real = args.to_vec();
    real.extend(["--yes", "--log-format", "json"]);
    let run = azevac_at(&proxy.endpoint, &real, &[]).expect_code(0);
    let events: Vec<serde_json::Value> = run
        .stderr
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let named = |name: &str| events.iter().filter(|e| e["event"] == name).count();
    assert_eq!(named("wave_started"), 3, "{}", run.stderr);
    assert_eq!(named("wave_done"), 3);
    assert_eq!(named("run_started"), 1, "one run, in waves");
    assert_eq!(named("run_ended"), 1);
    assert_eq!(named("line_changed"), 8, "each line's event once");
    // The canary came back alone, before anything else changed.
    let updates: Vec<String> = proxy
        .requests()
        .into_iter()
        .filter(|(label, _)| label == "autoscaling:UpdateAutoScalingGroup")
        .map(|(_, body)| body)
        .collect();
    let last = updates.len();
    assert!(updates[last - 6].contains("AutoScalingGroupName=canary"), "{updates:?}");
    assert!(journal_items(&sdk).await.is_empty(), "every record cleared");
    assert_eq!(back(&before, &live_groups(&sdk).await).len(), 6);
    assert!(proxy.calls().iter().any(|c| c == "monitoring:DescribeAlarms"));
}

/// Start azevac at `endpoint` (a proxy's or the emulator's) with stderr read line by line; returns
/// the child and its lines.
pub(crate) fn spawn(endpoint: &str, args: &[&str]) -> (std::process::Child, std::sync::mpsc::Receiver<String>) {
    spawn_with(endpoint, args, &[])
}

/// [`spawn`] with `env` on top (a value of `None` removes the variable).
pub(crate) fn spawn_with(
    endpoint: &str,
    args: &[&str],
    env: &[(&str, Option<&str>)],
) -> (std::process::Child, std::sync::mpsc::Receiver<String>) {
    let mut child = common::command(endpoint, args, env)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn azevac");
    let stderr = child.stderr.take().expect("stderr");
    let (send, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = send.send(line);
        }
    });
    (child, lines)
}

/// Read lines until one contains `text`; returns every line read.
pub(crate) fn until(lines: &std::sync::mpsc::Receiver<String>, text: &str) -> Vec<String> {
    let mut seen = Vec::new();
    loop {
        let line = lines
            .recv_timeout(std::time::Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("no line with {text:?}; saw:\n{}", seen.join("\n")));
        let hit = line.contains(text);
        seen.push(line);
        if hit {
            return seen;
        }
    }
}

/// What a test does once the run has printed a line: raise the alarm, or press Ctrl-C.
pub(crate) enum Then<'a> {
    Alarm(&'a aws_config::SdkConfig),
    Interrupt,
}

/// `recover --az-id use1-az2 --waves WAVES --bake BAKE --alarm checkout-5xx --on-alarm ON_ALARM
/// --yes` at `endpoint`; once a line of its stderr says `line`, `then`. Returns its exit code and every line.
pub(crate) async fn recover_until(
    endpoint: &str,
    waves: &str,
    bake: &str,
    on_alarm: &str,
    line: &str,
    then: Then<'_>,
) -> (Option<i32>, Vec<String>) {
    let (mut child, lines) = spawn(
        endpoint,
        &[
            "recover",
            "--az-id",
            ZONE,
            "--waves",
            waves,
            "--bake",
            bake,
            "--alarm",
            "checkout-5xx",
            "--on-alarm",
            on_alarm,
            "--yes",
        ],
    );
    let mut seen = until(&lines, line);
    match then {
        Then::Alarm(sdk) => set(sdk, "checkout-5xx", StateValue::Alarm).await,
        Then::Interrupt => {
            let sent = std::process::Command::new("kill")
                .args(["-INT", &child.id().to_string()])
                .status()
                .expect("kill");
            assert!(sent.success());
        }
    }
    let status = child.wait().expect("wait");
    seen.extend(lines.try_iter());
    (status.code(), seen)
}

/// The names each wave holds, as the run listed them (`wave N/M: K resource(s) (TYPES): NAMES`).
fn waves_listed(lines: &[String]) -> Vec<Vec<String>> {
    lines
        .iter()
        .filter(|l| l.starts_with("azevac: wave ") && l.contains(" resource(s) (") && !l.contains("putting back"))
        .map(|l| {
            let names = l.rsplit_once("): ").expect("names").1;
            names.split(", ").map(str::to_owned).collect()
        })
        .collect()
}

/// What a run stopped in its second bake left: the groups back in the zone, the records and locks
/// left, its stderr, and the names of each wave.
struct Stopped {
    back: Vec<String>,
    records: usize,
    locks: usize,
    stderr: String,
    waves: Vec<Vec<String>>,
}

/// The groups among `names` (the Lambda functions are named `*-fn`), sorted.
fn groups(names: &[&Vec<String>]) -> Vec<String> {
    let mut groups: Vec<String> = names
        .iter()
        .flat_map(|n| n.iter())
        .filter(|n| !n.ends_with("-fn"))
        .cloned()
        .collect();
    groups.sort();
    groups
}

/// An alarm raised while the second wave bakes stops the recovery: the third wave's records stay,
/// its resources stay out of the zone, and the run says which alarm and exits 1. With
/// `--on-alarm evacuate`, the second wave goes back out of the zone too, journalled again.
async fn stopped_in_the_second_bake(on_alarm: &str) -> Stopped {
    let (_moto, proxy, sdk, before) = evacuated_behind_an_ok_alarm().await;
    let (code, seen) = recover_until(
        &proxy.endpoint,
        "1,4",
        "3s",
        on_alarm,
        "wave 2/3 done",
        Then::Alarm(&sdk),
    )
    .await;
    let stderr = seen.join(
        "
",
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("recovery stopped: alarm checkout-5xx (ALARM: set by the test)"),
        "{stderr}"
    );
    assert!(!stderr.contains("wave 3/3: putting back"), "{stderr}");
    Stopped {
        back: back(&before, &live_groups(&sdk).await),
        records: journal_items(&sdk).await.len(),
        locks: common::lock_items(&sdk).await.len(),
        waves: waves_listed(&seen),
        stderr,
    }
}

#[tokio::test]
async fn issue_33_an_alarm_raised_during_the_second_wave_s_bake_stops_the_recovery_with_the_rest_journalled() {
    let run = stopped_in_the_second_bake("stop").await;
    // Types take turns: a group; then a function, a group, a function; then four groups.
    assert_eq!(
        run.waves.iter().map(Vec::len).collect::<Vec<_>>(),
        [1, 3, 4],
        "{}",
        run.stderr
    );
    assert_eq!(run.records, 4, "the third wave's records are kept");
    assert_eq!(
        run.back,
        groups(&[&run.waves[0], &run.waves[1]]),
        "the first two waves' groups are back"
    );
    assert_eq!(run.locks, 0, "every lock released");
}

#[tokio::test]
async fn issue_33_on_alarm_evacuate_takes_the_last_wave_back_out_of_the_zone() {
    let run = stopped_in_the_second_bake("evacuate").await;
    let stderr = &run.stderr;
    assert!(
        stderr.contains("the last wave is out of use1-az2 again: 3 resource(s) evacuated"),
        "{stderr}"
    );
    // The first wave's one resource stays back; the second wave's three are journalled again.
    assert_eq!(run.records, 7, "{stderr}");
    assert_eq!(
        run.back,
        groups(&[&run.waves[0]]),
        "only the first wave's group is back"
    );
    assert_eq!(run.locks, 0);
}

/// `recover ARGS --wait-timeout 2s --yes` at `endpoint` while an alarm it is gated on is not OK: the
/// first wave (`wave`, e.g. `wave 1/2`) waits for it, then the run stops (exit 1) naming it (`alarm`,
/// e.g. `name (ALARM`).
fn held(endpoint: &str, args: &[&str], wave: &str, alarm: &str) {
    let mut all = vec!["recover"];
    all.extend(args);
    all.extend(["--wait-timeout", "2s", "--yes"]);
    let held = azevac_at(endpoint, &all, &[]).expect_code(1);
    assert!(
        held.stderr.contains(&format!("{wave} waits for the alarms to be OK")),
        "{}",
        held.stderr
    );
    assert!(
        held.stderr
            .contains(&format!("recovery stopped: before {wave}, after waiting 2s: {alarm}")),
        "{}",
        held.stderr
    );
}

#[tokio::test]
async fn issue_33_a_wave_waits_for_its_alarms_and_an_unknown_alarm_is_refused() {
    let moto = Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    let sdk = common::sdk_at(&proxy.endpoint).await;
    evacuated(&proxy, &sdk).await;
    alarm(&sdk, "checkout-p99", StateValue::Alarm).await;

    // An alarm that is not there: one line, exit 2, nothing changed.
    let unknown = azevac_at(
        &proxy.endpoint,
        &["recover", "--waves", "1", "--alarm", "checkout-p9", "--yes"],
        &[],
    )
    .expect_code(2);
    assert!(
        unknown.stderr.contains("no CloudWatch alarm named checkout-p9"),
        "{}",
        unknown.stderr
    );
    let prefix = azevac_at(
        &proxy.endpoint,
        &["recover", "--waves", "1", "--alarm-prefix", "payments-", "--yes"],
        &[],
    )
    .expect_code(2);
    assert!(
        prefix
            .stderr
            .contains("no CloudWatch alarm's name starts with payments-"),
        "{}",
        prefix.stderr
    );

    // In ALARM before the first wave: it waits, then stops at --wait-timeout with nothing changed.
    held(
        &proxy.endpoint,
        &["--waves", "1", "--alarm-prefix", "checkout-"],
        "wave 1/2",
        "checkout-p99 (ALARM",
    );
    assert_eq!(journal_items(&sdk).await.len(), 8, "nothing recovered");

    // Flags of the waves without --waves are refused by the parser.
    let alone = azevac_at(&proxy.endpoint, &["recover", "--alarm", "x", "--dry-run"], &[]).expect_code(2);
    assert!(alone.stderr.contains("--waves"), "{}", alone.stderr);
}

/// Ctrl-C while a wave bakes: the next wave does not start, its records stay, nothing is taken for
/// an alarm (no "stopped" line, no evacuation even with `--on-alarm evacuate`), and the run exits as
/// an interrupted one does, without waiting out the bake.
#[tokio::test]
async fn issue_33_ctrl_c_during_a_bake_stops_before_the_next_wave_and_is_no_alarm() {
    let (_moto, proxy, sdk, before) = evacuated_behind_an_ok_alarm().await;
    let started = std::time::Instant::now();
    let (code, seen) = recover_until(
        &proxy.endpoint,
        "1,4",
        "10m",
        "evacuate",
        "wave 1/3 done",
        Then::Interrupt,
    )
    .await;
    let stderr = seen.join(
        "
",
    );
    assert_eq!(code, Some(130), "{stderr}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(60),
        "the bake was waited out"
    );
    assert!(!stderr.contains("recovery stopped"), "{stderr}");
    assert!(!stderr.contains("taking the last wave back out"), "{stderr}");
    assert!(!stderr.contains("wave 2/3: putting back"), "{stderr}");
    let waves = waves_listed(&seen);
    assert_eq!(
        journal_items(&sdk).await.len(),
        7,
        "only the first wave's record is cleared"
    );
    assert_eq!(back(&before, &live_groups(&sdk).await), groups(&[&waves[0]]));
    assert!(common::lock_items(&sdk).await.is_empty(), "every lock released");
}

/// Traffic comes back only once every wave of capacity is back, in waves of its own: a route
/// through the zone's NAT gateway is put back after both groups, in a wave marked `(traffic)`.
#[tokio::test]
async fn issue_33_traffic_comes_back_in_its_own_waves_after_the_capacity() {
    use common::estate::{NatSpec, RouteTableSpec};
    let moto = Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    let sdk = common::sdk_at(&proxy.endpoint).await;
    let mut spec = estate::groups_in_two_zones("10.34.0.0/16", &["web", "api"]);
    let nat = |name: &str, zone: &str| NatSpec {
        name: name.into(),
        vpc: "main".into(),
        zone: zone.into(),
        private: false,
    };
    spec.nat_gateways = vec![nat("main-zone", ZONE), nat("main-az1", "use1-az1")];
    spec.route_tables = vec![RouteTableSpec {
        name: "private-az1".into(),
        vpc: "main".into(),
        zones: vec!["use1-az1".into()],
        routes: BTreeMap::from([("0.0.0.0/0".to_owned(), "main-zone".to_owned())]),
    }];
    estate::seed(&sdk, &spec).await;
    azevac_at(
        &proxy.endpoint,
        &["evacuate", "--az-id", ZONE, "--type", "asg,nat", "--yes"],
        &[],
    )
    .expect_code(0);
    assert_eq!(journal_items(&sdk).await.len(), 3);

    let run = azevac_at(
        &proxy.endpoint,
        &["recover", "--az-id", ZONE, "--waves", "1", "--bake", "0s", "--yes"],
        &[],
    )
    .expect_code(0);
    assert!(run.stderr.contains("wave 1/3: 1 resource(s) (asg 1)"), "{}", run.stderr);
    assert!(run.stderr.contains("wave 2/3: 1 resource(s) (asg 1)"), "{}", run.stderr);
    assert!(
        run.stderr.contains("wave 3/3 (traffic): 1 resource(s) (nat 1)"),
        "{}",
        run.stderr
    );
    let calls = proxy.calls();
    let last_group = calls
        .iter()
        .rposition(|c| c == "autoscaling:UpdateAutoScalingGroup")
        .expect("groups updated");
    let route = calls
        .iter()
        .rposition(|c| c == "ec2:ReplaceRoute")
        .expect("route replaced");
    assert!(route > last_group, "the route came back before the capacity: {calls:?}");
    assert!(journal_items(&sdk).await.is_empty());
}

/// Across accounts: the waves spread over the accounts, and an alarm in the second bake takes that
/// wave back out in each account it holds resources of, through the role the recovery reached it
/// by, each record stamped with its account and the alarm as its reason.
#[tokio::test(flavor = "multi_thread")]
async fn issue_33_on_alarm_evacuate_across_accounts_goes_back_out_in_each_account_of_the_wave() {
    const MEMBERS: [&str; 2] = ["111111111111", "222222222222"];
    let moto = Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    let operator = common::sdk_at(&proxy.endpoint).await;
    let spec: Spec = serde_json::from_value(serde_json::json!({
        "vpcs": [{"name": "prod", "cidr": "10.10.0.0/16", "zones": ["use1-az1", "use1-az2"]}],
        "auto_scaling_groups": [
            {"name": "web", "vpc": "prod", "zones": ["use1-az1", "use1-az2"]},
            {"name": "api", "vpc": "prod", "zones": ["use1-az1", "use1-az2"]}
        ],
        "lambda_functions": [{"name": "thumbs-fn", "vpc": "prod", "zones": ["use1-az1", "use1-az2"]}]
    }))
    .expect("spec");
    for account in MEMBERS {
        estate::seed(&common::in_account(&operator, account).await, &spec).await;
    }
    azevac_at(
        &proxy.endpoint,
        &["evacuate", "--az-id", ZONE, "--accounts", &MEMBERS.join(","), "--yes"],
        &[],
    )
    .expect_code(0);
    assert_eq!(journal_items(&operator).await.len(), 6);
    alarm(&operator, "checkout-5xx", StateValue::Ok).await;

    let (code, seen) = recover_until(
        &proxy.endpoint,
        "1,3",
        "3s",
        "evacuate",
        "wave 2/3 done",
        Then::Alarm(&operator),
    )
    .await;
    let stderr = seen.join(
        "
",
    );
    assert_eq!(code, Some(1), "{stderr}");
    // Types take turns, then accounts: a group of the first account; then its function and a group
    // of the second; then the rest.
    assert!(stderr.contains("wave 2/3: 2 resource(s) (asg 1, lambda 1)"), "{stderr}");
    assert!(
        stderr.contains("the last wave is out of use1-az2 again: 2 resource(s) evacuated"),
        "{stderr}"
    );
    let records = journal_items(&operator).await;
    assert_eq!(records.len(), 6 - 3 + 2, "{stderr}");
    let again: Vec<_> = records
        .iter()
        .filter(|r| common::attr_s(r, "reason").starts_with("recovery in waves stopped by alarm checkout-5xx"))
        .collect();
    assert_eq!(
        again.len(),
        2,
        "the wave's two records, with the alarm as reason: {records:?}"
    );
    let accounts: std::collections::BTreeSet<String> = again.iter().map(|r| common::attr_s(r, "account_id")).collect();
    assert_eq!(
        accounts,
        MEMBERS.iter().map(|a| a.to_string()).collect(),
        "one in each account"
    );
    assert!(common::lock_items(&operator).await.is_empty());
}

#[tokio::test]
async fn issue_33_a_plan_saved_with_waves_is_applied_in_the_same_waves_behind_the_same_alarm() {
    let (_moto, proxy, sdk, before) = evacuated_behind_an_ok_alarm().await;
    let saved = azevac_at(
        &proxy.endpoint,
        &[
            "recover",
            "--az-id",
            ZONE,
            "--waves",
            "1,50%",
            "--bake",
            "1s",
            "--alarm",
            "checkout-5xx",
            "--dry-run",
            "--output",
            "json",
        ],
        &[],
    )
    .expect_code(0);
    let plan = saved.json();
    assert_eq!(plan["request"]["waves"]["steps"], "1,50%,100%", "{plan:#}");
    assert_eq!(plan["request"]["waves"]["alarms"][0], "checkout-5xx");
    let dir = tempfile::tempdir().expect("tempdir");
    let write = |name: &str, plan: &serde_json::Value| {
        let path = dir.path().join(name);
        std::fs::write(&path, plan.to_string()).expect("write plan");
        path.to_str().expect("utf-8").to_owned()
    };

    // An edited plan's waves are held to what --waves accepts: one line, exit 2, nothing changed.
    let mut edited = plan.clone();
    edited["request"]["waves"]["steps"] = "0,50%".into();
    let refused = azevac_at(
        &proxy.endpoint,
        &["apply", &write("edited.json", &edited), "--yes"],
        &[],
    )
    .expect_code(2);
    assert!(
        refused.stderr.contains("the plan's waves: wave `0`"),
        "{}",
        refused.stderr
    );
    assert_eq!(journal_items(&sdk).await.len(), 8);

    proxy.set(common::proxy::Faults::default());
    let applied = azevac_at(&proxy.endpoint, &["apply", &write("plan.json", &plan), "--yes"], &[]).expect_code(0);
    assert!(
        applied
            .stderr
            .contains("waves: 1,50%,100%, each baking 1s, gated on checkout-5xx, on alarm stop"),
        "the settings shown name the waves: {}",
        applied.stderr
    );
    // Carried out a wave at a time, each one baked: not the listing alone.
    for wave in [
        "wave 1/3: putting back 1 resource(s)",
        "wave 1/3 done",
        "baking 1s",
        "wave 3/3 done",
    ] {
        assert!(applied.stderr.contains(wave), "{wave}: {}", applied.stderr);
    }
    assert!(
        proxy.calls().iter().any(|c| c == "monitoring:DescribeAlarms"),
        "the alarm gated the applied waves"
    );
    assert!(journal_items(&sdk).await.is_empty(), "every record cleared");
    assert_eq!(back(&before, &live_groups(&sdk).await).len(), 6);
}

/// Issue 50: the emulator itself answers CloudWatch's CBOR (scripts/moto_server.py), so a recovery
/// in waves run straight at it, with no test proxy between, reads its alarms: in ALARM before the
/// first wave, the wave waits and the recovery stops at `--wait-timeout` with nothing put back; OK,
/// the waves go; raised while the second wave bakes, it stops the recovery with the third wave's
/// records kept, as the runbook says.
#[tokio::test]
async fn issue_50_a_recovery_in_waves_straight_at_the_emulator_reads_its_alarms() {
    let moto = Moto::start_through_launcher();
    let sdk = common::sdk_at(&moto.endpoint).await;
    estate::seed(&sdk, &estate()).await;
    let before = live_groups(&sdk).await;
    azevac_at(&moto.endpoint, &["evacuate", "--az-id", ZONE, "--yes"], &[]).expect_code(0);
    alarm(&sdk, "checkout-5xx", StateValue::Alarm).await;

    let gate = [
        "--az-id",
        ZONE,
        "--waves",
        "1,4",
        "--bake",
        "3s",
        "--alarm",
        "checkout-5xx",
    ];
    held(
        &moto.endpoint,
        &gate,
        "wave 1/3",
        "checkout-5xx (ALARM: set by the test)",
    );
    assert_eq!(journal_items(&sdk).await.len(), 8, "nothing put back");

    set(&sdk, "checkout-5xx", StateValue::Ok).await;
    let (code, seen) = recover_until(&moto.endpoint, "1,4", "3s", "stop", "wave 2/3 done", Then::Alarm(&sdk)).await;
    let stderr = seen.join("\n");
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("recovery stopped: alarm checkout-5xx (ALARM: set by the test)"),
        "{stderr}"
    );
    let waves = waves_listed(&seen);
    assert_eq!(waves.iter().map(Vec::len).collect::<Vec<_>>(), [1, 3, 4], "{stderr}");
    assert_eq!(journal_items(&sdk).await.len(), 4, "the third wave's records are kept");
    assert_eq!(back(&before, &live_groups(&sdk).await), groups(&[&waves[0], &waves[1]]));
    assert!(common::lock_items(&sdk).await.is_empty(), "every lock released");
}
