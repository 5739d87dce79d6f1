//! Issue 36: the policies azevac ships are enough for what it does, and split as they say: the
//! operator's runs every command on the sample estate, `init`'s alone administers the journal.
//! moto checks IAM here (scripts/moto_server.py, AZEVAC_MOTO_IAM) for every caller but the tests'
//! own root key, so each call azevac makes, whatever code path makes it, must be granted. moto
//! checks a policy's actions only, not its resources or conditions: scripts/check-iam (parliament,
//! and the condition keys against the service authorization reference) checks those. ARC zonal
//! shift, which moto lacks, is answered by the tests' proxy, unchecked.

use crate::common;

use std::path::Path;

use common::proxy::Proxy;
use common::{azevac_at, estate, journal_items, snapshot, table_exists, unordered, Moto, Run, ZONE};

/// The statements of a policy in fixtures/.
fn statements(path: &str) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).expect("read the policy");
    let policy: serde_json::Value = serde_json::from_str(&text).expect("a JSON policy");
    policy["Statement"].as_array().expect("statements").clone()
}

/// Statements as moto can check them: each one's actions on every resource, without its
/// conditions (moto compares a statement's resources with `*` and would match none of ours).
fn as_moto_checks_them(statements: Vec<serde_json::Value>) -> String {
    let statements: Vec<serde_json::Value> = statements
        .into_iter()
        .map(|mut statement| {
            statement["Resource"] = "*".into();
            statement.as_object_mut().expect("a statement").remove("Condition");
            statement
        })
        .collect();
    serde_json::json!({"Version": "2012-10-17", "Statement": statements}).to_string()
}

/// The one call moto names by an action IAM does not have: a DynamoDB transaction, which IAM
/// authorizes by the actions of the writes in it (the policy grants those).
const MOTO_ONLY: &str = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"dynamodb:TransactWriteItems","Resource":"*"}]}"#;

/// An IAM user with these policies (each as moto checks it) and its access key.
async fn user(sdk: &aws_config::SdkConfig, name: &str, policies: &[&str]) -> (String, String) {
    user_with_statements(sdk, name, policies.iter().flat_map(|p| statements(p)).collect()).await
}

/// An IAM user with these statements (as moto checks them) and its access key.
async fn user_with_statements(
    sdk: &aws_config::SdkConfig,
    name: &str,
    statements: Vec<serde_json::Value>,
) -> (String, String) {
    let iam = aws_sdk_iam::Client::new(sdk);
    iam.create_user().user_name(name).send().await.expect("CreateUser");
    // IAM refuses a policy without statements: a user granted nothing has moto's one alone.
    let granted = (!statements.is_empty()).then(|| as_moto_checks_them(statements));
    for (n, document) in granted.into_iter().chain([MOTO_ONLY.to_owned()]).enumerate() {
        iam.put_user_policy()
            .user_name(name)
            .policy_name(format!("policy-{n}"))
            .policy_document(document)
            .send()
            .await
            .expect("PutUserPolicy");
    }
    let key = iam
        .create_access_key()
        .user_name(name)
        .send()
        .await
        .expect("CreateAccessKey")
        .access_key
        .expect("an access key");
    (key.access_key_id, key.secret_access_key)
}

