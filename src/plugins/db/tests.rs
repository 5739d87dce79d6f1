//! The `db` kind's unit tests: decisions, plan lines and records, the ElastiCache steps, and the
//! RDS client against aws-smithy-mocks.

use std::collections::BTreeMap;

use super::decide::{best_reader, class_rank, decide, evacuation};
use super::sequence::{cache_steps, CacheSteps};
use super::*;
use crate::journal::State;
use crate::model::plan::Filters;

const ARN: &str = "arn:aws:rds:us-east-1:123456789012:cluster:orders";

fn member(id: &str, az: &str, writer: bool, tier: i32, class: &str) -> Member {
    Member {
        id: id.into(),
        az_id: Some(az.into()),
        writer,
        tier,
        class: class.into(),
        status: "available".into(),
    }
}

fn orders(members: Vec<Member>) -> Database {
    Database {
        arn: ARN.into(),
        id: "orders".into(),
        kind: Kind::Cluster,
        status: "available".into(),
        members,
        tags: BTreeMap::new(),
        failover_settings: FailoverSettings::default(),
        identity: None,
    }
}

fn record(actions: &[&str]) -> Record {
    Record {
        az_id: "use1-az2".into(),
        resource: ARN.into(),
        resource_type: TYPE.into(),
        removed_subnets: vec![],
        state: State::Done,
        version: 2,
        resource_name: Some("orders".into()),
        original_subnets: vec![],
        actions: actions.iter().map(|a| a.to_string()).collect(),
        run_id: Some("run-1".into()),
        evacuated_by: None,
        reason: None,
        azevac_version: None,
        created_at: None,
        updated_at: None,
        account_id: None,
        identity: None,
    }
}

#[test]
fn classes_rank_by_size() {
    assert!(class_rank("db.r6g.large") < class_rank("db.r6g.xlarge"));
    assert!(class_rank("db.r6g.xlarge") < class_rank("db.r6g.2xlarge"));
    assert!(class_rank("db.r6g.2xlarge") < class_rank("db.r6g.16xlarge"));
    assert!(class_rank("db.t3.micro") < class_rank("db.t3.medium"));
    assert_eq!(class_rank("db.serverless"), 0);
}

#[test]
fn the_reader_is_chosen_by_tier_then_class_then_name_outside_the_zone() {
    let members = vec![
        member("w", "use1-az2", true, 0, "db.r6g.large"),
        member("same-zone", "use1-az2", false, 0, "db.r6g.16xlarge"),
        member("tier2-big", "use1-az1", false, 2, "db.r6g.16xlarge"),
        member("tier1-b", "use1-az4", false, 1, "db.r6g.large"),
        member("tier1-a", "use1-az1", false, 1, "db.r6g.large"),
        member("tier1-big", "use1-az4", false, 1, "db.r6g.2xlarge"),
    ];
    assert_eq!(
        best_reader(&members, "use1-az2").map(|m| m.id.as_str()),
        Some("tier1-big")
    );
    let mut members = members;
    members.retain(|m| m.id != "tier1-big");
    assert_eq!(
        best_reader(&members, "use1-az2").map(|m| m.id.as_str()),
        Some("tier1-a")
    );
    members.iter_mut().for_each(|m| m.status = "rebooting".into());
    assert_eq!(best_reader(&members, "use1-az2"), None);
}

