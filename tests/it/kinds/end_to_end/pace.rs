//! Paced Auto Scaling evacuation (issue 8): AZRebalance suspended, the zone's instances terminated
//! N at a time with capacity kept, and on recovery only what azevac suspended resumed. Against moto
//! server through the counting proxy, which shows the order of the calls.

use crate::common;

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::Duration;

use aws_sdk_cloudwatch::types::StateValue;
use common::estate::{self, AsgSpec, Spec, VpcSpec};
use common::proxy::{FailRule, Fault, Faults, Hold, Proxy};

use crate::app::waves::{alarm, set};
use common::{attr_list, attr_s, azevac_at, journal_items, live_groups, Moto, ZONE};

/// The zone's name in moto's us-east-1.
const ZONE_NAME: &str = "us-east-1c";

/// A group's instances as (zone, lifecycle state), and its suspended processes.
async fn group_state(sdk: &aws_config::SdkConfig, name: &str) -> (Vec<(String, String)>, Vec<String>) {
    let out = aws_sdk_autoscaling::Client::new(sdk)
        .describe_auto_scaling_groups()
        .auto_scaling_group_names(name)
        .send()
        .await
        .expect("DescribeAutoScalingGroups");
    let group = &out.auto_scaling_groups()[0];
    let instances = group
        .instances()
        .iter()
        .map(|i| {
            (
                i.availability_zone().unwrap_or_default().to_owned(),
                i.lifecycle_state().map(|s| s.as_str().to_owned()).unwrap_or_default(),
            )
        })
        .collect();
    let suspended = group
        .suspended_processes()
        .iter()
        .filter_map(|p| p.process_name().map(str::to_owned))
        .collect();
    (instances, suspended)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_zone_is_paced_out_and_only_our_suspension_is_resumed() {
    let moto = Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    let sdk = common::sdk(&moto).await;
    let group = |name: &str, desired: i32, zones: &[&str]| AsgSpec {
        name: name.into(),
        vpc: "main".into(),
        zones: zones.iter().map(|z| z.to_string()).collect(),
        desired,
        tags: BTreeMap::new(),
    };
    // moto starts every instance in a group's first subnet: here, the zone being evacuated.
    let spec = Spec {
        vpcs: vec![VpcSpec {
            name: "main".into(),
            cidr: "10.70.0.0/16".into(),
            zones: vec!["use1-az1".into(), "use1-az2".into(), "use1-az4".into()],
        }],
        auto_scaling_groups: vec![
            group("paced", 3, &["use1-az2", "use1-az1", "use1-az4"]),
            group("held", 2, &["use1-az2", "use1-az4"]),
        ],
        ..Spec::default()
    };
    estate::seed(&sdk, &spec).await;
    let autoscaling = aws_sdk_autoscaling::Client::new(&sdk);
    // Someone suspended AZRebalance on `held` already: azevac must not resume it later.
    autoscaling
        .suspend_processes()
        .auto_scaling_group_name("held")
        .scaling_processes("AZRebalance")
        .send()
        .await
        .expect("SuspendProcesses");
    let original = live_groups(&sdk).await;
    let (before, _) = group_state(&sdk, "paced").await;
    assert!(
        before.iter().all(|(az, _)| az == ZONE_NAME) && before.len() == 3,
        "{before:?}"
    );

    let plan = azevac_at(
        &proxy.endpoint,
        &["evacuate", "--az-id", ZONE, "--type", "asg", "--pace", "1", "--dry-run"],
        &[],
    )
    .expect_code(0);
    assert!(
        plan.stdout
            .contains("-1 subnet, 2 left; suspend:AZRebalance, terminate:3 in the zone, 1 at a time"),
        "{}",
        plan.stdout
    );

    proxy.set(Faults::default());
    azevac_at(
        &proxy.endpoint,
        &[
            "evacuate",
            "--az-id",
            ZONE,
            "--type",
            "asg",
            "--pace",
            "1",
            "--concurrency",
            "1",
            "--yes",
        ],
        &[],
    )
    .expect_code(0);
    let calls = proxy.calls();
    // One group at a time (--concurrency 1): paced's calls follow its SuspendProcesses.
    let suspend = calls
        .iter()
        .position(|c| c == "autoscaling:SuspendProcesses")
        .expect("suspended");
    let after: Vec<&str> = calls[suspend + 1..].iter().map(String::as_str).collect();
    let update = after.iter().position(|c| *c == "autoscaling:UpdateAutoScalingGroup");
    let terminate = after
        .iter()
        .position(|c| *c == "autoscaling:TerminateInstanceInAutoScalingGroup");
    assert!(
        update.is_some() && update < terminate,
        "suspend, then subnets, then instances: {calls:?}"
    );
    let terminations = calls
        .iter()
        .filter(|c| *c == "autoscaling:TerminateInstanceInAutoScalingGroup")
        .count();
    assert_eq!(terminations, 5, "every instance in the zone, one at a time: {calls:?}");
    assert_eq!(
        calls.iter().filter(|c| *c == "autoscaling:SuspendProcesses").count(),
        1,
        "not on held"
    );
    for (name, desired) in [("paced", 3), ("held", 2)] {
        let (instances, suspended) = group_state(&sdk, name).await;
        let serving: Vec<_> = instances.iter().filter(|(_, s)| s == "InService").collect();
        assert_eq!(serving.len(), desired, "{name}: capacity kept: {instances:?}");
        assert!(
            serving.iter().all(|(az, _)| az != ZONE_NAME),
            "{name}: out of the zone: {instances:?}"
        );
        assert_eq!(suspended, ["AZRebalance"], "{name}");
    }
    let actions: BTreeMap<String, Vec<String>> = journal_items(&sdk)
        .await
        .iter()
        .map(|r| (attr_s(r, "resource_name"), attr_list(r, "actions")))
        .collect();
    assert_eq!(
        actions["paced"],
        [
            r#"{"suspend":{"process":"AZRebalance"}}"#,
            r#"{"terminate":{"in_zone":3,"batch":1}}"#
        ]
    );
    assert_eq!(actions["held"], [r#"{"terminate":{"in_zone":2,"batch":1}}"#]);

    let plan = azevac_at(&proxy.endpoint, &["recover", "--dry-run"], &[]).expect_code(0);
    assert!(plan.stdout.contains("resume:AZRebalance"), "{}", plan.stdout);
    azevac_at(&proxy.endpoint, &["recover", "--yes"], &[]).expect_code(0);
    assert_eq!(live_groups(&sdk).await, original);
    assert!(
        group_state(&sdk, "paced").await.1.is_empty(),
        "azevac's suspension resumed"
    );
    assert_eq!(
        group_state(&sdk, "held").await.1,
        ["AZRebalance"],
        "someone else's left alone"
    );
    assert!(journal_items(&sdk).await.is_empty());
}

/// The instances the proxy saw terminated since its calls were last cleared.
fn terminations(proxy: &Proxy) -> usize {
    proxy
        .calls()
        .iter()
        .filter(|c| *c == "autoscaling:TerminateInstanceInAutoScalingGroup")
        .count()
}

/// azevac with `args` through the proxy, its output kept for [`finished`].
fn spawn_piped(proxy: &Proxy, args: &[&str]) -> std::process::Child {
    common::command(&proxy.endpoint, args, &[])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn azevac")
}

/// The exit code of a [`spawn_piped`] run, and all it printed (stdout, then stderr).
fn finished(child: std::process::Child) -> (Option<i32>, String) {
    let out = child.wait_with_output().expect("wait");
    let said = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code(), said)
}

/// One group `paced` of `desired` instances over three zones, all of them (moto starts every
/// instance in a group's first subnet) in the zone being evacuated.
fn one_paced_group(cidr: &str, desired: i32) -> Spec {
    Spec {
        vpcs: vec![VpcSpec {
            name: "main".into(),
            cidr: cidr.into(),
            zones: vec!["use1-az1".into(), "use1-az2".into(), "use1-az4".into()],
        }],
        auto_scaling_groups: vec![AsgSpec {
            name: "paced".into(),
            vpc: "main".into(),
            zones: ["use1-az2", "use1-az1", "use1-az4"]
                .iter()
                .map(|z| z.to_string())
                .collect(),
            desired,
            tags: BTreeMap::new(),
        }],
        ..Spec::default()
    }
}

#[tokio::test]
async fn issue_33_an_alarm_stops_a_paced_evacuation_between_batches_and_recover_puts_it_back() {
    let moto = Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    // Through the proxy: it speaks CloudWatch's CBOR protocol to moto.
    let sdk = common::sdk_at(&proxy.endpoint).await;
    // moto starts every instance in a group's first subnet: here, the zone being evacuated.
    let spec = one_paced_group("10.71.0.0/16", 3);
    estate::seed(&sdk, &spec).await;
    alarm(&sdk, "checkout-5xx", StateValue::Ok).await;
    let original = live_groups(&sdk).await;
    let evacuate = |extra: &[&'static str]| {
        let mut args: Vec<&'static str> = vec![
            "evacuate",
            "--az-id",
            ZONE,
            "--type",
            "asg",
            "--concurrency",
            "1",
            "--yes",
        ];
        args.extend_from_slice(extra);
        args
    };

    // A gate on an alarm that is not there, or a gate without --pace: one line, exit 2, no change.
    let missing = evacuate(&["--pace", "1", "--pace-alarm", "no-such-alarm"]);
    let run = azevac_at(&proxy.endpoint, &missing, &[]).expect_code(2);
    assert_eq!(run.stderr.trim().lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.contains("check --pace-alarm"), "{}", run.stderr);
    let unpaced = evacuate(&["--pace-alarm", "checkout-5xx"]);
    let run = azevac_at(&proxy.endpoint, &unpaced, &[]).expect_code(2);
    assert!(run.stderr.contains("give --pace N too"), "{}", run.stderr);
    assert_eq!(live_groups(&sdk).await, original);
    assert!(journal_items(&sdk).await.is_empty());

    // Read before every batch, the first one too: an alarm already in ALARM stops the pacing
    // before any instance is terminated, and one not known to be OK holds it until the wait ends.
    let (zone_out, zone_in) = (
        evacuate(&["--pace", "1", "--pace-alarm", "checkout-5xx"]),
        ["recover", "--yes"],
    );
    for (state, said) in [
        (StateValue::Alarm, "pacing stopped by alarm checkout-5xx (ALARM"),
        (
            StateValue::InsufficientData,
            "alarm checkout-5xx (INSUFFICIENT_DATA: set by the test) not OK within 2s",
        ),
    ] {
        set(&sdk, "checkout-5xx", state.clone()).await;
        proxy.set(Faults::default());
        let mut args = zone_out.clone();
        args.extend(["--wait-timeout", "2s"]);
        let run = azevac_at(&proxy.endpoint, &args, &[]).expect_code(1);
        let all = format!("{}{}", run.stdout, run.stderr);
        assert!(all.contains(said), "{state:?}: {all}");
        assert_eq!(terminations(&proxy), 0, "{state:?}: no batch went");
        azevac_at(&proxy.endpoint, &zone_in, &[]).expect_code(0);
        assert_eq!(live_groups(&sdk).await, original, "{state:?}");
    }
    set(&sdk, "checkout-5xx", StateValue::Ok).await;

    // The alarm goes off while the second batch's termination is in flight: no third batch.
    proxy.hold(Hold {
        label: Some("autoscaling:TerminateInstanceInAutoScalingGroup".into()),
        body_contains: String::new(),
        nth: 2,
    });
    let gated = evacuate(&["--pace", "1", "--pace-alarm", "checkout-5xx"]);
    let mut child = spawn_piped(&proxy, &gated);
    proxy
        .wait_held(Some(&mut child), Duration::from_secs(60))
        .expect("the second batch in flight");
    set(&sdk, "checkout-5xx", StateValue::Alarm).await;
    proxy.release();
    let (code, said) = finished(child);
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("pacing stopped by alarm checkout-5xx (ALARM"), "{said}");
    let terminations = terminations(&proxy);
    assert_eq!(terminations, 2, "two batches, then the alarm");
    let (instances, _) = group_state(&sdk, "paced").await;
    assert_eq!(
        instances
            .iter()
            .filter(|(az, s)| az == ZONE_NAME && s == "InService")
            .count(),
        1,
        "the third instance stays in the zone: {instances:?}"
    );
    assert_eq!(
        live_groups(&sdk).await["paced"].len(),
        2,
        "the subnets are out of the zone"
    );
    let records = journal_items(&sdk).await;
    assert_eq!(records.len(), 1, "the change is journalled");
    assert_eq!(
        attr_list(&records[0], "actions"),
        [
            r#"{"suspend":{"process":"AZRebalance"}}"#,
            r#"{"terminate":{"in_zone":3,"batch":1}}"#
        ]
    );

    set(&sdk, "checkout-5xx", StateValue::Ok).await;
    azevac_at(&proxy.endpoint, &["recover", "--yes"], &[]).expect_code(0);
    assert_eq!(live_groups(&sdk).await, original);
    assert!(group_state(&sdk, "paced").await.1.is_empty(), "AZRebalance resumed");
    assert!(journal_items(&sdk).await.is_empty());
}

