//! Reliability (issue 5): whatever happens — a SIGKILL at any call, throttling, a call that keeps
//! failing, two operators at once, two zones — no removed subnet is ever forgotten and `recover`
//! puts back exactly what was taken. The figures printed here ("reliability: ...") are the ones
//! README's Reliability section quotes; run with `--nocapture` to see them.

mod common;

use std::collections::BTreeMap;
use std::process::Stdio;

use common::estate::{self, AsgSpec, EcsSpec, LambdaSpec, Seeded, Spec, VpcSpec};
use common::proxy::{FailRule, Fault, Faults, KillWhen, Proxy};
use common::{
    attr_list, attr_s, azevac, azevac_at, command, journal_items, run_watched, snapshot, unordered, Moto, Snapshot,
    ZONE,
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kill_at_any_call_loses_nothing() {
    let moto = Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    let sdk = common::sdk(&moto).await;
    let (mut tried, mut exact) = (0, 0);
    let evacuate = ["evacuate", "--az-id", ZONE, "--yes", "--concurrency", "1"];
    let recover = ["recover", "--yes", "--concurrency", "1"];

    for (phase, args) in [("evacuate", &evacuate[..]), ("recover", &recover[..])] {
        for when in [KillWhen::BeforeForward, KillWhen::AfterForward] {
            for n in 1.. {
                moto.reset();
                estate::seed(&sdk, &small_estate()).await;
                let original = snapshot(&sdk).await;
                if phase == "recover" {
                    azevac(&moto, &evacuate).expect_code(0);
                }
                proxy.set(Faults {
                    kill_at: Some((n, when)),
                    ..Faults::default()
                });
                let code = run_watched(&proxy, args);
                if !proxy.killed() {
                    assert_eq!(code, Some(0), "{phase} ran to the end past call {n}");
                    break;
                }
                tried += 1;
                // Half the time the operator re-runs the killed command first, half the time
                // goes straight to recover: both must end in the original estate.
                if n % 2 == 0 {
                    azevac(&moto, args).expect_code(0);
                    if phase == "evacuate" {
                        let items = journal_items(&sdk).await;
                        assert_eq!(items.len(), 3, "a re-run completes the evacuation (web, api, events)");
                    }
                }
                let recovered = azevac(&moto, &recover);
                // Killed before the journal table existed: nothing can have changed, and recover
                // says to run `azevac init`.
                let no_table = recovered.code == 2 && recovered.stderr.contains("azevac init");
                assert!(
                    recovered.code == 0 || no_table,
                    "{phase} killed at call {n}: {recovered:?}"
                );
                let restored = snapshot(&sdk).await;
                if restored == original && journal_items(&sdk).await.is_empty() {
                    exact += 1;
                } else {
                    eprintln!(
                        "{phase} killed at call {n} ({when:?}): not restored exactly\n{original:?}\n{restored:?}"
                    );
                }
            }
        }
    }
    eprintln!("reliability: kill points tried {tried}, restored exactly {exact}");
    assert!(tried >= 40, "only {tried} kill points");
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
    let status: BTreeMap<String, (String, String)> = doc["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| {
            (
                i["name"].as_str().unwrap_or_default().to_owned(),
                (
                    i["status"].as_str().unwrap_or_default().to_owned(),
                    i["reason"].as_str().unwrap_or_default().to_owned(),
                ),
            )
        })
        .collect();
    assert_eq!(status["web"].0, "failed");
    assert!(
        status["web"].1.contains("journal record kept in state intent"),
        "{}",
        status["web"].1
    );
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
