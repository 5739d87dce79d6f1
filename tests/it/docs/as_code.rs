//! What lives beside the code must not drift from it (issue 7): the CloudFormation and Terraform
//! templates create exactly the journal table `azevac init` creates, and the completions, man page
//! and version come from the code. (The IAM policy and the member role: tests/it/docs/registry.rs.)

use crate::common;

use std::path::Path;

use azevac::journal::{PK, SK, TYPE_ATTR, TYPE_INDEX};
use common::{azevac, Moto};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
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

/// Issue 36: a table with the journal's keys whose type index projects less than a record
/// (KEYS_ONLY, or INCLUDE without some of the attributes azevac reads through it) is refused like a
/// foreign table by status, recover and evacuate: exit 2, one line that says what differs, and
/// nothing written to it (before: status passed, and records were written and then misread).
/// INCLUDE of every attribute is a journal's index.
#[tokio::test]
async fn issue_36_a_journal_whose_type_index_projects_too_little_is_refused() {
    use aws_sdk_dynamodb::types::{
        AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection, ProjectionType,
        ScalarAttributeType,
    };
    /// Every attribute of a record besides its keys (src/journal/record.rs ATTRIBUTES), and one of
    /// someone else's.
    const EVERY: [&str; 16] = [
        "removed_subnets",
        "state",
        "version",
        "original_subnets",
        "actions",
        "format",
        "resource_name",
        "run_id",
        "evacuated_by",
        "reason",
        "azevac_version",
        "created_at",
        "updated_at",
        "account_id",
        "identity",
        "team",
    ];
    let moto = Moto::start();
    let sdk = common::sdk(&moto).await;
    let client = aws_sdk_dynamodb::Client::new(&sdk);
    let key = |name: &str, kind: KeyType| {
        KeySchemaElement::builder()
            .attribute_name(name)
            .key_type(kind)
            .build()
            .expect("key")
    };
    let attribute = |name: &str| {
        AttributeDefinition::builder()
            .attribute_name(name)
            .attribute_type(ScalarAttributeType::S)
            .build()
            .expect("attribute")
    };
    let create = |name: &'static str, kind: ProjectionType, included: &'static [&'static str]| {
        let mut projection = Projection::builder().projection_type(kind);
        for attribute in included {
            projection = projection.non_key_attributes(*attribute);
        }
        let index = GlobalSecondaryIndex::builder()
            .index_name(TYPE_INDEX)
            .key_schema(key(TYPE_ATTR, KeyType::Hash))
            .key_schema(key(PK, KeyType::Range))
            .projection(projection.build())
            .build()
            .expect("index");
        client
            .create_table()
            .table_name(name)
            .billing_mode(BillingMode::PayPerRequest)
            .attribute_definitions(attribute(PK))
            .attribute_definitions(attribute(SK))
            .attribute_definitions(attribute(TYPE_ATTR))
            .key_schema(key(PK, KeyType::Hash))
            .key_schema(key(SK, KeyType::Range))
            .global_secondary_indexes(index)
            .send()
    };
    common::estate::seed(&sdk, &common::estate::groups_in_two_zones("10.91.0.0/16", &["web"])).await;
    let groups = common::live_groups(&sdk).await;
    create("keys-only", ProjectionType::KeysOnly, &[])
        .await
        .expect("KEYS_ONLY table");
    create("short-include", ProjectionType::Include, &["removed_subnets", "state"])
        .await
        .expect("INCLUDE table");
    for (table, says) in [
        ("keys-only", "its index resource_type-index projects KEYS_ONLY"),
        (
            "short-include",
            "its index resource_type-index projects INCLUDE without version, original_subnets",
        ),
    ] {
        for args in [
            &["--table", table, "status"][..],
            &["--table", table, "recover", "--yes"],
            &["--table", table, "evacuate", "--az-id", "use1-az2", "--yes"],
        ] {
            let run = azevac(&moto, args).expect_code(2);
            let lines: Vec<&str> = run.stderr.lines().collect();
            assert_eq!(lines.len(), 1, "one line: {}", run.stderr);
            assert!(
                lines[0].contains(&format!(
                    "table \"{table}\" exists but is not an azevac journal: {says}"
                )),
                "{args:?}: {}",
                run.stderr
            );
            assert!(
                lines[0].contains("a journal's projects ALL") && lines[0].contains("pass --table with another name"),
                "says what to do: {}",
                run.stderr
            );
        }
        let scan = client.scan().table_name(table).send().await.expect("scan");
        assert_eq!(scan.count(), 0, "nothing written to {table}");
    }
    assert_eq!(common::live_groups(&sdk).await, groups, "nothing changed");

    // INCLUDE of every attribute of a record (and more) is a journal's index.
    create("full-include", ProjectionType::Include, &EVERY)
        .await
        .expect("INCLUDE table");
    azevac(&moto, &["--table", "full-include", "status"]).expect_code(0);
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
