//! AWS Batch compute environments end to end (issue 34): the real binary against moto server
//! (scripts/moto_server.py makes its UpdateComputeEnvironment apply the subnets, and refuse an
//! infrastructure update of a BEST_FIT environment, as AWS does). One scenario: the plan and its
//! skips, exposure, evacuate (only the zone's subnets change), recover as a union with a later
//! change, and doctor. Paging and the wait for an update in progress are covered by the
//! aws-smithy-mocks tests in src/plugins/batch.rs.

use crate::common;

use std::collections::BTreeMap;

use aws_sdk_batch::types::{ComputeEnvironmentDetail, ComputeResourceUpdate, UpdatePolicy};
use common::estate::{self, BatchSpec, Spec, VpcSpec};
use common::proxy::Proxy;
use common::{attr_s, azevac, azevac_at, journal_items, Moto, ZONE};
use serde_json::Value;

fn zones(list: &[&str]) -> Vec<String> {
    list.iter().map(|z| z.to_string()).collect()
}

fn environment(name: &str, compute_type: &str, strategy: Option<&str>, zone_list: &[&str]) -> BatchSpec {
    BatchSpec {
        name: name.into(),
        vpc: "prod".into(),
        zones: zones(zone_list),
        compute_type: compute_type.into(),
        allocation_strategy: strategy.map(str::to_owned),
        managed: true,
        own_service_role: false,
        tags: BTreeMap::new(),
    }
}

/// Every case the plan must explain: two that move, and each reason not to.
fn estate_spec() -> Spec {
    let mut own_role = environment("own-role", "EC2", Some("BEST_FIT_PROGRESSIVE"), &["use1-az1", ZONE]);
    own_role.own_service_role = true;
    let mut onprem = environment("onprem", "EC2", None, &[]);
    onprem.managed = false;
    let mut etl = environment("etl", "FARGATE", None, &["use1-az1", ZONE, "use1-az4"]);
    etl.tags.insert("team".into(), "data".into());
    Spec {
        vpcs: vec![VpcSpec {
            name: "prod".into(),
            cidr: "10.61.0.0/16".into(),
            zones: zones(&["use1-az1", ZONE, "use1-az4"]),
        }],
        batch_compute_environments: vec![
            etl,
            environment("render", "EC2", Some("BEST_FIT_PROGRESSIVE"), &[ZONE, "use1-az4"]),
            environment("legacy", "EC2", None, &["use1-az1", ZONE]),
            own_role,
            environment("zonal", "FARGATE", None, &[ZONE]),
            onprem,
            environment("far", "FARGATE", None, &["use1-az1", "use1-az4"]),
        ],
        ..Spec::default()
    }
}

/// Every environment as the service describes it, by name.
async fn live(sdk: &aws_config::SdkConfig) -> BTreeMap<String, ComputeEnvironmentDetail> {
    let environments: Vec<ComputeEnvironmentDetail> = aws_sdk_batch::Client::new(sdk)
        .describe_compute_environments()
        .into_paginator()
        .items()
        .send()
        .try_collect()
        .await
        .expect("DescribeComputeEnvironments");
    environments
        .into_iter()
        .map(|e| (e.compute_environment_name().unwrap_or_default().to_owned(), e))
        .collect()
}

fn subnets(e: &ComputeEnvironmentDetail) -> Vec<String> {
    e.compute_resources().map(|r| r.subnets().to_vec()).unwrap_or_default()
}

/// The environment with its subnets left out: what no evacuation may change.
fn without_subnets(e: &ComputeEnvironmentDetail) -> ComputeEnvironmentDetail {
    let mut e = e.clone();
    if let Some(r) = e.compute_resources.as_mut() {
        r.subnets = None;
    }
    e
}

