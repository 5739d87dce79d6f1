//! Hardening (issue 13): no hang, no silent success, one line for a bad environment, and text
//! from AWS that cannot rewrite the operator's screen. Each test failed before its fix.

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::estate::{self, AsgSpec, EcsSpec, LambdaSpec, Spec, VpcSpec};
use common::proxy::{FailRule, Fault, Faults, Hold, Proxy};
use common::{
    attr_s, azevac, azevac_at, journal_items, live_functions, live_groups, live_services, snapshot, Moto, ZONE,
};

fn zones(list: &[&str]) -> Vec<String> {
    list.iter().map(|z| z.to_string()).collect()
}

fn group(name: &str) -> AsgSpec {
    AsgSpec {
        name: name.into(),
        vpc: "main".into(),
        zones: zones(&["use1-az1", ZONE]),
        desired: 0,
        tags: BTreeMap::new(),
    }
}

/// A group and a service, both in the zone and one other.
fn estate(group_name: &str) -> Spec {
    Spec {
        vpcs: vec![VpcSpec {
            name: "main".into(),
            cidr: "10.80.0.0/16".into(),
            zones: zones(&["use1-az1", ZONE]),
        }],
        auto_scaling_groups: vec![group(group_name)],
        ecs_services: vec![EcsSpec {
            cluster: "prod".into(),
            name: "api".into(),
            vpc: "main".into(),
            zones: zones(&["use1-az1", ZONE]),
            network_mode: "awsvpc".into(),
            controller: "ECS".into(),
            assign_public_ip: "DISABLED".into(),
            desired: 0,
            tags: BTreeMap::new(),
        }],
        ..Spec::default()
    }
}

fn fail(label: &str, fault: Fault) -> Faults {
    Faults {
        rules: vec![FailRule {
            label: label.into(),
            body_contains: String::new(),
            fault,
        }],
        ..Faults::default()
    }
}

/// A control plane that accepts a call and never answers: the attempt is abandoned after
/// `--attempt-timeout` and retried, and the run completes. (Before: no timeout, so it hung.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_13_a_call_that_never_answers_is_abandoned_and_retried() {
    let moto = Moto::start();
    let sdk = common::sdk(&moto).await;
    estate::seed(&sdk, &estate("web")).await;
    let proxy = Proxy::start(&moto.endpoint);
    proxy.hold(Hold {
        label: Some("autoscaling:DescribeAutoScalingGroups".into()),
        body_contains: String::new(),
        nth: 1,
    });
    // Without the timeout the run would wait for ever; the release below only ends the test.
    let release = {
        let proxy_hold = std::sync::Arc::new(proxy);
        let p = proxy_hold.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(120));
            p.release();
        });
        proxy_hold
    };
    let started = std::time::Instant::now();
    let run = azevac_at(
        &release.endpoint,
        &[
            "evacuate",
            "--az-id",
            ZONE,
            "--type",
            "asg",
            "--dry-run",
            "--attempt-timeout",
            "2s",
        ],
        &[],
    )
    .expect_code(0);
    assert!(
        started.elapsed() < Duration::from_secs(100),
        "the held call was never abandoned"
    );
    assert!(run.stdout.contains("web"), "{}", run.stdout);
    let describes = release
        .calls()
        .iter()
        .filter(|c| *c == "autoscaling:DescribeAutoScalingGroups")
        .count();
    assert!(describes >= 2, "the held attempt was retried: {describes} calls");
}

/// Every call slower than `--operation-timeout`: one error line naming the call, no hang.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_13_an_operation_timeout_is_one_error_line() {
    let moto = Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    proxy.set(Faults {
        latency: Duration::from_secs(4),
        ..Faults::default()
    });
    let run = azevac_at(
        &proxy.endpoint,
        &[
            "evacuate",
            "--az-id",
            ZONE,
            "--dry-run",
            "--attempt-timeout",
            "1s",
            "--operation-timeout",
            "2s",
        ],
        &[],
    );
    assert_ne!(run.code, 0, "{}", run.stderr);
    let errors: Vec<&str> = run.stderr.lines().filter(|l| l.starts_with("azevac: error:")).collect();
    assert_eq!(errors.len(), 1, "{}", run.stderr);
    assert!(
        errors[0].contains("ec2:DescribeAvailabilityZones") && errors[0].contains("timeout"),
        "{}",
        errors[0]
    );
}

