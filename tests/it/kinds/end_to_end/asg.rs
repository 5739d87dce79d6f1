//! Auto Scaling groups end to end (issue 2): the real binary against moto server, the live estate
//! and the journal table asserted after every step.

use crate::common;

use std::collections::BTreeMap;

use common::estate::{self, AsgSpec, Spec, VpcSpec};
use common::{attr_list, attr_s, azevac, journal_items, live_groups, sorted, table_exists, Moto, ZONE};

/// Three zones per VPC: use1-az2 is evacuated, use1-az1 and use1-az4 stay.
const ZONES: [&str; 3] = ["use1-az1", "use1-az2", "use1-az4"];

/// How a group of the large estate is placed, by its index modulo 5.
fn placement(i: usize) -> (&'static str, Vec<&'static str>) {
    let vpc = if i.is_multiple_of(2) { "blue" } else { "green" };
    let zones = match i % 5 {
        0 => vec!["use1-az1", "use1-az2", "use1-az4"],
        1 => vec!["use1-az2", "use1-az4"],
        2 => vec!["use1-az2"],             // entirely in the zone: must be skipped
        3 => vec!["use1-az1", "use1-az4"], // never in the zone: must not be listed
        _ => vec!["use1-az4", "use1-az2"],
    };
    (vpc, zones)
}

/// 125 groups (more than one page of 100) in two VPCs.
fn large_estate() -> Spec {
    let vpc = |name: &str, cidr: &str| VpcSpec {
        name: name.into(),
        cidr: cidr.into(),
        zones: ZONES.iter().chain(&["use1-az3"]).map(|z| z.to_string()).collect(),
    };
    Spec {
        vpcs: vec![vpc("blue", "10.10.0.0/16"), vpc("green", "10.20.0.0/16")],
        auto_scaling_groups: (0..125)
            .map(|i| {
                let (vpc, zones) = placement(i);
                AsgSpec {
                    name: format!("group-{i:03}"),
                    vpc: vpc.into(),
                    zones: zones.iter().map(|z| z.to_string()).collect(),
                    desired: i32::from(i < 3),
                    tags: BTreeMap::from([("team".into(), if i % 3 == 0 { "payments" } else { "search" }.into())]),
                }
            })
            .collect(),
        ..Spec::default()
    }
}