fn by_name(doc: &Value) -> BTreeMap<String, Value> {
    doc["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| (i["name"].as_str().unwrap_or_default().to_owned(), i.clone()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_34_batch_environments_evacuate_and_recover_exactly() {
    let moto = Moto::start();
    let sdk = common::sdk(&moto).await;
    let seeded = estate::seed(&sdk, &estate_spec()).await;
    let (az1, zone, az4) = (
        seeded.subnet("prod", "use1-az1"),
        seeded.subnet("prod", ZONE),
        seeded.subnet("prod", "use1-az4"),
    );
    let batch = aws_sdk_batch::Client::new(&sdk);
    // The operator's update policy: the plan says what it does, and nothing changes it.
    batch
        .update_compute_environment()
        .compute_environment("render")
        .update_policy(UpdatePolicy::builder().terminate_jobs_on_update(true).build())
        .send()
        .await
        .expect("UpdateComputeEnvironment");
    let before = live(&sdk).await;

    // The plan explains every environment with a subnet in the zone, and the unmanaged one.
    let dry = azevac(
        &moto,
        &[
            "evacuate",
            "--az-id",
            ZONE,
            "--type",
            "batch",
            "--dry-run",
            "--output",
            "json",
        ],
    )
    .expect_code(0)
    .json();
    let items = by_name(&dry);
    let text = |name: &str, key: &str| items[name][key].to_string();
    assert_eq!(items["etl"]["status"], "planned", "{dry:#}");
    assert_eq!(items["render"]["status"], "planned", "{dry:#}");
    assert!(
        text("etl", "notes").contains("running jobs are not moved"),
        "{}",
        text("etl", "notes")
    );
    assert!(
        text("render", "notes").contains("terminated at once"),
        "{}",
        text("render", "notes")
    );
    assert!(
        text("legacy", "reason").contains("BEST_FIT: AWS refuses"),
        "{}",
        text("legacy", "reason")
    );
    assert!(
        text("own-role", "reason").contains("not AWSServiceRoleForBatch"),
        "{}",
        text("own-role", "reason")
    );
    assert!(
        text("zonal", "reason").contains("would leave no subnets"),
        "{}",
        text("zonal", "reason")
    );
    assert!(
        text("onprem", "reason").contains("unmanaged"),
        "{}",
        text("onprem", "reason")
    );
    assert!(
        !items.contains_key("far"),
        "an environment outside the zone is not listed"
    );
    assert_eq!(live(&sdk).await, before, "a dry run changes nothing");

    // Exposure lists what has subnets in the zone, with what moves it.
    let exposure = azevac(&moto, &["exposure", "--az-id", ZONE, "--output", "json"]).json();
    let findings: BTreeMap<String, Value> = exposure["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["kind"] == "batch")
        .map(|f| (f["name"].as_str().unwrap_or_default().to_owned(), f.clone()))
        .collect();
    assert_eq!(findings["etl"]["moved_by"], "batch", "{findings:#?}");
    assert_eq!(findings["etl"]["in_zone"], serde_json::json!([zone]));
    assert!(findings["legacy"]["not_movable"].to_string().contains("BEST_FIT"));
    let mut names: Vec<&String> = findings.keys().collect();
    names.sort();
    assert_eq!(names, ["etl", "legacy", "own-role", "render", "zonal"]);

    // Evacuate: only the zone's subnets of the two that can move; every other field as it was.
    let run = azevac(&moto, &["evacuate", "--az-id", ZONE, "--type", "batch", "--yes"]).expect_code(0);
    assert!(run.stdout.contains("2 done"), "{}", run.stdout);
    let evacuated = live(&sdk).await;
    assert_eq!(subnets(&evacuated["etl"]), [az1.clone(), az4.clone()]);
    assert_eq!(subnets(&evacuated["render"]), std::slice::from_ref(&az4));
    for (name, environment) in &before {
        assert_eq!(
            without_subnets(&evacuated[name]),
            without_subnets(environment),
            "{name}"
        );
        if !["etl", "render"].contains(&name.as_str()) {
            assert_eq!(subnets(&evacuated[name]), subnets(environment), "{name} unchanged");
        }
    }
    let journal = journal_items(&sdk).await;
    let mut keys: Vec<String> = journal.iter().map(|i| attr_s(i, "resource")).collect();
    keys.sort();
    let arn = |name: &str| before[name].compute_environment_arn().unwrap_or_default().to_owned();
    assert_eq!(keys, [arn("etl"), arn("render")], "journalled by ARN");

    // An operator takes use1-az4 out of etl meanwhile: recover puts back what azevac took and
    // keeps their change (a union, in the original order).
    batch
        .update_compute_environment()
        .compute_environment("etl")
        .compute_resources(ComputeResourceUpdate::builder().subnets(&az1).build())
        .send()
        .await
        .expect("UpdateComputeEnvironment");
    azevac(&moto, &["recover", "--type", "batch", "--yes"]).expect_code(0);
    let recovered = live(&sdk).await;
    assert_eq!(subnets(&recovered["etl"]), [az1.clone(), zone.clone()]);
    assert_eq!(recovered["render"], before["render"], "render exactly as it was");
    assert!(journal_items(&sdk).await.is_empty());

    // Doctor reads Batch with one cheap call.
    let doctor = azevac(&moto, &["doctor", "--az-id", ZONE, "--output", "json"]).json();
    let check = doctor["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["name"] == "batch")
        .cloned()
        .expect("a batch check");
    assert_eq!(check["verdict"], "ok", "{check:#}");
    assert!(check.to_string().contains("DescribeComputeEnvironments"), "{check:#}");
}

/// Issue 50: AWS shows a compute environment `UPDATING` while an update runs and refuses another
/// meanwhile (the strict layer models both). An evacuation that finds someone else's update running
/// says so in its plan, waits for it under the lock, then takes the zone out; AWS never refuses one
/// of its calls, and recover puts the zone back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_50_an_update_in_progress_is_waited_for_never_refused() {
    let moto = Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    proxy.strict();
    // Longer than the reads of the plan and of the read under the lock: the act meets it.
    proxy.updates_take(4);
    let sdk = common::sdk(&moto).await;
    let seeded = estate::seed(&sdk, &estate_spec()).await;
    let before = live(&sdk).await;
    // The operator's own update, through the same (strict) endpoint azevac uses.
    let through_proxy = aws_sdk_batch::Client::from_conf(
        aws_sdk_batch::config::Builder::from(&sdk)
            .endpoint_url(&proxy.endpoint)
            .build(),
    );
    through_proxy
        .update_compute_environment()
        .compute_environment("render")
        .update_policy(UpdatePolicy::builder().job_execution_timeout_minutes(45).build())
        .send()
        .await
        .expect("UpdateComputeEnvironment");
    let args = |command: &'static str| -> Vec<&'static str> {
        vec![command, "--az-id", ZONE, "--type", "batch", "--yes", "--output", "json"]
    };
    let run = azevac_at(&proxy.endpoint, &args("evacuate"), &[]);
    let doc: Value = serde_json::from_str(&run.stdout).unwrap_or_default();
    let render = &by_name(&doc)["render"];
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(render["status"], "done", "{render:#}");
    assert!(
        render["notes"].to_string().contains("an update is in progress"),
        "the plan says so: {render:#}"
    );
    assert!(
        run.stderr.contains("waiting for the update in progress"),
        "and the act waits: {}",
        run.stderr
    );
    let zone = seeded.subnet("prod", ZONE);
    assert!(!subnets(&live(&sdk).await["render"]).contains(&zone));
    proxy.settle_reads();
    azevac_at(&proxy.endpoint, &args("recover"), &[]).expect_code(0);
    let (_, refusals) = proxy.strictness();
    assert!(refusals.is_empty(), "AWS refused: {refusals:?}");
    let after = live(&sdk).await;
    for (name, was) in &before {
        assert_eq!(subnets(&after[name]), subnets(was), "{name}");
    }
}