/// EC2 failing (HTTP 500 InternalError, an AWS error) is reported as EC2 failing, exit 1 — not
/// as a wrong region, which sends the operator to check a region that is right.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_13_an_ec2_500_is_not_a_wrong_region() {
    let moto = Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    proxy.set(fail("ec2:DescribeAvailabilityZones", Fault::ServerError));
    let run = azevac_at(
        &proxy.endpoint,
        &["evacuate", "--az-id", ZONE, "--dry-run"],
        &[("AWS_MAX_ATTEMPTS", Some("2"))],
    )
    .expect_code(1);
    assert!(
        run.stderr.contains("ec2:DescribeAvailabilityZones failed"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("check --region"), "{}", run.stderr);
}

/// An endpoint that closes every connection unanswered is reported after two quick attempts of
/// the first call, not after the whole retry budget (8 attempts with backoff, ~50 s before).
#[test]
fn issue_13_an_unreachable_endpoint_is_reported_after_two_attempts() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listener");
    let endpoint = format!("http://{}", listener.local_addr().expect("address"));
    let accepted = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = accepted.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            counter.fetch_add(1, Ordering::SeqCst);
            drop(stream);
        }
    });
    let run = azevac_at(&endpoint, &["evacuate", "--az-id", ZONE, "--dry-run"], &[]).expect_code(2);
    assert!(run.stderr.contains("cannot reach the AWS endpoint"), "{}", run.stderr);
    assert_eq!(accepted.load(Ordering::SeqCst), 2, "two attempts");
}

/// No region anywhere, and no AZ ID to take one from: exactly one line on stderr (the SDK's
/// instance-metadata warnings, three multi-line ones before, stay below -vv).
#[test]
fn issue_13_no_region_is_one_line() {
    let home = tempfile::tempdir().expect("home");
    let run = azevac_at(
        "http://127.0.0.1:1",
        &["status"],
        &[
            ("AWS_REGION", None),
            ("AWS_DEFAULT_REGION", None),
            ("AWS_CONFIG_FILE", None),
            ("AWS_SHARED_CREDENTIALS_FILE", None),
            ("HOME", home.path().to_str()),
        ],
    )
    .expect_code(2);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.contains("no AWS region configured"), "{}", run.stderr);
}

/// Issue 19: with no region configured, the AZ ID's region is used and said in one line; a
/// configured region that is not the AZ ID's is refused with both named, before any call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_az_id_names_the_region() {
    let moto = Moto::start();
    let sdk = common::sdk(&moto).await;
    estate::seed(&sdk, &estate("web")).await;
    let home = tempfile::tempdir().expect("home");
    let no_region = [
        ("AWS_REGION", None),
        ("AWS_DEFAULT_REGION", None),
        ("AWS_CONFIG_FILE", None),
        ("AWS_SHARED_CREDENTIALS_FILE", None),
        ("HOME", home.path().to_str()),
    ];
    let run = azevac_at(&moto.endpoint, &["evacuate", "--az-id", ZONE, "--dry-run"], &no_region).expect_code(0);
    assert!(
        run.stderr.contains("use1-az2 is in us-east-1, so using us-east-1"),
        "{}",
        run.stderr
    );
    assert!(run.stdout.contains("web"), "{}", run.stdout);

    let proxy = Proxy::start(&moto.endpoint);
    let run = azevac_at(
        &proxy.endpoint,
        &["--region", "us-west-2", "evacuate", "--az-id", ZONE, "--dry-run"],
        &[],
    )
    .expect_code(2);
    assert!(
        run.stderr.contains("use1-az2 is in us-east-1, not us-west-2"),
        "{}",
        run.stderr
    );
    assert!(proxy.calls().is_empty(), "refused before any call: {:?}", proxy.calls());
}

