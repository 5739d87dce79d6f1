//! EventBridge rule targets and EventBridge Scheduler schedules that run ECS tasks (issue 34), end
//! to end: the real binary against moto server (its UpdateSchedule made to reset what it is not
//! sent, as AWS does: scripts/moto_server.py). One scenario for both kinds: exposure and doctor
//! list and check them, the dry run plans them (a target or schedule only in the zone skipped),
//! the evacuation takes exactly the zone's subnet out and keeps every other field, a change by
//! hand after it survives the recovery (a union), and recovery puts back exactly what was taken.
//! Paging and PutTargets' failed entries are covered by the aws-smithy-mocks tests in
//! src/plugins/{eventbridge,scheduler}.rs.

use crate::common;

use std::collections::BTreeMap;

use common::estate::{self, Spec, VpcSpec};
use common::events::{live_rule_targets, live_schedules, EventTargetSpec, Placed, ScheduleSpec};
use common::proxy::{Faults, Proxy};
use common::{azevac, azevac_at, journal_items, Moto, ZONE};

fn zones(list: &[&str]) -> Vec<String> {
    list.iter().map(|z| z.to_string()).collect()
}

fn rule_target(bus: &str, rule: &str, id: &str, zone_list: &[&str]) -> EventTargetSpec {
    EventTargetSpec {
        bus: bus.into(),
        rule: rule.into(),
        id: id.into(),
        vpc: "prod".into(),
        zones: zones(zone_list),
    }
}

fn schedule(group: &str, name: &str, zone_list: &[&str]) -> ScheduleSpec {
    ScheduleSpec {
        group: group.into(),
        name: name.into(),
        vpc: "prod".into(),
        zones: zones(zone_list),
    }
}

fn estate() -> Spec {
    let all = ["use1-az1", ZONE, "use1-az4"];
    Spec {
        vpcs: vec![VpcSpec {
            name: "prod".into(),
            cidr: "10.44.0.0/16".into(),
            zones: zones(&all),
        }],
        eventbridge_targets: vec![
            rule_target("default", "nightly", "report", &all),
            rule_target("default", "nightly", "notify", &[]),
            rule_target("default", "nightly", "zonal", &[ZONE]),
            rule_target("ops", "hourly", "sync", &[ZONE, "use1-az4"]),
        ],
        schedules: vec![
            schedule("default", "nightly", &all),
            schedule("reports", "weekly", &["use1-az4", ZONE]),
            schedule("reports", "zonal", &[ZONE]),
            schedule("reports", "lambda", &[]),
        ],
        ..Spec::default()
    }
}

/// Both kinds' live state, one map: rule targets as `eventbridge NAME`, schedules as `scheduler NAME`.
async fn state(sdk: &aws_config::SdkConfig) -> BTreeMap<String, Placed> {
    let targets = live_rule_targets(sdk)
        .await
        .into_iter()
        .map(|(k, v)| (format!("eventbridge {k}"), v));
    let schedules = live_schedules(sdk)
        .await
        .into_iter()
        .map(|(k, v)| (format!("scheduler {k}"), v));
    targets.chain(schedules).collect()
}

