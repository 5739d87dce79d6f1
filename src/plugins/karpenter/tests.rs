//! Unit tests of the NodePool decisions ([`super::requirements`], [`super::decide`]).

use serde_json::json;

use super::decide::gitops;
use super::*;
use crate::model::topology::Zone;
use crate::plugins::kube::{ZONE_ID_LABEL, ZONE_NAME_LABEL};

fn zones() -> Vec<Zone> {
    [
        ("use1-az1", "us-east-1b"),
        ("use1-az2", "us-east-1c"),
        ("use1-az4", "us-east-1d"),
    ]
    .iter()
    .map(|(id, name)| Zone {
        id: (*id).into(),
        name: (*name).into(),
    })
    .collect()
}

fn req(key: &str, operator: &str, values: &[&str]) -> Requirement {
    Requirement {
        key: key.into(),
        operator: operator.into(),
        values: values.iter().map(|v| (*v).to_owned()).collect(),
        min_values: None,
    }
}

fn az2() -> Zone {
    zones()[1].clone()
}

#[test]
fn a_nodepool_without_a_zone_requirement_gets_one_of_azevacs_own() {
    let reqs = [req("karpenter.sh/capacity-type", "In", &["spot"])];
    assert_eq!(
        exclusion(&reqs, &az2(), &zones()),
        Exclusion::Change(Action::Appended {
            key: ZONE_ID_LABEL.into(),
            value: "use1-az2".into()
        })
    );
}

#[test]
fn a_nodepool_speaking_in_zone_names_is_merged_with() {
    let within = [req(ZONE_NAME_LABEL, "In", &["us-east-1b", "us-east-1c", "us-east-1d"])];
    assert_eq!(
        exclusion(&within, &az2(), &zones()),
        Exclusion::Change(Action::TakenFromIn {
            key: ZONE_NAME_LABEL.into(),
            value: "us-east-1c".into(),
            at: 1
        })
    );
    let outside = [req(ZONE_NAME_LABEL, "NotIn", &["us-east-1b"])];
    assert_eq!(
        exclusion(&outside, &az2(), &zones()),
        Exclusion::Change(Action::AddedToNotIn {
            key: ZONE_NAME_LABEL.into(),
            value: "us-east-1c".into()
        })
    );
}

#[test]
fn the_only_zone_is_refused_and_an_excluded_one_needs_nothing() {
    let only = [req(ZONE_ID_LABEL, "In", &["use1-az2"])];
    assert!(matches!(exclusion(&only, &az2(), &zones()), Exclusion::Refused(why) if why.contains("no zone")));
    let elsewhere = [req(ZONE_ID_LABEL, "In", &["use1-az1", "use1-az4"])];
    assert_eq!(exclusion(&elsewhere, &az2(), &zones()), Exclusion::Excluded);
    let mut min = req(ZONE_ID_LABEL, "In", &["use1-az1", "use1-az2"]);
    min.min_values = Some(2);
    assert!(matches!(exclusion(&[min], &az2(), &zones()), Exclusion::Refused(why) if why.contains("minValues")));
}

#[test]
fn revert_takes_out_only_what_was_added() {
    let original = vec![
        json!({ "key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"] }),
        json!({ "key": ZONE_NAME_LABEL, "operator": "NotIn", "values": ["us-east-1b"], "minValues": null }),
    ];
    for change in [
        Action::Appended {
            key: ZONE_ID_LABEL.into(),
            value: "use1-az2".into(),
        },
        Action::AddedToNotIn {
            key: ZONE_NAME_LABEL.into(),
            value: "us-east-1c".into(),
        },
    ] {
        let mut raw = original.clone();
        assert!(apply(&change, &mut raw));
        assert_ne!(raw, original);
        assert!(revert(&change, &mut raw));
        assert_eq!(raw, original, "{change:?}");
        assert!(!revert(&change, &mut raw), "a second revert finds nothing");
    }
    // An operator's later value on azevac's requirement stays.
    let change = Action::Appended {
        key: ZONE_ID_LABEL.into(),
        value: "use1-az2".into(),
    };
    let mut raw = original.clone();
    apply(&change, &mut raw);
    raw[2]["values"] = json!(["use1-az2", "use1-az4"]);
    assert!(revert(&change, &mut raw));
    assert_eq!(raw[2]["values"], json!(["use1-az4"]));
}

#[test]
fn an_in_list_gets_the_zone_back() {
    let change = Action::TakenFromIn {
        key: ZONE_ID_LABEL.into(),
        value: "use1-az2".into(),
        at: 1,
    };
    let original =
        vec![json!({ "key": ZONE_ID_LABEL, "operator": "In", "values": ["use1-az1", "use1-az2", "use1-az4"] })];
    let mut raw = original.clone();
    assert!(apply(&change, &mut raw));
    assert_eq!(raw[0]["values"], json!(["use1-az1", "use1-az4"]));
    assert!(revert(&change, &mut raw));
    assert_eq!(raw, original, "back in its place");
}

#[test]
fn gitops_marks_are_named() {
    let mut meta = ::kube::api::ObjectMeta::default();
    assert_eq!(gitops(&meta), None);
    meta.annotations = Some(
        [(
            "argocd.argoproj.io/tracking-id".to_owned(),
            "karpenter:karpenter.sh/NodePool:/general".to_owned(),
        )]
        .into(),
    );
    assert!(gitops(&meta).unwrap_or_default().contains("Argo CD"));
    meta.annotations = None;
    meta.labels = Some([("kustomize.toolkit.fluxcd.io/name".to_owned(), "infra".to_owned())].into());
    assert!(gitops(&meta).unwrap_or_default().contains("Flux"));
}

