//! `azevac doctor` (issue 19): one read-only pass over what an incident needs, as a checklist with a
//! fix per failure. Against moto, through the fault proxy: the demo estate passes (ARC a warning
//! where the endpoint has none), a missing journal and a denied permission are named with their
//! fix, the other checks still run, and no call that changes anything is ever sent.

use crate::common;

use std::path::Path;

use azevac::plugins::{asg, zonal_shift};
use common::kube::{Cluster, FakeKube};
use common::proxy::{FailRule, Fault, Faults, Proxy};
use common::{azevac, azevac_at, estate, Moto, Run, ZONE};
use serde_json::Value;

/// The checks of a `--output json` run, as (name, verdict, detail, fix).
fn checks(run: &Run) -> Vec<(String, String, String, String)> {
    run.json()["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .map(|c| {
            let text = |k: &str| c[k].as_str().unwrap_or_default().to_owned();
            (text("name"), text("verdict"), text("detail"), text("fix"))
        })
        .collect()
}

/// The one check named `name`.
fn the<'a>(checks: &'a [(String, String, String, String)], name: &str) -> &'a (String, String, String, String) {
    let named: Vec<_> = checks.iter().filter(|c| c.0 == name).collect();
    assert_eq!(named.len(), 1, "one check named {name}: {checks:#?}");
    named[0]
}

/// The types that read AWS (the others act through kube contexts), from the registry.
fn aws_types() -> Vec<&'static str> {
    let kubernetes = azevac::plugins::kubernetes_types();
    azevac::plugins::types()
        .into_iter()
        .filter(|t| !kubernetes.contains(t))
        .collect()
}

fn verdict_of(checks: &[(String, String, String, String)], name: &str) -> Vec<String> {
    checks.iter().filter(|c| c.0 == name).map(|c| c.1.clone()).collect()
}

/// Every call doctor sent through the proxy is a read: no Create/Update/Put/Delete/Start/... ever.
fn assert_read_only(proxy: &Proxy) {
    let calls = proxy.calls();
    assert!(!calls.is_empty(), "doctor made no calls through the proxy");
    for call in &calls {
        let action = call.split_once(':').map_or(call.as_str(), |(_, a)| a);
        let action = action.rsplit('/').find(|s| !s.is_empty()).unwrap_or(action);
        let read = ["Describe", "List", "Get", "Query"]
            .iter()
            .any(|p| action.starts_with(p))
            // REST paths (Lambda, ARC) name the collection; the proxy's label is the path.
            || call.starts_with("lambda:/")
            // Batch's REST paths name the operation, in lower case.
            || (call.starts_with("batch:/") && ["describe", "list"].iter().any(|p| action.starts_with(p)))
            || call.starts_with("scheduler:/")
            || call.starts_with("arc-zonal-shift:List");
        assert!(read, "doctor sent a call that is not a read: {call} (all: {calls:?})");
    }
    for (label, body) in proxy.requests() {
        assert!(
            !(label.starts_with("lambda:") || label.starts_with("scheduler:")) || body.is_empty(),
            "a Lambda or Scheduler call with a body is a change: {label} {body}"
        );
    }
}

