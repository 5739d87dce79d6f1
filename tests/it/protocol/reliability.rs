//! Reliability (issue 5): whatever happens — a SIGKILL at any call, throttling, a call that keeps
//! failing, two operators at once, two zones — no removed subnet is ever forgotten and `recover`
//! puts back exactly what was taken. The figures printed here ("reliability: ...") are the ones
//! the manual's Reliability page (docs/src/reliability.md) quotes; run with `--nocapture` to see them.
//! The kill-point sweeps run every type at once and kill it at every journal write and every change
//! through AWS (the proxy, tests/it/common/proxy.rs), Kubernetes (the fake API server,
//! tests/it/common/kube.rs) and ARC (the fake the proxy answers, tests/it/common/zonal.rs), and at a
//! sample of the reads (tests/it/common/kill_points.rs: the conformance suite's kill points).

use crate::common;

use std::collections::BTreeMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use common::estate::{self, AsgSpec, EcsSpec, LambdaSpec, Seeded, Spec, VpcSpec};
use common::kill_points::{self, Target};
use common::kube::{Cluster, FakeKube};
use common::proxy::{FailRule, Fault, Faults, Proxy};
use common::{
    attr_list, attr_s, azevac, azevac_at, command, journal_items, live_groups, run_watched, snapshot, unordered, Moto,
    Snapshot, ZONE,
};

fn zones(list: &[&str]) -> Vec<String> {
    list.iter().map(|z| z.to_string()).collect()
}

/// One resource of each type to change, plus one group that must be skipped.
fn small_estate() -> Spec {
    let asg = |name: &str, z: &[&str]| AsgSpec {
        name: name.into(),
        vpc: "main".into(),
        zones: zones(z),
        desired: 0,
        tags: BTreeMap::new(),
    };
    Spec {
        vpcs: vec![VpcSpec {
            name: "main".into(),
            cidr: "10.50.0.0/16".into(),
            zones: zones(&["use1-az1", "use1-az2", "use1-az4"]),
        }],
        auto_scaling_groups: vec![
            asg("web", &["use1-az1", "use1-az2", "use1-az4"]),
            asg("solo", &["use1-az2"]),
        ],
        ecs_services: vec![EcsSpec {
            cluster: "prod".into(),
            name: "api".into(),
            vpc: "main".into(),
            zones: zones(&["use1-az2", "use1-az4"]),
            network_mode: "awsvpc".into(),
            controller: "ECS".into(),
            assign_public_ip: "DISABLED".into(),
            desired: 0,
            tags: BTreeMap::new(),
        }],
        lambda_functions: vec![LambdaSpec {
            name: "events".into(),
            vpc: Some("main".into()),
            zones: zones(&["use1-az1", "use1-az2"]),
            published_alias: false,
            tags: BTreeMap::new(),
        }],
        ..Spec::default()
    }
}

/// `n` groups in three zones (a third of them also in use1-az3), for load and races.
fn groups_estate(n: usize) -> Spec {
    Spec {
        vpcs: vec![VpcSpec {
            name: "main".into(),
            cidr: "10.60.0.0/16".into(),
            zones: zones(&["use1-az1", "use1-az2", "use1-az3", "use1-az4"]),
        }],
        auto_scaling_groups: (0..n)
            .map(|i| AsgSpec {
                name: format!("g{i:03}"),
                vpc: "main".into(),
                zones: match i % 3 {
                    0 => zones(&["use1-az1", "use1-az2", "use1-az4"]),
                    1 => zones(&["use1-az2", "use1-az3"]),
                    _ => zones(&["use1-az4", "use1-az2", "use1-az1"]),
                },
                desired: 0,
                tags: BTreeMap::new(),
            })
            .collect(),
        ..Spec::default()
    }
}

/// 30% of calls answered with a fault: throttling (twice as likely), 500, 503 or a dropped answer.
fn thirty_percent_faults() -> Faults {
    Faults {
        share: 0.3,
        random_faults: vec![
            Fault::Throttle,
            Fault::Throttle,
            Fault::ServerError,
            Fault::Unavailable,
            Fault::Drop,
        ],
        ..Faults::default()
    }
}

