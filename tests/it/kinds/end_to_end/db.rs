//! Database writers out of the zone (issue 15): the real binary fails Aurora writers over to the
//! best reader outside the zone, lists what it cannot move, and on recover leaves the writer where
//! it is unless asked to fail back. moto implements `FailoverDBCluster` with a target faithfully.

use crate::common;

use aws_sdk_rds::Client;

use common::proxy::{Faults, KillWhen, Proxy};
use common::rds::cluster;
use common::{
    attr_list, attr_s, azevac, call_number, journal_items, plan_line as line, run_watched, Moto, DB_DRY_RUN,
    DB_EVACUATE,
};

/// us-east-1c is use1-az2 (the zone evacuated), 1b is use1-az1, 1d is use1-az4 in moto.
const IN_ZONE: &str = "us-east-1c";
/// What the journal holds for `orders` (journal format 2: the kind's actions as JSON).
const ORDERS_WRITER: &str = r#"{"writer":{"id":"orders-1","az_id":"use1-az2"}}"#;

/// `orders`: writer in the zone, readers in two other zones (tier 1 in use1-az4 beats tier 2 in
/// use1-az1, though that one is larger). `ledger`: its only reader is in the zone too. `reports`: a
/// single-AZ instance in the zone. `far`: a cluster whose writer is elsewhere.
async fn seed(moto: &Moto) -> Client {
    let sdk = common::sdk(moto).await;
    let rds = Client::new(&sdk);
    cluster(
        &rds,
        "orders",
        &[
            ("orders-1", IN_ZONE, 1, "db.r6g.large"),
            ("orders-2", "us-east-1b", 2, "db.r6g.4xlarge"),
            ("orders-3", "us-east-1d", 1, "db.r6g.large"),
        ],
    )
    .await;
    cluster(
        &rds,
        "ledger",
        &[
            ("ledger-1", IN_ZONE, 1, "db.r6g.large"),
            ("ledger-2", IN_ZONE, 1, "db.r6g.large"),
        ],
    )
    .await;
    cluster(
        &rds,
        "far",
        &[
            ("far-1", "us-east-1b", 1, "db.r6g.large"),
            ("far-2", IN_ZONE, 1, "db.r6g.large"),
        ],
    )
    .await;
    rds.create_db_instance()
        .db_instance_identifier("reports")
        .engine("postgres")
        .db_instance_class("db.t3.micro")
        .allocated_storage(20)
        .master_username("admin")
        .master_user_password("password-123")
        .availability_zone(IN_ZONE)
        .send()
        .await
        .expect("CreateDBInstance");
    rds
}

async fn writer(rds: &Client, cluster: &str) -> String {
    let out = rds
        .describe_db_clusters()
        .db_cluster_identifier(cluster)
        .send()
        .await
        .expect("DescribeDBClusters");
    out.db_clusters()[0]
        .db_cluster_members()
        .iter()
        .find(|m| m.is_cluster_writer() == Some(true))
        .and_then(|m| m.db_instance_identifier())
        .expect("writer")
        .to_owned()
}