#[tokio::test]
async fn issue_33_a_paced_batch_waits_while_its_alarms_cannot_be_read() {
    let moto = Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    let sdk = common::sdk_at(&proxy.endpoint).await;
    let spec = one_paced_group("10.72.0.0/16", 2);
    estate::seed(&sdk, &spec).await;
    alarm(&sdk, "checkout-5xx", StateValue::Ok).await;

    // CloudWatch stops answering while the first batch's termination is in flight (a refusal the
    // SDK does not retry, so that the test waits on the pacing and not on retries): the second
    // batch waits for an answer it never gets, and the wait ends naming why.
    proxy.hold(Hold {
        label: Some("autoscaling:TerminateInstanceInAutoScalingGroup".into()),
        body_contains: String::new(),
        nth: 1,
    });
    let args = [
        "evacuate",
        "--az-id",
        ZONE,
        "--type",
        "asg",
        "--pace",
        "1",
        "--pace-alarm",
        "checkout-5xx",
        "--wait-timeout",
        "3s",
        "--yes",
    ];
    let mut child = spawn_piped(&proxy, &args);
    proxy
        .wait_held(Some(&mut child), Duration::from_secs(60))
        .expect("the first batch in flight");
    proxy.fail_too(
        vec![FailRule {
            label: "monitoring:DescribeAlarms".into(),
            body_contains: String::new(),
            fault: Fault::AccessDenied,
        }],
        Duration::ZERO,
    );
    proxy.release();
    let (code, said) = finished(child);
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("the alarms could not be read within 3s"), "{said}");
    let terminations = terminations(&proxy);
    assert_eq!(terminations, 1, "no batch after the alarms went unread");
    assert_eq!(journal_items(&sdk).await.len(), 1, "the change is journalled");
}

