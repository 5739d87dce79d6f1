//! ECS services and Lambda functions end to end (issue 3), beside Auto Scaling groups: the real
//! binary against moto server, live state and journal asserted after every step. Paging, the
//! 10-per-describe limit, conflict retries and update waits, which the emulator does not do, are
//! covered by the aws-smithy-mocks tests in src/plugins/{ecs,lambda}.rs.

use crate::common;

use std::collections::BTreeMap;

use common::estate::{self, AsgSpec, EcsSpec, LambdaSpec, Spec, VpcSpec};
use common::{attr_s, azevac, journal_items, live_functions, live_groups, live_services, Moto, ZONE};

fn zones(list: &[&str]) -> Vec<String> {
    list.iter().map(|z| z.to_string()).collect()
}

fn service(cluster: &str, name: &str, zone_list: &[&str]) -> EcsSpec {
    EcsSpec {
        cluster: cluster.into(),
        name: name.into(),
        vpc: "prod".into(),
        zones: zones(zone_list),
        network_mode: "awsvpc".into(),
        controller: "ECS".into(),
        assign_public_ip: "DISABLED".into(),
        desired: 0,
        tags: BTreeMap::new(),
    }
}

fn function(name: &str, zone_list: &[&str]) -> LambdaSpec {
    LambdaSpec {
        name: name.into(),
        vpc: (!zone_list.is_empty()).then(|| "prod".into()),
        zones: zones(zone_list),
        published_alias: false,
        tags: BTreeMap::new(),
    }
}

/// A mixed estate of all three types, with every case the plan must explain.
fn mixed_estate() -> Spec {
    let mut web = service("prod", "web", &["use1-az1", "use1-az2", "use1-az4"]);
    web.assign_public_ip = "ENABLED".into();
    web.tags.insert("team".into(), "storefront".into());
    let mut legacy = service("prod", "legacy", &[]);
    legacy.network_mode = "bridge".into();
    let mut bluegreen = service("prod", "bluegreen", &["use1-az1", "use1-az2"]);
    bluegreen.controller = "CODE_DEPLOY".into();
    let mut aliased = function("aliased-fn", &["use1-az2", "use1-az4"]);
    aliased.published_alias = true;
    let mut api_fn = function("api-fn", &["use1-az1", "use1-az2"]);
    api_fn.tags.insert("team".into(), "storefront".into());
    Spec {
        vpcs: vec![VpcSpec {
            name: "prod".into(),
            cidr: "10.40.0.0/16".into(),
            zones: zones(&["use1-az1", "use1-az2", "use1-az4"]),
        }],
        auto_scaling_groups: vec![AsgSpec {
            name: "web-asg".into(),
            vpc: "prod".into(),
            zones: zones(&["use1-az1", "use1-az2"]),
            desired: 0,
            tags: BTreeMap::new(),
        }],
        ecs_services: vec![
            web,
            service("prod", "worker", &["use1-az2"]),
            legacy,
            bluegreen,
            service("batch", "jobs", &["use1-az2", "use1-az4"]),
        ],
        lambda_functions: vec![
            api_fn,
            function("zonal-fn", &["use1-az2"]),
            function("no-vpc-fn", &[]),
            aliased,
        ],
        ..Spec::default()
    }
}

