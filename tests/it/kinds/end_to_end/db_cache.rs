//! ElastiCache primaries out of the zone (issue 15): the real binary promotes the replica chosen
//! outside the zone (`ModifyReplicationGroup` `PrimaryClusterId`), turning automatic failover off
//! first and back on after where it is on, lists what it cannot move, and on recover leaves the
//! primary where it is unless asked to fail back. moto holds the groups, their nodes' zones and
//! their automatic failover settings; the proxy's fake (tests/it/common/elasticache.rs) does the
//! promotion moto ignores and refuses what ElastiCache refuses.

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
/// `far`: primary elsewhere. `guarded`: primary in the zone, a replica in use1-az4, with Multi-AZ
/// and automatic failover on (ElastiCache refuses a promotion then).
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

/// `(AutomaticFailover, MultiAZ)` of a group, as moto holds them.
async fn settings(cache: &Client, group: &str) -> (String, String) {
    let out = cache
        .describe_replication_groups()
        .replication_group_id(group)
        .send()
        .await
        .expect("DescribeReplicationGroups");
    let g = &out.replication_groups()[0];
    (
        g.automatic_failover()
            .map(|s| s.as_str().to_owned())
            .unwrap_or_default(),
        g.multi_az().map(|s| s.as_str().to_owned()).unwrap_or_default(),
    )
}

fn on() -> (String, String) {
    ("enabled".into(), "enabled".into())
}

fn off() -> (String, String) {
    ("disabled".into(), "disabled".into())
}

/// The bodies of the `ModifyReplicationGroup` calls of `group`, in order, as what they asked for.
fn modifications(proxy: &Proxy, group: &str) -> Vec<String> {
    proxy
        .requests()
        .into_iter()
        .filter(|(c, body)| {
            c == "elasticache:ModifyReplicationGroup" && body.contains(&format!("ReplicationGroupId={group}&"))
        })
        .map(|(_, body)| {
            let asked: Vec<&str> = body
                .split('&')
                .filter(|p| {
                    ["PrimaryClusterId=", "AutomaticFailoverEnabled=", "MultiAZEnabled="]
                        .iter()
                        .any(|k| p.starts_with(k))
                })
                .collect();
            asked.join(" ")
        })
        .collect()
}

const TURN_OFF: &str = "AutomaticFailoverEnabled=false MultiAZEnabled=false";
const TURN_ON: &str = "AutomaticFailoverEnabled=true MultiAZEnabled=true";
/// What the journal holds for `guarded` (journal format 2: the kind's actions as JSON).
const GUARDED_MARKERS: [&str; 3] = [
    r#"{"primary":{"node":"guarded-001","az_id":"use1-az2"}}"#,
    r#"{"turned_off":{"setting":"automatic_failover"}}"#,
    r#"{"turned_off":{"setting":"multi_az"}}"#,
];
/// The same, as the plan shows them.
const GUARDED_WORDS: [&str; 3] = [
    "primary: guarded-001 in use1-az2",
    "turned off: automatic failover",
    "turned off: Multi-AZ",
];
/// What the journal holds for `sessions`.
const SESSIONS_PRIMARY: &str = r#"{"primary":{"node":"sessions-001","az_id":"use1-az2"}}"#;

type JournalItem = std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue>;

/// The journal record of `group`.
fn record_of<'a>(journal: &'a [JournalItem], group: &str) -> &'a JournalItem {
    journal
        .iter()
        .find(|i| attr_s(i, "resource").ends_with(&format!(":replicationgroup:{group}")))
        .unwrap_or_else(|| panic!("no record of {group}: {journal:?}"))
}

/// moto with the groups of [`seed`], the proxy in front of it, a client of moto's ElastiCache, and
/// the SDK configuration (to read the journal).
async fn start() -> (Moto, Proxy, Client, aws_config::SdkConfig) {
    let moto = Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    let cache = seed(&moto).await;
    let sdk = common::sdk(&moto).await;
    (moto, proxy, cache, sdk)
}

fn primary(proxy: &Proxy, group: &str) -> Option<String> {
    proxy.cache(|c| c.primaries.get(group).cloned())
}

fn reason(line: &serde_json::Value) -> &str {
    line["reason"].as_str().unwrap_or_default()
}

