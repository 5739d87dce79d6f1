//! What lives beside the code must not drift from it (issue 7): the IAM policy lists exactly the AWS
//! actions the code can call, and the CloudFormation and Terraform templates create exactly the
//! journal table `azevac init` creates.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;

use azevac::journal::{PK, SK, TYPE_ATTR, TYPE_INDEX};
use common::{azevac, Moto};

/// The IAM service prefixes azevac calls: the core ones and each registered type's, from the
/// registry itself (a new type brings its services; no list here to forget).
fn services() -> Vec<&'static str> {
    azevac::plugins::CORE_SERVICES
        .iter()
        .copied()
        .chain(
            azevac::plugins::REGISTRY
                .iter()
                .flat_map(|r| r.services.iter().copied()),
        )
        .collect()
}

/// Calls IAM authorizes through other actions: a DynamoDB transaction is allowed by the actions of
/// the writes in it (there is no `dynamodb:TransactWriteItems` IAM action).
const AUTHORIZED_BY: [(&str, &[&str]); 1] = [(
    "dynamodb:TransactWriteItems",
    &[
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:DeleteItem",
        "dynamodb:ConditionCheckItem",
    ],
)];
/// Actions AWS checks on the caller on azevac's behalf (Lambda's VPC update reads the VPC's groups).
const IMPLIED: [&str; 2] = ["ec2:DescribeSecurityGroups", "ec2:DescribeVpcs"];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every `"service:Operation` string in src/: each SDK call names its operation that way when it
/// maps its error, so this is the set of calls the code can make.
fn actions_in_code() -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut dirs = vec![root().join("src")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("read src") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("read");
            for piece in text.split('"').skip(1) {
                let Some((service, rest)) = piece.split_once(':') else {
                    continue;
                };
                let operation: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric()).collect();
                if services().contains(&service) && operation.starts_with(|c: char| c.is_ascii_uppercase()) {
                    found.insert(format!("{service}:{operation}"));
                }
            }
        }
    }
    found
}

#[test]
fn the_iam_policy_lists_exactly_the_actions_the_code_calls() {
    let text = std::fs::read_to_string(root().join("fixtures/iam-policy.json")).expect("policy");
    let policy: serde_json::Value = serde_json::from_str(&text).expect("json");
    let mut granted = BTreeSet::new();
    for statement in policy["Statement"].as_array().expect("statements") {
        for action in statement["Action"].as_array().expect("actions") {
            granted.insert(action.as_str().expect("string").to_owned());
        }
    }
    let mut used = actions_in_code();
    for (call, actions) in AUTHORIZED_BY {
        if used.remove(call) {
            used.extend(actions.iter().map(|a| a.to_string()));
        }
    }
    assert!(used.len() >= 20, "the scan found too little: {used:?}");
    let missing: Vec<&String> = used.difference(&granted).collect();
    assert!(
        missing.is_empty(),
        "used by the code but not in fixtures/iam-policy.json: {missing:?}"
    );
    let extra: Vec<&String> = granted
        .iter()
        .filter(|a| !used.contains(*a) && !IMPLIED.contains(&a.as_str()))
        .collect();
    assert!(
        extra.is_empty(),
        "in fixtures/iam-policy.json but never called: {extra:?}"
    );
}

#[test]
fn the_templates_create_the_journal_table_init_creates() {
    let cfn = std::fs::read_to_string(root().join("fixtures/journal-table.cfn.yaml")).expect("cfn");
    let squeeze = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let cfn = squeeze(&cfn);
    for expected in [
        format!("KeySchema: - AttributeName: {PK} KeyType: HASH - AttributeName: {SK} KeyType: RANGE"),
        format!("IndexName: {TYPE_INDEX} KeySchema: - AttributeName: {TYPE_ATTR} KeyType: HASH - AttributeName: {PK} KeyType: RANGE"),
        "BillingMode: PAY_PER_REQUEST".to_owned(),
        "ProjectionType: ALL".to_owned(),
        "DeletionProtectionEnabled: true".to_owned(),
        "PointInTimeRecoverySpecification: PointInTimeRecoveryEnabled: true".to_owned(),
    ] {
        assert!(cfn.contains(&expected), "CloudFormation template lacks {expected:?}");
    }
    let tf = squeeze(&std::fs::read_to_string(root().join("fixtures/journal-table.tf")).expect("tf"));
    for expected in [
        format!("hash_key = \"{PK}\" range_key = \"{SK}\""),
        format!("name = \"{TYPE_INDEX}\" hash_key = \"{TYPE_ATTR}\" range_key = \"{PK}\" projection_type = \"ALL\""),
        "billing_mode = \"PAY_PER_REQUEST\"".to_owned(),
        "deletion_protection_enabled = true".to_owned(),
        "point_in_time_recovery { enabled = true }".to_owned(),
    ] {
        assert!(tf.contains(&expected), "Terraform template lacks {expected:?}");
    }
}

