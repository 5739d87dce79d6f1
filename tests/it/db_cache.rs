//! ElastiCache primaries out of the zone (issue 15): the real binary promotes the replica chosen
//! outside the zone (`ModifyReplicationGroup` `PrimaryClusterId`), lists what it cannot move, and
//! on recover leaves the primary where it is unless asked to fail back. moto holds the groups and
//! their nodes' zones; the proxy's fake (tests/it/common/elasticache.rs) does the promotion moto ignores.

use crate::common;

use aws_sdk_elasticache::types::{NodeGroupConfiguration, Tag};
use aws_sdk_elasticache::Client;

use common::elasticache::FakeCache;
use common::proxy::{Faults, KillWhen, Proxy};
use common::{
    attr_list, attr_s, azevac_at, call_number, journal_items, plan_line as line, run_watched, Moto, DB_DRY_RUN,
    DB_EVACUATE,
};

/// us-east-1c is use1-az2 (the zone evacuated), 1b is use1-az1, 1d is use1-az4 in moto.
const IN_ZONE: &str = "us-east-1c";

async fn group(cache: &Client, id: &str, zones: &[&str], team: &str, failover: bool) {
    cache
        .create_replication_group()
        .replication_group_id(id)
        .replication_group_description("test")
        .engine("valkey")
        .cache_node_type("cache.r7g.large")
        .automatic_failover_enabled(failover)
        .multi_az_enabled(failover)
        // moto makes a node per replica plus the primary (it ignores NumCacheClusters).
        .replicas_per_node_group(zones.len() as i32 - 1)
        .set_preferred_cache_cluster_azs(Some(zones.iter().map(|z| z.to_string()).collect()))
        .tags(Tag::builder().key("team").value(team).build())
        .send()
        .await
        .expect("CreateReplicationGroup");
}

/// `sessions`: primary in the zone, replicas in use1-az4 (-002) and use1-az1 (-003). `lonely`: its
/// only replica is in the zone too. `shards`: cluster mode enabled, a shard primary in the zone.
/// `far`: primary elsewhere. `guarded`: like `sessions`, with Multi-AZ and automatic failover on
/// (ElastiCache refuses a promotion then).
async fn seed(moto: &Moto) -> Client {
    let cache = Client::new(&common::sdk(moto).await);
    group(&cache, "sessions", &[IN_ZONE, "us-east-1d", "us-east-1b"], "pay", false).await;
    group(&cache, "lonely", &[IN_ZONE, IN_ZONE], "ops", false).await;
    group(&cache, "far", &["us-east-1b", IN_ZONE], "pay", false).await;
    group(&cache, "guarded", &[IN_ZONE, "us-east-1d"], "ops", true).await;
    cache
        .create_replication_group()
        .replication_group_id("shards")
        .replication_group_description("test")
        .cluster_mode(aws_sdk_elasticache::types::ClusterMode::Enabled)
        .num_node_groups(1)
        .replicas_per_node_group(1)
        .node_group_configuration(
            NodeGroupConfiguration::builder()
                .node_group_id("0001")
                .primary_availability_zone(IN_ZONE)
                .replica_availability_zones("us-east-1b")
                .build(),
        )
        .send()
        .await
        .expect("CreateReplicationGroup");
    cache
}

fn primary(proxy: &Proxy, group: &str) -> Option<String> {
    proxy.cache(|c| c.primaries.get(group).cloned())
}

fn reason(line: &serde_json::Value) -> &str {
    line["reason"].as_str().unwrap_or_default()
}

const RECOVER: &[&str] = &["recover", "--type", "db", "--yes", "--output", "json"];