/// The invariant that matters: every subnet a resource lacks from the zone is in its journal record.
async fn nothing_forgotten(sdk: &aws_config::SdkConfig, original: &Snapshot, seeded: &Seeded, zone: &str) -> bool {
    let now = snapshot(sdk).await;
    let zone_subnets: Vec<String> = seeded
        .subnets
        .iter()
        .filter(|((_, z), _)| z == zone)
        .map(|(_, id)| id.clone())
        .collect();
    let journalled: BTreeMap<String, Vec<String>> = journal_items(sdk)
        .await
        .iter()
        .map(|i| (attr_s(i, "resource_name"), attr_list(i, "removed_subnets")))
        .collect();
    let mut ok = true;
    for (name, subnets) in &original.0 {
        for missing in subnets
            .iter()
            .filter(|s| zone_subnets.contains(s) && !now.0[name].contains(s))
        {
            if !journalled.get(name).is_some_and(|j| j.contains(missing)) {
                eprintln!("forgotten: {name} lacks {missing} and no record holds it");
                ok = false;
            }
        }
    }
    ok
}

const KILL_EVACUATE: &[&str] = &["evacuate", "--az-id", ZONE, "--yes", "--concurrency", "1"];
const KILL_RECOVER: &[&str] = &["recover", "--yes", "--concurrency", "1"];

/// The sweeps' kill points, split in two halves that run side by side: the even-numbered and the
/// odd-numbered ones.
const HALVES: [usize; 2] = [0, 1];

/// One part of the sweep below: SIGKILL `args` at each kill point of its `half`
/// ([`kill_points::every_point`] of an unkilled run), on a moto server of its own. Returns the
/// kill points tried and how many of them were restored exactly.
async fn kill_sweep(phase: &str, args: &[&str], half: usize) -> (usize, usize) {
    let moto = Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    let sdk = common::sdk(&moto).await;
    let seed = || async {
        moto.reset();
        estate::seed(&sdk, &small_estate()).await;
        let original = snapshot(&sdk).await;
        if phase == "recover" {
            azevac(&moto, KILL_EVACUATE).expect_code(0);
        }
        original
    };
    seed().await;
    proxy.set(Faults::default());
    assert_eq!(run_watched(&proxy, args), Some(0), "the unkilled {phase}");
    let points = kill_points::every_point(&proxy.requests(), &[]);
    let (mut tried, mut exact) = (0, 0);
    for (n, target) in points.iter().enumerate().filter(|(n, _)| n % 2 == half) {
        let original = seed().await;
        proxy.set(Faults::default());
        kill_points::arm(target, &proxy, None);
        let code = run_watched(&proxy, args);
        if !proxy.killed() {
            assert_eq!(code, Some(0), "{phase} ran to the end past {target:?}");
            continue;
        }
        tried += 1;
        proxy.set(Faults::default());
        // Half the time the operator re-runs the killed command first, half the time
        // goes straight to recover: both must end in the original estate.
        if n % 4 >= 2 {
            azevac(&moto, args).expect_code(0);
            if phase == "evacuate" {
                let items = journal_items(&sdk).await;
                assert_eq!(items.len(), 3, "a re-run completes the evacuation (web, api, events)");
            }
        }
        let recovered = azevac(&moto, KILL_RECOVER);
        // Killed before the journal table existed: nothing can have changed, and recover
        // says to run `azevac init`.
        let no_table = recovered.code == 2 && recovered.stderr.contains("azevac init");
        assert!(
            recovered.code == 0 || no_table,
            "{phase} killed at {target:?}: {recovered:?}"
        );
        let restored = snapshot(&sdk).await;
        if restored == original && journal_items(&sdk).await.is_empty() {
            exact += 1;
        } else {
            eprintln!("{phase} killed at {target:?}: not restored exactly\n{original:?}\n{restored:?}");
        }
    }
    (tried, exact)
}