fn by_name(doc: &serde_json::Value) -> BTreeMap<String, serde_json::Value> {
    doc["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| (i["name"].as_str().unwrap_or_default().to_owned(), i.clone()))
        .collect()
}

#[tokio::test]
async fn a_mixed_estate_evacuates_and_recovers_exactly_in_one_command_each() {
    let moto = Moto::start();
    let sdk = common::sdk(&moto).await;
    let seeded = estate::seed(&sdk, &mixed_estate()).await;
    let (groups, services, functions) = (
        live_groups(&sdk).await,
        live_services(&sdk).await,
        live_functions(&sdk).await,
    );
    let az1 = seeded.subnet("prod", "use1-az1");
    let az4 = seeded.subnet("prod", "use1-az4");

    // The plan explains every resource it does not change.
    let dry = azevac(&moto, &["evacuate", "--az-id", ZONE, "--dry-run", "--output", "json"])
        .expect_code(0)
        .json();
    let items = by_name(&dry);
    let status = |name: &str| items[name]["status"].as_str().unwrap_or_default().to_owned();
    let reason = |name: &str| items[name]["reason"].as_str().unwrap_or_default().to_owned();
    for planned in ["web-asg", "prod/web", "batch/jobs", "api-fn", "aliased-fn"] {
        assert_eq!(status(planned), "planned", "{planned}");
    }
    assert!(reason("prod/worker").starts_with("would leave no subnets"));
    assert!(reason("zonal-fn").starts_with("would leave no subnets"));
    assert!(
        reason("prod/legacy").contains("not in awsvpc network mode"),
        "{}",
        reason("prod/legacy")
    );
    assert!(
        reason("prod/bluegreen").contains("CODE_DEPLOY"),
        "{}",
        reason("prod/bluegreen")
    );
    assert!(
        !items.contains_key("no-vpc-fn"),
        "functions outside a VPC are not listed"
    );
    let notes = items["aliased-fn"]["notes"].to_string();
    assert!(
        notes.contains("aliases on published versions keep the old network configuration (live -> 1)"),
        "{notes}"
    );
    assert!(items["prod/web"]["notes"]
        .to_string()
        .contains("every task of the service is replaced"));
    assert_eq!(live_services(&sdk).await, services, "a dry run changes nothing");

    // Evacuate every type in one command.
    let run = azevac(
        &moto,
        &["evacuate", "--az-id", ZONE, "--yes", "--wait", "--wait-timeout", "60s"],
    )
    .expect_code(0);
    assert!(run.stdout.contains("5 done, 4 skipped, 0 failed"), "{}", run.stdout);
    let evacuated_services = live_services(&sdk).await;
    let (web_subnets, web_groups, web_ip) = &evacuated_services["prod/web"];
    assert_eq!(web_subnets, &[az1.clone(), az4.clone()]);
    assert_eq!(web_groups, &services["prod/web"].1, "security groups kept");
    assert_eq!(web_ip, "ENABLED", "public-IP setting kept");
    assert_eq!(evacuated_services["batch/jobs"].0, vec![az4.clone()]);
    assert_eq!(evacuated_services["prod/worker"], services["prod/worker"]);
    assert_eq!(evacuated_services["prod/bluegreen"], services["prod/bluegreen"]);
    let evacuated_functions = live_functions(&sdk).await;
    assert_eq!(
        evacuated_functions["api-fn"],
        (vec![az1.clone()], functions["api-fn"].1.clone())
    );
    assert_eq!(evacuated_functions["aliased-fn"].0, vec![az4.clone()]);
    assert_eq!(evacuated_functions["zonal-fn"], functions["zonal-fn"]);
    assert_eq!(live_groups(&sdk).await["web-asg"], vec![az1.clone()]);

    let journal = journal_items(&sdk).await;
    let mut types: Vec<String> = journal.iter().map(|i| attr_s(i, "resource_type")).collect();
    types.sort();
    assert_eq!(types, ["asg", "ecs", "ecs", "lambda", "lambda"]);
    assert!(journal
        .iter()
        .any(|i| attr_s(i, "resource") == "arn:aws:ecs:us-east-1:123456789012:service/prod/web"));

    let again = azevac(&moto, &["evacuate", "--az-id", ZONE, "--yes"]).expect_code(0);
    assert!(again.stdout.contains("nothing to do"), "{}", again.stdout);

    // Recover every type in one command: exactly what was there before.
    azevac(&moto, &["recover", "--az-id", ZONE, "--yes"]).expect_code(0);
    assert_eq!(live_services(&sdk).await, services);
    assert_eq!(live_functions(&sdk).await, functions);
    assert_eq!(live_groups(&sdk).await, groups);
    assert!(journal_items(&sdk).await.is_empty());
    assert!(azevac(&moto, &["recover", "--yes"])
        .expect_code(0)
        .stdout
        .contains("nothing to do"));
}

#[tokio::test]
async fn types_clusters_and_tags_narrow_the_evacuation() {
    let moto = Moto::start();
    let sdk = common::sdk(&moto).await;
    estate::seed(&sdk, &mixed_estate()).await;
    let services = live_services(&sdk).await;

    let only_batch = azevac(
        &moto,
        &[
            "evacuate",
            "--az-id",
            ZONE,
            "--type",
            "ecs",
            "--cluster",
            "batch",
            "--dry-run",
            "--output",
            "json",
        ],
    )
    .expect_code(0)
    .json();
    let names: Vec<String> = by_name(&only_batch).into_keys().collect();
    assert_eq!(names, ["batch/jobs"]);

    // Tags: ECS tags come with DescribeServices, Lambda tags from ListTags.
    azevac(
        &moto,
        &[
            "evacuate",
            "--az-id",
            ZONE,
            "--type",
            "ecs,lambda",
            "--tag",
            "team=storefront",
            "--yes",
        ],
    )
    .expect_code(0);
    let live = live_services(&sdk).await;
    assert_eq!(live["prod/web"].0.len(), 2, "tagged service evacuated");
    assert_eq!(live["batch/jobs"], services["batch/jobs"], "untagged service left");
    assert_eq!(
        live_functions(&sdk).await["api-fn"].0.len(),
        1,
        "tagged function evacuated"
    );
    let mut types: Vec<String> = journal_items(&sdk)
        .await
        .iter()
        .map(|i| attr_s(i, "resource_type"))
        .collect();
    types.sort();
    assert_eq!(types, ["ecs", "lambda"]);

    // Recover one type at a time.
    azevac(&moto, &["recover", "--type", "lambda", "--yes"]).expect_code(0);
    let left: Vec<String> = journal_items(&sdk)
        .await
        .iter()
        .map(|i| attr_s(i, "resource_type"))
        .collect();
    assert_eq!(left, ["ecs"]);
    azevac(&moto, &["recover", "--type", "ecs", "--yes"]).expect_code(0);
    assert_eq!(live_services(&sdk).await, services);
}

/// A type that is done is read back and released at once, not after the slowest type's last
/// change: with the one Auto Scaling group's update parked at the proxy, the function's read-back (a
/// `GetFunction` after its update) and then its batch's release transaction still arrive. Issue 50:
/// the read-back comes before the release, so that no record is marked done on trust.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_done_type_is_read_back_while_a_slower_type_still_changes() {
    use common::proxy::{Hold, Proxy};
    let moto = Moto::start();
    let sdk = common::sdk(&moto).await;
    let spec = Spec {
        lambda_functions: vec![function("api-fn", &["use1-az1", "use1-az2"])],
        ecs_services: Vec::new(),
        ..mixed_estate()
    };
    estate::seed(&sdk, &spec).await;
    let proxy = Proxy::start(&moto.endpoint);
    proxy.hold(Hold {
        label: Some("autoscaling:UpdateAutoScalingGroup".into()),
        body_contains: String::new(),
        nth: 1,
    });
    let mut child = common::command(
        &proxy.endpoint,
        &[
            "evacuate",
            "--az-id",
            ZONE,
            "--type",
            "asg,lambda",
            "--yes",
            "--output",
            "json",
        ],
        &[],
    )
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .expect("spawn azevac");
    assert_eq!(
        proxy
            .wait_held(Some(&mut child), std::time::Duration::from_secs(60))
            .as_deref(),
        Some("autoscaling:UpdateAutoScalingGroup")
    );
    // The function's update, then its read-back, then its batch's release: all while parked. (The
    // proxy labels Lambda's REST calls by path: GetFunction is the function's own path.)
    let function = "lambda:/2015-03-31/functions/arn%3Aaws%3Alambda%3Aus-east-1%3A123456789012%3Afunction%3Aapi-fn";
    let read_back = |calls: &[String]| {
        let updated = calls.iter().position(|c| *c == format!("{function}/configuration"));
        let read = updated.and_then(|u| calls[u..].iter().position(|c| c == function).map(|r| u + r));
        read.is_some_and(|r| calls[r..].iter().any(|c| c == "dynamodb:TransactWriteItems"))
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !read_back(&proxy.calls()) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let seen = proxy.calls();
    proxy.release();
    let out = child.wait_with_output().expect("azevac ends");
    assert!(
        read_back(&seen),
        "no read-back of the function while the group's update was parked: {seen:?}"
    );
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let items = by_name(&doc);
    for name in ["web-asg", "api-fn"] {
        assert_eq!(items[name]["status"], "done", "{name}: {}", items[name]);
    }
    assert_eq!(live_groups(&sdk).await["web-asg"].len(), 1);
    assert_eq!(live_functions(&sdk).await["api-fn"].0.len(), 1);
}

/// Issue 50: a service being deleted (`DRAINING`, which moto never shows: the proxy answers it, and
/// refuses its UpdateService as AWS does) is skipped as being deleted, with the reason; a record
/// whose service is being deleted is reported by `recover`, not acted on, and kept until the
/// service is back or gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_50_a_service_being_deleted_is_skipped_and_its_record_kept() {
    use common::proxy::Proxy;
    let moto = Moto::start();
    let sdk = common::sdk(&moto).await;
    let spec = Spec {
        ecs_services: vec![
            service("prod", "web", &["use1-az1", "use1-az2", "use1-az4"]),
            service("prod", "leaving", &["use1-az1", "use1-az2"]),
        ],
        auto_scaling_groups: Vec::new(),
        lambda_functions: Vec::new(),
        ..mixed_estate()
    };
    estate::seed(&sdk, &spec).await;
    let before = live_services(&sdk).await;
    let proxy = Proxy::start(&moto.endpoint);
    let run = |args: &[&str]| common::azevac_at(&proxy.endpoint, args, &[]);
    let updates_of = |name: &str| {
        proxy
            .requests()
            .iter()
            .filter(|(label, body)| label == "ecs:UpdateService" && body.contains(&format!("/{name}\"")))
            .count()
    };

    proxy.tasks(|fake| fake.draining.push("leaving".into()));
    let out = run(&[
        "evacuate", "--az-id", ZONE, "--type", "ecs", "--yes", "--output", "json",
    ])
    .expect_code(0)
    .json();
    let items = by_name(&out);
    assert_eq!(items["prod/web"]["status"], "done", "{}", items["prod/web"]);
    assert_eq!(items["prod/leaving"]["status"], "skipped");
    let reason = items["prod/leaving"]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("being deleted (status DRAINING)"), "{reason}");
    assert_eq!(updates_of("leaving"), 0, "no UpdateService for a service being deleted");
    assert_eq!(live_services(&sdk).await["prod/leaving"], before["prod/leaving"]);
    assert_eq!(journal_items(&sdk).await.len(), 1, "only web's record");

    // Back to ACTIVE: it is evacuated as any other; then web is being deleted when recover comes.
    proxy.tasks(|fake| fake.draining.clear());
    run(&["evacuate", "--az-id", ZONE, "--type", "ecs", "--yes"]).expect_code(0);
    proxy.set(common::proxy::Faults::default());
    proxy.tasks(|fake| fake.draining.push("web".into()));
    let out = run(&["recover", "--yes", "--output", "json"]).expect_code(1).json();
    let items = by_name(&out);
    assert_eq!(items["prod/leaving"]["status"], "done", "{}", items["prod/leaving"]);
    assert_eq!(items["prod/web"]["status"], "skipped");
    let reason = items["prod/web"]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("not put back: being deleted") && reason.contains("journal record kept"),
        "{reason}"
    );
    assert_eq!(updates_of("web"), 0, "no UpdateService for a service being deleted");
    let kept: Vec<String> = journal_items(&sdk)
        .await
        .iter()
        .map(|i| attr_s(i, "resource"))
        .collect();
    assert_eq!(kept, ["arn:aws:ecs:us-east-1:123456789012:service/prod/web"]);
    assert_eq!(live_services(&sdk).await["prod/leaving"], before["prod/leaving"]);

    // Once its deletion is through (INACTIVE), it reads as gone: --forget-missing deletes the record.
    proxy.tasks(|fake| fake.draining.clear());
    aws_sdk_ecs::Client::new(&sdk)
        .delete_service()
        .cluster("prod")
        .service("web")
        .force(true)
        .send()
        .await
        .expect("DeleteService");
    run(&["recover", "--yes"]).expect_code(1);
    run(&["recover", "--yes", "--forget-missing"]).expect_code(0);
    assert!(journal_items(&sdk).await.is_empty());
}