#[test]
fn decisions_move_skip_or_leave_alone() {
    let db = orders(vec![
        member("a", "use1-az2", true, 1, "db.r6g.large"),
        member("b", "use1-az1", false, 1, "db.r6g.large"),
    ]);
    match decide(&db, "use1-az2", FailoverSettings::default()) {
        Decision::Move(f) => assert_eq!(
            (f.from.as_str(), f.to.as_str(), f.to_az.as_str()),
            ("a", "b", "use1-az1")
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        decide(&db, "use1-az4", FailoverSettings::default()),
        Decision::Elsewhere
    );
    let alone = orders(vec![
        member("a", "use1-az2", true, 1, "db.r6g.large"),
        member("b", "use1-az2", false, 1, "db.r6g.large"),
    ]);
    assert!(
        matches!(decide(&alone, "use1-az2", FailoverSettings::default()), Decision::Skip(why) if why.contains("b in use1-az2 (available)"))
    );
    let mut busy = db.clone();
    busy.status = "failing-over".into();
    assert!(
        matches!(decide(&busy, "use1-az2", FailoverSettings::default()), Decision::Skip(why) if why.contains("failing-over"))
    );
    let single = Database {
        kind: Kind::SingleAz,
        members: vec![member("r", "use1-az2", true, 0, "db.t3.micro")],
        ..db.clone()
    };
    assert_eq!(
        decide(&single, "use1-az2", FailoverSettings::default()),
        Decision::Skip(NOT_MOVABLE.into())
    );
    let multi = |standby: &str| Database {
        kind: Kind::MultiAz {
            standby_az: Some(standby.into()),
        },
        members: vec![member("m", "use1-az2", true, 0, "db.m6g.large")],
        ..db.clone()
    };
    match decide(&multi("use1-az4"), "use1-az2", FailoverSettings::default()) {
        Decision::Move(f) => assert!(f.target == Target::RdsInstance && f.to == "m" && f.to_az == "use1-az4"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        decide(&multi("use1-az2"), "use1-az2", FailoverSettings::default()),
        Decision::Skip(_)
    ));
}

#[test]
fn evacuation_journals_the_writer_and_filters_apply() {
    let db = orders(vec![
        member("a", "use1-az2", true, 1, "db.r6g.large"),
        member("b", "use1-az1", false, 1, "db.r6g.large"),
    ]);
    let items = evacuation(
        std::slice::from_ref(&db),
        "use1-az2",
        &BTreeMap::new(),
        &Filters::default(),
    );
    assert_eq!(
        items[0].actions.as_deref(),
        Some(&["writer: a in use1-az2".to_string()][..])
    );
    assert_eq!(items[0].steps, [r#"{"writer":{"id":"a","az_id":"use1-az2"}}"#]);
    let detail: Failover = items[0].target.as_ref().expect("target").detail_as().expect("detail");
    assert_eq!(detail.to, "b");
    let filters = Filters {
        tags: vec![("team".into(), "pay".into())],
        name_prefix: None,
    };
    let items = evacuation(std::slice::from_ref(&db), "use1-az2", &BTreeMap::new(), &filters);
    assert_eq!(items[0].status, Status::Skipped);
    // Moved by an earlier run: listed as already evacuated.
    let moved = orders(vec![
        member("a", "use1-az2", false, 1, "db.r6g.large"),
        member("b", "use1-az1", true, 1, "db.r6g.large"),
    ]);
    let records = BTreeMap::from([(ARN.to_string(), record(&["writer:a@use1-az2"]))]);
    let items = evacuation(&[moved], "use1-az2", &records, &Filters::default());
    assert_eq!(
        items[0].reason.as_deref(),
        Some("already evacuated: writer b in use1-az1")
    );
}

#[test]
fn exposure_lists_writers_in_the_zone_with_their_failover_or_why_not() {
    let movable = orders(vec![
        member("a", "use1-az2", true, 1, "db.r6g.large"),
        member("b", "use1-az1", false, 1, "db.r6g.large"),
    ]);
    let found = exposed(std::slice::from_ref(&movable), "use1-az2");
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].moved_by.as_deref(), Some(TYPE));
    assert_eq!(found[0].in_zone, ["a"]);
    let alone = orders(vec![member("a", "use1-az2", true, 1, "db.r6g.large")]);
    let found = exposed(&[alone], "use1-az2");
    assert!(found[0].not_movable.is_some(), "{found:?}");
    assert!(
        exposed(&[movable], "use1-az1").is_empty(),
        "the writer is not in use1-az1"
    );
}

#[test]
fn recovery_keeps_the_writer_unless_failback_and_fails_back_only_to_an_available_original() {
    let moved = orders(vec![
        member("a", "use1-az2", false, 1, "db.r6g.large"),
        member("b", "use1-az1", true, 1, "db.r6g.large"),
    ]);
    let rec = record(&["writer:a@use1-az2"]);
    let item = recovery(&rec, Some(&moved), false, false);
    assert!(!item.changes_resource());
    assert_eq!(
        item.reason.as_deref(),
        Some("writer b stays in use1-az1; was a in use1-az2")
    );
    let item = recovery(&rec, Some(&moved), true, false);
    assert_eq!(item.status, Status::Planned);
    assert!(item.changes_resource());
    let back: Failover = item.target.as_ref().expect("target").detail_as().expect("detail");
    assert_eq!((back.to.as_str(), back.to_az.as_str()), ("a", "use1-az2"));
    let mut down = moved.clone();
    down.members[0].status = "stopped".into();
    let item = recovery(&rec, Some(&down), true, false);
    assert_eq!(item.status, Status::Skipped);
    assert!(item
        .reason
        .as_deref()
        .unwrap_or_default()
        .contains("journal record kept"));
    let gone = recovery(&rec, None, false, false);
    assert_eq!(gone.status, Status::Skipped);
    assert_eq!(recovery(&rec, None, false, true).status, Status::Planned);
}

/// Regression (issue 15): a Multi-AZ instance's primary is the same instance after the failover,
/// now in its standby's old zone; failback checks the standby's zone, not the instance's.
#[test]
fn a_multi_az_instance_fails_back_when_its_standby_is_in_the_journalled_zone() {
    let moved = |standby: &str| Database {
        kind: Kind::MultiAz {
            standby_az: Some(standby.into()),
        },
        members: vec![member("billing", "use1-az4", true, 0, "db.m6g.large")],
        ..orders(Vec::new())
    };
    let rec = record(&["writer:billing@use1-az2"]);
    let item = recovery(&rec, Some(&moved("use1-az2")), true, false);
    assert_eq!(item.status, Status::Planned, "{:?}", item.reason);
    let back: Failover = item.target.as_ref().expect("target").detail_as().expect("detail");
    assert_eq!(
        (back.to.as_str(), back.to_az.as_str(), back.target),
        ("billing", "use1-az2", Target::RdsInstance)
    );
    let item = recovery(&rec, Some(&moved("use1-az1")), true, false);
    assert_eq!(item.status, Status::Skipped);
}

#[test]
fn a_replication_group_speaks_of_its_primary_and_journals_it() {
    let group = Database {
        kind: Kind::Cache,
        members: vec![
            member("s-001", "use1-az2", true, 0, "cache.r7g.large"),
            member("s-003", "use1-az1", false, 0, "cache.r7g.large"),
            member("s-002", "use1-az4", false, 0, "cache.r7g.large"),
            member("s-004", "use1-az2", false, 0, "cache.r7g.large"),
        ],
        ..orders(Vec::new())
    };
    let items = evacuation(
        std::slice::from_ref(&group),
        "use1-az2",
        &BTreeMap::new(),
        &Filters::default(),
    );
    assert_eq!(
        items[0].actions.as_deref(),
        Some(&["primary: s-001 in use1-az2".to_string()][..])
    );
    assert_eq!(
        items[0].reason.as_deref(),
        Some("fail over primary s-001 (use1-az2) -> s-002 (use1-az4)"),
        "available, outside the zone, then by name"
    );
    let rec = record(&["primary:s-001@use1-az2"]);
    let mut moved = group.clone();
    moved.members[0].writer = false;
    moved.members[2].writer = true;
    let item = recovery(&rec, Some(&moved), false, false);
    assert_eq!(
        item.reason.as_deref(),
        Some("primary s-002 stays in use1-az4; was s-001 in use1-az2")
    );
    let item = recovery(&rec, Some(&moved), true, false);
    let back: Failover = item.target.as_ref().expect("target").detail_as().expect("detail");
    assert!(back.is_cache() && back.to == "s-001");
    assert_eq!(
        item.actions.as_deref(),
        Some(&["fail back primary to s-001 (use1-az2)".to_string()][..])
    );
}

const BOTH: FailoverSettings = FailoverSettings {
    automatic_failover: true,
    multi_az: true,
};
const OFF: FailoverSettings = FailoverSettings {
    automatic_failover: false,
    multi_az: false,
};

/// `guarded`: primary s-001 in use1-az2, replica s-002 in use1-az4, with these settings on.
fn guarded(primary: &str, on: FailoverSettings) -> Database {
    Database {
        kind: Kind::Cache,
        members: vec![
            member("s-001", "use1-az2", primary == "s-001", 0, "cache.r7g.large"),
            member("s-002", "use1-az4", primary == "s-002", 0, "cache.r7g.large"),
        ],
        failover_settings: on,
        identity: None,
        ..orders(Vec::new())
    }
}

fn planned(db: &Database, records: &BTreeMap<String, Record>) -> (Item, Failover) {
    let items = evacuation(std::slice::from_ref(db), "use1-az2", records, &Filters::default());
    let item = items.into_iter().next().expect("a line");
    assert_eq!(item.status, Status::Planned, "{:?}", item.reason);
    let failover = item.target.as_ref().expect("target").detail_as().expect("detail");
    (item, failover)
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[test]
fn issue_15_a_group_with_automatic_failover_on_is_moved_in_three_journalled_steps() {
    let (item, failover) = planned(&guarded("s-001", BOTH), &BTreeMap::new());
    assert_eq!(
        item.actions.as_deref(),
        Some(
            &strings(&[
                "primary: s-001 in use1-az2",
                "turned off: automatic failover",
                "turned off: Multi-AZ"
            ])[..]
        )
    );
    assert_eq!(
        item.reason.as_deref(),
        Some(
            "turn off Multi-AZ/automatic failover, fail over primary s-001 (use1-az2) -> s-002 (use1-az4), \
             turn them back on"
        )
    );
    assert_eq!(
        (failover.turn_off, failover.turn_on, failover.to.as_str()),
        (BOTH, BOTH, "s-002")
    );
    // Automatic failover on, Multi-AZ off: only what was on is journalled and turned on again.
    let only = FailoverSettings {
        automatic_failover: true,
        multi_az: false,
    };
    let (item, failover) = planned(&guarded("s-001", only), &BTreeMap::new());
    assert_eq!(
        item.actions.as_deref(),
        Some(&strings(&["primary: s-001 in use1-az2", "turned off: automatic failover"])[..])
    );
    assert!(
        item.reason
            .as_deref()
            .unwrap_or_default()
            .starts_with("turn off automatic failover, ")
            && item
                .reason
                .as_deref()
                .unwrap_or_default()
                .ends_with(", turn it back on"),
        "{:?}",
        item.reason
    );
    assert_eq!(failover.turn_on, only);
    // The settings as read now, nothing journalled: not what ElastiCache would refuse any more.
    let mut busy = guarded("s-001", BOTH);
    busy.status = "modifying".into();
    assert!(matches!(decide(&busy, "use1-az2", OFF), Decision::Skip(why) if why.contains("modifying")));
}

#[test]
fn issue_15_a_run_killed_after_turning_automatic_failover_off_promotes_then_turns_it_on() {
    let records = BTreeMap::from([(
        ARN.to_string(),
        record(&[
            "primary:s-001@use1-az2",
            "turned-off:automatic-failover",
            "turned-off:multi-az",
        ]),
    )]);
    let (item, failover) = planned(&guarded("s-001", OFF), &records);
    assert_eq!(
        (failover.turn_off, failover.turn_on),
        (OFF, BOTH),
        "what goes back on comes from the record"
    );
    assert_eq!(
        item.reason.as_deref(),
        Some("fail over primary s-001 (use1-az2) -> s-002 (use1-az4), turn Multi-AZ/automatic failover back on")
    );
    // The same decision under the lock, from the record as held.
    match decide(
        &guarded("s-001", OFF),
        "use1-az2",
        FailoverSettings::journalled(&records[ARN].actions_as::<Action>().expect("actions")),
    ) {
        Decision::Move(f) => assert_eq!(f, failover),
        other => panic!("{other:?}"),
    }
}

#[test]
fn issue_15_a_run_killed_after_the_promotion_turns_automatic_failover_back_on() {
    let journalled = [
        "primary:s-001@use1-az2",
        "turned-off:automatic-failover",
        "turned-off:multi-az",
    ];
    let records = BTreeMap::from([(ARN.to_string(), record(&journalled))]);
    let (item, failover) = planned(&guarded("s-002", OFF), &records);
    assert!(failover.restores_only() && failover.to == "s-002", "{failover:?}");
    assert_eq!(
        item.actions.as_deref(),
        Some(&strings(&["turned off: automatic failover", "turned off: Multi-AZ"])[..]),
        "the record's markers, no primary of its own"
    );
    assert_eq!(
        item.reason.as_deref(),
        Some("turn Multi-AZ/automatic failover back on (azevac turned them off; primary s-002 is in use1-az4)")
    );
    // On again (the sequence finished), or never turned off by azevac: already evacuated.
    let items = evacuation(&[guarded("s-002", BOTH)], "use1-az2", &records, &Filters::default());
    assert_eq!(
        items[0].reason.as_deref(),
        Some("already evacuated: primary s-002 in use1-az4")
    );
    let plain = BTreeMap::from([(ARN.to_string(), record(&journalled[..1]))]);
    let items = evacuation(&[guarded("s-002", OFF)], "use1-az2", &plain, &Filters::default());
    assert_eq!(items[0].status, Status::Skipped);
    let mut busy = guarded("s-002", OFF);
    busy.status = "modifying".into();
    let items = evacuation(&[busy], "use1-az2", &records, &Filters::default());
    // Settings azevac left off are never a silent skip (review B3): the line fails.
    assert_eq!(items[0].status, Status::Failed);
    assert!(
        items[0]
            .reason
            .as_deref()
            .unwrap_or_default()
            .contains("run again once it is"),
        "{:?}",
        items[0].reason
    );
}

#[test]
fn issue_15_recover_turns_back_on_what_azevac_turned_off_before_the_record_goes() {
    let rec = record(&[
        "primary:s-001@use1-az2",
        "turned-off:automatic-failover",
        "turned-off:multi-az",
    ]);
    for (primary, failback) in [("s-002", false), ("s-001", false), ("s-001", true)] {
        let item = recovery(&rec, Some(&guarded(primary, OFF)), failback, false);
        assert_eq!(item.status, Status::Planned, "{:?}", item.reason);
        assert_eq!(
            item.actions.as_deref(),
            Some(&strings(&["turn Multi-AZ/automatic failover back on"])[..])
        );
        let back: Failover = item.target.as_ref().expect("target").detail_as().expect("detail");
        assert!(
            back.restores_only() && back.to == primary && back.turn_on == BOTH,
            "{back:?}"
        );
        assert!(!fails_back(&item));
    }
    // On again: only the record goes.
    let item = recovery(&rec, Some(&guarded("s-002", BOTH)), false, false);
    assert!(!item.changes_resource());
    // A failback that cannot happen still turns them back on.
    let mut down = guarded("s-002", OFF);
    down.members[0].status = "rebooting".into();
    let item = recovery(&rec, Some(&down), true, false);
    assert!(item.changes_resource());
    assert!(
        item.reason
            .as_deref()
            .unwrap_or_default()
            .starts_with("no failback: s-001 is rebooting"),
        "{:?}",
        item.reason
    );
    // A group that is not available: kept for a later run.
    let mut busy = guarded("s-002", OFF);
    busy.status = "modifying".into();
    let item = recovery(&rec, Some(&busy), false, false);
    assert_eq!(item.status, Status::Skipped);
    assert!(item
        .reason
        .as_deref()
        .unwrap_or_default()
        .ends_with("journal record kept"));
}

#[test]
fn issue_15_failback_of_a_group_with_automatic_failover_on_is_the_sequence_in_reverse() {
    let rec = record(&[
        "primary:s-001@use1-az2",
        "turned-off:automatic-failover",
        "turned-off:multi-az",
    ]);
    let item = recovery(&rec, Some(&guarded("s-002", BOTH)), true, false);
    assert_eq!(item.status, Status::Planned, "{:?}", item.reason);
    assert_eq!(
        item.actions.as_deref(),
        Some(
            &strings(&[
                "turn off Multi-AZ/automatic failover",
                "fail back primary to s-001 (use1-az2)",
                "turn Multi-AZ/automatic failover back on"
            ])[..]
        )
    );
    let back: Failover = item.target.as_ref().expect("target").detail_as().expect("detail");
    assert_eq!((back.to.as_str(), back.turn_off, back.turn_on), ("s-001", BOTH, BOTH));
    assert!(fails_back(&item));
    // Killed after turning them off: the promotion and the turning on are left.
    let item = recovery(&rec, Some(&guarded("s-002", OFF)), true, false);
    let back: Failover = item.target.as_ref().expect("target").detail_as().expect("detail");
    assert_eq!((back.to.as_str(), back.turn_off, back.turn_on), ("s-001", OFF, BOTH));
    // On now, but the record does not say so: an interrupted failback could not be finished.
    let plain = record(&["primary:s-001@use1-az2"]);
    let item = recovery(&plain, Some(&guarded("s-002", BOTH)), true, false);
    assert_eq!(item.status, Status::Skipped);
    assert!(
        item.reason
            .as_deref()
            .unwrap_or_default()
            .contains("does not say it was on"),
        "{:?}",
        item.reason
    );
}

#[test]
fn a_failover_of_before_the_sequence_parses_with_nothing_to_turn_on() {
    let old = serde_json::json!({"id": "s", "target": "cache_group", "from": "a", "from_az": "use1-az2",
        "to": "b", "to_az": "use1-az4"});
    let failover: Failover = serde_json::from_value(old).expect("parses");
    assert_eq!((failover.turn_off, failover.turn_on), (OFF, OFF));
    assert_eq!(failover.describe(), "fail over primary a (use1-az2) -> b (use1-az4)");
}

#[test]
fn what_azevac_turned_off_round_trips_through_the_journal_actions() {
    let only = FailoverSettings {
        automatic_failover: true,
        multi_az: false,
    };
    let both = FailoverSettings {
        automatic_failover: true,
        multi_az: true,
    };
    let off = |setting| Action::TurnedOff { setting };
    assert_eq!(only.actions(), [off(actions::Setting::AutomaticFailover)]);
    assert_eq!(
        both.actions(),
        [off(actions::Setting::AutomaticFailover), off(actions::Setting::MultiAz)]
    );
    assert!(FailoverSettings::default().actions().is_empty());
    let record = record(&["primary:s-001@use1-az2", "turned-off:automatic-failover"]);
    let journalled = record.actions_as::<Action>().expect("old strings");
    assert_eq!(FailoverSettings::journalled(&journalled), only);
    assert_eq!(FailoverSettings::journalled(&[]), FailoverSettings::default());
    for settings in [only, both] {
        assert_eq!(FailoverSettings::journalled(&settings.actions()), settings);
    }
    assert!(both.covers(only) && !only.covers(both) && only.covers(FailoverSettings::default()));
    assert_eq!(only.union(both), both);
    assert_eq!(
        (only.words(), both.words(), both.them()),
        ("automatic failover", "Multi-AZ/automatic failover", "them")
    );
}

mod sdk {
    //! Paging, the wait for the new writer, and the service's refusal, against aws-smithy-mocks.
    use super::*;
    use aws_sdk_rds::operation::describe_db_clusters::DescribeDbClustersOutput;
    use aws_sdk_rds::operation::describe_db_instances::DescribeDbInstancesOutput;
    use aws_sdk_rds::operation::failover_db_cluster::FailoverDBClusterError;
    use aws_sdk_rds::types::error::InvalidDbClusterStateFault;
    use aws_sdk_rds::types::{DbCluster, DbClusterMember, DbInstance};
    use aws_smithy_mocks::{mock, mock_client, RuleMode};

    fn zones() -> Zones {
        Zones::new(
            "us-east-1",
            vec![
                crate::model::topology::Zone {
                    id: "use1-az2".into(),
                    name: "us-east-1c".into(),
                },
                crate::model::topology::Zone {
                    id: "use1-az1".into(),
                    name: "us-east-1b".into(),
                },
            ],
        )
    }

    fn cluster(writer: &str, status: &str) -> DbCluster {
        DbCluster::builder()
            .db_cluster_arn(ARN)
            .db_cluster_identifier("orders")
            .status(status)
            .db_cluster_members(
                DbClusterMember::builder()
                    .db_instance_identifier("a")
                    .is_cluster_writer(writer == "a")
                    .promotion_tier(1)
                    .build(),
            )
            .db_cluster_members(
                DbClusterMember::builder()
                    .db_instance_identifier("b")
                    .is_cluster_writer(writer == "b")
                    .promotion_tier(1)
                    .build(),
            )
            .build()
    }

    fn instance(id: &str, az: &str) -> DbInstance {
        DbInstance::builder()
            .db_instance_identifier(id)
            .db_cluster_identifier("orders")
            .db_instance_class("db.r6g.large")
            .db_instance_status("available")
            .availability_zone(az)
            .build()
    }

    fn instances() -> DescribeDbInstancesOutput {
        DescribeDbInstancesOutput::builder()
            .db_instances(instance("a", "us-east-1c"))
            .db_instances(instance("b", "us-east-1b"))
            .build()
    }

    #[tokio::test]
    async fn clusters_are_read_across_pages_with_zone_ids() {
        let page1 = mock!(aws_sdk_rds::Client::describe_db_clusters)
            .match_requests(|r| r.marker().is_none())
            .then_output(|| {
                DescribeDbClustersOutput::builder()
                    .db_clusters(cluster("a", "available"))
                    .marker("m2")
                    .build()
            });
        let page2 = mock!(aws_sdk_rds::Client::describe_db_clusters)
            .match_requests(|r| r.marker() == Some("m2"))
            .then_output(|| DescribeDbClustersOutput::builder().build());
        let dbs = mock!(aws_sdk_rds::Client::describe_db_instances).then_output(instances);
        let client = mock_client!(aws_sdk_rds, RuleMode::MatchAny, [&page1, &page2, &dbs]);
        let found = Rds::from_client(client, Duration::from_millis(1))
            .databases(&zones())
            .await
            .expect("databases");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].writer().and_then(|w| w.az_id.as_deref()), Some("use1-az2"));
        assert_eq!(found[0].members[1].az_id.as_deref(), Some("use1-az1"));
        assert_eq!((page1.num_calls(), page2.num_calls()), (1, 1));
    }

    #[tokio::test]
    async fn a_failover_in_progress_is_refused_with_the_services_words() {
        let refused = mock!(aws_sdk_rds::Client::failover_db_cluster)
            .match_requests(|r| {
                r.db_cluster_identifier() == Some("orders") && r.target_db_instance_identifier() == Some("b")
            })
            .then_error(|| {
                FailoverDBClusterError::InvalidDbClusterStateFault(
                    InvalidDbClusterStateFault::builder()
                        .message("Cluster orders is failing-over")
                        .build(),
                )
            });
        let client = mock_client!(aws_sdk_rds, RuleMode::MatchAny, [&refused]);
        let failover = Failover {
            id: "orders".into(),
            target: Target::RdsCluster,
            from: "a".into(),
            from_az: "use1-az2".into(),
            to: "b".into(),
            to_az: "use1-az1".into(),
            turn_off: FailoverSettings::default(),
            turn_on: FailoverSettings::default(),
        };
        let err = Rds::from_client(client, Duration::from_millis(1))
            .start(&failover)
            .await
            .expect_err("refused");
        let text = crate::error::describe(&err);
        assert!(
            text.contains("FailoverDBCluster") && text.contains("failing-over"),
            "{text}"
        );
    }
}