/// A recover that could not plan ECS says so, and the journal keeps ECS's record and no other.
async fn assert_only_ecs_kept(sdk: &aws_config::SdkConfig, recovered: &common::Run) {
    assert!(
        recovered
            .stdout
            .contains("ecs: could not be planned, so its 1 journal record(s) are kept"),
        "{}",
        recovered.stdout
    );
    let kept: Vec<String> = journal_items(sdk)
        .await
        .iter()
        .map(|i| attr_s(i, "resource_type"))
        .collect();
    assert_eq!(kept, ["ecs"], "ECS's record is kept");
}

/// One type that cannot be read does not stop the others: evacuate changes the group and reports
/// ECS (exit 1); recover puts the group back and keeps ECS's record while ECS cannot be read,
/// then a clean recover finishes. (Before: the whole run stopped at the first type's error.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_13_one_failing_type_does_not_stop_the_others() {
    let moto = Moto::start();
    let sdk = common::sdk(&moto).await;
    estate::seed(&sdk, &estate("web")).await;
    let before_groups = live_groups(&sdk).await;
    let before_services = live_services(&sdk).await;
    let proxy = Proxy::start(&moto.endpoint);
    let few_tries = [("AWS_MAX_ATTEMPTS", Some("2"))];

    proxy.set(fail("ecs:ListClusters", Fault::ServerError));
    let run = azevac_at(&proxy.endpoint, &["evacuate", "--az-id", ZONE, "--yes"], &few_tries).expect_code(1);
    assert!(
        run.stdout.contains("problem: ecs: could not be planned"),
        "{}",
        run.stdout
    );
    assert_eq!(live_groups(&sdk).await["web"].len(), 1, "the group was evacuated");
    assert_eq!(live_services(&sdk).await, before_services, "ECS untouched");

    proxy.set(Faults::default());
    azevac_at(&proxy.endpoint, &["evacuate", "--az-id", ZONE, "--yes"], &few_tries).expect_code(0);
    assert_eq!(journal_items(&sdk).await.len(), 2);

    proxy.set(fail("ecs:DescribeServices", Fault::ServerError));
    let run = azevac_at(&proxy.endpoint, &["recover", "--yes"], &few_tries).expect_code(1);
    assert_only_ecs_kept(&sdk, &run).await;
    assert_eq!(live_groups(&sdk).await, before_groups, "the group is back");

    proxy.set(Faults::default());
    azevac_at(&proxy.endpoint, &["recover", "--yes"], &few_tries).expect_code(0);
    assert_eq!(live_services(&sdk).await, before_services);
    assert!(journal_items(&sdk).await.is_empty());
}