#[tokio::test]
async fn init_creates_the_table_the_templates_describe() {
    let moto = Moto::start();
    azevac(&moto, &["init"]).expect_code(0);
    let sdk = common::sdk(&moto).await;
    let table = aws_sdk_dynamodb::Client::new(&sdk)
        .describe_table()
        .table_name(common::TABLE)
        .send()
        .await
        .expect("DescribeTable")
        .table
        .expect("table");
    let keys: Vec<(String, String)> = table
        .key_schema()
        .iter()
        .map(|k| (k.attribute_name().to_owned(), k.key_type().as_str().to_owned()))
        .collect();
    assert_eq!(
        keys,
        [(PK.to_owned(), "HASH".to_owned()), (SK.to_owned(), "RANGE".to_owned())]
    );
    let index = &table.global_secondary_indexes()[0];
    assert_eq!(index.index_name(), Some(TYPE_INDEX));
    let index_keys: Vec<(String, String)> = index
        .key_schema()
        .iter()
        .map(|k| (k.attribute_name().to_owned(), k.key_type().as_str().to_owned()))
        .collect();
    assert_eq!(
        index_keys,
        [
            (TYPE_ATTR.to_owned(), "HASH".to_owned()),
            (PK.to_owned(), "RANGE".to_owned())
        ]
    );
    assert_protected(&sdk).await;
}

/// Deletion protection and point-in-time recovery are on (issue 13), as the templates have them.
async fn assert_protected(sdk: &aws_config::SdkConfig) {
    let client = aws_sdk_dynamodb::Client::new(sdk);
    let table = client
        .describe_table()
        .table_name(common::TABLE)
        .send()
        .await
        .expect("DescribeTable")
        .table
        .expect("table");
    assert_eq!(table.deletion_protection_enabled(), Some(true), "deletion protection");
    let backups = client
        .describe_continuous_backups()
        .table_name(common::TABLE)
        .send()
        .await
        .expect("DescribeContinuousBackups");
    let status = backups
        .continuous_backups_description()
        .and_then(|c| c.point_in_time_recovery_description())
        .and_then(|p| p.point_in_time_recovery_status())
        .map(|s| s.as_str().to_owned());
    assert_eq!(status.as_deref(), Some("ENABLED"), "point-in-time recovery");
}