/// SIGKILL evacuate or recover of every type at once at each journal write and each change
/// (before it lands or after, as [`kill_points`] alternates them) and at a sample of the reads;
/// the four parts (phase x half of the points) run side by side.
#[test]
fn a_kill_at_any_call_loses_nothing() {
    let parts: Vec<(&str, &[&str], usize)> = [("evacuate", KILL_EVACUATE), ("recover", KILL_RECOVER)]
        .into_iter()
        .flat_map(|(phase, args)| HALVES.map(|half| (phase, args, half)))
        .collect();
    let tallies = common::on_threads(parts, |(phase, args, half)| kill_sweep(phase, args, half));
    let tried: usize = tallies.iter().map(|t| t.0).sum();
    let exact: usize = tallies.iter().map(|t| t.1).sum();
    eprintln!("reliability: kill points tried {tried}, restored exactly {exact}");
    assert!(tried >= 16, "only {tried} kill points");
    assert_eq!(exact, tried);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_percent_throttling_and_faults_still_finish_exactly() {
    let moto = Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    let sdk = common::sdk(&moto).await;
    let mut spec = groups_estate(30);
    spec.ecs_services = small_estate().ecs_services;
    spec.lambda_functions = small_estate().lambda_functions;
    let seeded = estate::seed(&sdk, &spec).await;
    let original = snapshot(&sdk).await;
    proxy.set(thirty_percent_faults());

    let run = azevac_at(
        &proxy.endpoint,
        &["evacuate", "--az-id", ZONE, "--yes", "--stats", "--output", "json"],
        &[],
    )
    .expect_code(0);
    let evacuate_calls = proxy.calls().len();
    // --stats counts every attempt the proxy saw: calls plus the SDK's retries.
    let stats = &run.json()["stats"];
    let counted =
        stats["total_calls"].as_u64().unwrap_or_default() + stats["total_retries"].as_u64().unwrap_or_default();
    assert_eq!(counted as usize, evacuate_calls, "{stats}");
    assert!(stats["total_retries"].as_u64().unwrap_or_default() > 0);
    let injected = proxy.injected();
    assert!(nothing_forgotten(&sdk, &original, &seeded, ZONE).await);
    let now = snapshot(&sdk).await;
    let zone_subnet = seeded.subnet("main", ZONE);
    assert!(
        now.0.values().all(|s| !s.contains(&zone_subnet)),
        "every group left the zone"
    );
    assert_eq!(journal_items(&sdk).await.len(), 32, "30 groups, 1 service, 1 function");

    proxy.set(thirty_percent_faults());
    azevac_at(&proxy.endpoint, &["recover", "--yes"], &[]).expect_code(0);
    assert_eq!(snapshot(&sdk).await, original);
    assert!(journal_items(&sdk).await.is_empty());
    eprintln!(
        "reliability: 30% faults: evacuate made {evacuate_calls} calls with {injected} faults injected, \
         recover {} calls with {} injected; both finished exactly",
        proxy.calls().len(),
        proxy.injected()
    );
}

/// Issue 35: every lock of a run, and every record of its zone, are under one partition key each,
/// so a run across many accounts can exceed a partition's write rate. DynamoDB then cancels the
/// transaction with `ThrottlingError`, which the SDK does not retry: more than the five tries a
/// conflict gets must not fail the lines, only slow them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_35_a_throttled_journal_partition_slows_the_run_and_fails_nothing() {
    let moto = Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    let sdk = common::sdk(&moto).await;
    estate::seed(&sdk, &groups_estate(6)).await;
    let original = snapshot(&sdk).await;
    let throttled = FailRule {
        label: "dynamodb:TransactWriteItems".into(),
        body_contains: String::new(),
        fault: Fault::TransactionThrottled,
    };
    proxy.fail_next(throttled.clone(), 7);
    let run = azevac_at(
        &proxy.endpoint,
        &["evacuate", "--az-id", ZONE, "--yes", "--output", "json"],
        &[],
    )
    .expect_code(0);
    assert_eq!(proxy.injected(), 7, "every throttled transaction was answered");
    let items = run.json()["items"].as_array().cloned().unwrap_or_default();
    assert_eq!(items.len(), 6);
    assert!(items.iter().all(|i| i["status"] == "done"), "{items:?}");
    assert_eq!(journal_items(&sdk).await.len(), 6);

    proxy.fail_next(throttled, 7);
    azevac_at(&proxy.endpoint, &["recover", "--yes"], &[]).expect_code(0);
    assert_eq!(proxy.injected(), 14);
    assert_eq!(snapshot(&sdk).await, original);
    assert!(journal_items(&sdk).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_keeps_failing_fails_that_resource_only() {
    let moto = Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    let sdk = common::sdk(&moto).await;
    estate::seed(&sdk, &small_estate()).await;
    let original = snapshot(&sdk).await;
    proxy.set(Faults {
        rules: vec![FailRule {
            label: "autoscaling:UpdateAutoScalingGroup".into(),
            body_contains: "AutoScalingGroupName=web".into(),
            fault: Fault::ServerError,
        }],
        ..Faults::default()
    });
    let run = azevac_at(
        &proxy.endpoint,
        &["evacuate", "--az-id", ZONE, "--yes", "--output", "json"],
        &[("AWS_MAX_ATTEMPTS", Some("3"))],
    )
    .expect_code(1);
    let doc = run.json();
    let status: BTreeMap<String, (String, serde_json::Value)> = doc["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| {
            (
                i["name"].as_str().unwrap_or_default().to_owned(),
                (
                    i["status"].as_str().unwrap_or_default().to_owned(),
                    i["failure"].clone(),
                ),
            )
        })
        .collect();
    assert_eq!(status["web"].0, "failed");
    // The act failed, and its journal record is kept in state intent.
    let failure = &status["web"].1;
    assert!(failure["stage"] == "act" && failure["record"] == "intent", "{failure}");
    assert_eq!(status["prod/api"].0, "done");
    assert_eq!(status["events"].0, "done");
    assert_eq!(
        proxy.injected(),
        3,
        "the SDK tried three times, as AWS_MAX_ATTEMPTS says"
    );
    // The journal says exactly what is done and what is not.
    let states: BTreeMap<String, String> = journal_items(&sdk)
        .await
        .iter()
        .map(|i| (attr_s(i, "resource_name"), attr_s(i, "state")))
        .collect();
    assert_eq!(states.get("web").map(String::as_str), Some("intent"));
    assert_eq!(states.get("prod/api").map(String::as_str), Some("done"));
    assert_eq!(states.get("events").map(String::as_str), Some("done"));

    azevac(&moto, &["recover", "--yes"]).expect_code(0);
    assert_eq!(snapshot(&sdk).await, original);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_operators_at_once_lose_no_record() {
    let moto = Moto::start();
    let sdk = common::sdk(&moto).await;
    let seeded = estate::seed(&sdk, &groups_estate(24)).await;
    let original = snapshot(&sdk).await;
    let trials = 8;
    let mut conflicts = 0;
    for trial in 0..trials {
        // Two evacuations of the same zone, then an evacuation racing a recovery.
        let races: [[&[&str]; 2]; 2] = [
            [
                &["evacuate", "--az-id", ZONE, "--yes"],
                &["evacuate", "--az-id", ZONE, "--yes"],
            ],
            [&["recover", "--yes"], &["evacuate", "--az-id", ZONE, "--yes"]],
        ];
        for pair in races {
            let mut children: Vec<_> = pair
                .iter()
                .map(|args| {
                    command(&moto.endpoint, args, &[])
                        .stdout(Stdio::piped())
                        .spawn()
                        .expect("spawn")
                })
                .collect();
            for child in children.iter_mut() {
                let code = child.wait().expect("wait").code();
                assert!(matches!(code, Some(0) | Some(1)), "trial {trial}: exit {code:?}");
                conflicts += usize::from(code == Some(1));
            }
            assert!(nothing_forgotten(&sdk, &original, &seeded, ZONE).await, "trial {trial}");
        }
        azevac(&moto, &["recover", "--yes"]).expect_code(0);
        assert_eq!(
            snapshot(&sdk).await,
            original,
            "trial {trial}: recover put back exactly what was taken"
        );
        assert!(journal_items(&sdk).await.is_empty());
    }
    eprintln!("reliability: race trials {trials} (x2 races), runs that lost a race {conflicts}, records lost 0");
}

#[tokio::test]
async fn a_second_zone_never_takes_the_last_subnets_and_recovers_separately() {
    let moto = Moto::start();
    let sdk = common::sdk(&moto).await;
    let seeded = estate::seed(&sdk, &groups_estate(3)).await;
    let original = snapshot(&sdk).await;
    let subnet = |z: &str| seeded.subnet("main", z);

    azevac(&moto, &["evacuate", "--az-id", ZONE, "--yes"]).expect_code(0);
    // g001 is in use1-az2 and use1-az3 only: after use1-az2, evacuating use1-az3 would empty it.
    let plan = azevac(
        &moto,
        &["evacuate", "--az-id", "use1-az3", "--dry-run", "--output", "json"],
    )
    .expect_code(0)
    .json();
    let g001 = plan["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|i| i["name"] == "g001")
        .expect("g001")
        .clone();
    assert_eq!(g001["status"], "skipped");
    azevac(&moto, &["evacuate", "--az-id", "use1-az4", "--yes"]).expect_code(0);
    let both = snapshot(&sdk).await;
    assert_eq!(both.0["g000"], [subnet("use1-az1")]);
    assert_eq!(both.0["g001"], [subnet("use1-az3")]);
    assert_eq!(both.0["g002"], [subnet("use1-az1")]);

    // Recovering one zone puts back only that zone's subnets.
    azevac(&moto, &["recover", "--az-id", ZONE, "--yes"]).expect_code(0);
    let one = snapshot(&sdk).await;
    assert_eq!(one.0["g000"], [subnet("use1-az1"), subnet(ZONE)]);
    assert_eq!(one.0["g002"], [subnet(ZONE), subnet("use1-az1")]);
    let left: Vec<String> = journal_items(&sdk).await.iter().map(|i| attr_s(i, "az_id")).collect();
    assert!(left.iter().all(|az| az == "use1-az4") && left.len() == 2, "{left:?}");

    // Each zone's record knows the order of the subnets it saw; across two zones only membership is
    // guaranteed (the order of VPCZoneIdentifier means nothing to Auto Scaling).
    azevac(&moto, &["recover", "--yes"]).expect_code(0);
    assert_eq!(unordered(&snapshot(&sdk).await), unordered(&original));
}

/// Issue 31, case 10: evacuate use1-az2, then use1-az3, then recover every zone at once. Each
/// zone's record lined its subnet up with the subnets it saw, and the zones were put back in the
/// order of their IDs: `az1, az2, az3` came back as `az1, az3, az2`. Now the later evacuation is
/// undone first, and each subnet goes back after the subnet that preceded it.
#[tokio::test]
async fn issue_31_two_zones_recovered_at_once_come_back_in_the_original_order() {
    let moto = Moto::start();
    let sdk = common::sdk(&moto).await;
    let group = |name: &str, z: &[&str]| AsgSpec {
        name: name.into(),
        vpc: "main".into(),
        zones: zones(z),
        desired: 0,
        tags: BTreeMap::new(),
    };
    let spec = Spec {
        vpcs: vec![VpcSpec {
            name: "main".into(),
            cidr: "10.61.0.0/16".into(),
            zones: zones(&["use1-az1", "use1-az2", "use1-az3"]),
        }],
        auto_scaling_groups: vec![
            group("forward", &["use1-az1", "use1-az2", "use1-az3"]),
            group("backward", &["use1-az3", "use1-az2", "use1-az1"]),
            group("between", &["use1-az1", "use1-az3", "use1-az2"]),
        ],
        ..Spec::default()
    };
    estate::seed(&sdk, &spec).await;
    let original = live_groups(&sdk).await;
    azevac(&moto, &["evacuate", "--az-id", ZONE, "--yes"]).expect_code(0);
    azevac(&moto, &["evacuate", "--az-id", "use1-az3", "--yes"]).expect_code(0);
    assert!(
        live_groups(&sdk).await.values().all(|s| s.len() == 1),
        "only use1-az1 left"
    );
    azevac(&moto, &["recover", "--yes"]).expect_code(0);
    assert_eq!(live_groups(&sdk).await, original, "every subnet back in its place");
    assert!(journal_items(&sdk).await.is_empty());
}

#[tokio::test]
async fn a_journalled_subnet_deleted_in_between_is_reported_and_left_out() {
    let moto = Moto::start();
    let sdk = common::sdk(&moto).await;
    let seeded = estate::seed(&sdk, &groups_estate(1)).await;
    azevac(&moto, &["evacuate", "--az-id", ZONE, "--yes"]).expect_code(0);
    let zone_subnet = seeded.subnet("main", ZONE);
    aws_sdk_ec2::Client::new(&sdk)
        .delete_subnet()
        .subnet_id(&zone_subnet)
        .send()
        .await
        .expect("DeleteSubnet");

    let run = azevac(&moto, &["recover", "--yes", "--output", "json"]).expect_code(0);
    let item = &run.json()["items"][0];
    assert!(
        item["notes"]
            .to_string()
            .contains(&format!("no longer exist, left out: {zone_subnet}")),
        "{item}"
    );
    let now = snapshot(&sdk).await;
    assert_eq!(
        now.0["g000"],
        [seeded.subnet("main", "use1-az1"), seeded.subnet("main", "use1-az4")]
    );
    assert!(
        journal_items(&sdk).await.is_empty(),
        "nothing left that could ever be put back"
    );
}

/// The kube context (and cluster name) of the node sweep.
const EKS_CLUSTER: &str = "arn:aws:eks:us-east-1:123456789012:cluster/prod";
/// A load balancer registered with ARC (ARC's fake needs no real one behind the ARN).
const EDGE_LB: &str = "arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/net/edge/41";
/// Someone else's load balancer, with a shift they started by hand away from another zone.
const OTHER_LB: &str = "arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/net/other/42";
/// Two nodes in the zone (the second carries a GPU taint and was cordoned by someone else) and
/// one elsewhere, from fixtures/eks-nodes.json.
const SWEEP_NODES: [&str; 3] = [
    "ip-10-0-2-21.ec2.internal",
    "ip-10-0-2-22.ec2.internal",
    "ip-10-0-1-11.ec2.internal",
];

/// What the sweep compares of a node: its taints (key, value, effect) and whether it is cordoned.
type NodeState = (Vec<(String, String, String)>, bool);

/// Every node's taints and cordon, by name.
fn node_states(kube: &FakeKube) -> BTreeMap<String, NodeState> {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    kube.state
        .lock()
        .expect("state")
        .nodes
        .iter()
        .map(|(name, node)| {
            let taints = node["spec"]["taints"]
                .as_array()
                .map(|t| {
                    t.iter()
                        .map(|t| (text(&t["key"]), text(&t["value"]), text(&t["effect"])))
                        .collect()
                })
                .unwrap_or_default();
            let cordoned = node["spec"]["unschedulable"].as_bool().unwrap_or(false);
            (name.clone(), (taints, cordoned))
        })
        .collect()
}

/// Where a sweep trial starts from and must end at.
struct Start {
    groups: BTreeMap<String, Vec<String>>,
    nodes: BTreeMap<String, NodeState>,
    /// The zone's subnet, which evacuation takes from `web`.
    zone_subnet: String,
}

/// One moto, the proxy (with ARC's fake) in front of it, and a fake Kubernetes API server: an Auto
/// Scaling group `web` registered for zonal shift, a load balancer `edge`, someone else's
/// balancer with a shift of theirs, and three nodes.
struct NodeSweep {
    moto: Moto,
    proxy: Proxy,
    kube: FakeKube,
    sdk: aws_config::SdkConfig,
    _dir: tempfile::TempDir,
    kubeconfig: String,
}

impl NodeSweep {
    async fn new() -> NodeSweep {
        let moto = Moto::start();
        let proxy = Proxy::start(&moto.endpoint);
        let sdk = common::sdk(&moto).await;
        let kube = FakeKube::start(Cluster::default());
        let dir = tempfile::tempdir().expect("tempdir");
        let kubeconfig = kube
            .kubeconfig(dir.path(), &[("prod", EKS_CLUSTER)])
            .display()
            .to_string();
        NodeSweep {
            moto,
            proxy,
            kube,
            sdk,
            _dir: dir,
            kubeconfig,
        }
    }

    /// A fresh estate, shifts and nodes; no kill point armed.
    async fn reset(&self) -> Start {
        self.moto.reset();
        self.proxy.set(Faults::default());
        self.kube.set_kill_at(None);
        let three = zones(&["use1-az1", "use1-az2", "use1-az4"]);
        let spec = Spec {
            vpcs: vec![VpcSpec {
                name: "main".into(),
                cidr: "10.70.0.0/16".into(),
                zones: three.clone(),
            }],
            auto_scaling_groups: vec![AsgSpec {
                name: "web".into(),
                vpc: "main".into(),
                zones: three,
                desired: 0,
                tags: BTreeMap::new(),
            }],
            ..Spec::default()
        };
        let seeded = estate::seed(&self.sdk, &spec).await;
        let web = aws_sdk_autoscaling::Client::new(&self.sdk)
            .describe_auto_scaling_groups()
            .auto_scaling_group_names("web")
            .send()
            .await
            .expect("DescribeAutoScalingGroups")
            .auto_scaling_groups()[0]
            .auto_scaling_group_arn()
            .expect("arn")
            .to_owned();
        {
            let mut arc = self.proxy.arc.lock().expect("arc");
            arc.managed.clear();
            arc.shifts.clear();
            let all = ["use1-az1", "use1-az2", "use1-az4"];
            arc.manage(&web, "web", &all);
            arc.manage(EDGE_LB, "edge", &all);
            arc.manage(OTHER_LB, "other", &all);
            arc.start_by_hand(OTHER_LB, "use1-az1", "ZONAL_SHIFT");
        }
        let text =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/eks-nodes.json")).expect("fixture");
        let doc: Value = serde_json::from_str(&text).expect("json");
        let mut cluster = Cluster::default();
        for node in doc["items"].as_array().expect("items") {
            if SWEEP_NODES.contains(&node["metadata"]["name"].as_str().unwrap_or_default()) {
                cluster.add_node(node.clone());
            }
        }
        cluster.edit_node(SWEEP_NODES[1], |n| n["spec"]["unschedulable"] = json!(true));
        *self.kube.state.lock().expect("state") = cluster;
        Start {
            groups: live_groups(&self.sdk).await,
            nodes: node_states(&self.kube),
            zone_subnet: seeded.subnet("main", ZONE),
        }
    }

    /// The full arguments of a command: through the proxy, with the cluster's kube context.
    fn args<'a>(&'a self, args: &[&'a str]) -> Vec<&'a str> {
        let mut all = args.to_vec();
        all.extend(["--kube-context", "prod", "--kubeconfig", &self.kubeconfig]);
        all
    }

    fn run(&self, args: &[&str]) -> common::Run {
        azevac_at(&self.proxy.endpoint, &self.args(args), &[])
    }

    /// Run azevac watched by both the proxy and the fake API server, either of which may kill it;
    /// returns the exit code (`None`: killed).
    fn run_watched(&self, args: &[&str]) -> Option<i32> {
        let child = command(&self.proxy.endpoint, &self.args(args), &[])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn azevac");
        let child = Arc::new(Mutex::new(child));
        self.proxy.watch(child.clone());
        self.kube.watch(child.clone());
        loop {
            if let Some(status) = child.lock().expect("child").try_wait().expect("wait") {
                return status.code();
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    /// Active shifts that azevac started.
    fn our_shifts(&self) -> Vec<String> {
        self.proxy
            .arc
            .lock()
            .expect("arc")
            .active()
            .iter()
            .filter(|s| s.comment.starts_with("azevac run "))
            .map(|s| s.resource.clone())
            .collect()
    }

    /// How the estate differs from a complete evacuation (empty: complete).
    async fn evacuated(&self, start: &Start) -> Vec<String> {
        let mut off = Vec::new();
        let web = &live_groups(&self.sdk).await["web"];
        if web.contains(&start.zone_subnet) || web.len() != 2 {
            off.push(format!("web still has {web:?}"));
        }
        let mut shifted = self.our_shifts();
        shifted.sort();
        if shifted.len() != 2 || !shifted.contains(&EDGE_LB.to_owned()) {
            off.push(format!("azevac's active shifts: {shifted:?}"));
        }
        let nodes = node_states(&self.kube);
        for name in &SWEEP_NODES[..2] {
            let (taints, cordoned) = &nodes[*name];
            let tainted = taints.iter().any(|(key, value, effect)| {
                (key.as_str(), value.as_str(), effect.as_str()) == ("azevac.io/evacuated", ZONE, "NoSchedule")
            });
            if !tainted || !cordoned {
                off.push(format!("{name}: taints {taints:?}, cordoned {cordoned}"));
            }
        }
        off
    }

    /// How the estate differs from `start` (empty: restored exactly, journal table empty).
    async fn restored(&self, start: &Start) -> Vec<String> {
        let mut off = Vec::new();
        let groups = live_groups(&self.sdk).await;
        if groups != start.groups {
            off.push(format!("groups {groups:?}, at the start {:?}", start.groups));
        }
        let nodes = node_states(&self.kube);
        if nodes != start.nodes {
            off.push(format!("nodes {nodes:?}, at the start {:?}", start.nodes));
        }
        let ours = self.our_shifts();
        if !ours.is_empty() {
            off.push(format!("azevac's shifts still active on {ours:?}"));
        }
        let active = self.proxy.arc.lock().expect("arc").active();
        if !active.iter().any(|s| s.resource == OTHER_LB) {
            off.push(format!("someone else's shift was cancelled: {active:?}"));
        }
        let items = journal_items(&self.sdk).await;
        if !items.is_empty() {
            let left: Vec<String> = items
                .iter()
                .map(|i| {
                    format!(
                        "{}/{} ({})",
                        attr_s(i, "az_id"),
                        attr_s(i, "resource"),
                        attr_s(i, "state")
                    )
                })
                .collect();
            off.push(format!("journal items left: {left:?}"));
        }
        off
    }
}

/// Issue 5 for nodes and zonal shifts: the command the node/shift sweep kills.
const NODE_EVACUATE: &[&str] = &[
    "evacuate",
    "--az-id",
    ZONE,
    "--type",
    "zonal-shift,asg,eks",
    "--zonal-shift",
    "--k8s-mode",
    "noschedule",
    "--concurrency",
    "1",
    "--yes",
];
const NODE_RECOVER: &[&str] = &[
    "recover",
    "--type",
    "zonal-shift,asg,eks",
    "--concurrency",
    "1",
    "--yes",
];

/// What one part of the node/shift sweep found.
#[derive(Default)]
struct NodeTally {
    tried: usize,
    exact: usize,
    second_recovers: usize,
    problems: Vec<String>,
}

/// One part of the sweep below: kill `args` at each kill point of its `half`
/// ([`kill_points::every_point`] of an unkilled run, AWS calls and Kubernetes requests), on an
/// estate (moto, proxy, fake API server) of its own.
async fn node_sweep(phase: &str, args: &[&str], half: usize) -> NodeTally {
    let sweep = NodeSweep::new().await;
    let mut tally = NodeTally::default();
    let prepare = |start: Start| async {
        if phase == "recover" {
            sweep.run(NODE_EVACUATE).expect_code(0);
            let off = sweep.evacuated(&start).await;
            assert!(off.is_empty(), "the evacuation to recover from is complete: {off:?}");
            sweep.proxy.set(Faults::default());
            sweep.kube.set_kill_at(None);
        }
        start
    };
    prepare(sweep.reset().await).await;
    assert_eq!(sweep.run_watched(args), Some(0), "the unkilled {phase}");
    let points = kill_points::every_point(&sweep.proxy.requests(), &sweep.kube.requests());
    for (n, target) in points.iter().enumerate().filter(|(n, _)| n % 2 == half) {
        let start = prepare(sweep.reset().await).await;
        kill_points::arm(target, &sweep.proxy, Some(&sweep.kube));
        let code = sweep.run_watched(args);
        let killed = sweep.proxy.killed() || sweep.kube.killed();
        if !killed {
            assert_eq!(code, Some(0), "{phase} ran to the end past {target:?}");
            continue;
        }
        let call = match target {
            Target::Aws(_) | Target::AwsCall(_) => sweep.proxy.calls().last().cloned(),
            Target::Kube(_) | Target::KubeCall(_) => sweep.kube.requests().last().cloned(),
        };
        let point = format!("{phase} killed at {target:?}, {}", call.unwrap_or_default());
        tally.tried += 1;
        sweep.proxy.set(Faults::default());
        sweep.kube.set_kill_at(None);
        // Half the time the operator re-runs the killed command first, half the time
        // goes straight to recover.
        if n % 4 >= 2 {
            let again = sweep.run(args);
            if again.code != 0 {
                tally
                    .problems
                    .push(format!("{point}: the re-run exited {}: {again:?}", again.code));
            } else if phase == "evacuate" {
                let off = sweep.evacuated(&start).await;
                if !off.is_empty() {
                    tally
                        .problems
                        .push(format!("{point}: the re-run left the evacuation incomplete: {off:?}"));
                }
            }
        }
        // Recover until nothing is left (more than once is worth knowing about).
        let mut off = Vec::new();
        for attempt in 1..=3 {
            let recovered = sweep.run(NODE_RECOVER);
            // Killed before the journal table existed: recover says to run `azevac init`.
            let no_table = recovered.code == 2 && recovered.stderr.contains("azevac init");
            if recovered.code != 0 && !no_table {
                tally
                    .problems
                    .push(format!("{point}: recover #{attempt}: {recovered:?}"));
            }
            off = sweep.restored(&start).await;
            if off.is_empty() || no_table {
                tally.second_recovers += usize::from(attempt > 1 && off.is_empty());
                break;
            }
        }
        if off.is_empty() {
            tally.exact += 1;
        } else {
            tally.problems.push(format!("{point}: not restored exactly: {off:?}"));
        }
    }
    tally
}

/// Issue 5 for nodes and zonal shifts: SIGKILL `evacuate --zonal-shift` (nodes: taint + cordon)
/// or `recover` at each journal write, each change through AWS, ARC or Kubernetes (before it lands
/// or after, as [`kill_points`] alternates them) and a sample of the reads; then, half the time, run
/// the killed command again, and recover until nothing is left. The nodes, shifts and groups must be
/// exactly as at the start and the journal table empty. The four parts (phase x half of the points)
/// run side by side.
#[test]
fn a_kill_at_any_node_or_shift_call_loses_nothing() {
    let parts: Vec<(&str, &[&str], usize)> = [("evacuate", NODE_EVACUATE), ("recover", NODE_RECOVER)]
        .into_iter()
        .flat_map(|(phase, args)| HALVES.map(|half| (phase, args, half)))
        .collect();
    let tallies = common::on_threads(parts.clone(), |(phase, args, half)| node_sweep(phase, args, half));
    let tried: usize = tallies.iter().map(|t| t.tried).sum();
    let exact: usize = tallies.iter().map(|t| t.exact).sum();
    let second_recovers: usize = tallies.iter().map(|t| t.second_recovers).sum();
    let mut tried_by: BTreeMap<&str, usize> = BTreeMap::new();
    for ((phase, _, _), t) in parts.iter().zip(&tallies) {
        *tried_by.entry(phase).or_default() += t.tried;
    }
    let problems: Vec<&String> = tallies.iter().flat_map(|t| &t.problems).collect();
    eprintln!("reliability: node/shift kill points tried {tried}, restored exactly {exact}");
    eprintln!(
        "reliability: node/shift kill points by phase {tried_by:?}; restored only by a second recover {second_recovers}"
    );
    for problem in &problems {
        eprintln!("problem: {problem}");
    }
    assert!(problems.is_empty(), "{} problems (above)", problems.len());
    for phase in ["evacuate", "recover"] {
        assert!(tried_by.get(phase).is_some_and(|n| *n >= 8), "{phase}: {tried_by:?}");
    }
    assert_eq!(exact, tried);
}