#[tokio::test]
async fn issue_15_writers_leave_the_zone_and_stay_out_on_recover() {
    let moto = Moto::start();
    let rds = seed(&moto).await;

    let dry = azevac(&moto, DB_DRY_RUN).expect_code(0).json();
    let orders = line(&dry, "orders");
    assert_eq!(orders["status"], "planned");
    assert_eq!(orders["actions"][0], "writer: orders-1 in use1-az2");
    assert_eq!(
        orders["reason"],
        "fail over writer orders-1 (use1-az2) -> orders-3 (use1-az4)"
    );
    let ledger = line(&dry, "ledger");
    assert_eq!(ledger["status"], "skipped");
    assert!(
        ledger["reason"]
            .as_str()
            .unwrap_or_default()
            .starts_with("no available reader outside use1-az2"),
        "{ledger}"
    );
    let reports = line(&dry, "reports");
    assert_eq!(reports["status"], "skipped");
    assert!(reports["reason"]
        .as_str()
        .unwrap_or_default()
        .starts_with("data lives only in this zone"));
    assert!(dry["items"]
        .as_array()
        .expect("items")
        .iter()
        .all(|i| i["name"] != "far"));
    assert_eq!(writer(&rds, "orders").await, "orders-1", "a dry run changes nothing");

    let run = azevac(&moto, DB_EVACUATE).expect_code(0).json();
    assert_eq!(line(&run, "orders")["status"], "done");
    assert_eq!(writer(&rds, "orders").await, "orders-3");
    assert_eq!(writer(&rds, "ledger").await, "ledger-1");
    let sdk = common::sdk(&moto).await;
    let journal = journal_items(&sdk).await;
    assert_eq!(journal.len(), 1, "{journal:?}");
    assert_eq!(attr_s(&journal[0], "resource_type"), "db");
    assert!(attr_s(&journal[0], "resource").ends_with(":cluster:orders"));
    assert_eq!(attr_list(&journal[0], "actions"), [ORDERS_WRITER]);
    assert_eq!(attr_s(&journal[0], "state"), "done");

    // Nothing left to do: the moved writer is already evacuated, the rest still cannot move.
    let again = azevac(&moto, DB_EVACUATE).expect_code(0).json();
    let orders = line(&again, "orders");
    assert_eq!(orders["status"], "skipped");
    assert_eq!(orders["reason"], "already evacuated: writer orders-3 in use1-az4");
    assert_eq!(writer(&rds, "orders").await, "orders-3");

    let back = azevac(&moto, &["recover", "--type", "db", "--yes", "--output", "json"])
        .expect_code(0)
        .json();
    let orders = line(&back, "orders");
    assert_eq!(orders["status"], "done");
    assert_eq!(
        orders["reason"],
        "writer orders-3 stays in use1-az4; was orders-1 in use1-az2"
    );
    assert_eq!(writer(&rds, "orders").await, "orders-3", "no failback by default");
    assert!(journal_items(&sdk).await.is_empty());
}

#[tokio::test]
async fn issue_15_failback_puts_the_writer_back_and_name_prefix_filters() {
    let moto = Moto::start();
    let rds = seed(&moto).await;
    let filtered = azevac(
        &moto,
        &[
            "evacuate",
            "--az-id",
            "use1-az2",
            "--type",
            "db",
            "--name-prefix",
            "ledger",
            "--yes",
            "--output",
            "json",
        ],
    )
    .expect_code(0)
    .json();
    assert!(line(&filtered, "orders")["reason"]
        .as_str()
        .unwrap_or_default()
        .starts_with("filtered"));
    assert_eq!(writer(&rds, "orders").await, "orders-1");

    azevac(&moto, DB_EVACUATE).expect_code(0);
    assert_eq!(writer(&rds, "orders").await, "orders-3");
    let back = azevac(
        &moto,
        &["recover", "--type", "db", "--failback", "--yes", "--output", "json"],
    )
    .expect_code(0)
    .json();
    let orders = line(&back, "orders");
    assert_eq!(orders["status"], "done", "{orders}");
    assert_eq!(orders["actions"][0], "writer now orders-1 in use1-az2");
    assert_eq!(writer(&rds, "orders").await, "orders-1");
    assert!(journal_items(&common::sdk(&moto).await).await.is_empty());
    let again = azevac(&moto, DB_EVACUATE).expect_code(0).json();
    assert_eq!(
        line(&again, "orders")["status"],
        "done",
        "the zone can be evacuated again"
    );
}

#[tokio::test]
async fn issue_15_a_kill_around_the_failover_loses_nothing() {
    let moto = Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    let sdk = common::sdk(&moto).await;
    let evacuate = ["evacuate", "--az-id", "use1-az2", "--type", "db", "--yes"];
    // The failover's call number, from a run that is not killed (runs of one estate call alike).
    seed(&moto).await;
    let at = call_number(&proxy, &evacuate, "rds:FailoverDBCluster");
    for (when, moved) in [(KillWhen::BeforeForward, false), (KillWhen::AfterForward, true)] {
        moto.reset();
        let rds = seed(&moto).await;
        proxy.set(Faults {
            kill_at: Some((at, when)),
            ..Faults::default()
        });
        assert_eq!(run_watched(&proxy, &evacuate), None, "killed at {when:?}");
        assert!(proxy.killed());
        let expected = if moved { "orders-3" } else { "orders-1" };
        assert_eq!(writer(&rds, "orders").await, expected);
        let journal = journal_items(&sdk).await;
        assert_eq!(journal.len(), 1, "the intent is journalled before the failover");
        assert_eq!(attr_s(&journal[0], "state"), "intent");
        assert_eq!(attr_list(&journal[0], "actions"), [ORDERS_WRITER]);

        // Evacuating again finishes the job (or sees it done); recover then finds the writer.
        proxy.set(Faults::default());
        let again = azevac(&moto, DB_EVACUATE).expect_code(0).json();
        let status = if moved { "skipped" } else { "done" };
        assert_eq!(line(&again, "orders")["status"], status, "{again:#}");
        assert_eq!(writer(&rds, "orders").await, "orders-3");
        let back = azevac(&moto, &["recover", "--type", "db", "--yes", "--output", "json"])
            .expect_code(0)
            .json();
        assert_eq!(
            line(&back, "orders")["reason"],
            "writer orders-3 stays in use1-az4; was orders-1 in use1-az2"
        );
        assert!(journal_items(&sdk).await.is_empty());
    }
}

