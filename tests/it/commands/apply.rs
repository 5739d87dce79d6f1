//! `azevac apply plan.json` (issue 7): a plan saved with `--dry-run --output json` runs exactly as
//! reviewed, and is refused, with the differences and nothing changed, once the live state has moved.

use crate::common;

use std::path::{Path, PathBuf};

use common::estate::{self, Seeded};
use common::proxy::{Faults, Proxy};
use common::{attr_s, azevac, azevac_at, journal_items, live_groups, snapshot, table_exists, Moto, ZONE};

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
    // The plan's settings are shown (issue 36); in the caller's own account, no role is assumed.
    assert!(applied.stderr.contains("\n  reason: INC-7\n"), "{}", applied.stderr);
    assert!(
        applied.stderr.contains("\n  accounts: the caller's own\n"),
        "{}",
        applied.stderr
    );
    assert!(!applied.stderr.contains("role assumed"), "{}", applied.stderr);
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
    // A plan file is anyone's text: serde quotes what it cannot read, line breaks and all (issue 36).
    let text = std::fs::read_to_string(&plan_path).expect("read plan");
    let damaged = dir.path().join("damaged.json");
    std::fs::write(
        &damaged,
        text.replacen(r#""status": "planned""#, r#""status": "\n\u001b[2Jplanned""#, 1),
    )
    .expect("write");
    let elsewhere = dir.path().join("elsewhere.json");
    std::fs::write(
        &elsewhere,
        text.replacen(r#""us-east-1""#, r#""us-west-2\n\u001b[2J""#, 1),
    )
    .expect("write");

    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["apply", damaged.to_str().expect("utf-8"), "--yes"],
            "is not a saved azevac plan (unknown variant `\\n\\u{1b}[2Jplanned`",
        ),
        (
            vec!["apply", elsewhere.to_str().expect("utf-8"), "--yes"],
            "is a plan for region us-west-2\\n\\u{1b}[2J, but",
        ),
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

/// The member account a plan across accounts acts in.
const MEMBER: &str = "111111111111";
/// The role an edited plan switched to: one that may do anything in a member account.
const BROAD: &str = "arn:aws:iam::{account}:role/OrganizationAccountAccessRole";

/// Write `plan` to `dir/name`; returns the path.
fn write_plan(dir: &Path, name: &str, plan: &serde_json::Value) -> String {
    let path = dir.join(name);
    std::fs::write(&path, plan.to_string()).expect("write plan");
    path.to_str().expect("utf-8 path").to_owned()
}

/// Issue 36: a saved plan's role template is the identity the whole run acts under. A plan edited
/// to assume a much broader role is refused with --yes (exit 2, one line naming both roles, no
/// AssumeRole made, nothing changed) unless the command line names the same role, or the operator
/// accepts the plan's with --accept-plan-role; so is one that adds an external ID, and a template
/// that is not a role ARN with {account}. Every setting of the plan is shown before anything runs.
/// (Before: the edited plan was applied with --yes, silently assumed OrganizationAccountAccessRole
/// and changed 3 groups.)
#[tokio::test(flavor = "multi_thread")]
async fn issue_36_a_plan_whose_role_was_edited_is_refused_unless_the_command_line_agrees() {
    let moto = Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    let operator = common::sdk(&moto).await;
    let member = common::in_account(&operator, MEMBER).await;
    let seeded = estate::seed(
        &member,
        &estate::groups_in_two_zones("10.36.0.0/16", &["web", "api", "jobs"]),
    )
    .await;
    let before = live_groups(&member).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let reviewed = azevac_at(
        &proxy.endpoint,
        &[
            "evacuate",
            "--az-id",
            ZONE,
            "--accounts",
            MEMBER,
            "--reason",
            "INC-36",
            "--dry-run",
            "--output",
            "json",
        ],
        &[],
    )
    .expect_code(0)
    .json();
    assert_eq!(reviewed["summary"]["planned"], 3, "{reviewed:#}");
    // After the review, someone edits the file: a much broader role, and nothing else.
    let mut edited = reviewed.clone();
    edited["request"]["fleet"]["role_arn_template"] = BROAD.into();
    let edited = write_plan(dir.path(), "edited.json", &edited);
    let mut with_id = reviewed.clone();
    with_id["request"]["fleet"]["external_id"] = "ext-36".into();
    let with_id = write_plan(dir.path(), "external-id.json", &with_id);
    let mut fixed_account = reviewed.clone();
    fixed_account["request"]["fleet"]["role_arn_template"] = "arn:aws:iam::999999999999:role/azevac".into();
    let fixed_account = write_plan(dir.path(), "fixed-account.json", &fixed_account);
    // Forget the calls of the dry run: from here on, no role may be assumed until one is agreed.
    proxy.set(Faults::default());

    let one_line = |run: common::Run| -> String {
        let run = run.expect_code(2);
        let lines: Vec<&str> = run.stderr.trim().lines().collect();
        assert_eq!(lines.len(), 1, "one line: {}", run.stderr);
        lines[0].to_owned()
    };
    for args in [
        vec!["apply", edited.as_str(), "--yes"],
        vec!["apply", edited.as_str(), "--yes", "--role-name", "azevac"],
    ] {
        let line = one_line(azevac_at(&proxy.endpoint, &args, &[]));
        assert!(
            line.contains(&format!(
                "the plan assumes {BROAD} in each account, not arn:aws:iam::{{account}}:role/azevac (the command line's)"
            )),
            "names both roles: {line}"
        );
        assert!(
            line.contains("nothing changed")
                && line.contains(&format!("pass --role-arn-template '{BROAD}' to apply"))
                && line.contains("--accept-plan-role"),
            "says what to do: {line}"
        );
    }
    let line = one_line(azevac_at(&proxy.endpoint, &["apply", &with_id, "--yes"], &[]));
    assert!(
        line.contains(r#"passes external ID "ext-36", not no external ID"#) && line.contains("--external-id 'ext-36'"),
        "{line}"
    );
    // A template that is no role ARN with {account} is refused whatever the operator accepts.
    let line = one_line(azevac_at(
        &proxy.endpoint,
        &["apply", &fixed_account, "--yes", "--accept-plan-role"],
        &[],
    ));
    assert!(
        line.contains("must be an IAM role ARN with {account} as its account"),
        "{line}"
    );
    assert!(
        !proxy.calls().iter().any(|c| c == "sts:AssumeRole"),
        "no role assumed: {:?}",
        proxy.calls()
    );
    assert_eq!(live_groups(&member).await, before, "nothing changed");
    assert!(!table_exists(&operator).await, "nothing journalled");

    // The command line names the plan's role: the plan runs, after every setting is shown.
    let applied = azevac_at(
        &proxy.endpoint,
        &["apply", &edited, "--yes", "--role-arn-template", BROAD],
        &[],
    )
    .expect_code(0);
    let shown = |stderr: &str, line: &str| stderr.lines().position(|l| l == line);
    let matched = applied
        .stderr
        .lines()
        .position(|l| l.contains("matches the live state"))
        .unwrap_or_else(|| panic!("{}", applied.stderr));
    for line in [
        "  command: evacuate use1-az2 in us-east-1",
        "  reason: INC-36",
        "  force (past the cross-zone and headroom checks): no",
        "  accounts: 111111111111",
        &format!("  role assumed in each account: {BROAD}"),
        "  external ID: none",
    ] {
        let at = shown(&applied.stderr, line).unwrap_or_else(|| panic!("{line:?} not shown: {}", applied.stderr));
        assert!(at < matched, "shown before anything runs: {}", applied.stderr);
    }
    assert!(proxy.calls().iter().any(|c| c == "sts:AssumeRole"));
    let gone = seeded.subnet("main", ZONE);
    let groups = live_groups(&member).await;
    assert!(
        groups.len() == 3 && groups.values().all(|subnets| !subnets.contains(&gone)),
        "{groups:?}"
    );

    // Put back; then the operator accepts the plan's role explicitly instead.
    azevac_at(
        &proxy.endpoint,
        &["recover", "--accounts", MEMBER, "--yes", "--role-arn-template", BROAD],
        &[],
    )
    .expect_code(0);
    assert_eq!(common::sorted(&live_groups(&member).await), common::sorted(&before));
    let accepted = azevac_at(&proxy.endpoint, &["apply", &edited, "--yes", "--accept-plan-role"], &[]).expect_code(0);
    assert!(
        accepted
            .stderr
            .contains(&format!("  role assumed in each account: {BROAD}")),
        "{}",
        accepted.stderr
    );
    let groups = live_groups(&member).await;
    assert!(groups.values().all(|subnets| !subnets.contains(&gone)), "{groups:?}");
}