fn record(resource: &str, actions: &[&str]) -> crate::model::Record {
    crate::model::Record {
        az_id: "use1-az2".into(),
        resource: resource.into(),
        resource_type: TYPE.into(),
        removed_subnets: vec![],
        state: crate::model::State::Done,
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
fn recovery_reads_both_formats_keeps_a_vanished_record_and_fails_on_an_unknown_action() {
    use crate::model::Status;
    let change = Action::Appended {
        key: ZONE_ID_LABEL.into(),
        value: "use1-az2".into(),
    };
    let mut raw = vec![json!({ "key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"] })];
    apply(&change, &mut raw);
    let pool = json!({ "metadata": { "uid": "u1" }, "spec": { "template": { "spec": { "requirements": raw } } } });
    let encoded = crate::model::action::encode(&[change]);
    for actions in [
        vec!["requirement:topology.k8s.aws/zone-id NotIn use1-az2"],
        vec![encoded[0].as_str()],
    ] {
        let item = recovery(&record("prod/nodepool/p", &actions), Some(&pool), false);
        assert_eq!(item.status, Status::Planned, "{actions:?}");
        assert_eq!(
            item.actions.unwrap_or_default(),
            ["revert requirement:topology.k8s.aws/zone-id NotIn use1-az2"]
        );
    }

    let gone = recovery(&record("prod/nodepool/p", &[encoded[0].as_str()]), None, false);
    assert_eq!(gone.status, Status::Skipped);
    assert!(gone.unfinished, "kept for the operator to decide on");
    assert!(gone
        .reason
        .unwrap_or_default()
        .contains("NodePool no longer exists: journal record kept"));
    let forgotten = recovery(
        &record("prod/node/n", &["annotate:karpenter.sh/do-not-disrupt=true"]),
        None,
        true,
    );
    assert_eq!(forgotten.status, Status::Planned);
    assert!(!forgotten.changes_resource(), "nothing to undo: the record goes");

    let unknown = recovery(&record("prod/nodepool/p", &["taint:x"]), Some(&pool), false);
    assert_eq!(unknown.status, Status::Failed);
    assert!(!unknown.changes_resource(), "nothing is changed on a guess");
}

/// A NodePool as the API server lists it, named `name`, with these labels and NodeClass.
fn pool(name: &str, labels: serde_json::Value, class: (&str, &str, &str)) -> ::kube::api::DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": { "name": name, "uid": format!("uid-{name}"), "labels": labels },
        "spec": { "template": { "spec": {
            "nodeClassRef": { "group": class.0, "kind": class.1, "name": class.2 },
            "requirements": [{ "key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"] }]
        } } }
    }))
    .expect("a NodePool")
}

/// Issue 50: EKS Auto Mode's built-in NodePools are EKS's (a change is undone within minutes):
/// they are skipped with the reason and what works instead; NodePools of one's own, on Auto Mode's
/// NodeClass or not, and a self-managed NodePool that only shares a built-in name, are planned.
#[test]
fn issue_50_eks_auto_modes_built_in_nodepools_are_skipped_with_what_works() {
    use crate::model::Status;
    use crate::plugins::karpenter::decide::auto_mode_builtin;
    let eks_class = ("eks.amazonaws.com", "NodeClass", "default");
    let own_class = ("karpenter.k8s.aws", "EC2NodeClass", "default");
    let managed = json!({ "app.kubernetes.io/managed-by": "eks" });
    let pools = [
        pool("general-purpose", managed.clone(), eks_class),
        // The label missing: the built-in name on Auto Mode's own NodeClass says it.
        pool("system", json!({}), eks_class),
        // One's own NodePool on Auto Mode's NodeClass, and a self-managed one named `system`.
        pool("web", json!({}), eks_class),
        pool("system", json!({ "team": "platform" }), own_class),
    ];
    let why = auto_mode_builtin(&pools[0]).unwrap_or_default();
    assert!(
        why.contains("built-in NodePool of EKS Auto Mode (app.kubernetes.io/managed-by=eks)")
            && why.contains("undoes changes")
            && why.contains("zonal shift")
            && why.contains("NodePool of your own"),
        "{why}"
    );
    assert!(auto_mode_builtin(&pools[1]).is_some_and(|w| w.contains("NodeClass eks.amazonaws.com/default")));
    assert_eq!(auto_mode_builtin(&pools[2]), None);
    assert_eq!(auto_mode_builtin(&pools[3]), None, "the name alone is not EKS's mark");

    let zones = crate::model::topology::Zones::new("us-east-1", zones());
    let lines = evacuation(
        "prod",
        &pools,
        &az2(),
        &zones,
        Mode::Noexecute,
        &std::collections::BTreeMap::new(),
    );
    let statuses: Vec<Status> = lines.iter().map(|l| l.status).collect();
    assert_eq!(
        statuses,
        [Status::Skipped, Status::Skipped, Status::Planned, Status::Planned]
    );
    assert!(
        lines[0].actions.as_ref().is_none_or(Vec::is_empty),
        "nothing to journal"
    );
}