#[tokio::test]
async fn issue_15_cache_primaries_leave_the_zone_and_stay_out_on_recover() {
    let moto = Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    seed(&moto).await;
    let dry = azevac_at(&proxy.endpoint, DB_DRY_RUN, &[]).expect_code(0).json();
    let sessions = line(&dry, "sessions");
    assert_eq!(sessions["status"], "planned");
    assert_eq!(sessions["actions"][0], "primary:sessions-001@use1-az2");
    assert_eq!(
        sessions["reason"],
        "fail over primary sessions-001 (use1-az2) -> sessions-002 (use1-az4)"
    );
    let lonely = line(&dry, "lonely");
    assert_eq!(lonely["status"], "skipped");
    assert!(
        reason(lonely).starts_with("no available replica outside use1-az2"),
        "{lonely}"
    );
    let guarded = line(&dry, "guarded");
    assert_eq!(guarded["status"], "skipped");
    assert!(
        reason(guarded).starts_with("Multi-AZ with automatic failover is on"),
        "{guarded}"
    );
    let shards = line(&dry, "shards");
    assert_eq!(shards["status"], "skipped");
    assert!(
        reason(shards).starts_with("cluster mode enabled") && reason(shards).contains("shard 0001"),
        "{shards}"
    );
    assert!(dry["items"]
        .as_array()
        .expect("items")
        .iter()
        .all(|i| i["name"] != "far"));
    assert_eq!(primary(&proxy, "sessions"), None, "a dry run changes nothing");

    proxy.set(Faults::default());
    let run = azevac_at(&proxy.endpoint, DB_EVACUATE, &[]).expect_code(0).json();
    assert_eq!(line(&run, "sessions")["status"], "done", "{run:#}");
    assert_eq!(primary(&proxy, "sessions").as_deref(), Some("sessions-002"));
    assert_eq!(line(&run, "guarded")["status"], "skipped", "{run:#}");
    assert_eq!(primary(&proxy, "guarded"), None, "a Multi-AZ group is left alone");
    let modify: Vec<String> = proxy
        .requests()
        .into_iter()
        .filter(|(c, _)| c.starts_with("elasticache:Modify") || c.ends_with("TestFailover"))
        .map(|(_, body)| body)
        .collect();
    assert_eq!(modify.len(), 1, "one promotion, no TestFailover: {modify:?}");
    assert!(
        modify[0].contains("PrimaryClusterId=sessions-002") && modify[0].contains("ApplyImmediately=true"),
        "{}",
        modify[0]
    );
    let sdk = common::sdk(&moto).await;
    let journal = journal_items(&sdk).await;
    assert_eq!(journal.len(), 1, "{journal:?}");
    assert!(attr_s(&journal[0], "resource").ends_with(":replicationgroup:sessions"));
    assert_eq!(attr_list(&journal[0], "actions"), ["primary:sessions-001@use1-az2"]);
    assert_eq!(attr_s(&journal[0], "state"), "done");

    let again = azevac_at(&proxy.endpoint, DB_EVACUATE, &[]).expect_code(0).json();
    assert_eq!(
        line(&again, "sessions")["reason"],
        "already evacuated: primary sessions-002 in use1-az4"
    );

    let back = azevac_at(&proxy.endpoint, RECOVER, &[]).expect_code(0).json();
    let sessions = line(&back, "sessions");
    assert_eq!(sessions["status"], "done");
    assert_eq!(
        sessions["reason"],
        "primary sessions-002 stays in use1-az4; was sessions-001 in use1-az2"
    );
    assert_eq!(primary(&proxy, "sessions").as_deref(), Some("sessions-002"));
    assert!(journal_items(&sdk).await.is_empty());
}