/// No failback into a zone that stays evacuated: with a group's record still in use1-az2,
/// `recover --type db --failback` keeps the writer out and the record; a full recover whose
/// Auto Scaling part cannot be read (a problem, not a failed line) holds the failback back too;
/// once the group is back, the writer goes back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_15_no_failback_while_the_zone_is_still_evacuated() {
    use common::estate::{self, AsgSpec, Spec, VpcSpec};
    use common::proxy::{FailRule, Fault};
    let moto = Moto::start();
    let rds = seed(&moto).await;
    let sdk = common::sdk(&moto).await;
    let spec = Spec {
        vpcs: vec![VpcSpec {
            name: "main".into(),
            cidr: "10.95.0.0/16".into(),
            zones: vec!["use1-az1".into(), "use1-az2".into()],
        }],
        auto_scaling_groups: vec![AsgSpec {
            name: "web".into(),
            vpc: "main".into(),
            zones: vec!["use1-az1".into(), "use1-az2".into()],
            desired: 0,
            tags: Default::default(),
        }],
        ..Spec::default()
    };
    estate::seed(&sdk, &spec).await;
    azevac(&moto, &["evacuate", "--az-id", "use1-az2", "--type", "asg,db", "--yes"]).expect_code(0);
    assert_eq!(writer(&rds, "orders").await, "orders-3");

    let held = azevac(
        &moto,
        &["recover", "--type", "db", "--failback", "--yes", "--output", "json"],
    )
    .json();
    let orders = line(&held, "orders");
    assert_eq!(orders["status"], "skipped", "{orders}");
    assert!(
        orders["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("use1-az2 is still evacuated"),
        "{orders}"
    );
    assert_eq!(writer(&rds, "orders").await, "orders-3");

    let proxy = Proxy::start(&moto.endpoint);
    proxy.set(Faults {
        rules: vec![FailRule {
            label: "autoscaling:DescribeAutoScalingGroups".into(),
            body_contains: String::new(),
            fault: Fault::ServerError,
        }],
        ..Faults::default()
    });
    let run = common::azevac_at(
        &proxy.endpoint,
        &["recover", "--type", "asg,db", "--failback", "--yes", "--output", "json"],
        &[("AWS_MAX_ATTEMPTS", Some("2"))],
    )
    .expect_code(1);
    let orders = line(&run.json(), "orders").clone();
    assert_ne!(orders["status"], "done", "{orders}");
    assert_eq!(
        writer(&rds, "orders").await,
        "orders-3",
        "no failback while the group is out"
    );
    let kept: Vec<String> = journal_items(&sdk)
        .await
        .iter()
        .map(|i| attr_s(i, "resource_type"))
        .collect();
    assert!(
        kept.contains(&"db".to_owned()) && kept.contains(&"asg".to_owned()),
        "{kept:?}"
    );

    azevac(&moto, &["recover", "--type", "asg,db", "--failback", "--yes"]).expect_code(0);
    assert_eq!(writer(&rds, "orders").await, "orders-1");
    assert!(journal_items(&sdk).await.is_empty());
}

/// `billing`: a Multi-AZ instance whose primary is in the zone; the proxy's fake places its
/// standby in us-east-1d (use1-az4), which moto does not report.
async fn multi_az(proxy: &Proxy, rds: &Client) {
    rds.create_db_instance()
        .db_instance_identifier("billing")
        .engine("postgres")
        .db_instance_class("db.m6g.large")
        .allocated_storage(20)
        .master_username("admin")
        .master_user_password("password-123")
        .availability_zone(IN_ZONE)
        .multi_az(true)
        .send()
        .await
        .expect("CreateDBInstance");
    proxy.rds(|r| r.standby.insert("billing".into(), "us-east-1d".into()));
}