fn run_as(proxy: &Proxy, (id, secret): &(String, String), args: &[&str]) -> Run {
    azevac_at(
        &proxy.endpoint,
        args,
        &[("AWS_ACCESS_KEY_ID", Some(id)), ("AWS_SECRET_ACCESS_KEY", Some(secret))],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_36_the_operator_policy_runs_every_command_and_only_the_admin_policy_administers_the_journal() {
    let moto = Moto::start_checking_iam();
    // The proxy answers ARC zonal shift itself (moto has none), unchecked; the rest reaches moto.
    let proxy = Proxy::start(&moto.endpoint);
    let sdk = common::sdk(&moto).await;
    let spec = estate::read_spec(&Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sample-estate.json"));
    estate::seed(&sdk, &spec).await;
    let original = snapshot(&sdk).await;
    let operator = user(&sdk, "operator", &["fixtures/iam-policy.json"]).await;
    let admin = user(&sdk, "admin", &["fixtures/iam-admin-policy.json"]).await;
    let nobody = user(&sdk, "nobody", &[]).await;

    // moto does check: a caller granted nothing gets nowhere (moto refuses some REST calls with
    // an XML body the SDK cannot read as their JSON error, so the line names the HTTP 403).
    let refused = run_as(&proxy, &nobody, &["evacuate", "--az-id", ZONE, "--dry-run"]);
    assert_ne!(refused.code, 0, "{refused:?}");
    assert!(
        refused.stderr.contains("access denied") || refused.stderr.contains("HTTP 403"),
        "{}",
        refused.stderr
    );

    // The operator cannot create the journal: the run stops before any change and says how.
    let first = run_as(&proxy, &operator, &["evacuate", "--az-id", ZONE, "--yes"]);
    assert_ne!(first.code, 0, "{first:?}");
    assert!(
        first.stderr.contains("dynamodb:CreateTable") && first.stderr.contains("fixtures/iam-admin-policy.json"),
        "{}",
        first.stderr
    );
    assert_eq!(snapshot(&sdk).await, original, "a refused run changed the estate");
    assert!(!table_exists(&sdk).await);

    // `init` under the admin policy alone. On a protected journal, the operator's `init` has
    // nothing to do; on one whose protection someone turned off, it cannot turn it back on (nor,
    // with the same actions denied, off), and the admin's can.
    run_as(&proxy, &admin, &["init"]).expect_code(0);
    let idle = run_as(&proxy, &operator, &["init"]).expect_code(0);
    assert!(idle.stdout.contains("nothing to do"), "{idle:?}");
    aws_sdk_dynamodb::Client::new(&sdk)
        .update_continuous_backups()
        .table_name(common::TABLE)
        .point_in_time_recovery_specification(
            aws_sdk_dynamodb::types::PointInTimeRecoverySpecification::builder()
                .point_in_time_recovery_enabled(false)
                .build()
                .expect("a specification"),
        )
        .send()
        .await
        .expect("UpdateContinuousBackups");
    let refused = run_as(&proxy, &operator, &["init"]);
    assert_ne!(refused.code, 0, "{refused:?}");
    assert!(
        refused.stderr.contains("dynamodb:UpdateContinuousBackups")
            && refused.stderr.contains("fixtures/iam-admin-policy.json"),
        "{}",
        refused.stderr
    );
    run_as(&proxy, &admin, &["init"]).expect_code(0);

    // Every command under the operator policy, on the whole sample estate.
    let evacuated = run_as(
        &proxy,
        &operator,
        &["evacuate", "--az-id", ZONE, "--yes", "--output", "json"],
    )
    .expect_code(0);
    let summary = &evacuated.json()["summary"];
    assert!(summary["done"].as_u64() > Some(3), "{summary}");
    assert_eq!(summary["failed"], 0, "{summary}");
    assert_ne!(snapshot(&sdk).await, original);
    assert!(!journal_items(&sdk).await.is_empty());
    run_as(&proxy, &operator, &["status"]).expect_code(0);
    let exposure = run_as(&proxy, &operator, &["exposure", "--az-id", ZONE, "--output", "json"]);
    assert!(!exposure.stderr.contains("access denied"), "{}", exposure.stderr);
    let doctor = run_as(&proxy, &operator, &["doctor", "--az-id", ZONE, "--output", "json"]).expect_code(0);
    assert_eq!(doctor.json()["summary"]["fail"], 0, "{}", doctor.stdout);
    run_as(&proxy, &operator, &["recover", "--yes"]).expect_code(0);
    assert_eq!(unordered(&snapshot(&sdk).await), unordered(&original));
    assert!(journal_items(&sdk).await.is_empty());
}

/// A member account, as the tests' root reaches it: a session (named `root`, which moto leaves
/// unchecked) of a role there.
async fn root_in(sdk: &aws_config::SdkConfig, account: &str) -> aws_config::SdkConfig {
    common::in_account_as(sdk, account, "root", "root").await
}

/// The member role's statements: the operator policy's less those that act in the operator's
/// account only (scripts/check-iam holds fixtures/member-role.cfn.yaml to exactly these).
fn member_role_statements() -> Vec<serde_json::Value> {
    const OPERATOR_ONLY: [&str; 8] = [
        "AzevacOperatorReads",
        "AzevacJournal",
        "AzevacNotify",
        "AzevacWaveAlarms",
        "AzevacAcrossAccounts",
        "AzevacOrganization",
        "AzevacWatchQueue",
        "AzevacWatchAutoshifts",
    ];
    statements("fixtures/iam-policy.json")
        .into_iter()
        .filter(|s| !OPERATOR_ONLY.contains(&s["Sid"].as_str().expect("a Sid")))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_36_the_member_role_is_enough_and_only_with_the_external_id() {
    const MEMBER: &str = "111111111111";
    let moto = Moto::start_checking_iam();
    let proxy = Proxy::start(&moto.endpoint);
    let sdk = common::sdk(&moto).await;
    let operator = user(&sdk, "operator", &["fixtures/iam-policy.json"]).await;
    common::azevac(&moto, &["init"]).expect_code(0);
    let member = root_in(&sdk, MEMBER).await;
    let spec: estate::Spec = serde_json::from_value(serde_json::json!({
        "vpcs": [{"name": "prod", "cidr": "10.10.0.0/16", "zones": ["use1-az1", "use1-az2", "use1-az4"]}],
        "auto_scaling_groups": [{"name": "web", "vpc": "prod", "zones": ["use1-az1", "use1-az2", "use1-az4"]}],
        "ecs_services": [{"cluster": "shop", "name": "cart", "vpc": "prod", "zones": ["use1-az1", "use1-az2"]}],
        "lambda_functions": [{"name": "thumbs", "vpc": "prod", "zones": ["use1-az2", "use1-az4"]}]
    }))
    .expect("spec");
    estate::seed(&member, &spec).await;
    let original = snapshot(&member).await;
    // The role as fixtures/member-role.cfn.yaml makes it: trusting the operator, with the external ID.
    let trust = serde_json::json!({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow",
        "Principal": {"AWS": "arn:aws:iam::123456789012:user/operator"},
        "Action": "sts:AssumeRole",
        "Condition": {"StringEquals": {"sts:ExternalId": "ext-36"}}
    }]});
    let iam = aws_sdk_iam::Client::new(&member);
    iam.create_role()
        .role_name("azevac")
        .assume_role_policy_document(trust.to_string())
        .send()
        .await
        .expect("CreateRole");
    for (n, document) in [as_moto_checks_them(member_role_statements()), MOTO_ONLY.to_owned()]
        .into_iter()
        .enumerate()
    {
        iam.put_role_policy()
            .role_name("azevac")
            .policy_name(format!("policy-{n}"))
            .policy_document(document)
            .send()
            .await
            .expect("PutRolePolicy");
    }

    // Without the external ID the role is not assumed, and nothing changes.
    let refused = run_as(
        &proxy,
        &operator,
        &["evacuate", "--az-id", ZONE, "--accounts", MEMBER, "--yes"],
    );
    assert_ne!(refused.code, 0, "{refused:?}");
    let said = format!("{}{}", refused.stdout, refused.stderr);
    assert!(said.contains("sts:AssumeRole") && said.contains(MEMBER), "{said}");
    assert_eq!(snapshot(&member).await, original);

    let with_id = ["--accounts", MEMBER, "--external-id", "ext-36", "--yes"];
    let evacuate = [&["evacuate", "--az-id", ZONE][..], &with_id].concat();
    run_as(&proxy, &operator, &evacuate).expect_code(0);
    assert_ne!(snapshot(&member).await, original);
    // Issue 35: `exposure` and `doctor` read the member account under its role alone (moto has no
    // zonal shift API: that kind is a problem line, never a denial).
    let reads = ["--accounts", MEMBER, "--external-id", "ext-36"];
    for command in [&["exposure", "--az-id", ZONE][..], &["doctor"]] {
        let read = run_as(&proxy, &operator, &[command, &reads].concat());
        let said = format!("{}{}", read.stdout, read.stderr);
        assert!(said.contains(&format!("account {MEMBER}")), "{said}");
        assert!(
            !said.contains("AccessDenied") && !said.contains("not authorized"),
            "{said}"
        );
    }
    let recover = [&["recover"][..], &with_id].concat();
    run_as(&proxy, &operator, &recover).expect_code(0);
    assert_eq!(unordered(&snapshot(&member).await), unordered(&original));
    assert!(journal_items(&sdk).await.is_empty());
}

/// Each kind's declared IAM actions (its registration's `iam_actions`), with the core's and the
/// operator's, are all it calls: each kind of the sample estate evacuates and recovers under a
/// policy of exactly those. (registry.rs checks the declarations against the calls the code names;
/// this checks them against the calls it makes.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_36_each_kind_calls_only_the_actions_it_declares() {
    let moto = Moto::start_checking_iam();
    let proxy = Proxy::start(&moto.endpoint);
    let sdk = common::sdk(&moto).await;
    let spec = estate::read_spec(&Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sample-estate.json"));
    estate::seed(&sdk, &spec).await;
    common::azevac(&moto, &["init"]).expect_code(0);
    let original = snapshot(&sdk).await;
    // Every registered kind but those whose calls moto does not check here, each with why; a kind
    // registered later is held to its declaration unless it is named here.
    let unchecked = [
        ("eks", "its changes go to Kubernetes, not AWS"),
        ("karpenter", "its changes go to Kubernetes, not AWS"),
        ("zonal-shift", "moto has no ARC: the proxy answers it"),
        (
            "db",
            "not in the sample estate (tests/it/kinds/end_to_end/db.rs and db_cache.rs)",
        ),
    ];
    let kinds: Vec<&str> = azevac::plugins::REGISTRY
        .iter()
        .map(|r| r.name)
        .filter(|name| !unchecked.iter().any(|(kind, _)| kind == name))
        .collect();
    assert!(kinds.len() >= 8, "{kinds:?}");
    for kind in kinds.iter().copied() {
        let registration = azevac::plugins::REGISTRY
            .iter()
            .find(|r| r.name == kind)
            .unwrap_or_else(|| panic!("{kind} is not registered"));
        let actions: Vec<&str> = azevac::plugins::CORE_IAM_ACTIONS
            .iter()
            .chain(azevac::plugins::OPERATOR_IAM_ACTIONS)
            .chain(registration.iam_actions)
            .copied()
            .collect();
        let declared = serde_json::json!({"Effect": "Allow", "Action": actions, "Resource": "*"});
        let name = format!("only-{kind}");
        let key = user_with_statements(&sdk, &name, vec![declared]).await;
        let evacuated = run_as(
            &proxy,
            &key,
            &["evacuate", "--az-id", ZONE, "--type", kind, "--yes", "--output", "json"],
        )
        .expect_code(0);
        let summary = &evacuated.json()["summary"];
        assert!(summary["done"].as_u64() >= Some(1), "{kind}: {summary}");
        run_as(&proxy, &key, &["recover", "--type", kind, "--yes"]).expect_code(0);
    }
    assert_eq!(unordered(&snapshot(&sdk).await), unordered(&original));
    assert!(journal_items(&sdk).await.is_empty());
}