/// `--tag` filters replication groups; an unavailable target and a group being modified are
/// refused by ElastiCache: the line fails with the service's words, exit 1, and the record stays
/// true to the primary; `--failback` promotes the original again once it can.
#[tokio::test]
async fn issue_15_cache_refusals_fail_the_line_and_failback_promotes_the_original() {
    let moto = Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    seed(&moto).await;
    let sdk = common::sdk(&moto).await;
    let tagged = [
        "evacuate", "--az-id", "use1-az2", "--type", "db", "--tag", "team=ops", "--yes", "--output", "json",
    ];
    let filtered = azevac_at(&proxy.endpoint, &tagged, &[]).expect_code(0).json();
    assert!(
        reason(line(&filtered, "sessions")).starts_with("filtered: tag team=ops"),
        "{filtered:#}"
    );
    assert_eq!(primary(&proxy, "sessions"), None);

    proxy.cache(|c| {
        c.unavailable.insert("sessions-002".into());
    });
    let refused = azevac_at(&proxy.endpoint, DB_EVACUATE, &[]).expect_code(1);
    let sessions = line(&refused.json(), "sessions").clone();
    assert_eq!(sessions["status"], "failed", "{sessions}");
    assert!(reason(&sessions).contains("InvalidCacheClusterState"), "{sessions}");
    assert_eq!(primary(&proxy, "sessions"), None);
    assert!(
        reason(&sessions).contains("journal record kept in state intent"),
        "{sessions}"
    );
    let kept = journal_items(&sdk).await;
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(
        attr_s(&kept[0], "state"),
        "intent",
        "nothing claims a promotion that was refused"
    );

    proxy.cache(|c| c.unavailable.clear());
    let run = azevac_at(&proxy.endpoint, DB_EVACUATE, &[]).expect_code(0).json();
    assert_eq!(line(&run, "sessions")["status"], "done", "{run:#}");
    assert_eq!(primary(&proxy, "sessions").as_deref(), Some("sessions-002"));

    let failback = ["recover", "--type", "db", "--failback", "--yes", "--output", "json"];
    proxy.cache(|c| {
        c.modifying.insert("sessions".into());
    });
    let busy = azevac_at(&proxy.endpoint, &failback, &[]).expect_code(1);
    let sessions = line(&busy.json(), "sessions").clone();
    assert_eq!(sessions["status"], "failed", "{sessions}");
    assert!(reason(&sessions).contains("InvalidReplicationGroupState"), "{sessions}");
    assert_eq!(primary(&proxy, "sessions").as_deref(), Some("sessions-002"));
    assert_eq!(journal_items(&sdk).await.len(), 1, "the record is kept");

    proxy.cache(|c| c.modifying.clear());
    let back = azevac_at(&proxy.endpoint, &failback, &[]).expect_code(0).json();
    let sessions = line(&back, "sessions");
    assert_eq!(sessions["status"], "done", "{sessions}");
    assert_eq!(sessions["actions"][0], "primary now sessions-001 in use1-az2");
    assert_eq!(primary(&proxy, "sessions").as_deref(), Some("sessions-001"));
    assert!(journal_items(&sdk).await.is_empty());
}

#[tokio::test]
async fn issue_15_a_kill_around_the_promotion_loses_nothing() {
    let moto = Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    let sdk = common::sdk(&moto).await;
    let evacuate = ["evacuate", "--az-id", "use1-az2", "--type", "db", "--yes"];
    seed(&moto).await;
    let at = call_number(&proxy, &evacuate, "elasticache:ModifyReplicationGroup");
    for (when, moved) in [(KillWhen::BeforeForward, false), (KillWhen::AfterForward, true)] {
        moto.reset();
        proxy.cache(|c| *c = FakeCache::default());
        seed(&moto).await;
        proxy.set(Faults {
            kill_at: Some((at, when)),
            ..Faults::default()
        });
        assert_eq!(run_watched(&proxy, &evacuate), None, "killed at {when:?}");
        assert!(proxy.killed());
        let expected = moved.then(|| "sessions-002".to_owned());
        assert_eq!(primary(&proxy, "sessions"), expected);
        let journal = journal_items(&sdk).await;
        assert_eq!(journal.len(), 1, "the intent is journalled before the promotion");
        assert_eq!(attr_s(&journal[0], "state"), "intent");
        assert_eq!(attr_list(&journal[0], "actions"), ["primary:sessions-001@use1-az2"]);

        proxy.set(Faults::default());
        let again = azevac_at(&proxy.endpoint, DB_EVACUATE, &[]).expect_code(0).json();
        let status = if moved { "skipped" } else { "done" };
        assert_eq!(line(&again, "sessions")["status"], status, "{again:#}");
        assert_eq!(primary(&proxy, "sessions").as_deref(), Some("sessions-002"));
        let back = azevac_at(&proxy.endpoint, RECOVER, &[]).expect_code(0).json();
        assert_eq!(
            line(&back, "sessions")["reason"],
            "primary sessions-002 stays in use1-az4; was sessions-001 in use1-az2"
        );
        assert!(journal_items(&sdk).await.is_empty());
    }
}
