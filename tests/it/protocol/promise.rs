//! The journal's promise at its edges (issue 31), for the Kubernetes kinds: a change computed again
//! inside an act (after a 409) is written ahead before it is sent, and a failed line's record is
//! brought back to what the act can have done, so that recover undoes exactly what azevac did.
//! The real binary, the real kube client, the fake API server enforcing `resourceVersion`.

use crate::common;

use std::collections::BTreeMap;

use azevac::model::action::Action as _;
use azevac::plugins::{eks, karpenter};
use serde_json::{json, Value};

use common::kube::{fixture, fixture_items, Cluster, Harness, KillWhen};
use common::proxy::KillOn;
use common::{attr_list, attr_s, journal_items, lock_items, Moto, ZONE};

const CLUSTER: &str = "arn:aws:eks:us-east-1:123456789012:cluster/prod";
/// A node of the fixture in the zone, schedulable and untainted.
const NODE: &str = "ip-10-0-2-21.ec2.internal";

fn nodes() -> Cluster {
    let mut cluster = Cluster::default();
    for node in fixture_items("eks-nodes.json") {
        cluster.add_node(node);
    }
    cluster
}

/// The journal's records by resource: their actions in the plan's words, each checked to be a
/// typed action of journal format 2 (a node's or a NodePool's).
async fn records(moto: &Moto) -> BTreeMap<String, Vec<String>> {
    let words = |actions: Vec<String>| -> Vec<String> {
        actions
            .iter()
            .map(|a| {
                let node = serde_json::from_str::<eks::Action>(a).map(|a| a.describe());
                node.or_else(|_| serde_json::from_str::<karpenter::Action>(a).map(|a| a.describe()))
                    .unwrap_or_else(|e| panic!("{a} is not a typed action: {e}"))
            })
            .collect()
    };
    journal_items(&common::sdk(moto).await)
        .await
        .iter()
        .map(|i| (attr_s(i, "resource"), words(attr_list(i, "actions"))))
        .collect()
}

async fn assert_table_empty(moto: &Moto) {
    let sdk = common::sdk(moto).await;
    assert!(journal_items(&sdk).await.is_empty(), "records left");
    assert!(lock_items(&sdk).await.is_empty(), "locks left");
}

/// Issue 31, case 2. The intent says `requirement:topology.k8s.aws/zone-id NotIn use1-az2`; right
/// before azevac's PATCH someone adds `zone-id In [az6, az2, az1]`. The PATCH meets 409, azevac
/// reads again and computes another change (az2 out of the In). Before the fix it sent that without
/// widening the record; killed right after it landed, the record named only the NotIn, and recover
/// said "nothing to undo" and deleted it: use1-az2 was gone from the NodePool for good. Now the new
/// change is written ahead before it is sent, and recover puts use1-az2 back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_31_a_nodepool_changed_before_the_patch_is_widened_first() {
    let mut cluster = Cluster::default();
    for pool in fixture("karpenter-nodepools.json")["items"]
        .as_array()
        .expect("nodepools")
    {
        cluster.add_nodepool(pool.clone());
    }
    let someones = json!({
        "key": "topology.k8s.aws/zone-id", "operator": "In", "values": ["use1-az6", ZONE, "use1-az1"]
    });
    let added = someones.clone();
    cluster.edit_before_patch.insert(
        "platform".into(),
        Box::new(move |pool: &mut Value| {
            pool["spec"]["template"]["spec"]["requirements"]
                .as_array_mut()
                .expect("requirements")
                .push(added)
        }),
    );
    let setup = Harness::new(CLUSTER, "karpenter", cluster);
    // The first PATCH of `platform` meets the edit (409); the second lands, and the run dies.
    setup.kube.set_kill_on(Some(KillOn {
        label: "PATCH /apis/karpenter.sh/v1/nodepools/platform".into(),
        nth: 2,
        when: KillWhen::AfterForward,
    }));
    assert_eq!(
        setup.run_watched(&["evacuate", "--az-id", ZONE, "--yes"]),
        None,
        "killed at the second PATCH"
    );
    let requirements = || -> Vec<Value> {
        setup
            .kube
            .state
            .lock()
            .expect("state")
            .nodepools
            .as_ref()
            .expect("nodepools")["platform"]["spec"]["template"]["spec"]["requirements"]
            .as_array()
            .expect("requirements")
            .clone()
    };
    assert!(
        !requirements()
            .iter()
            .any(|r| r["operator"] == "In" && r["values"].to_string().contains(ZONE)),
        "the second PATCH took {ZONE} out of the In: {:?}",
        requirements()
    );
    let journalled = records(&setup.moto).await;
    let platform = journalled
        .iter()
        .find(|(k, _)| k.ends_with("nodepool/platform"))
        .map(|(_, a)| a.clone())
        .unwrap_or_default();
    assert!(
        platform
            .iter()
            .any(|a| a.starts_with("in-value-removed:topology.k8s.aws/zone-id=use1-az2")),
        "the change sent after the 409 is journalled: {platform:?}"
    );

    setup.run(&["recover", "--yes"]).expect_code(0);
    let after = requirements();
    assert!(
        after.contains(&someones),
        "use1-az2 is back in the In, where it was: {after:?}"
    );
    assert!(
        !after
            .iter()
            .any(|r| r["operator"] == "NotIn" && r["values"].to_string().contains(ZONE)),
        "no NotIn of ours is left: {after:?}"
    );
    assert_table_empty(&setup.moto).await;
}

/// Issue 31, case 3. The intent is `[taint NoSchedule, cordon]`; before azevac's PATCH an operator
/// cordons the node (the PATCH meets 409; azevac reads it cordoned and sends only the taint); that
/// PATCH fails. Before the fix the record kept `cordon`, and recover uncordoned a node azevac never
/// cordoned (exit 0). Now the failed line's record is brought back to what the act can have done
/// (the taint it sent), and recover leaves the operator's cordon alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_31_a_failed_line_keeps_only_what_the_act_can_have_done() {
    let mut cluster = nodes();
    cluster.edit_before_patch.insert(
        NODE.into(),
        Box::new(|node: &mut Value| node["spec"]["unschedulable"] = json!(true)),
    );
    cluster.fail_patch_once.insert(NODE.into());
    let setup = Harness::new(CLUSTER, "eks", cluster);
    let run = setup
        .run(&[
            "evacuate",
            "--az-id",
            ZONE,
            "--k8s-mode",
            "noschedule",
            "--yes",
            "--output",
            "json",
        ])
        .expect_code(1);
    let line = run.json()["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|i| i["name"].as_str().is_some_and(|n| n.ends_with(NODE)))
        .cloned()
        .expect("the node's line");
    assert_eq!(line["status"], "failed", "{line}");
    let journalled = records(&setup.moto).await;
    let actions = journalled
        .iter()
        .find(|(k, _)| k.ends_with(NODE))
        .map(|(_, a)| a.clone())
        .expect("the node's record is kept");
    assert_eq!(
        actions,
        ["taint:azevac.io/evacuated=use1-az2:NoSchedule"],
        "only what the act sent; the cordon is the operator's"
    );

    setup.run(&["recover", "--yes"]).expect_code(0);
    let node = setup.node(NODE);
    assert_eq!(
        node["spec"]["unschedulable"],
        json!(true),
        "the operator's cordon stays: {node}"
    );
    assert_table_empty(&setup.moto).await;
}