fn guarded_failover(from: &str, to: &str, turn_off: FailoverSettings, turn_on: FailoverSettings) -> Failover {
    let az = |id: &str| if id == "s-001" { "use1-az2" } else { "use1-az4" };
    Failover {
        id: "orders".into(),
        target: Target::CacheGroup,
        from: from.into(),
        from_az: az(from).into(),
        to: to.into(),
        to_az: az(to).into(),
        turn_off,
        turn_on,
    }
}

#[test]
fn review_b1_a_promotion_never_turns_off_what_it_did_not_plan_to() {
    // A failback planned while everything was off; the operator turned both on since.
    let planned_off = guarded_failover("s-002", "s-001", OFF, OFF);
    let why = cache_steps(&planned_off, &guarded("s-002", BOTH)).expect_err("must not act");
    assert!(
        why.contains("changed since the plan (Multi-AZ/automatic failover is now on); nothing changed"),
        "{why}"
    );
    // Planned as on: turned off, promoted, and what was on at the act read goes back on, even
    // when the line's own turn_on says less.
    let planned_on = guarded_failover("s-002", "s-001", BOTH, OFF);
    assert_eq!(
        cache_steps(&planned_on, &guarded("s-002", BOTH)),
        Ok(CacheSteps {
            turn_off: BOTH,
            promote: true,
            turn_on: BOTH
        })
    );
    // Only automatic failover planned, Multi-AZ turned on since: refused too.
    let af = FailoverSettings {
        automatic_failover: true,
        multi_az: false,
    };
    let planned_af = guarded_failover("s-002", "s-001", af, af);
    assert!(cache_steps(&planned_af, &guarded("s-002", BOTH)).is_err());
    assert_eq!(
        cache_steps(&planned_af, &guarded("s-002", af)).map(|s| (s.turn_off, s.turn_on)),
        Ok((af, af))
    );
}