async fn demo_estate(moto: &Moto) {
    let spec = estate::read_spec(&Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sample-estate.json"));
    estate::seed(&common::sdk(moto).await, &spec).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_passes_on_the_demo_estate_and_changes_nothing() {
    let moto = Moto::start();
    demo_estate(&moto).await;
    azevac(&moto, &["init"]).expect_code(0);

    // Straight at moto: it has no ARC, which is a warning (`--zonal-shift` is optional), not a failure.
    let run = azevac(&moto, &["doctor", "--az-id", ZONE, "--output", "json"]).expect_code(0);
    let found = checks(&run);
    assert!(
        found.iter().all(|c| c.1 != "fail"),
        "no check fails on the demo estate: {found:#?}"
    );
    assert_eq!(verdict_of(&found, "zonal-shift"), ["warn"], "{found:#?}");
    for name in [
        "region",
        "credentials",
        "zones",
        "az-id",
        "subnets",
        "journal table",
        "journal read",
    ] {
        assert_eq!(verdict_of(&found, name), ["ok"], "{name}: {found:#?}");
    }
    // Every registered type has its line, from the registry.
    for resource_type in azevac::plugins::types() {
        assert!(
            found.iter().any(|c| c.0 == resource_type),
            "no check for {resource_type}: {found:#?}"
        );
    }
    // Every type that reads AWS passes on the demo estate (from the registry), ARC aside.
    for name in aws_types().into_iter().filter(|t| *t != zonal_shift::TYPE) {
        let verdicts = verdict_of(&found, name);
        assert!(
            !verdicts.is_empty() && verdicts.iter().all(|v| v == "ok"),
            "{name}: {found:#?}"
        );
    }
    assert_eq!(run.json()["summary"]["fail"], Value::from(0));

    // Through the proxy (which serves ARC itself): all OK, in a table, and nothing but reads.
    let proxy = Proxy::start(&moto.endpoint);
    proxy.set(Faults::default());
    let run = azevac_at(&proxy.endpoint, &["doctor", "--az-id", ZONE], &[]).expect_code(0);
    assert!(!run.stdout.contains("FAIL"), "{}", run.stdout);
    assert!(run.stdout.contains("read permission only"), "{}", run.stdout);
    assert!(run.stdout.contains("0 failed"), "{}", run.stdout);
    assert_read_only(&proxy);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_names_a_missing_journal_and_creates_nothing() {
    let moto = Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    proxy.set(Faults::default());
    let run = azevac_at(&proxy.endpoint, &["doctor"], &[]).expect_code(1);
    let line = run
        .stdout
        .lines()
        .find(|l| l.contains("journal table"))
        .unwrap_or_else(|| panic!("no journal line:\n{}", run.stdout));
    assert!(line.trim_start().starts_with("FAIL"), "{line}");
    assert!(
        run.stdout.contains("azevac init --table azevac-journal"),
        "{}",
        run.stdout
    );
    // The rest still ran.
    assert!(run.stdout.contains("ecs:ListClusters"), "{}", run.stdout);
    assert_read_only(&proxy);
    assert!(
        !common::table_exists(&common::sdk(&moto).await).await,
        "doctor created the table"
    );

    let run = azevac_at(&proxy.endpoint, &["doctor", "--output", "json"], &[]).expect_code(1);
    let found = checks(&run);
    assert_eq!(verdict_of(&found, "journal table"), ["fail"], "{found:#?}");
    assert_eq!(run.json()["summary"]["fail"], Value::from(1), "{found:#?}");

    // No credentials at all: one line says so and what to set; nothing else is tried.
    let none = [
        ("AWS_ACCESS_KEY_ID", None),
        ("AWS_SECRET_ACCESS_KEY", None),
        ("AWS_SESSION_TOKEN", None),
        ("AWS_WEB_IDENTITY_TOKEN_FILE", None),
        ("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", None),
        ("AWS_CONTAINER_CREDENTIALS_FULL_URI", None),
        ("AWS_EC2_METADATA_DISABLED", Some("true")),
        ("AWS_CONFIG_FILE", Some("/nonexistent")),
        ("AWS_SHARED_CREDENTIALS_FILE", Some("/nonexistent")),
    ];
    let run = azevac_at(&proxy.endpoint, &["doctor", "--output", "json"], &none).expect_code(1);
    let found = checks(&run);
    let credentials = the(&found, "credentials");
    assert_eq!(credentials.1, "fail");
    assert!(credentials.2.contains("no usable credentials"), "{found:#?}");
    assert!(credentials.3.contains("AWS_PROFILE"), "{found:#?}");
    assert_eq!(verdict_of(&found, "everything else"), ["skip"], "{found:#?}");
    assert_eq!(found.len(), 3, "region, credentials, the rest not checked: {found:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_refuses_a_foreign_table_and_warns_about_an_unprotected_journal() {
    use aws_sdk_dynamodb::types::{AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType};
    let moto = Moto::start();
    let dynamodb = aws_sdk_dynamodb::Client::new(&common::sdk(&moto).await);
    dynamodb
        .create_table()
        .table_name("someone-elses")
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name("id")
                .attribute_type(ScalarAttributeType::S)
                .build()
                .expect("attribute"),
        )
        .key_schema(
            KeySchemaElement::builder()
                .attribute_name("id")
                .key_type(KeyType::Hash)
                .build()
                .expect("key"),
        )
        .send()
        .await
        .expect("CreateTable");
    let run = azevac(&moto, &["doctor", "--table", "someone-elses", "--output", "json"]).expect_code(1);
    let found = checks(&run);
    let journal = the(&found, "journal table");
    assert_eq!(journal.1, "fail");
    assert!(journal.2.contains("is not an azevac journal"), "{found:#?}");
    assert!(journal.3.contains("--table"), "{found:#?}");

    // A journal without deletion protection works, but one `DeleteTable` would lose every record.
    azevac(&moto, &["init"]).expect_code(0);
    dynamodb
        .update_table()
        .table_name(common::TABLE)
        .deletion_protection_enabled(false)
        .send()
        .await
        .expect("UpdateTable");
    let run = azevac(&moto, &["doctor", "--output", "json"]).expect_code(0);
    let found = checks(&run);
    let journal = the(&found, "journal table");
    assert_eq!(journal.1, "warn");
    assert!(journal.2.contains("no deletion protection"), "{found:#?}");
    assert!(journal.3.contains("azevac init"), "{found:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_names_a_denied_permission_and_checks_the_rest() {
    let moto = Moto::start();
    demo_estate(&moto).await;
    azevac(&moto, &["init"]).expect_code(0);
    let proxy = Proxy::start(&moto.endpoint);
    proxy.set(Faults {
        rules: vec![FailRule {
            label: "autoscaling:DescribeAutoScalingGroups".into(),
            body_contains: String::new(),
            fault: Fault::AccessDenied,
        }],
        ..Faults::default()
    });
    let run = azevac_at(&proxy.endpoint, &["doctor", "--output", "json"], &[]).expect_code(1);
    let found = checks(&run);
    let denied: Vec<_> = found.iter().filter(|c| c.1 == "fail").collect();
    assert_eq!(denied.len(), 1, "only the denied call fails: {found:#?}");
    let (name, _, detail, fix) = denied[0];
    assert_eq!(name, "asg");
    assert!(detail.contains("access denied"), "{detail}");
    assert!(
        fix.contains("allow autoscaling:DescribeAutoScalingGroups") && fix.contains("fixtures/iam-policy.json"),
        "{fix}"
    );
    let others = aws_types().into_iter().filter(|t| *t != asg::TYPE);
    for name in others.chain(["journal table"]) {
        let verdicts = verdict_of(&found, name);
        assert!(
            !verdicts.is_empty() && verdicts.iter().all(|v| v == "ok"),
            "{name}: {found:#?}"
        );
    }
    assert_read_only(&proxy);

    // The table names the action too.
    let run = azevac_at(&proxy.endpoint, &["doctor"], &[]).expect_code(1);
    let line = run
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("FAIL"))
        .unwrap_or_else(|| panic!("no FAIL line:\n{}", run.stdout));
    assert!(line.contains("asg"), "{line}");
    assert!(
        run.stdout.contains("autoscaling:DescribeAutoScalingGroups"),
        "{}",
        run.stdout
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_checks_each_kube_context() {
    let moto = Moto::start();
    azevac(&moto, &["init"]).expect_code(0);
    let mut cluster = Cluster::default();
    cluster.nodepools = Some(Default::default());
    cluster.nodepools_forbidden = true;
    let kube = FakeKube::start(cluster);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = kube.kubeconfig(dir.path(), &[("prod", "prod"), ("gone", "gone")]);
    // The context `gone` points at a port nothing listens on.
    let mut config: Value = serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("json");
    config["clusters"][1]["cluster"]["server"] = Value::from("http://127.0.0.1:1");
    std::fs::write(&path, config.to_string()).expect("write");
    let kubeconfig = path.display().to_string();

    let args = [
        "doctor",
        "--kube-context",
        "prod",
        "--kube-context",
        "gone",
        "--kubeconfig",
        &kubeconfig,
        "--output",
        "json",
    ];
    let run = azevac(&moto, &args).expect_code(1);
    let found = checks(&run);
    assert_eq!(verdict_of(&found, "eks prod"), ["ok"], "{found:#?}");
    let unreachable = the(&found, "eks gone");
    assert_eq!(unreachable.1, "fail");
    assert!(unreachable.2.contains("cannot reach the API server"), "{found:#?}");
    assert!(unreachable.3.contains("kubectl --context"), "{found:#?}");
    // NodePools the caller may not read: the RBAC to grant.
    let forbidden = the(&found, "karpenter prod");
    assert_eq!(forbidden.1, "fail");
    assert!(forbidden.3.contains("nodepools.karpenter.sh"), "{found:#?}");
    assert!(
        kube.requests().iter().all(|r| r.starts_with("GET ")),
        "doctor only reads the cluster: {:?}",
        kube.requests()
    );

    // Without a context the Kubernetes types are not checked, and that is no failure.
    let run = azevac(&moto, &["doctor", "--output", "json"]).expect_code(0);
    let found = checks(&run);
    assert_eq!(verdict_of(&found, "eks"), ["skip"], "{found:#?}");
    assert_eq!(verdict_of(&found, "karpenter"), ["skip"], "{found:#?}");
}