/// Issue 31 case 6: ECS closing every connection unanswered (a dispatch failure, after the
/// region's first calls were answered) is ECS's problem only. Evacuate moves the group and the
/// function and reports ECS (exit 1); recover with ECS still dropping puts them back and keeps
/// ECS's record (exit 1); recover with ECS healthy puts everything back and empties the journal.
/// (Before: the run stopped with exit 2 and nothing changed, the group and function included.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_31_a_service_that_drops_its_connections_stops_only_its_own_type() {
    let moto = Moto::start();
    let sdk = common::sdk(&moto).await;
    let mut spec = estate("web");
    spec.lambda_functions.push(LambdaSpec {
        name: "thumbs".into(),
        vpc: Some("main".into()),
        zones: zones(&["use1-az1", ZONE]),
        published_alias: false,
        tags: BTreeMap::new(),
    });
    estate::seed(&sdk, &spec).await;
    let before = snapshot(&sdk).await;
    let proxy = Proxy::start(&moto.endpoint);
    // The SDK's own setting: two attempts of each dropped call instead of eight (~37 s).
    let few_tries = [("AWS_MAX_ATTEMPTS", Some("2"))];
    let ecs_drops = || fail("ecs:*", Fault::Close);

    proxy.set(ecs_drops());
    let run = azevac_at(&proxy.endpoint, &["evacuate", "--az-id", ZONE, "--yes"], &few_tries).expect_code(1);
    assert!(
        run.stdout.contains("problem: ecs: could not be planned") && run.stdout.contains("cannot reach"),
        "{}",
        run.stdout
    );
    assert!(proxy.injected() > 0, "ECS's connections were dropped");
    assert_eq!(live_groups(&sdk).await["web"].len(), 1, "the group was evacuated");
    assert_eq!(
        live_functions(&sdk).await["thumbs"].0.len(),
        1,
        "the function was evacuated"
    );
    assert_eq!(live_services(&sdk).await, before.1, "ECS untouched");

    proxy.set(Faults::default());
    azevac_at(&proxy.endpoint, &["evacuate", "--az-id", ZONE, "--yes"], &few_tries).expect_code(0);
    assert_eq!(journal_items(&sdk).await.len(), 3);

    proxy.set(ecs_drops());
    let run = azevac_at(&proxy.endpoint, &["recover", "--yes"], &few_tries).expect_code(1);
    assert_only_ecs_kept(&sdk, &run).await;
    assert_eq!(live_groups(&sdk).await, before.0, "the group is back");
    assert_eq!(live_functions(&sdk).await, before.2, "the function is back");

    proxy.set(Faults::default());
    azevac_at(&proxy.endpoint, &["recover", "--yes"], &few_tries).expect_code(0);
    assert_eq!(snapshot(&sdk).await, before, "everything is back");
    assert!(journal_items(&sdk).await.is_empty());
}

/// A group whose name carries terminal control sequences (C1 CSI and OSC, which XML and AWS allow,
/// and a line break): the table shows them escaped, never raw; JSON keeps the exact name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_13_control_sequences_in_a_name_reach_the_terminal_escaped() {
    let name = "web\u{9b}2J\u{9d}8;;http://evil\u{9c}click\nX";
    let moto = Moto::start();
    let sdk = common::sdk(&moto).await;
    let mut spec = estate(name);
    spec.ecs_services.clear();
    estate::seed(&sdk, &spec).await;
    let reason = "incident \u{1b}[2J\u{1b}]8;;http://evil\u{7}here";

    let is_raw_control = |c: char| c.is_control() && c != '\n';
    let table = azevac(&moto, &["evacuate", "--az-id", ZONE, "--yes", "--reason", reason]).expect_code(0);
    let dirty: Vec<char> = table
        .stdout
        .chars()
        .chain(table.stderr.chars())
        .filter(|c| is_raw_control(*c))
        .collect();
    assert!(
        dirty.is_empty(),
        "raw control characters reached the terminal: {dirty:?}"
    );
    assert!(table.stdout.contains("web\\u{9b}2J"), "{}", table.stdout);
    assert!(
        !table.stdout.lines().any(|l| l.trim_start().starts_with("X")),
        "a line break in a name must not start a line of its own:\n{}",
        table.stdout
    );

    let status = azevac(&moto, &["status"]).expect_code(0);
    let dirty: Vec<char> = status.stdout.chars().filter(|c| is_raw_control(*c)).collect();
    assert!(dirty.is_empty(), "raw control characters in status: {dirty:?}");
    assert!(status.stdout.contains("\\u{1b}[2J"), "{}", status.stdout);

    let json = azevac(&moto, &["status", "--output", "json"]).expect_code(0).json();
    let record = &json["records"][0];
    assert_eq!(record["resource_name"], name, "JSON keeps the exact name: {record}");
    assert_eq!(record["reason"], reason, "JSON keeps the exact reason: {record}");
}

