//! `azevac apply plan.json` (issue 7): a plan saved with `--dry-run --output json` runs exactly as
//! reviewed, and is refused, with the differences and nothing changed, once the live state has moved.

use crate::common;

use std::path::{Path, PathBuf};

use common::estate::{self, Seeded};
use common::{attr_s, azevac, journal_items, live_groups, snapshot, table_exists, Moto, ZONE};

fn sample_estate() -> common::estate::Spec {
    estate::read_spec(&Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sample-estate.json"))
}

/// Save a dry run's JSON document the way an operator would: `... --dry-run --output json > file`.
fn save(moto: &Moto, dir: &Path, name: &str, args: &[&str]) -> (PathBuf, serde_json::Value) {
    let run = azevac(moto, args).expect_code(0);
    let path = dir.join(name);
    std::fs::write(&path, &run.stdout).expect("write plan");
    (path, run.json())
}

/// Set an Auto Scaling group's subnets behind azevac's back.
async fn set_group_subnets(sdk: &aws_config::SdkConfig, group: &str, subnets: &[String]) {
    aws_sdk_autoscaling::Client::new(sdk)
        .update_auto_scaling_group()
        .auto_scaling_group_name(group)
        .vpc_zone_identifier(subnets.join(","))
        .send()
        .await
        .expect("UpdateAutoScalingGroup");
}

fn subnets_of(item: &serde_json::Value, field: &str) -> Vec<String> {
    item[field]
        .as_array()
        .map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn a_saved_plan_runs_exactly_and_a_stale_one_is_refused() {
    let moto = Moto::start();
    let sdk = common::sdk(&moto).await;
    let seeded: Seeded = estate::seed(&sdk, &sample_estate()).await;
    let original = snapshot(&sdk).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let (plan_path, plan) = save(
        &moto,
        dir.path(),
        "evacuate.json",
        &[
            "evacuate",
            "--az-id",
            ZONE,
            "--reason",
            "INC-7",
            "--dry-run",
            "--output",
            "json",
        ],
    );
    let plan_file = plan_path.to_str().expect("utf-8 path");
    assert_eq!(plan["request"]["reason"], "INC-7");
    assert!(plan["summary"]["planned"].as_u64().expect("planned") > 3);

    // Someone changes a planned group after the review: the plan is refused, nothing changes.
    let web = original.0["web"].clone();
    let moved: Vec<String> = web
        .iter()
        .filter(|s| **s != seeded.subnet("prod", "use1-az4"))
        .cloned()
        .collect();
    set_group_subnets(&sdk, "web", &moved).await;
    let moved_estate = snapshot(&sdk).await;
    let refused = azevac(&moto, &["apply", plan_file, "--yes"]).expect_code(2);
    assert!(
        refused.stderr.contains("asg web: planned [subnets"),
        "{}",
        refused.stderr
    );
    let last = refused.stderr.lines().last().unwrap_or_default();
    assert!(
        last.contains("no longer matches the live state (1 line(s) differ"),
        "one-line error last: {}",
        refused.stderr
    );
    assert_eq!(snapshot(&sdk).await, moved_estate, "nothing changed");
    assert!(!table_exists(&sdk).await, "nothing journalled");

    // Put back as reviewed: the saved plan runs, exactly.
    set_group_subnets(&sdk, "web", &web).await;
    let applied = azevac(&moto, &["apply", plan_file, "--yes", "--output", "json"]).expect_code(0);
    assert!(applied.stderr.contains("matches the live state"), "{}", applied.stderr);
    let result = applied.json();
    assert_eq!(result["dry_run"], false);
    assert_eq!(result["summary"]["done"], plan["summary"]["planned"]);
    let groups = live_groups(&sdk).await;
    for item in plan["items"].as_array().expect("items") {
        if item["type"] == "asg" {
            let name = item["name"].as_str().expect("name");
            assert_eq!(groups[name], subnets_of(item, "resulting_subnets"), "{name} as planned");
        }
    }
    let records = journal_items(&sdk).await;
    assert_eq!(
        records.len() as u64,
        plan["summary"]["planned"].as_u64().expect("planned")
    );
    assert!(
        records.iter().all(|r| attr_s(r, "reason") == "INC-7"),
        "the plan's reason is recorded"
    );

    // The same plan again: the live state has moved on (it is evacuated), so it is refused.
    let again = azevac(&moto, &["apply", plan_file, "--yes"]).expect_code(2);
    assert!(again.stderr.contains("no longer matches"), "{}", again.stderr);

    // A saved recovery plan puts everything back exactly.
    let (recover_path, recover_plan) = save(
        &moto,
        dir.path(),
        "recover.json",
        &["recover", "--dry-run", "--output", "json"],
    );
    assert_eq!(recover_plan["command"], "recover");
    azevac(&moto, &["apply", recover_path.to_str().expect("utf-8"), "--yes"]).expect_code(0);
    assert_eq!(snapshot(&sdk).await, original, "recovered exactly");
    assert!(journal_items(&sdk).await.is_empty());
}

#[tokio::test]
async fn apply_refuses_what_is_not_a_plan_for_here() {
    let moto = Moto::start();
    let sdk = common::sdk(&moto).await;
    estate::seed(&sdk, &sample_estate()).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let (plan_path, _) = save(
        &moto,
        dir.path(),
        "plan.json",
        &["evacuate", "--az-id", ZONE, "--dry-run", "--output", "json"],
    );
    let plan_file = plan_path.to_str().expect("utf-8");
    let before = snapshot(&sdk).await;

    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["--region", "us-west-2", "apply", plan_file, "--yes"],
            "pass --region us-east-1",
        ),
        (vec!["apply", "/nonexistent/plan.json", "--yes"], "cannot read the plan"),
        (vec!["apply", "Cargo.toml", "--yes"], "is not a saved azevac plan"),
        // Without a terminal and without --yes, nothing runs.
        (vec!["apply", plan_file], "pass --yes"),
    ];
    for (args, expected) in cases {
        let run = azevac(&moto, &args).expect_code(2);
        assert_eq!(run.stderr.trim().lines().count(), 1, "one line: {}", run.stderr);
        assert!(run.stderr.contains(expected), "{args:?}: {}", run.stderr);
    }
    // The result of a real run is not a plan.
    let result = azevac(&moto, &["evacuate", "--az-id", ZONE, "--yes", "--output", "json"]).expect_code(0);
    let result_path = dir.path().join("result.json");
    std::fs::write(&result_path, &result.stdout).expect("write");
    let run = azevac(&moto, &["apply", result_path.to_str().expect("utf-8"), "--yes"]).expect_code(2);
    assert!(
        run.stderr.contains("is the result of a run, not a plan"),
        "{}",
        run.stderr
    );
    assert_ne!(snapshot(&sdk).await, before, "the real run above changed the estate");
}