#[test]
fn review_b2_a_restores_only_line_never_promotes() {
    let restore = guarded_failover("s-001", "s-001", OFF, BOTH);
    let only_on = Ok(CacheSteps {
        turn_off: OFF,
        promote: false,
        turn_on: BOTH,
    });
    // The operator promoted s-002 by hand since the plan: it stays the primary.
    assert_eq!(cache_steps(&restore, &guarded("s-002", OFF)), only_on);
    assert_eq!(cache_steps(&restore, &guarded("s-001", OFF)), only_on);
    // No primary reported: never `PrimaryClusterId=none`.
    let mut headless = guarded("s-001", OFF);
    headless.members.iter_mut().for_each(|m| m.writer = false);
    assert_eq!(cache_steps(&restore, &headless), only_on);
    // Not available: nothing called.
    let mut busy = guarded("s-002", OFF);
    busy.status = "modifying".into();
    assert!(cache_steps(&restore, &busy).is_err_and(|why| why.contains("modifying")));
}

const MARKED: [&str; 3] = [
    "primary:s-001@use1-az2",
    "turned-off:automatic-failover",
    "turned-off:multi-az",
];

#[test]
fn review_b3_settings_azevac_left_off_go_back_on_when_the_primary_cannot_move() {
    let records = BTreeMap::from([(ARN.to_string(), record(&MARKED))]);
    // Killed after step 1; now the replica outside the zone is not available.
    let mut stuck = guarded("s-001", OFF);
    stuck.members[1].status = "rebooting".into();
    let (item, failover) = planned(&stuck, &records);
    assert!(failover.restores_only() && failover.to == "s-001", "{failover:?}");
    assert_eq!((failover.turn_off, failover.turn_on), (OFF, BOTH));
    let reason = item.reason.as_deref().unwrap_or_default();
    assert!(
        reason.starts_with("turn Multi-AZ/automatic failover back on")
            && reason.contains("no available replica outside use1-az2"),
        "{reason}"
    );
    // No primary reported: turned back on too.
    let mut headless = guarded("s-001", OFF);
    headless.members.iter_mut().for_each(|m| m.writer = false);
    let (item, failover) = planned(&headless, &records);
    assert!(failover.restores_only(), "{failover:?}");
    assert!(item
        .reason
        .as_deref()
        .unwrap_or_default()
        .contains("reports no writer/primary"));
    // Not available: the line fails (exit 1), saying the settings are off.
    let mut busy = guarded("s-001", OFF);
    busy.status = "modifying".into();
    let items = evacuation(std::slice::from_ref(&busy), "use1-az2", &records, &Filters::default());
    assert_eq!(items[0].status, Status::Failed, "{:?}", items[0].reason);
    assert!(items[0]
        .reason
        .as_deref()
        .unwrap_or_default()
        .starts_with("Multi-AZ/automatic failover is off (azevac turned them off)"));
    assert!(matches!(decide(&busy, "use1-az2", BOTH), Decision::Fail(_)));
    // Filtered out: still a skip, which says what azevac left off.
    let filters = Filters {
        name_prefix: Some("other".into()),
        ..Filters::default()
    };
    let items = evacuation(std::slice::from_ref(&stuck), "use1-az2", &records, &filters);
    assert_eq!(items[0].status, Status::Skipped);
    assert!(
        items[0]
            .reason
            .as_deref()
            .unwrap_or_default()
            .contains("azevac's earlier run left Multi-AZ/automatic failover off"),
        "{:?}",
        items[0].reason
    );
    // Without markers nothing changes: a skip.
    assert!(matches!(decide(&stuck, "use1-az2", OFF), Decision::Skip(_)));
}

