//! Unit tests of the node decisions ([`super::decide`]).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Node;
use serde_json::json;

use super::*;
use crate::model::topology::{Zone, Zones};
use crate::model::{State, Status};
use crate::plugins::kube::ZONE_ID_LABEL;

fn zones() -> Zones {
    Zones::new(
        "us-east-1",
        vec![
            Zone {
                id: "use1-az1".into(),
                name: "us-east-1b".into(),
            },
            Zone {
                id: "use1-az2".into(),
                name: "us-east-1c".into(),
            },
        ],
    )
}

fn node(name: &str, labels: &[(&str, &str)], ready: bool) -> Node {
    serde_json::from_value(json!({
        "metadata": { "name": name, "labels": labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>() },
        "spec": {},
        "status": { "conditions": [{ "type": "Ready", "status": if ready { "True" } else { "False" } }] }
    }))
    .expect("node")
}

fn record(actions: &[&str]) -> Record {
    Record {
        az_id: "use1-az2".into(),
        resource: "prod/a".into(),
        resource_type: TYPE.into(),
        removed_subnets: vec![],
        state: State::Done,
        version: 1,
        resource_name: None,
        original_subnets: vec![],
        actions: actions.iter().map(|a| a.to_string()).collect(),
        run_id: None,
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
fn the_last_schedulable_zone_is_never_evacuated() {
    let nodes = vec![
        node("a", &[(ZONE_ID_LABEL, "use1-az2")], true),
        node("b", &[(ZONE_ID_LABEL, "use1-az1")], false), // not Ready: does not count
    ];
    let items = evacuation("prod", &nodes, "use1-az2", &zones(), Mode::Noexecute, &BTreeMap::new());
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].status, Status::Skipped);
    assert!(items[0].steps.is_empty());
    assert!(items[0]
        .reason
        .as_deref()
        .unwrap_or_default()
        .contains("last schedulable zone"));
}

#[test]
fn modes_plan_their_actions() {
    let nodes = vec![
        node("a", &[(ZONE_ID_LABEL, "use1-az2")], true),
        node("b", &[(ZONE_ID_LABEL, "use1-az1")], true),
    ];
    let plan = |mode| evacuation("prod", &nodes, "use1-az2", &zones(), mode, &BTreeMap::new()).remove(0);
    let shown = |mode| plan(mode).actions.unwrap_or_default();
    assert_eq!(shown(Mode::Noexecute), ["taint:azevac.io/evacuated=use1-az2:NoExecute"]);
    assert_eq!(
        shown(Mode::Noschedule),
        ["taint:azevac.io/evacuated=use1-az2:NoSchedule", "cordon"]
    );
    assert_eq!(shown(Mode::Drain), ["cordon"]);
    // What the engine journals ahead: the typed actions.
    assert_eq!(
        plan(Mode::Noschedule).steps,
        encode(&[Action::taint("use1-az2", "NoSchedule"), Action::Cordon])
    );
}

#[test]
fn a_record_in_either_format_says_what_azevac_cordoned() {
    let cordoned = {
        let mut n = node("a", &[(ZONE_ID_LABEL, "use1-az2")], true);
        n.spec.get_or_insert_with(Default::default).unschedulable = Some(true);
        n
    };
    let nodes = vec![cordoned, node("b", &[(ZONE_ID_LABEL, "use1-az1")], true)];
    for actions in [
        vec!["cordon"],
        encode(&[Action::Cordon]).iter().map(String::as_str).collect(),
    ] {
        let records = BTreeMap::from([("prod/a".to_owned(), record(&actions))]);
        let items = evacuation("prod", &nodes, "use1-az2", &zones(), Mode::Drain, &records);
        assert_eq!(items[0].status, Status::Skipped, "{actions:?}");
        assert!(items[0]
            .reason
            .as_deref()
            .unwrap_or_default()
            .contains("cordoned by azevac"));
    }
    // A record this version cannot read fails the node's line: nothing is planned on a guess.
    let records = BTreeMap::from([("prod/a".to_owned(), record(&["uncordon"]))]);
    let items = evacuation("prod", &nodes, "use1-az2", &zones(), Mode::Drain, &records);
    assert_eq!(items[0].status, Status::Failed);
    assert!(items[0].steps.is_empty());
}

#[test]
fn recovery_undoes_what_is_in_place_and_keeps_a_vanished_nodes_record() {
    let mut tainted = node("a", &[(ZONE_ID_LABEL, "use1-az2")], true);
    tainted.spec = Some(
        serde_json::from_value(json!({
            "unschedulable": true,
            "taints": [{ "key": TAINT_KEY, "value": "use1-az2", "effect": "NoSchedule" }]
        }))
        .expect("spec"),
    );
    for actions in [
        vec!["taint:azevac.io/evacuated=use1-az2:NoSchedule", "cordon"],
        encode(&[Action::taint("use1-az2", "NoSchedule"), Action::Cordon])
            .iter()
            .map(String::as_str)
            .collect(),
    ] {
        let item = recovery(&record(&actions), Some(&tainted), false);
        assert_eq!(item.status, Status::Planned);
        assert_eq!(
            item.actions.unwrap_or_default(),
            ["untaint:azevac.io/evacuated=use1-az2:NoSchedule", "uncordon"]
        );
    }

    let gone = recovery(&record(&["cordon"]), None, false);
    assert_eq!(gone.status, Status::Skipped);
    assert!(gone.unfinished, "kept for the operator to decide on");
    assert!(gone
        .reason
        .unwrap_or_default()
        .contains("node no longer exists: journal record kept"));
    let forgotten = recovery(&record(&["cordon"]), None, true);
    assert_eq!(forgotten.status, Status::Planned);
    assert!(!forgotten.changes_resource(), "nothing to undo: the record goes");

    let unknown = recovery(&record(&[r#"{"evict":{"pod":"p"}}"#]), Some(&tainted), false);
    assert_eq!(unknown.status, Status::Failed);
    assert!(unknown
        .reason
        .as_deref()
        .unwrap_or_default()
        .contains("not one this azevac knows"));
    assert!(!unknown.changes_resource());
}