/// The Multi-AZ act path end to end: `RebootDBInstance` `ForceFailover` moves the primary to the
/// standby's zone (answered by the proxy's fake), is journalled, reads back, and fails back.
#[tokio::test]
async fn issue_15_a_multi_az_instance_fails_over_to_its_standby_and_back() {
    let moto = Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    let rds = seed(&moto).await;
    multi_az(&proxy, &rds).await;
    let at = |args: &[&str]| common::azevac_at(&proxy.endpoint, args, &[]);
    let dry = at(DB_DRY_RUN).expect_code(0).json();
    let billing = line(&dry, "billing");
    assert_eq!(billing["status"], "planned", "{billing}");
    assert_eq!(
        billing["reason"],
        "fail over writer billing (use1-az2) -> billing (use1-az4)"
    );

    proxy.set(Faults::default());
    let run = at(DB_EVACUATE).expect_code(0).json();
    let billing = line(&run, "billing");
    assert_eq!(billing["status"], "done", "{billing}");
    assert_eq!(billing["actions"][0], "writer now billing in use1-az4");
    assert!(proxy.rds(|r| r.swapped("billing")));
    let reboots: Vec<String> = proxy
        .requests()
        .into_iter()
        .filter(|(c, _)| c == "rds:RebootDBInstance")
        .map(|(_, b)| b)
        .collect();
    assert_eq!(reboots.len(), 1, "{reboots:?}");
    assert!(reboots[0].contains("DBInstanceIdentifier=billing") && reboots[0].contains("ForceFailover=true"));
    let sdk = common::sdk(&moto).await;
    let journal = journal_items(&sdk).await;
    let record = journal
        .iter()
        .find(|r| attr_s(r, "resource").ends_with(":db:billing"))
        .expect("billing's record");
    assert_eq!(
        attr_list(record, "actions"),
        [r#"{"writer":{"id":"billing","az_id":"use1-az2"}}"#]
    );

    let again = at(DB_EVACUATE).expect_code(0).json();
    assert_eq!(
        line(&again, "billing")["reason"],
        "already evacuated: writer billing in use1-az4"
    );

    let back = at(&["recover", "--type", "db", "--failback", "--yes", "--output", "json"])
        .expect_code(0)
        .json();
    let billing = line(&back, "billing");
    assert_eq!(billing["status"], "done", "{billing}");
    assert_eq!(billing["actions"][0], "writer now billing in use1-az2");
    assert!(!proxy.rds(|r| r.swapped("billing")), "failed back to the original zone");
    assert!(journal_items(&sdk).await.is_empty());
}

/// RDS refusals (answered by the proxy's fake in RDS's XML error shape): a cluster already failing
/// over, a target that is not available, a forced failover of an instance that is no longer
/// Multi-AZ. Each line fails with the service's words, the run exits 1, the writer stays, and the
/// intent record is kept for the next run (which then finishes the job).
#[tokio::test]
async fn issue_15_rds_refusals_fail_the_line_and_keep_the_intent() {
    let moto = Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    let rds = seed(&moto).await;
    multi_az(&proxy, &rds).await;
    let sdk = common::sdk(&moto).await;
    let intent_of = |journal: &[std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue>],
                     suffix: &str| {
        journal
            .iter()
            .find(|r| attr_s(r, "resource").ends_with(suffix))
            .map(|r| attr_s(r, "state"))
    };
    proxy.rds(|r| {
        r.failing_over.insert("orders".into());
        r.converted.insert("billing".into());
    });
    let run = common::azevac_at(&proxy.endpoint, DB_EVACUATE, &[])
        .expect_code(1)
        .json();
    for (name, code) in [
        ("orders", "InvalidDBClusterStateFault"),
        ("billing", "InvalidDBInstanceState"),
    ] {
        let l = line(&run, name);
        assert_eq!(l["status"], "failed", "{l}");
        let failure = &l["failure"];
        assert!(
            failure["error"].as_str().unwrap_or_default().contains(code)
                && failure["stage"] == "act"
                && failure["record"] == "intent",
            "{l}"
        );
    }
    assert!(line(&run, "billing")["reason"]
        .as_str()
        .unwrap_or_default()
        .contains("not a Multi-AZ"));
    assert_eq!(writer(&rds, "orders").await, "orders-1");
    assert!(!proxy.rds(|r| r.swapped("billing")));
    let journal = journal_items(&sdk).await;
    assert_eq!(intent_of(&journal, ":cluster:orders").as_deref(), Some("intent"));
    assert_eq!(intent_of(&journal, ":db:billing").as_deref(), Some("intent"));

    proxy.rds(|r| {
        r.failing_over.clear();
        r.converted.clear();
        r.unavailable.insert("orders-3".into());
    });
    let run = common::azevac_at(&proxy.endpoint, DB_EVACUATE, &[])
        .expect_code(1)
        .json();
    let orders = line(&run, "orders");
    assert_eq!(orders["status"], "failed", "{orders}");
    assert!(
        orders["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("orders-3 is not available"),
        "{orders}"
    );
    assert_eq!(writer(&rds, "orders").await, "orders-1");
    assert_eq!(line(&run, "billing")["status"], "done");

    proxy.rds(|r| r.unavailable.clear());
    let run = common::azevac_at(&proxy.endpoint, DB_EVACUATE, &[])
        .expect_code(0)
        .json();
    assert_eq!(line(&run, "orders")["status"], "done", "{run:#}");
    assert_eq!(writer(&rds, "orders").await, "orders-3");
    let journal = journal_items(&sdk).await;
    assert_eq!(intent_of(&journal, ":cluster:orders").as_deref(), Some("done"));
}

/// ElastiCache that cannot be read (an IAM policy from before it was supported) does not hold back
/// the RDS failovers: its own line fails with the service's words and the run exits 1.
#[tokio::test]
async fn issue_15_unreadable_elasticache_fails_its_line_and_the_writers_still_move() {
    use common::proxy::{FailRule, Fault};
    let moto = Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    let rds = seed(&moto).await;
    proxy.set(Faults {
        rules: vec![FailRule {
            label: "elasticache:DescribeReplicationGroups".into(),
            body_contains: String::new(),
            fault: Fault::AccessDenied,
        }],
        ..Faults::default()
    });
    let run = common::azevac_at(&proxy.endpoint, DB_EVACUATE, &[])
        .expect_code(1)
        .json();
    assert_eq!(line(&run, "orders")["status"], "done", "{run:#}");
    assert_eq!(writer(&rds, "orders").await, "orders-3");
    let cache = line(&run, "ElastiCache replication groups");
    assert_eq!(cache["status"], "failed", "{cache}");
    let why = cache["reason"].as_str().unwrap_or_default();
    assert!(
        why.contains("DescribeReplicationGroups") && why.contains("AccessDenied"),
        "{cache}"
    );
}

/// Issue 32: a cluster's record written before journal format 2 (`writer:<id>@<az-id>`, no
/// `format`) still recovers: `--failback` moves the writer back to the instance it names, and the
/// record goes.
#[tokio::test]
async fn issue_32_an_old_cluster_record_still_fails_back() {
    let moto = Moto::start();
    let rds = seed(&moto).await;
    let sdk = common::sdk(&moto).await;
    // The evacuated state the record describes: orders' writer moved to orders-3 in use1-az4.
    rds.failover_db_cluster()
        .db_cluster_identifier("orders")
        .target_db_instance_identifier("orders-3")
        .send()
        .await
        .expect("FailoverDBCluster");
    assert_eq!(writer(&rds, "orders").await, "orders-3");
    let clusters = rds
        .describe_db_clusters()
        .db_cluster_identifier("orders")
        .send()
        .await
        .expect("DescribeDBClusters");
    let arn = clusters.db_clusters()[0].db_cluster_arn().expect("ARN").to_owned();
    azevac(&moto, &["init"]).expect_code(0);
    common::put_format_1_record(&sdk, &arn, "db", "orders", &["writer:orders-1@use1-az2"], None).await;

    let back = azevac(
        &moto,
        &["recover", "--type", "db", "--failback", "--yes", "--output", "json"],
    )
    .expect_code(0)
    .json();
    let orders = line(&back, "orders");
    assert_eq!(orders["status"], "done", "{orders}");
    assert_eq!(orders["actions"][0], "writer now orders-1 in use1-az2");
    assert_eq!(writer(&rds, "orders").await, "orders-1");
    assert!(journal_items(&sdk).await.is_empty());
}