fn by_name(doc: &serde_json::Value, list: &str) -> BTreeMap<String, serde_json::Value> {
    doc[list]
        .as_array()
        .unwrap_or_else(|| panic!("{list}: {doc}"))
        .iter()
        .map(|i| (i["name"].as_str().unwrap_or_default().to_owned(), i.clone()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_34_rule_targets_and_schedules_evacuate_and_recover_keeping_every_other_field() {
    let started = std::time::Instant::now();
    let moto = Moto::start();
    let sdk = common::sdk(&moto).await;
    let seeded = estate::seed(&sdk, &estate()).await;
    let zone_subnet = seeded.subnet("prod", ZONE);
    let az4 = seeded.subnet("prod", "use1-az4");
    let original = state(&sdk).await;
    assert_eq!(original.len(), 6, "the ECS targets and schedules: {original:#?}");
    let types = ["--type", "eventbridge,scheduler"];

    // exposure lists each, with the kind that moves it; the one only in the zone cannot move.
    // Through the proxy, which serves ARC (moto has none), so that exposure reads every kind.
    let proxy = Proxy::start(&moto.endpoint);
    proxy.set(Faults::default());
    let exposure = azevac_at(&proxy.endpoint, &["exposure", "--az-id", ZONE, "--output", "json"], &[]).expect_code(0);
    let findings = exposure.json();
    let found = by_name(&findings, "findings");
    for name in ["nightly/report", "ops/hourly/sync", "default/nightly", "reports/weekly"] {
        assert!(found.contains_key(name), "{name} not listed: {findings:#}");
    }
    assert!(
        found["reports/zonal"].to_string().contains("would leave no subnets"),
        "{}",
        found["reports/zonal"]
    );
    assert!(!found.contains_key("nightly/notify") && !found.contains_key("reports/lambda"));

    // doctor checks both with one cheap read each.
    azevac(&moto, &["init"]).expect_code(0);
    let doctor = azevac(&moto, &["doctor", "--output", "json"]).expect_code(0).json();
    for kind in ["eventbridge", "scheduler"] {
        let checks: Vec<&serde_json::Value> = doctor["checks"]
            .as_array()
            .expect("checks")
            .iter()
            .filter(|c| c["name"] == kind)
            .collect();
        assert!(
            !checks.is_empty() && checks.iter().all(|c| c["verdict"] == "ok"),
            "{kind}: {doctor:#}"
        );
    }

    // The dry run plans the four and skips those that would lose their last subnet; nothing changes.
    let mut args = vec!["evacuate", "--az-id", ZONE, "--dry-run", "--output", "json"];
    args.extend(types);
    let dry = azevac(&moto, &args).expect_code(0).json();
    let items = by_name(&dry, "items");
    for name in ["nightly/report", "ops/hourly/sync", "default/nightly", "reports/weekly"] {
        assert_eq!(items[name]["status"], "planned", "{name}: {dry:#}");
        assert!(
            items[name].to_string().contains("only when"),
            "the note: {}",
            items[name]
        );
    }
    for name in ["nightly/zonal", "reports/zonal"] {
        let reason = items[name]["reason"].as_str().unwrap_or_default();
        assert!(reason.starts_with("would leave no subnets"), "{name}: {reason}");
    }
    assert_eq!(state(&sdk).await, original, "the dry run changed nothing");

    // The evacuation takes out exactly the zone's subnet and keeps every other field.
    let mut args = vec!["evacuate", "--az-id", ZONE, "--yes"];
    args.extend(types);
    azevac(&moto, &args).expect_code(0);
    let evacuated = state(&sdk).await;
    let mut expected = original.clone();
    for (name, (subnets, _, _)) in expected.iter_mut() {
        if !name.ends_with("/zonal") {
            subnets.retain(|s| *s != zone_subnet);
        }
    }
    assert_eq!(evacuated, expected);
    assert_eq!(journal_items(&sdk).await.len(), 4, "one record each");

    // Someone moves a target from use1-az4 to use1-az1 by hand (the whole target put again).
    let az1 = seeded.subnet("prod", "use1-az1");
    common::events::change_rule_target(&sdk, "ops", "hourly", "sync", |_| vec![az1.clone()]).await;

    // Recovery puts the zone's subnet back where it was, next to what changed since.
    let mut args = vec!["recover", "--az-id", ZONE, "--yes"];
    args.extend(types);
    azevac(&moto, &args).expect_code(0);
    let recovered = state(&sdk).await;
    let mut expected = original.clone();
    expected.get_mut("eventbridge ops/hourly/sync").expect("sync").0 = vec![zone_subnet.clone(), az1.clone()];
    assert_eq!(recovered, expected);
    assert!(journal_items(&sdk).await.is_empty());
    assert!(!original["eventbridge ops/hourly/sync"].0.contains(&az1));
    assert!(original["scheduler reports/weekly"].0.contains(&az4));
    println!("issue_34 events scenario: {:.1}s", started.elapsed().as_secs_f64());
}

/// Issue 50: a schedule deleted and created again under the same name (a stack replacement) is not
/// the one azevac changed, though its ARN is the same: `recover` reports its record with both
/// creation times, puts nothing on the newcomer and exits 1, keeping the record until
/// `--forget-missing` deletes it. (A schedule, not an ECS service: moto gives services no `createdAt`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_50_a_recreated_schedule_is_reported_by_recover_not_acted_on() {
    let moto = Moto::start();
    let sdk = common::sdk(&moto).await;
    let spec = Spec {
        eventbridge_targets: Vec::new(),
        schedules: vec![schedule("reports", "weekly", &["use1-az4", ZONE])],
        ..estate()
    };
    estate::seed(&sdk, &spec).await;
    let types = ["--type", "scheduler"];
    azevac(&moto, &[&["evacuate", "--az-id", ZONE, "--yes"][..], &types].concat()).expect_code(0);
    let records = journal_items(&sdk).await;
    let identity = records[0]["identity"]
        .as_m()
        .expect("the schedule's identity is journalled");
    let created = identity["created"].as_s().expect("its CreationDate").clone();
    assert_eq!(identity["uid"].as_s().ok(), Some(&created));

    // The stack replaces it: the same name, the subnets it has now (the zone's left out).
    let scheduler = aws_sdk_scheduler::Client::new(&sdk);
    let old = scheduler
        .get_schedule()
        .group_name("reports")
        .name("weekly")
        .send()
        .await
        .expect("GetSchedule");
    scheduler
        .delete_schedule()
        .group_name("reports")
        .name("weekly")
        .send()
        .await
        .expect("DeleteSchedule");
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    scheduler
        .create_schedule()
        .group_name("reports")
        .name("weekly")
        .set_schedule_expression(old.schedule_expression().map(str::to_owned))
        .set_flexible_time_window(old.flexible_time_window().cloned())
        .set_target(old.target().cloned())
        .send()
        .await
        .expect("CreateSchedule");
    let newcomer = live_schedules(&sdk).await;

    let out = azevac(&moto, &[&["recover", "--yes", "--output", "json"][..], &types].concat())
        .expect_code(1)
        .json();
    let items = by_name(&out, "items");
    let line = &items["reports/weekly"];
    assert_eq!(line["status"], "skipped", "{line}");
    let reason = line["reason"].as_str().unwrap_or_default();
    assert!(
        reason.starts_with(&format!(
            "re-created since azevac changed it (created {created}; now created "
        )) && reason.ends_with("journal record kept (pass --forget-missing to delete it)"),
        "{reason}"
    );
    assert_eq!(live_schedules(&sdk).await, newcomer, "the newcomer is untouched");
    assert_eq!(journal_items(&sdk).await.len(), 1, "the record is kept");

    azevac(&moto, &[&["recover", "--yes", "--forget-missing"][..], &types].concat()).expect_code(0);
    assert!(journal_items(&sdk).await.is_empty());
    assert_eq!(live_schedules(&sdk).await, newcomer, "the newcomer is still untouched");
}