/// Issue 50: a group whose owner suspended AZRebalance (or Launch) keeps its instances in the zone
/// when its subnets go: the plan line says so instead of "replaced", and how --pace moves them; with
/// Launch suspended nothing would replace them, so --pace terminates none of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_50_the_plan_says_what_an_owners_suspended_process_keeps_in_the_zone() {
    let moto = Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    let sdk = common::sdk(&moto).await;
    let mut spec = one_paced_group("10.72.0.0/16", 2);
    for name in ["held", "stuck"] {
        let mut group = spec.auto_scaling_groups[0].clone();
        group.name = name.into();
        spec.auto_scaling_groups.push(group);
    }
    estate::seed(&sdk, &spec).await;
    let autoscaling = aws_sdk_autoscaling::Client::new(&sdk);
    for (name, process) in [("held", "AZRebalance"), ("stuck", "Launch")] {
        autoscaling
            .suspend_processes()
            .auto_scaling_group_name(name)
            .scaling_processes(process)
            .send()
            .await
            .expect("SuspendProcesses");
    }
    let plan = |pace: bool| {
        let mut args = vec![
            "evacuate",
            "--az-id",
            ZONE,
            "--type",
            "asg",
            "--dry-run",
            "--output",
            "json",
        ];
        if pace {
            args.extend(["--pace", "1"]);
        }
        let doc = azevac_at(&proxy.endpoint, &args, &[]).expect_code(0).json();
        doc["items"]
            .as_array()
            .expect("items")
            .iter()
            .map(|i| (i["name"].as_str().unwrap_or_default().to_owned(), i.clone()))
            .collect::<BTreeMap<String, serde_json::Value>>()
    };
    let notes = |item: &serde_json::Value| item["notes"].to_string();

    let unpaced = plan(false);
    let held = notes(&unpaced["held"]);
    assert!(
        held.contains("AZRebalance is suspended by its owner: removing the subnets moves none of its 2 instance(s)")
            && !held.contains("terminates the instances in the removed subnets"),
        "{held}"
    );
    let stuck = notes(&unpaced["stuck"]);
    assert!(stuck.contains("Launch is suspended by its owner"), "{stuck}");
    let paced = notes(&unpaced["paced"]);
    assert!(
        paced.contains("terminates the instances in the removed subnets"),
        "{paced}"
    );

    let with_pace = plan(true);
    assert!(
        notes(&with_pace["held"]).contains("--pace terminates them, 1 at a time"),
        "{}",
        with_pace["held"]
    );
    assert!(
        notes(&with_pace["stuck"]).contains("--pace terminates none of them"),
        "{}",
        with_pace["stuck"]
    );
    let stuck_actions = with_pace["stuck"]["actions"].to_string();
    assert!(!stuck_actions.contains("terminate"), "{stuck_actions}");

    // Carried out: nothing of stuck's is terminated; held is paced out as planned.
    let stuck_instances: Vec<String> = autoscaling
        .describe_auto_scaling_groups()
        .auto_scaling_group_names("stuck")
        .send()
        .await
        .expect("DescribeAutoScalingGroups")
        .auto_scaling_groups()[0]
        .instances()
        .iter()
        .filter_map(|i| i.instance_id().map(str::to_owned))
        .collect();
    proxy.set(Faults::default());
    azevac_at(
        &proxy.endpoint,
        &["evacuate", "--az-id", ZONE, "--type", "asg", "--pace", "1", "--yes"],
        &[],
    )
    .expect_code(0);
    let terminated: Vec<String> = proxy
        .requests()
        .into_iter()
        .filter(|(label, _)| label == "autoscaling:TerminateInstanceInAutoScalingGroup")
        .map(|(_, body)| body)
        .collect();
    assert_eq!(terminated.len(), 4, "paced's and held's: {terminated:?}");
    assert!(
        terminated
            .iter()
            .all(|body| stuck_instances.iter().all(|i| !body.contains(i.as_str()))),
        "none of stuck's: {terminated:?}"
    );
    let actions: BTreeMap<String, Vec<String>> = journal_items(&sdk)
        .await
        .iter()
        .map(|r| (attr_s(r, "resource_name"), attr_list(r, "actions")))
        .collect();
    assert!(actions["stuck"].is_empty(), "{actions:?}");
}