/// Issue 51: the watcher never evacuates its own service. A service tagged `azevac:skip` (any value),
/// and every service of a cluster tagged so, is left alone by evacuate (no UpdateService, no record)
/// and listed as skipped with the tag as the reason, however the run is narrowed; the others are
/// evacuated as before.
#[tokio::test]
async fn issue_51_a_service_or_cluster_tagged_azevac_skip_is_left_alone_with_the_reason() {
    let moto = Moto::start();
    let sdk = common::sdk(&moto).await;
    let mut own = service("prod", "own", &["use1-az1", "use1-az2"]);
    own.tags.insert(azevac::model::plan::SKIP_TAG.into(), String::new());
    let spec = Spec {
        ecs_services: vec![
            service("prod", "web", &["use1-az1", "use1-az2", "use1-az4"]),
            own,
            service("azevac-watcher", "watch", &["use1-az1", "use1-az2"]),
        ],
        auto_scaling_groups: Vec::new(),
        lambda_functions: Vec::new(),
        ..mixed_estate()
    };
    estate::seed(&sdk, &spec).await;
    common::tag_cluster(
        &sdk,
        "azevac-watcher",
        azevac::model::plan::SKIP_TAG,
        "azevac watcher cluster",
    )
    .await;
    let before = live_services(&sdk).await;

    let reasons = |out: &serde_json::Value| {
        by_name(out)
            .into_iter()
            .map(|(name, item)| {
                let status = item["status"].as_str().unwrap_or_default().to_owned();
                let reason = item["reason"].as_str().unwrap_or_default().to_owned();
                (name, (status, reason))
            })
            .collect::<BTreeMap<_, _>>()
    };
    let skipped = |reason: &str| ("skipped".to_owned(), reason.to_owned());
    let plan = azevac(
        &moto,
        &[
            "evacuate",
            "--az-id",
            ZONE,
            "--type",
            "ecs",
            "--dry-run",
            "--output",
            "json",
        ],
    )
    .expect_code(0)
    .json();
    let plan = reasons(&plan);
    assert_eq!(plan["prod/web"].0, "planned", "{plan:?}");
    assert_eq!(plan["prod/own"], skipped("tagged azevac:skip="));
    assert_eq!(
        plan["azevac-watcher/watch"],
        skipped("cluster azevac-watcher tagged azevac:skip=azevac watcher cluster")
    );
    // Skipped lines show in the table too, with their reason.
    let table = azevac(
        &moto,
        &["evacuate", "--az-id", ZONE, "--type", "ecs", "--dry-run", "-o", "wide"],
    )
    .expect_code(0);
    assert!(table.stdout.contains("tagged azevac:skip="), "{}", table.stdout);

    // The real run leaves both alone.
    let out = azevac(
        &moto,
        &[
            "evacuate", "--az-id", ZONE, "--type", "ecs", "--yes", "--output", "json",
        ],
    )
    .expect_code(0)
    .json();
    let done = reasons(&out);
    assert_eq!(done["prod/web"].0, "done", "{done:?}");
    assert_eq!(done["prod/own"], skipped("tagged azevac:skip="));
    let live = live_services(&sdk).await;
    assert_eq!(live["prod/own"], before["prod/own"]);
    assert_eq!(live["azevac-watcher/watch"], before["azevac-watcher/watch"]);
    assert_eq!(live["prod/web"].0.len(), 2);
    let journalled: Vec<String> = journal_items(&sdk)
        .await
        .iter()
        .map(|i| attr_s(i, "resource"))
        .collect();
    assert_eq!(journalled, ["arn:aws:ecs:us-east-1:123456789012:service/prod/web"]);
    azevac(&moto, &["recover", "--yes"]).expect_code(0);
    assert_eq!(live_services(&sdk).await, before);
}