const RECOVER: &[&str] = &["recover", "--type", "db", "--yes", "--output", "json"];
const FAILBACK: &[&str] = &["recover", "--type", "db", "--failback", "--yes", "--output", "json"];

/// An evacuation of only the groups whose name starts with `prefix` (the kill points count calls).
fn evacuate_only(prefix: &str) -> Vec<&str> {
    let mut args = DB_EVACUATE.to_vec();
    args.extend(["--name-prefix", prefix]);
    args
}

#[tokio::test]
async fn issue_15_cache_primaries_leave_the_zone_and_stay_out_on_recover() {
    let (_moto, proxy, cache, sdk) = start().await;
    let dry = azevac_at(&proxy.endpoint, DB_DRY_RUN, &[]).expect_code(0).json();
    let sessions = line(&dry, "sessions");
    assert_eq!(sessions["status"], "planned");
    assert_eq!(sessions["actions"][0], "primary: sessions-001 in use1-az2");
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
    assert_eq!(guarded["status"], "planned", "{guarded}");
    assert_eq!(guarded["actions"], serde_json::json!(GUARDED_WORDS));
    assert_eq!(
        guarded["reason"],
        "turn off Multi-AZ/automatic failover, fail over primary guarded-001 (use1-az2) -> guarded-002 (use1-az4), \
         turn them back on"
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
    assert_eq!(settings(&cache, "guarded").await, on());

    proxy.set(Faults::default());
    let run = azevac_at(&proxy.endpoint, DB_EVACUATE, &[]).expect_code(0).json();
    assert_eq!(line(&run, "sessions")["status"], "done", "{run:#}");
    assert_eq!(primary(&proxy, "sessions").as_deref(), Some("sessions-002"));
    let guarded = line(&run, "guarded");
    assert_eq!(guarded["status"], "done", "{run:#}");
    assert_eq!(
        guarded["actions"],
        serde_json::json!([
            "Multi-AZ/automatic failover off",
            "primary now guarded-002 in use1-az4",
            "Multi-AZ/automatic failover back on"
        ])
    );
    assert_eq!(primary(&proxy, "guarded").as_deref(), Some("guarded-002"));
    assert_eq!(settings(&cache, "guarded").await, on(), "turned back on");
    assert_eq!(
        modifications(&proxy, "guarded"),
        [TURN_OFF, "PrimaryClusterId=guarded-002", TURN_ON],
        "off, promote, on"
    );
    let modify: Vec<String> = proxy
        .requests()
        .into_iter()
        .filter(|(c, body)| {
            (c.starts_with("elasticache:Modify") || c.ends_with("TestFailover"))
                && body.contains("ReplicationGroupId=sessions&")
        })
        .map(|(_, body)| body)
        .collect();
    assert_eq!(modify.len(), 1, "one promotion, no TestFailover: {modify:?}");
    assert!(
        modify[0].contains("PrimaryClusterId=sessions-002") && modify[0].contains("ApplyImmediately=true"),
        "{}",
        modify[0]
    );
    assert!(
        !proxy.calls().iter().any(|c| c.ends_with("TestFailover")),
        "never TestFailover"
    );
    let journal = journal_items(&sdk).await;
    assert_eq!(journal.len(), 2, "{journal:?}");
    let sessions = record_of(&journal, "sessions");
    assert_eq!(attr_list(sessions, "actions"), [SESSIONS_PRIMARY]);
    assert_eq!(attr_s(sessions, "state"), "done");
    let guarded = record_of(&journal, "guarded");
    assert_eq!(attr_list(guarded, "actions"), GUARDED_MARKERS);
    assert_eq!(attr_s(guarded, "state"), "done");

    let again = azevac_at(&proxy.endpoint, DB_EVACUATE, &[]).expect_code(0).json();
    assert_eq!(
        line(&again, "sessions")["reason"],
        "already evacuated: primary sessions-002 in use1-az4"
    );
    assert_eq!(
        line(&again, "guarded")["reason"],
        "already evacuated: primary guarded-002 in use1-az4"
    );

    let back = azevac_at(&proxy.endpoint, RECOVER, &[]).expect_code(0).json();
    let sessions = line(&back, "sessions");
    assert_eq!(sessions["status"], "done");
    assert_eq!(
        sessions["reason"],
        "primary sessions-002 stays in use1-az4; was sessions-001 in use1-az2"
    );
    assert_eq!(
        line(&back, "guarded")["reason"],
        "primary guarded-002 stays in use1-az4; was guarded-001 in use1-az2"
    );
    assert_eq!(primary(&proxy, "sessions").as_deref(), Some("sessions-002"));
    assert_eq!(settings(&cache, "guarded").await, on());
    assert!(journal_items(&sdk).await.is_empty());
}

/// `--tag` filters replication groups; an unavailable target and a group being modified are
/// refused by ElastiCache: the line fails with the service's words, exit 1, and the record stays
/// true to the primary; `--failback` promotes the original again once it can.
#[tokio::test]
async fn issue_15_cache_refusals_fail_the_line_and_failback_promotes_the_original() {
    let (_moto, proxy, _, sdk) = start().await;
    let sessions_only = evacuate_only("sessions");
    let mut tagged = sessions_only.clone();
    tagged.extend(["--tag", "team=ops"]);
    let filtered = azevac_at(&proxy.endpoint, &tagged, &[]).expect_code(0).json();
    assert!(
        reason(line(&filtered, "sessions")).starts_with("filtered: tag team=ops"),
        "{filtered:#}"
    );
    assert_eq!(primary(&proxy, "sessions"), None);
    proxy.cache(|c| {
        c.unavailable.insert("sessions-002".into());
    });
    let refused = azevac_at(&proxy.endpoint, &sessions_only, &[]).expect_code(1);
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
    let run = azevac_at(&proxy.endpoint, &sessions_only, &[]).expect_code(0).json();
    assert_eq!(line(&run, "sessions")["status"], "done", "{run:#}");
    assert_eq!(primary(&proxy, "sessions").as_deref(), Some("sessions-002"));

    proxy.cache(|c| {
        c.modifying.insert("sessions".into());
    });
    let busy = azevac_at(&proxy.endpoint, FAILBACK, &[]).expect_code(1);
    let sessions = line(&busy.json(), "sessions").clone();
    assert_eq!(sessions["status"], "failed", "{sessions}");
    assert!(reason(&sessions).contains("InvalidReplicationGroupState"), "{sessions}");
    assert_eq!(primary(&proxy, "sessions").as_deref(), Some("sessions-002"));
    assert_eq!(journal_items(&sdk).await.len(), 1, "the record is kept");

    proxy.cache(|c| c.modifying.clear());
    let back = azevac_at(&proxy.endpoint, FAILBACK, &[]).expect_code(0).json();
    let sessions = line(&back, "sessions");
    assert_eq!(sessions["status"], "done", "{sessions}");
    assert_eq!(sessions["actions"][0], "primary now sessions-001 in use1-az2");
    assert_eq!(primary(&proxy, "sessions").as_deref(), Some("sessions-001"));
    assert!(journal_items(&sdk).await.is_empty());
}

/// A promotion refused after automatic failover was turned off: it is turned back on, the line
/// fails (exit 1) with both, the record keeps what was turned off, and a later run finishes.
#[tokio::test]
async fn issue_15_a_refused_promotion_turns_automatic_failover_back_on() {
    let (_moto, proxy, cache, sdk) = start().await;
    let guarded = evacuate_only("guarded");
    proxy.cache(|c| {
        c.unavailable.insert("guarded-002".into());
    });
    let refused = azevac_at(&proxy.endpoint, &guarded, &[]).expect_code(1).json();
    let line_of = line(&refused, "guarded");
    assert_eq!(line_of["status"], "failed", "{line_of}");
    let why = reason(line_of);
    assert!(
        why.contains("promoting guarded-002 to primary failed")
            && why.contains("turning Multi-AZ/automatic failover back on (requested, not waited for")
            && why.contains("InvalidCacheClusterState")
            && why.contains("journal record kept"),
        "{why}"
    );
    assert_eq!(
        modifications(&proxy, "guarded"),
        [TURN_OFF, "PrimaryClusterId=guarded-002", TURN_ON]
    );
    assert_eq!(settings(&cache, "guarded").await, on());
    assert_eq!(primary(&proxy, "guarded"), None);
    let kept = journal_items(&sdk).await;
    assert_eq!(attr_s(record_of(&kept, "guarded"), "state"), "intent");
    assert_eq!(attr_list(record_of(&kept, "guarded"), "actions"), GUARDED_MARKERS);

    proxy.cache(|c| c.unavailable.clear());
    proxy.set(Faults::default());
    let run = azevac_at(&proxy.endpoint, &guarded, &[]).expect_code(0).json();
    assert_eq!(line(&run, "guarded")["status"], "done", "{run:#}");
    assert_eq!(primary(&proxy, "guarded").as_deref(), Some("guarded-002"));
    assert_eq!(settings(&cache, "guarded").await, on());
    assert_eq!(
        modifications(&proxy, "guarded"),
        [TURN_OFF, "PrimaryClusterId=guarded-002", TURN_ON]
    );
}

/// The group is `modifying` for a while after each change, as ElastiCache reports it: azevac waits
/// at every step (progress on stderr) and still finishes. `--failback` of the group is the same
/// sequence in reverse, and a second recover has nothing to do.
#[tokio::test]
async fn issue_15_each_step_waits_for_the_group_and_failback_runs_the_sequence_in_reverse() {
    let (_moto, proxy, cache, sdk) = start().await;
    proxy.cache(|c| c.modifying_for = 1);
    let run = azevac_at(&proxy.endpoint, &evacuate_only("guarded"), &[]).expect_code(0);
    for waited in [
        "azevac: db guarded: waiting for Multi-AZ/automatic failover to be off",
        "azevac: db guarded: waiting for guarded-002 to become the primary in use1-az4",
        "azevac: db guarded: waiting for Multi-AZ/automatic failover to be on",
    ] {
        assert!(run.stderr.contains(waited), "{waited}:\n{}", run.stderr);
    }
    assert_eq!(line(&run.json(), "guarded")["status"], "done");
    assert_eq!(primary(&proxy, "guarded").as_deref(), Some("guarded-002"));
    assert_eq!(settings(&cache, "guarded").await, on());

    proxy.cache(|c| c.modifying_for = 0);
    fail_back_guarded(
        &proxy,
        "turn off Multi-AZ/automatic failover, fail over primary guarded-002 (use1-az4) -> guarded-001 (use1-az2), \
         turn them back on",
    );
    assert_eq!(
        modifications(&proxy, "guarded"),
        [TURN_OFF, "PrimaryClusterId=guarded-001", TURN_ON],
        "the sequence in reverse"
    );
    assert_eq!(primary(&proxy, "guarded").as_deref(), Some("guarded-001"));
    assert_eq!(settings(&cache, "guarded").await, on());
    assert!(journal_items(&sdk).await.is_empty());
    proxy.set(Faults::default());
    azevac_at(&proxy.endpoint, FAILBACK, &[]).expect_code(0);
    assert!(modifications(&proxy, "guarded").is_empty(), "nothing to do");
}

/// `recover --failback` (calls counted afresh): the `guarded` line is done, for this reason.
fn fail_back_guarded(proxy: &Proxy, reason: &str) {
    proxy.set(Faults::default());
    let back = azevac_at(&proxy.endpoint, FAILBACK, &[]).expect_code(0).json();
    let guarded = line(&back, "guarded");
    assert_eq!(guarded["status"], "done", "{guarded}");
    assert_eq!(guarded["reason"], reason);
}

/// The `ModifyReplicationGroup` call numbers of an unkilled run.
fn modify_call_numbers(proxy: &Proxy, args: &[&str]) -> Vec<usize> {
    proxy.set(Faults::default());
    assert_eq!(run_watched(proxy, args), Some(0), "the unkilled run");
    let numbers: Vec<usize> = proxy
        .calls()
        .iter()
        .enumerate()
        .filter(|(_, c)| *c == "elasticache:ModifyReplicationGroup")
        .map(|(i, _)| i + 1)
        .collect();
    assert_eq!(numbers.len(), 3, "off, promote, on");
    numbers
}

/// Killed right after turning automatic failover off (step 1), or right after the promotion
/// (step 2): both leave the group without automatic failover and a record that says it was on.
/// Yields the kill states, with the group set up again each time, and what the primary is then.
async fn killed_mid_sequence(moto: &Moto, proxy: &Proxy, sdk: &aws_config::SdkConfig, step: usize) -> Option<String> {
    let args = evacuate_only("guarded");
    moto.reset();
    proxy.cache(|c| *c = FakeCache::default());
    seed(moto).await;
    let at = modify_call_numbers(proxy, &args)[step - 1];
    moto.reset();
    proxy.cache(|c| *c = FakeCache::default());
    let cache = seed(moto).await;
    proxy.set(Faults {
        kill_at: Some((at, KillWhen::AfterForward)),
        ..Faults::default()
    });
    assert_eq!(run_watched(proxy, &args), None, "killed after step {step}");
    assert!(proxy.killed());
    assert_eq!(settings(&cache, "guarded").await, off(), "left off by the kill");
    let journal = journal_items(sdk).await;
    assert_eq!(journal.len(), 1, "{journal:?}");
    assert_eq!(attr_s(&journal[0], "state"), "intent");
    assert_eq!(
        attr_list(&journal[0], "actions"),
        GUARDED_MARKERS,
        "written ahead of step 1"
    );
    proxy.set(Faults::default());
    primary(proxy, "guarded")
}

#[tokio::test]
async fn issue_15_evacuate_finishes_a_sequence_killed_half_way() {
    let (moto, proxy, cache, sdk) = start().await;
    let args = evacuate_only("guarded");
    for (step, left) in [
        (
            1,
            "fail over primary guarded-001 (use1-az2) -> guarded-002 (use1-az4), turn Multi-AZ/automatic failover back on",
        ),
        (
            2,
            "turn Multi-AZ/automatic failover back on (azevac turned them off; primary guarded-002 is in use1-az4)",
        ),
    ] {
        let promoted = killed_mid_sequence(&moto, &proxy, &sdk, step).await;
        assert_eq!(promoted.is_some(), step == 2);
        let dry = azevac_at(&proxy.endpoint, DB_DRY_RUN, &[]).expect_code(0).json();
        assert_eq!(line(&dry, "guarded")["reason"], left, "after step {step}");
        let again = azevac_at(&proxy.endpoint, &args, &[]).expect_code(0).json();
        assert_eq!(line(&again, "guarded")["status"], "done", "{again:#}");
        let expected: &[&str] = match step {
            1 => &["PrimaryClusterId=guarded-002", TURN_ON],
            _ => &[TURN_ON],
        };
        assert_eq!(modifications(&proxy, "guarded"), expected, "after step {step}");
        assert_eq!(primary(&proxy, "guarded").as_deref(), Some("guarded-002"));
        assert_eq!(settings(&cache, "guarded").await, on());
        let journal = journal_items(&sdk).await;
        assert_eq!(attr_s(&journal[0], "state"), "done");
        assert_eq!(attr_list(&journal[0], "actions"), GUARDED_MARKERS);
        let done = azevac_at(&proxy.endpoint, &args, &[]).expect_code(0).json();
        assert_eq!(
            line(&done, "guarded")["reason"],
            "already evacuated: primary guarded-002 in use1-az4"
        );
    }
}

#[tokio::test]
async fn issue_15_recover_finishes_a_sequence_killed_half_way() {
    let (moto, proxy, cache, sdk) = start().await;
    for step in [1, 2] {
        let promoted = killed_mid_sequence(&moto, &proxy, &sdk, step).await;
        let back = azevac_at(&proxy.endpoint, RECOVER, &[]).expect_code(0).json();
        let guarded = line(&back, "guarded");
        assert_eq!(guarded["status"], "done", "{guarded}");
        assert_eq!(modifications(&proxy, "guarded"), [TURN_ON], "after step {step}");
        assert_eq!(settings(&cache, "guarded").await, on());
        assert_eq!(primary(&proxy, "guarded"), promoted, "the primary stays where it is");
        assert!(journal_items(&sdk).await.is_empty());
    }
}

#[tokio::test]
async fn issue_15_a_kill_around_the_promotion_loses_nothing() {
    let moto = Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    let sdk = common::sdk(&moto).await;
    let evacuate = [
        "evacuate",
        "--az-id",
        "use1-az2",
        "--type",
        "db",
        "--name-prefix",
        "sessions",
        "--yes",
    ];
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
        assert_eq!(attr_list(&journal[0], "actions"), [SESSIONS_PRIMARY]);

        proxy.set(Faults::default());
        let again = azevac_at(&proxy.endpoint, &evacuate_only("sessions"), &[])
            .expect_code(0)
            .json();
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

/// `recover --failback` killed right after turning automatic failover off (step 1 of the reverse
/// sequence): the record still says it was on, and the next `recover --failback` promotes the
/// original and turns it back on.
#[tokio::test]
async fn issue_15_a_failback_killed_half_way_is_finished_by_the_next_recover() {
    let (_moto, proxy, cache, sdk) = start().await;
    let evacuate = evacuate_only("guarded");
    azevac_at(&proxy.endpoint, &evacuate, &[]).expect_code(0);
    // The call numbers of an unkilled failback; then the same estate again, killed at its first.
    let at = modify_call_numbers(&proxy, FAILBACK)[0];
    assert_eq!(primary(&proxy, "guarded").as_deref(), Some("guarded-001"));
    azevac_at(&proxy.endpoint, &evacuate, &[]).expect_code(0);
    assert_eq!(primary(&proxy, "guarded").as_deref(), Some("guarded-002"));
    proxy.set(Faults {
        kill_at: Some((at, KillWhen::AfterForward)),
        ..Faults::default()
    });
    assert_eq!(run_watched(&proxy, FAILBACK), None, "killed after turning them off");
    assert_eq!(settings(&cache, "guarded").await, off());
    assert_eq!(attr_list(&journal_items(&sdk).await[0], "actions"), GUARDED_MARKERS);

    fail_back_guarded(
        &proxy,
        "fail over primary guarded-002 (use1-az4) -> guarded-001 (use1-az2), turn Multi-AZ/automatic failover back on",
    );
    assert_eq!(
        modifications(&proxy, "guarded"),
        ["PrimaryClusterId=guarded-001", TURN_ON]
    );
    assert_eq!(primary(&proxy, "guarded").as_deref(), Some("guarded-001"));
    assert_eq!(settings(&cache, "guarded").await, on());
    assert!(journal_items(&sdk).await.is_empty());
}

/// Issue 32: a replication group's record written before journal format 2
/// (`primary:<node>@<az-id>`, `turned-off:<setting>`, no `format`), with the group as a run killed
/// after the promotion left it (primary out of the zone, Multi-AZ and automatic failover off):
/// `recover --failback` promotes the node the record names, turns back on what it says azevac
/// turned off, and the record goes.
#[tokio::test]
async fn issue_32_an_old_group_record_still_fails_back_and_turns_failover_on() {
    let (_moto, proxy, cache, sdk) = start().await;
    cache
        .modify_replication_group()
        .replication_group_id("guarded")
        .automatic_failover_enabled(false)
        .multi_az_enabled(false)
        .apply_immediately(true)
        .send()
        .await
        .expect("ModifyReplicationGroup");
    proxy.cache(|c| {
        c.primaries.insert("guarded".into(), "guarded-002".into());
    });
    assert_eq!(settings(&cache, "guarded").await, off());
    let groups = cache
        .describe_replication_groups()
        .replication_group_id("guarded")
        .send()
        .await
        .expect("DescribeReplicationGroups");
    let arn = groups.replication_groups()[0].arn().expect("ARN").to_owned();
    azevac_at(&proxy.endpoint, &["init"], &[]).expect_code(0);
    let old = [
        "primary:guarded-001@use1-az2",
        "turned-off:automatic-failover",
        "turned-off:multi-az",
    ];
    common::put_format_1_record(&sdk, &arn, "db", "guarded", &old, None).await;

    fail_back_guarded(
        &proxy,
        "fail over primary guarded-002 (use1-az4) -> guarded-001 (use1-az2), turn Multi-AZ/automatic failover back on",
    );
    assert_eq!(
        modifications(&proxy, "guarded"),
        ["PrimaryClusterId=guarded-001", TURN_ON]
    );
    assert_eq!(primary(&proxy, "guarded").as_deref(), Some("guarded-001"));
    assert_eq!(settings(&cache, "guarded").await, on());
    assert!(journal_items(&sdk).await.is_empty());
}