/// Every AWS call names azevac and its version in the user agent, so that CloudTrail shows which
/// calls azevac made (issue 19).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_call_names_azevac_in_its_user_agent() {
    let moto = Moto::start();
    let sdk = common::sdk(&moto).await;
    estate::seed(&sdk, &estate("web")).await;
    let proxy = Proxy::start(&moto.endpoint);
    azevac_at(&proxy.endpoint, &["evacuate", "--az-id", ZONE, "--yes"], &[]).expect_code(0);
    let agents = proxy.user_agents();
    assert!(agents.len() > 5, "{agents:?}");
    let app = concat!("app/azevac-", env!("CARGO_PKG_VERSION"));
    let missing: Vec<&(String, String)> = agents.iter().filter(|(_, agent)| !agent.contains(app)).collect();
    assert!(missing.is_empty(), "calls without {app}: {missing:?}");
}

/// The largest number of calls of `service` that arrived within any window, beyond what a token
/// bucket of `rate` per second holding `burst` allows (`burst + rate × window`, plus one for the
/// clock's granularity); zero when the calls kept to the bucket.
fn excess_over_bucket(arrivals: &[(String, std::time::Instant)], service: &str, rate: f64, burst: f64) -> f64 {
    let times: Vec<std::time::Instant> = arrivals
        .iter()
        .filter(|(label, _)| label.starts_with(&format!("{service}:")))
        .map(|(_, at)| *at)
        .collect();
    let mut worst = 0.0_f64;
    for (i, first) in times.iter().enumerate() {
        for (j, last) in times.iter().enumerate().skip(i) {
            let allowed = burst + rate * last.duration_since(*first).as_secs_f64() + 1.0;
            worst = worst.max((j - i + 1) as f64 - allowed);
        }
    }
    worst
}

/// `--max-rate autoscaling=4`: no window of Auto Scaling calls holds more than the bucket allows,
/// on evacuate and on recover; the same run without it sends the updates all at once (so the check
/// can fail), and both end exactly evacuated / restored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_18_max_rate_keeps_each_service_to_its_bucket() {
    let moto = Moto::start();
    let sdk = common::sdk(&moto).await;
    let mut spec = estate("web-00");
    spec.ecs_services.clear();
    spec.auto_scaling_groups = (0..12).map(|i| group(&format!("web-{i:02}"))).collect();
    estate::seed(&sdk, &spec).await;
    let before = live_groups(&sdk).await;
    let proxy = Proxy::start(&moto.endpoint);
    let paced = ["--max-rate", "autoscaling=4", "--type", "asg"];

    azevac_at(
        &proxy.endpoint,
        &[&["evacuate", "--az-id", ZONE, "--yes"][..], &paced[..]].concat(),
        &[],
    )
    .expect_code(0);
    let evacuated = proxy.arrivals();
    assert!(
        evacuated
            .iter()
            .filter(|(l, _)| l == "autoscaling:UpdateAutoScalingGroup")
            .count()
            == 12,
        "{evacuated:?}"
    );
    assert!(
        excess_over_bucket(&evacuated, "autoscaling", 4.0, 4.0) <= 0.0,
        "evacuate broke the bucket"
    );
    assert!(live_groups(&sdk).await.values().all(|subnets| subnets.len() == 1));

    proxy.set(Faults::default());
    azevac_at(
        &proxy.endpoint,
        &[&["recover", "--az-id", ZONE, "--yes"][..], &paced[..]].concat(),
        &[],
    )
    .expect_code(0);
    assert!(
        excess_over_bucket(&proxy.arrivals(), "autoscaling", 4.0, 4.0) <= 0.0,
        "recover broke the bucket"
    );
    assert_eq!(common::sorted(&live_groups(&sdk).await), common::sorted(&before));

    proxy.set(Faults::default());
    azevac_at(
        &proxy.endpoint,
        &["evacuate", "--az-id", ZONE, "--yes", "--type", "asg"],
        &[],
    )
    .expect_code(0);
    assert!(
        excess_over_bucket(&proxy.arrivals(), "autoscaling", 4.0, 4.0) > 0.0,
        "unpaced, the 12 updates should arrive faster than 4 per second"
    );
}