#[tokio::test]
async fn evacuates_and_recovers_a_large_estate_exactly() {
    let moto = Moto::start();
    let sdk = common::sdk(&moto).await;
    let seeded = estate::seed(&sdk, &large_estate()).await;
    let original = live_groups(&sdk).await;
    assert_eq!(original.len(), 125);
    let zone_subnets = [seeded.subnet("blue", ZONE), seeded.subnet("green", ZONE)];
    let eligible: Vec<String> = (0..125)
        .filter(|i| i % 5 != 2 && i % 5 != 3)
        .map(|i| format!("group-{i:03}"))
        .collect();

    // Dry run: the plan, and nothing changed or written.
    let dry = azevac(&moto, &["evacuate", "--az-id", ZONE, "--dry-run", "--output", "json"]).expect_code(0);
    let plan = dry.json();
    assert_eq!(plan["dry_run"], true);
    assert_eq!(plan["summary"]["planned"], eligible.len());
    assert_eq!(plan["summary"]["skipped"], 25, "the groups entirely in the zone");
    let skipped: Vec<&serde_json::Value> = plan["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|i| i["status"] == "skipped")
        .collect();
    assert!(skipped.iter().all(|i| i["reason"]
        .as_str()
        .unwrap_or_default()
        .starts_with("would leave no subnets")));
    assert_eq!(live_groups(&sdk).await, original);
    assert!(
        !table_exists(&sdk).await,
        "a dry run writes nothing, not even the table"
    );

    // Evacuate.
    let run = azevac(
        &moto,
        &[
            "evacuate", "--az-id", ZONE, "--yes", "--reason", "INC-42", "--output", "json",
        ],
    )
    .expect_code(0);
    assert_eq!(run.json()["summary"]["done"], eligible.len());
    let evacuated = live_groups(&sdk).await;
    for (name, subnets) in &original {
        let now = &evacuated[name];
        let expected: Vec<String> = if eligible.contains(name) {
            subnets.iter().filter(|s| !zone_subnets.contains(s)).cloned().collect()
        } else {
            subnets.clone()
        };
        assert_eq!(now, &expected, "{name}");
    }
    let items = journal_items(&sdk).await;
    assert_eq!(items.len(), eligible.len());
    for item in &items {
        assert_eq!(attr_s(item, "az_id"), ZONE);
        assert_eq!(attr_s(item, "resource_type"), "asg");
        assert_eq!(attr_s(item, "state"), "done");
        assert_eq!(attr_s(item, "reason"), "INC-42");
        assert!(attr_s(item, "resource").starts_with("arn:aws:autoscaling:us-east-1:"));
        let removed = attr_list(item, "removed_subnets");
        assert_eq!(removed.len(), 1);
        assert!(zone_subnets.contains(&removed[0]));
        assert_eq!(
            attr_list(item, "original_subnets"),
            original[&attr_s(item, "resource_name")]
        );
    }

    // A second evacuation: nothing to do, the journal untouched.
    let again = azevac(&moto, &["evacuate", "--az-id", ZONE, "--yes"]).expect_code(0);
    assert!(again.stdout.contains("nothing to do"), "{}", again.stdout);
    assert_eq!(live_groups(&sdk).await, evacuated);
    assert_eq!(sorted_items(journal_items(&sdk).await), sorted_items(items.clone()));

    // Someone else changes two groups while the zone is out: recover must keep their changes.
    let autoscaling = aws_sdk_autoscaling::Client::new(&sdk);
    let added = seeded.subnet("blue", "use1-az3");
    let mut grown = evacuated["group-000"].clone();
    grown.push(added.clone());
    set_subnets(&autoscaling, "group-000", &grown).await;
    let shrunk = vec![seeded.subnet("green", "use1-az1")]; // was [green use1-az4]
    set_subnets(&autoscaling, "group-001", &shrunk).await;

    // Recover dry run changes nothing.
    azevac(&moto, &["recover", "--dry-run"]).expect_code(0);
    assert_eq!(journal_items(&sdk).await.len(), eligible.len());

    // Recover: every group has its original subnets back, plus what others changed since.
    let recovered_run = azevac(&moto, &["recover", "--az-id", ZONE, "--type", "asg", "--yes"]).expect_code(0);
    assert!(
        recovered_run
            .stdout
            .contains(&format!("{} done, 0 skipped, 0 failed", eligible.len())),
        "{}",
        recovered_run.stdout
    );
    let recovered = live_groups(&sdk).await;
    let mut expected = original.clone();
    expected.get_mut("group-000").expect("group-000").push(added);
    expected.insert(
        "group-001".into(),
        vec![seeded.subnet("green", "use1-az1"), seeded.subnet("green", ZONE)],
    );
    assert_eq!(sorted(&recovered), sorted(&expected));
    // Untouched groups keep their order exactly; restored ones get their original order back.
    assert_eq!(recovered["group-005"], original["group-005"]);
    assert_eq!(recovered["group-004"], original["group-004"]);
    assert!(
        journal_items(&sdk).await.is_empty(),
        "records are deleted once the subnets are back"
    );

    // A second recovery is a no-op.
    let again = azevac(&moto, &["recover", "--yes"]).expect_code(0);
    assert!(again.stdout.contains("nothing to do"), "{}", again.stdout);
    assert_eq!(live_groups(&sdk).await, recovered);
}

#[tokio::test]
async fn filters_choose_which_groups_are_evacuated() {
    let moto = Moto::start();
    let sdk = common::sdk(&moto).await;
    estate::seed(&sdk, &small_estate()).await;

    let plan = azevac(
        &moto,
        &[
            "evacuate",
            "--az-id",
            ZONE,
            "--dry-run",
            "--output",
            "json",
            "--tag",
            "team=web",
        ],
    )
    .expect_code(0)
    .json();
    let status: BTreeMap<String, String> = plan["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| {
            (
                i["name"].as_str().unwrap_or_default().to_owned(),
                i["status"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(status["web"], "planned");
    assert_eq!(status["api"], "skipped");

    azevac(&moto, &["evacuate", "--az-id", ZONE, "--yes", "--name-prefix", "ap"]).expect_code(0);
    let live = live_groups(&sdk).await;
    assert_eq!(live["api"].len(), 1, "api evacuated");
    assert_eq!(live["web"].len(), 3, "web filtered out");
    assert_eq!(journal_items(&sdk).await.len(), 1);
}

#[tokio::test]
async fn recover_reports_deleted_groups_and_subnets_and_forgets_only_when_told() {
    let moto = Moto::start();
    let sdk = common::sdk(&moto).await;
    estate::seed(&sdk, &small_estate()).await;
    azevac(&moto, &["init"]).expect_code(0);
    assert!(azevac(&moto, &["init"])
        .expect_code(0)
        .stdout
        .contains("already exists"));
    azevac(&moto, &["evacuate", "--az-id", ZONE, "--yes"]).expect_code(0);
    assert_eq!(journal_items(&sdk).await.len(), 2);

    aws_sdk_autoscaling::Client::new(&sdk)
        .delete_auto_scaling_group()
        .auto_scaling_group_name("api")
        .force_delete(true)
        .send()
        .await
        .expect("DeleteAutoScalingGroup");

    // The record kept for the operator to decide on: not a success (issue 31).
    let run = azevac(&moto, &["recover", "--yes", "--output", "json"]).expect_code(1);
    let doc = run.json();
    let api = doc["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|i| i["name"] == "api")
        .expect("api listed")
        .clone();
    assert_eq!(api["status"], "skipped");
    assert!(api["reason"].as_str().unwrap_or_default().contains("no longer exists"));
    let left = journal_items(&sdk).await;
    assert_eq!(left.len(), 1, "the deleted group's record is kept");
    assert_eq!(attr_s(&left[0], "resource_name"), "api");

    azevac(&moto, &["recover", "--yes", "--forget-missing"]).expect_code(0);
    assert!(journal_items(&sdk).await.is_empty());
}

#[tokio::test]
async fn status_lists_records_and_reports_malformed_ones() {
    let moto = Moto::start();
    let sdk = common::sdk(&moto).await;
    estate::seed(&sdk, &small_estate()).await;
    azevac(&moto, &["evacuate", "--az-id", ZONE, "--yes", "--reason", "drill"]).expect_code(0);

    // A record written by hand, with the subnets as one string instead of a list.
    use aws_sdk_dynamodb::types::AttributeValue as V;
    aws_sdk_dynamodb::Client::new(&sdk)
        .put_item()
        .table_name(common::TABLE)
        .item("az_id", V::S(ZONE.into()))
        .item(
            "resource",
            V::S("arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:x:autoScalingGroupName/hand".into()),
        )
        .item("resource_type", V::S("asg".into()))
        .item("removed_subnets", V::S("subnet-1,subnet-2".into()))
        .send()
        .await
        .expect("PutItem");

    // An unreadable item is reported and counts as a failure (exit 1), never as success.
    let status = azevac(&moto, &["status", "--output", "json"]).expect_code(1).json();
    assert_eq!(status["records"].as_array().expect("records").len(), 2);
    assert_eq!(status["records"][0]["reason"], "drill");
    assert!(status["records"][0]["evacuated_by"]
        .as_str()
        .unwrap_or_default()
        .starts_with("arn:aws:"));
    let problems = status["problems"].as_array().expect("problems");
    assert_eq!(problems.len(), 1);
    assert!(problems[0]
        .as_str()
        .unwrap_or_default()
        .contains("autoScalingGroupName/hand"));

    // Recover puts back what it can and leaves the malformed item alone, reporting it.
    let run = azevac(&moto, &["recover", "--yes"]).expect_code(1);
    assert!(run.stdout.contains("problem: journal item use1-az2/"), "{}", run.stdout);
    let left = journal_items(&sdk).await;
    assert_eq!(left.len(), 1);
    assert!(attr_s(&left[0], "resource").ends_with("/hand"));
}

/// Issue 31 case 5: a use1-az2 record that lists a use1-az3 subnet as removed (written by hand, or
/// by a faulty version) is an odd record: recover names the subnet and its zone on the group's
/// line, leaves the group and the record as they are and exits 1, and still puts the other group
/// back. (Before: it added the use1-az3 subnet to the group, said done and deleted the record.)
#[tokio::test]
async fn issue_31_a_record_naming_another_zones_subnet_is_not_acted_on() {
    let moto = Moto::start();
    let sdk = common::sdk(&moto).await;
    let group = |name: &str| AsgSpec {
        name: name.into(),
        vpc: "main".into(),
        zones: vec!["use1-az1".into(), ZONE.into()],
        desired: 0,
        tags: BTreeMap::new(),
    };
    let spec = Spec {
        vpcs: vec![VpcSpec {
            name: "main".into(),
            cidr: "10.31.0.0/16".into(),
            zones: ["use1-az1", ZONE, "use1-az3"].iter().map(|z| z.to_string()).collect(),
        }],
        auto_scaling_groups: vec![group("web"), group("api")],
        ..Spec::default()
    };
    let seeded = estate::seed(&sdk, &spec).await;
    let before = live_groups(&sdk).await;
    azevac(&moto, &["evacuate", "--az-id", ZONE, "--yes"]).expect_code(0);
    let evacuated = live_groups(&sdk).await;

    use aws_sdk_dynamodb::types::AttributeValue as V;
    let elsewhere = seeded.subnet("main", "use1-az3");
    let mut odd = journal_items(&sdk)
        .await
        .into_iter()
        .find(|i| attr_s(i, "resource_name") == "web")
        .expect("web's record");
    odd.insert("removed_subnets".into(), V::L(vec![V::S(elsewhere.clone())]));
    aws_sdk_dynamodb::Client::new(&sdk)
        .put_item()
        .table_name(common::TABLE)
        .set_item(Some(odd))
        .send()
        .await
        .expect("PutItem");

    let report = azevac(&moto, &["recover", "--az-id", ZONE, "--yes", "--output", "json"])
        .expect_code(1)
        .json();
    let web = common::plan_line(&report, "web");
    assert_eq!(web["status"], "failed", "{web}");
    let reason = web["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains(&elsewhere) && reason.contains("use1-az3") && reason.contains("odd"),
        "{reason}"
    );
    assert_eq!(common::plan_line(&report, "api")["status"], "done");
    let live = live_groups(&sdk).await;
    assert_eq!(live["web"], evacuated["web"], "web untouched");
    assert_eq!(live["api"], before["api"], "api put back");
    let left = journal_items(&sdk).await;
    assert_eq!(left.len(), 1, "web's record is kept");
    assert_eq!(attr_list(&left[0], "removed_subnets"), [elsewhere]);
}

/// Three groups in one VPC: web (3 zones), api (2 zones), solo (the evacuated zone only).
fn small_estate() -> Spec {
    let group = |name: &str, zones: &[&str], team: &str| AsgSpec {
        name: name.into(),
        vpc: "main".into(),
        zones: zones.iter().map(|z| z.to_string()).collect(),
        desired: 1,
        tags: BTreeMap::from([("team".into(), team.into())]),
    };
    Spec {
        vpcs: vec![VpcSpec {
            name: "main".into(),
            cidr: "10.30.0.0/16".into(),
            zones: ZONES.iter().map(|z| z.to_string()).collect(),
        }],
        auto_scaling_groups: vec![
            group("web", &ZONES, "web"),
            group("api", &["use1-az2", "use1-az4"], "api"),
            group("solo", &["use1-az2"], "batch"),
        ],
        ..Spec::default()
    }
}

async fn set_subnets(autoscaling: &aws_sdk_autoscaling::Client, name: &str, subnets: &[String]) {
    autoscaling
        .update_auto_scaling_group()
        .auto_scaling_group_name(name)
        .vpc_zone_identifier(subnets.join(","))
        .send()
        .await
        .expect("UpdateAutoScalingGroup");
}

fn sorted_items(items: Vec<std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue>>) -> Vec<String> {
    let mut keys: Vec<String> = items
        .iter()
        .map(|i| {
            format!(
                "{} {} {:?} {}",
                attr_s(i, "resource"),
                attr_s(i, "state"),
                attr_list(i, "removed_subnets"),
                i["version"].as_n().map(String::as_str).unwrap_or("")
            )
        })
        .collect();
    keys.sort();
    keys
}

/// Issue 32: a paced group's record as azevac wrote it before journal format 2 (no `format`
/// attribute, the actions `suspend:AZRebalance` and `terminate:N in the zone, B at a time`) is
/// still recovered: the subnets come back, the suspension azevac made is resumed, the record goes.
#[tokio::test]
async fn issue_32_a_paced_groups_record_of_the_old_format_is_recovered() {
    use aws_sdk_dynamodb::types::AttributeValue as V;
    let moto = Moto::start();
    let sdk = common::sdk(&moto).await;
    estate::seed(&sdk, &small_estate()).await;
    let before = live_groups(&sdk).await;
    azevac(&moto, &["evacuate", "--az-id", ZONE, "--yes"]).expect_code(0);
    assert_ne!(live_groups(&sdk).await["web"], before["web"]);
    // The evacuated state the old record describes: AZRebalance suspended by the paced run.
    let autoscaling = aws_sdk_autoscaling::Client::new(&sdk);
    autoscaling
        .suspend_processes()
        .auto_scaling_group_name("web")
        .scaling_processes("AZRebalance")
        .send()
        .await
        .expect("SuspendProcesses");
    let mut record = journal_items(&sdk)
        .await
        .into_iter()
        .find(|i| attr_s(i, "resource_name") == "web")
        .expect("web's record");
    record.remove("format");
    record.insert(
        "actions".into(),
        V::L(vec![
            V::S("suspend:AZRebalance".into()),
            V::S("terminate:1 in the zone, 1 at a time".into()),
        ]),
    );
    aws_sdk_dynamodb::Client::new(&sdk)
        .put_item()
        .table_name(common::TABLE)
        .set_item(Some(record))
        .send()
        .await
        .expect("PutItem");

    let plan = azevac(&moto, &["recover", "--dry-run"]).expect_code(0);
    assert!(plan.stdout.contains("resume:AZRebalance"), "{}", plan.stdout);
    azevac(&moto, &["recover", "--yes"]).expect_code(0);
    assert_eq!(live_groups(&sdk).await, before);
    let suspended = autoscaling
        .describe_auto_scaling_groups()
        .auto_scaling_group_names("web")
        .send()
        .await
        .expect("describe")
        .auto_scaling_groups()[0]
        .suspended_processes()
        .len();
    assert_eq!(suspended, 0, "azevac's suspension resumed");
    assert!(journal_items(&sdk).await.is_empty());
}