/// Issue 13: an unprotected journal (made by hand, or by an older azevac) is reported by status
/// and evacuate in one line, and `init` turns on what is missing; a table with other keys is
/// refused with what differs (exit 2) and is never written to.
#[tokio::test]
async fn issue_13_the_journal_is_protected_and_a_foreign_table_is_refused() {
    use aws_sdk_dynamodb::types::{AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType};
    let moto = Moto::start();
    let sdk = common::sdk(&moto).await;
    let client = aws_sdk_dynamodb::Client::new(&sdk);
    let create = |name: &'static str, keys: &'static [(&'static str, KeyType)]| {
        let mut request = client
            .create_table()
            .table_name(name)
            .billing_mode(BillingMode::PayPerRequest);
        for (key, kind) in keys {
            request = request
                .attribute_definitions(
                    AttributeDefinition::builder()
                        .attribute_name(*key)
                        .attribute_type(ScalarAttributeType::S)
                        .build()
                        .expect("attribute"),
                )
                .key_schema(
                    KeySchemaElement::builder()
                        .attribute_name(*key)
                        .key_type(kind.clone())
                        .build()
                        .expect("key"),
                );
        }
        request.send()
    };
    create("someone-elses", &[("id", KeyType::Hash)])
        .await
        .expect("foreign table");
    for args in [
        &["--table", "someone-elses", "status"][..],
        &["--table", "someone-elses", "recover", "--yes"],
        &["--table", "someone-elses", "evacuate", "--az-id", "use1-az2", "--yes"],
    ] {
        let run = azevac(&moto, args).expect_code(2);
        assert!(
            run.stderr.contains("is not an azevac journal: its keys are id (HASH)"),
            "{}",
            run.stderr
        );
    }
    let scan = client.scan().table_name("someone-elses").send().await.expect("scan");
    assert_eq!(scan.count(), 0, "nothing written to someone else's table");

    // A journal without protection: warned about, then protected by init.
    azevac(&moto, &["init"]).expect_code(0);
    client
        .update_table()
        .table_name(common::TABLE)
        .deletion_protection_enabled(false)
        .send()
        .await
        .expect("protection off");
    let status = azevac(&moto, &["status"]).expect_code(0);
    let warnings: Vec<&str> = status.stderr.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(warnings.len(), 1, "{}", status.stderr);
    assert!(warnings[0].contains("no deletion protection"), "{}", warnings[0]);
    assert!(warnings[0].contains("azevac init"), "{}", warnings[0]);
    // A real evacuate into the unprotected journal says so too, in one line, and goes ahead.
    let spec = common::estate::Spec {
        vpcs: vec![common::estate::VpcSpec {
            name: "main".into(),
            cidr: "10.90.0.0/16".into(),
            zones: vec!["use1-az1".into(), "use1-az2".into()],
        }],
        auto_scaling_groups: vec![common::estate::AsgSpec {
            name: "web".into(),
            vpc: "main".into(),
            zones: vec!["use1-az1".into(), "use1-az2".into()],
            desired: 0,
            tags: Default::default(),
        }],
        ..Default::default()
    };
    common::estate::seed(&sdk, &spec).await;
    let evacuate = azevac(&moto, &["evacuate", "--az-id", "use1-az2", "--yes"]).expect_code(0);
    let warnings: Vec<&str> = evacuate.stderr.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(warnings.len(), 1, "{}", evacuate.stderr);
    assert!(warnings[0].contains("no deletion protection"), "{}", warnings[0]);
    let init = azevac(&moto, &["init"]).expect_code(0);
    assert!(init.stdout.contains("turned on deletion protection"), "{}", init.stdout);
    assert_protected(&sdk).await;
    let again = azevac(&moto, &["init"]).expect_code(0);
    assert!(again.stdout.contains("nothing to do"), "{}", again.stdout);
    let quiet = azevac(&moto, &["status"]).expect_code(0);
    assert!(!quiet.stderr.contains("warning"), "{}", quiet.stderr);
}

#[test]
fn completions_and_the_man_page_come_from_the_clap_definitions() {
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_azevac"))
            .args(args)
            .output()
            .expect("run");
        assert!(out.status.success(), "{args:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let bash = run(&["completions", "bash"]);
    assert!(bash.contains("_azevac()") && bash.contains("--az-id"), "{bash}");
    assert!(run(&["completions", "zsh"]).contains("#compdef azevac"));
    let man = run(&["man"]);
    assert!(man.contains(".TH azevac 1") && man.contains("evacuate"), "{man}");
    assert!(run(&["--version"]).starts_with(&format!("azevac {}", env!("CARGO_PKG_VERSION"))));
}

/// `azevac --version` names the commit it was built from (issue 19), so a bug report or an incident
/// review can say exactly which code ran.
#[test]
fn the_version_names_the_commit() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_azevac"))
        .arg("--version")
        .output()
        .expect("run azevac --version");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    let head = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(root())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_else(|| "unknown".into());
    assert_eq!(
        text.trim(),
        format!("azevac {} (commit {head})", env!("CARGO_PKG_VERSION"))
    );
}

/// Issue 16: the member-account role allows exactly the resource actions of the operator's policy
/// (its AzevacReadOnly and AzevacChanges statements, without the sts ones), and trusts only the
/// principal it is given.
#[test]
fn issue_16_the_member_role_allows_the_policys_resource_actions() {
    let text = std::fs::read_to_string(root().join("fixtures/iam-policy.json")).expect("policy");
    let policy: serde_json::Value = serde_json::from_str(&text).expect("json");
    let mut wanted = BTreeSet::new();
    for statement in policy["Statement"].as_array().expect("statements") {
        if ["AzevacReadOnly", "AzevacChanges"].contains(&statement["Sid"].as_str().expect("sid")) {
            for action in statement["Action"].as_array().expect("actions") {
                let action = action.as_str().expect("string");
                if !action.starts_with("sts:") {
                    wanted.insert(action.to_owned());
                }
            }
        }
    }
    let role = std::fs::read_to_string(root().join("fixtures/member-role.cfn.yaml")).expect("role");
    let listed: BTreeSet<String> = role
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- "))
        .filter(|a| {
            a.split_once(':')
                .is_some_and(|(service, op)| services().contains(&service) && op.starts_with(char::is_uppercase))
        })
        .filter(|a| *a != "sts:AssumeRole")
        .map(str::to_owned)
        .collect();
    assert_eq!(listed, wanted);
    let squeeze = role.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(squeeze.contains("Principal: AWS: !Ref OperatorPrincipalArn Action: sts:AssumeRole"));
    assert!(squeeze.contains("sts:ExternalId: !Ref ExternalId"));
}