/// Issue 32: an action this version does not know fails the line that reads it, nothing changed
/// and the record kept; a record in this version's format reads like the old one.
#[test]
fn issue_32_a_record_that_does_not_parse_fails_its_line() {
    let moved = orders(vec![
        member("a", "use1-az2", false, 1, "db.r6g.large"),
        member("b", "use1-az1", true, 1, "db.r6g.large"),
    ]);
    let unknown = record(&["writer:a@use1-az2", r#"{"evict":{"pod":"p"}}"#]);
    for failback in [false, true] {
        let item = recovery(&unknown, Some(&moved), failback, false);
        assert_eq!(item.status, Status::Failed, "{:?}", item.reason);
        assert!(!item.changes_resource() && item.target.is_none());
        let why = item.reason.as_deref().unwrap_or_default();
        assert!(
            why.contains("not one this azevac knows") && why.ends_with("journal record kept"),
            "{why}"
        );
    }
    let records = BTreeMap::from([(ARN.to_string(), unknown)]);
    let items = evacuation(std::slice::from_ref(&moved), "use1-az2", &records, &Filters::default());
    assert_eq!(items[0].status, Status::Failed, "{:?}", items[0].reason);
    assert!(items[0].steps.is_empty());

    let typed = crate::model::action::encode(&[Action::Writer {
        id: "a".into(),
        az_id: "use1-az2".into(),
    }]);
    let current = record(&typed.iter().map(String::as_str).collect::<Vec<_>>());
    let item = recovery(&current, Some(&moved), true, false);
    assert_eq!(item.status, Status::Planned, "{:?}", item.reason);
    let back: Failover = item.target.as_ref().expect("target").detail_as().expect("detail");
    assert_eq!((back.to.as_str(), back.target), ("a", Target::RdsCluster));
}

/// Issue 50: a database deleted and created again under the same identifier (its ARN the same)
/// is not the one azevac failed over: its record is reported and kept, nothing is planned on it;
/// the same database, and a record written before identities were kept, fail back as before.
#[test]
fn issue_50_a_recreated_database_is_reported_and_kept_not_failed_back() {
    use crate::model::Identity;
    let moved = |identity: Option<Identity>| Database {
        kind: Kind::MultiAz {
            standby_az: Some("use1-az2".into()),
        },
        members: vec![member("billing", "use1-az4", true, 0, "db.m6g.large")],
        identity,
        ..orders(Vec::new())
    };
    let mut rec = record(&["writer:billing@use1-az2"]);
    rec.identity = Identity::aws("db-OLD", Some("2026-03-01T10:00:00Z".into()));
    let item = recovery(&rec, Some(&moved(Identity::aws("db-NEW", None))), true, false);
    assert_eq!(item.status, Status::Skipped);
    assert!(item.unfinished && item.target.is_none());
    let why = item.reason.as_deref().unwrap_or_default();
    assert!(
        why.contains("re-created since azevac changed it (uid db-OLD, created 2026-03-01T10:00:00Z; now uid db-NEW)"),
        "{why}"
    );
    let forgotten = recovery(&rec, Some(&moved(Identity::aws("db-NEW", None))), true, true);
    assert_eq!(forgotten.status, Status::Planned);
    assert!(forgotten.target.is_none());
    for live in [Identity::aws("db-OLD", None), None] {
        let item = recovery(&rec, Some(&moved(live)), true, false);
        assert_eq!(item.status, Status::Planned, "{:?}", item.reason);
        assert!(item.target.is_some());
    }
    rec.identity = None;
    let item = recovery(&rec, Some(&moved(Identity::aws("db-NEW", None))), true, false);
    assert_eq!(item.status, Status::Planned, "{:?}", item.reason);
}
