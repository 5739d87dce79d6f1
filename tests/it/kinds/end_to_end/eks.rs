//! Kubernetes nodes end to end (issue 4): the real binary, the real `kube` client, an in-process
//! fake API server (tests/it/common/kube.rs) seeded with EKS-shaped nodes (fixtures/eks-nodes.json),
//! and moto for the AZ mapping and the journal.

use crate::common;

use azevac::model::action::Action as _;
use azevac::plugins::eks;
use serde_json::{json, Value};

use common::kube::{fixture_items, Cluster};
use common::{attr_list, attr_s, azevac_at, journal_items, Moto, ZONE};

const CLUSTER: &str = "arn:aws:eks:us-east-1:123456789012:cluster/prod";
const AZ2_NODES: [&str; 3] = [
    "ip-10-0-2-21.ec2.internal",
    "ip-10-0-2-22.ec2.internal",
    "ip-10-0-2-23.ec2.internal",
];

fn fixture_nodes() -> Vec<Value> {
    fixture_items("eks-nodes.json")
}

fn pod(ns: &str, name: &str, node: &str, owner: Option<&str>, mirror: bool) -> Value {
    let mut pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": { "name": name, "namespace": ns, "annotations": {} },
        "spec": { "nodeName": node, "containers": [{ "name": "app", "image": "nginx" }] },
        "status": { "phase": "Running" }
    });
    if let Some(kind) = owner {
        pod["metadata"]["ownerReferences"] =
            json!([{ "apiVersion": "apps/v1", "kind": kind, "name": "owner", "uid": "u" }]);
    }
    if mirror {
        pod["metadata"]["annotations"]["kubernetes.io/config.mirror"] = json!("hash");
    }
    pod
}

use common::kube::Harness as Setup;

fn standard_cluster() -> Cluster {
    let mut cluster = Cluster::default();
    for node in fixture_nodes() {
        cluster.add_node(node);
    }
    cluster
}

fn taint_keys(node: &Value) -> Vec<String> {
    node["spec"]["taints"]
        .as_array()
        .map(|t| {
            t.iter()
                .map(|t| {
                    format!(
                        "{}:{}",
                        t["key"].as_str().unwrap_or(""),
                        t["effect"].as_str().unwrap_or("")
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A record's actions in the plan's words, each checked to be a typed action (journal format 2).
fn words(actions: &[String]) -> Vec<String> {
    actions
        .iter()
        .map(|a| {
            serde_json::from_str::<eks::Action>(a)
                .unwrap_or_else(|e| panic!("{a} is not a typed action: {e}"))
                .describe()
        })
        .collect()
}

fn cordoned(node: &Value) -> bool {
    node["spec"]["unschedulable"].as_bool().unwrap_or(false)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn noexecute_taints_the_zone_and_recover_removes_only_ours() {
    let setup = Setup::new(CLUSTER, "eks", standard_cluster());
    // A concurrent edit lands between azevac's read and its write of one node: 409, read again.
    setup
        .kube
        .state
        .lock()
        .expect("state")
        .conflict_once
        .insert(AZ2_NODES[0].into());

    let dry = setup
        .run(&["evacuate", "--az-id", ZONE, "--dry-run", "--output", "json"])
        .expect_code(0)
        .json();
    assert_eq!(dry["summary"]["planned"], 3, "{dry}");
    assert!(dry["items"][0]["notes"]
        .to_string()
        .contains("ignores PodDisruptionBudgets"));
    assert!(
        taint_keys(&setup.node(AZ2_NODES[0])).is_empty(),
        "dry run changes nothing"
    );

    setup.run(&["evacuate", "--az-id", ZONE, "--yes"]).expect_code(0);
    for name in AZ2_NODES {
        assert!(
            taint_keys(&setup.node(name)).contains(&"azevac.io/evacuated:NoExecute".to_string()),
            "{name}"
        );
    }
    // The older node had only the zone-name label: found through the EC2 mapping.
    assert!(taint_keys(&setup.node(AZ2_NODES[2])).contains(&"azevac.io/evacuated:NoExecute".to_string()));
    // The GPU node keeps its own taint.
    assert_eq!(
        taint_keys(&setup.node(AZ2_NODES[1])),
        ["nvidia.com/gpu:NoSchedule", "azevac.io/evacuated:NoExecute"]
    );
    assert!(
        taint_keys(&setup.node("ip-10-0-1-11.ec2.internal")).is_empty(),
        "other zones untouched"
    );
    assert!(
        setup.kube.state.lock().expect("state").conflicts >= 1,
        "the 409 path was exercised"
    );

    let items = journal_items(&aws_sdk(&setup).await).await;
    assert_eq!(items.len(), 3);
    for item in &items {
        assert_eq!(attr_s(item, "resource_type"), "eks");
        assert!(attr_s(item, "resource").starts_with(&format!("{CLUSTER}/ip-10-0-2-")));
        assert_eq!(
            words(&attr_list(item, "actions")),
            ["taint:azevac.io/evacuated=use1-az2:NoExecute"]
        );
        assert_eq!(attr_s(item, "state"), "done");
    }
    assert!(setup
        .run(&["evacuate", "--az-id", ZONE, "--yes"])
        .expect_code(0)
        .stdout
        .contains("nothing to do"));

    // Meanwhile: someone adds a taint of their own, and autoscaling adds a node in the zone.
    {
        let mut st = setup.kube.state.lock().expect("state");
        st.edit_node(AZ2_NODES[0], |n| {
            n["spec"]["taints"]
                .as_array_mut()
                .expect("taints")
                .push(json!({"key": "maintenance", "effect": "NoSchedule"}));
        });
        let mut fresh = st.nodes[AZ2_NODES[0]].clone();
        fresh["metadata"]["name"] = json!("ip-10-0-2-99.ec2.internal");
        fresh["spec"]["taints"] = json!([]);
        st.add_node(fresh);
    }
    // And autoscaling replaced the GPU node: its record is reported and kept for the operator to
    // decide on (exit 1, issue 32), until --forget-missing.
    setup.kube.state.lock().expect("state").nodes.remove(AZ2_NODES[1]);
    let recovered = setup.run(&["recover", "--az-id", ZONE, "--yes"]).expect_code(1);
    assert!(
        recovered.stdout.contains("node no longer exists: journal record kept"),
        "{}",
        recovered.stdout
    );
    let kept = journal_items(&aws_sdk(&setup).await).await;
    assert_eq!(kept.len(), 1, "only the vanished node's record is kept");
    assert!(attr_s(&kept[0], "resource").ends_with(AZ2_NODES[1]));
    setup
        .run(&["recover", "--az-id", ZONE, "--yes", "--forget-missing"])
        .expect_code(0);
    assert_eq!(
        taint_keys(&setup.node(AZ2_NODES[0])),
        ["maintenance:NoSchedule"],
        "only our taint removed"
    );
    assert!(
        taint_keys(&setup.node("ip-10-0-2-99.ec2.internal")).is_empty(),
        "new node untouched"
    );
    assert!(journal_items(&aws_sdk(&setup).await).await.is_empty());
    assert!(setup
        .run(&["recover", "--yes"])
        .expect_code(0)
        .stdout
        .contains("nothing to do"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn noschedule_cordons_and_recover_uncordons_only_what_azevac_cordoned() {
    let mut cluster = standard_cluster();
    // Someone cordoned this node for their own reasons before the incident.
    cluster.edit_node(AZ2_NODES[1], |n| n["spec"]["unschedulable"] = json!(true));
    let setup = Setup::new(CLUSTER, "eks", cluster);

    setup
        .run(&["evacuate", "--az-id", ZONE, "--k8s-mode", "noschedule", "--yes"])
        .expect_code(0);
    for name in AZ2_NODES {
        assert!(cordoned(&setup.node(name)), "{name}");
        assert!(taint_keys(&setup.node(name)).contains(&"azevac.io/evacuated:NoSchedule".to_string()));
    }
    let actions: Vec<(String, Vec<String>)> = journal_items(&aws_sdk(&setup).await)
        .await
        .iter()
        .map(|i| (attr_s(i, "resource"), attr_list(i, "actions")))
        .collect();
    let of = |node: &str| {
        actions
            .iter()
            .find(|(r, _)| r.ends_with(node))
            .map(|(_, a)| words(a))
            .unwrap_or_default()
    };
    assert_eq!(
        of(AZ2_NODES[0]),
        ["taint:azevac.io/evacuated=use1-az2:NoSchedule", "cordon"]
    );
    assert_eq!(
        of(AZ2_NODES[1]),
        ["taint:azevac.io/evacuated=use1-az2:NoSchedule"],
        "not cordoned by us"
    );

    setup.run(&["recover", "--yes"]).expect_code(0);
    assert!(!cordoned(&setup.node(AZ2_NODES[0])));
    assert!(cordoned(&setup.node(AZ2_NODES[1])), "someone else's cordon stays");
    assert_eq!(taint_keys(&setup.node(AZ2_NODES[1])), ["nvidia.com/gpu:NoSchedule"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drain_respects_disruption_budgets_and_leaves_daemonsets() {
    let mut cluster = standard_cluster();
    let node = AZ2_NODES[0];
    cluster.pods = vec![
        pod("shop", "web-7d9f", node, Some("ReplicaSet"), false),
        pod("shop", "checkout-5c2a", node, Some("ReplicaSet"), false),
        pod("kube-system", "aws-node-x1", node, Some("DaemonSet"), false),
        pod("kube-system", "kube-proxy-static", node, None, true),
        pod("shop", "db-0", AZ2_NODES[1], Some("StatefulSet"), false),
    ];
    // checkout is refused twice by its budget, then allowed; db-0 never is.
    cluster.pdb_refusals.insert("shop/checkout-5c2a".into(), 2);
    cluster.pdb_refusals.insert("shop/db-0".into(), u32::MAX);
    let setup = Setup::new(CLUSTER, "eks", cluster);

    let run = setup
        .run(&[
            "evacuate",
            "--az-id",
            ZONE,
            "--k8s-mode",
            "drain",
            "--drain-timeout",
            "2s",
            "--yes",
            "--output",
            "json",
        ])
        .expect_code(1);
    let doc = run.json();
    let stuck = doc["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|i| i["status"] == "failed")
        .expect("one failed")
        .clone();
    assert!(
        stuck["reason"].as_str().unwrap_or_default().contains("shop/db-0"),
        "{stuck}"
    );
    let st = setup.kube.state.lock().expect("state").evicted.clone();
    assert_eq!(
        st,
        ["shop/web-7d9f", "shop/checkout-5c2a"],
        "DaemonSet and mirror pods stay"
    );
    assert!(
        setup.kube.state.lock().expect("state").throttled_evictions >= 3,
        "429s were retried"
    );
    for name in AZ2_NODES {
        assert!(cordoned(&setup.node(name)), "{name}");
        assert!(
            taint_keys(&setup.node(name)).iter().all(|t| !t.starts_with("azevac")),
            "drain does not taint"
        );
    }

    setup.run(&["recover", "--yes"]).expect_code(0);
    for name in AZ2_NODES {
        assert!(!cordoned(&setup.node(name)), "{name}");
    }
    assert!(journal_items(&aws_sdk(&setup).await).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_schedulable_zone_of_a_cluster_is_never_evacuated() {
    let mut cluster = Cluster::default();
    for node in fixture_nodes()
        .into_iter()
        .filter(|n| n["metadata"]["labels"]["topology.kubernetes.io/zone"] == "us-east-1c")
    {
        cluster.add_node(node);
    }
    let setup = Setup::new(CLUSTER, "eks", cluster);
    let doc = setup
        .run(&["evacuate", "--az-id", ZONE, "--yes", "--output", "json"])
        .expect_code(0)
        .json();
    assert_eq!(doc["summary"]["skipped"], 3);
    assert!(doc["items"][0]["reason"]
        .as_str()
        .unwrap_or_default()
        .contains("last schedulable zone"));
    assert!(taint_keys(&setup.node(AZ2_NODES[0])).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_kube_context_nodes_are_left_out_with_a_notice() {
    let moto = Moto::start();
    let run = azevac_at(
        &moto.endpoint,
        &["evacuate", "--az-id", ZONE, "--type", "eks", "--yes"],
        &[],
    )
    .expect_code(0);
    assert!(run.stderr.contains("--type eks needs --kube-context"), "{}", run.stderr);
    let bad = azevac_at(
        &moto.endpoint,
        &[
            "evacuate",
            "--az-id",
            ZONE,
            "--type",
            "eks",
            "--kube-context",
            "nope",
            "--kubeconfig",
            "/nonexistent",
            "--yes",
        ],
        &[],
    )
    .expect_code(2);
    assert!(bad.stderr.contains("--kubeconfig"), "{}", bad.stderr);
}

async fn aws_sdk(setup: &Setup) -> aws_config::SdkConfig {
    common::sdk(&setup.moto).await
}

/// `azevac apply` of a saved node plan (issue 7): the saved mode and contexts are what runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_saved_node_plan_applies_with_its_own_mode() {
    let setup = Setup::new(CLUSTER, "eks", standard_cluster());
    let plan = setup.run(&[
        "evacuate",
        "--az-id",
        ZONE,
        "--k8s-mode",
        "noschedule",
        "--dry-run",
        "--output",
        "json",
    ]);
    let plan = plan.expect_code(0);
    assert_eq!(plan.json()["request"]["k8s_mode"], "noschedule");
    let path = setup.dir.path().join("nodes-plan.json");
    std::fs::write(&path, &plan.stdout).expect("write");
    let apply = || {
        azevac_at(
            &setup.moto.endpoint,
            &[
                "apply",
                path.to_str().expect("utf-8"),
                "--kubeconfig",
                &setup.kubeconfig,
                "--yes",
            ],
            &[],
        )
    };
    apply().expect_code(0);
    for name in AZ2_NODES {
        let node = setup.node(name);
        assert!(
            taint_keys(&node).contains(&"azevac.io/evacuated:NoSchedule".to_string()),
            "{name}"
        );
        assert!(cordoned(&node), "{name}");
    }
    // The plan has run: the nodes are no longer as reviewed, so a second apply is refused.
    let stale = apply().expect_code(2);
    assert!(stale.stderr.contains(AZ2_NODES[0]), "{}", stale.stderr);
}

/// The journal records of the nodes, by node name: (actions in the plan's words, state).
async fn node_records(setup: &Setup) -> std::collections::BTreeMap<String, (Vec<String>, String)> {
    journal_items(&aws_sdk(setup).await)
        .await
        .iter()
        .filter(|i| attr_s(i, "resource_type") == "eks")
        .map(|i| {
            let resource = attr_s(i, "resource");
            let node = resource.rsplit('/').next().unwrap_or_default().to_owned();
            (node, (words(&attr_list(i, "actions")), attr_s(i, "state")))
        })
        .collect()
}

/// The plan or result line of a node, from `--output json`.
fn node_line<'a>(doc: &'a Value, node: &str) -> &'a Value {
    doc["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|i| i["type"] == "eks" && i["resource"].as_str().is_some_and(|r| r.ends_with(node)))
        .unwrap_or_else(|| panic!("no line for {node} in {doc}"))
}

/// Issue 12: a `noschedule` run over nodes a `drain` run cordoned kept only its own taint in the
/// record, so `recover` removed the taint and left the nodes cordoned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_12_a_noschedule_rerun_keeps_the_cordon_of_a_drain() {
    let setup = Setup::new(CLUSTER, "eks", standard_cluster());
    let before: Vec<(Vec<String>, bool)> = AZ2_NODES
        .iter()
        .map(|n| (taint_keys(&setup.node(n)), cordoned(&setup.node(n))))
        .collect();
    assert!(before.iter().all(|(_, c)| !c), "no node is cordoned to begin with");

    setup
        .run(&["evacuate", "--az-id", ZONE, "--k8s-mode", "drain", "--yes"])
        .expect_code(0);
    let drained = node_records(&setup).await;
    for name in AZ2_NODES {
        assert!(cordoned(&setup.node(name)), "{name}");
        assert_eq!(drained[name].0, ["cordon"], "{name}");
    }

    setup
        .run(&["evacuate", "--az-id", ZONE, "--k8s-mode", "noschedule", "--yes"])
        .expect_code(0);
    let records = node_records(&setup).await;
    for name in AZ2_NODES {
        let node = setup.node(name);
        assert!(cordoned(&node), "{name}");
        assert!(
            taint_keys(&node).contains(&"azevac.io/evacuated:NoSchedule".to_string()),
            "{name}"
        );
        let actions = &records[name].0;
        assert!(
            actions.iter().any(|a| a == "cordon") && actions.iter().any(|a| a.starts_with("taint:")),
            "{name}: the record keeps the drain's cordon and adds the taint: {actions:?}"
        );
    }

    setup.run(&["recover", "--yes"]).expect_code(0);
    for (name, (taints, _)) in AZ2_NODES.iter().zip(&before) {
        let node = setup.node(name);
        assert!(!cordoned(&node), "{name}: azevac's cordon is undone");
        assert_eq!(
            &taint_keys(&node),
            taints,
            "{name}: azevac's taint is gone, others stay"
        );
    }
    assert!(journal_items(&aws_sdk(&setup).await).await.is_empty());
}

/// Issue 12: a second `drain` over nodes the first one cordoned recorded `actions=[]` for them (no
/// subnets either: a malformed record), so `recover` could not uncordon them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_12_a_drain_rerun_keeps_a_valid_record() {
    let setup = Setup::new(CLUSTER, "eks", standard_cluster());
    let drain = [
        "evacuate",
        "--az-id",
        ZONE,
        "--k8s-mode",
        "drain",
        "--yes",
        "--output",
        "json",
    ];
    setup.run(&drain).expect_code(0);
    for name in AZ2_NODES {
        assert!(cordoned(&setup.node(name)), "{name}");
    }

    // The same drain again: nothing new to do for nodes azevac already cordoned.
    let again = setup.run(&drain).expect_code(0).json();
    for name in AZ2_NODES {
        let line = node_line(&again, name);
        assert_ne!(line["status"], "failed", "{line}");
        let changes = line["actions"].as_array().is_some_and(|a| !a.is_empty());
        assert!(
            line["status"] == "skipped" || !changes,
            "{name}: nothing new to do: {line}"
        );
    }
    let records = node_records(&setup).await;
    for name in AZ2_NODES {
        assert_eq!(
            records[name],
            (vec!["cordon".to_string()], "done".to_string()),
            "{name}"
        );
    }

    // Autoscaling adds a node in the zone, and the operator drains again: the new node is cordoned,
    // and the records of the nodes cordoned before still say so.
    let fresh = "ip-10-0-2-99.ec2.internal";
    {
        let mut st = setup.kube.state.lock().expect("state");
        let mut node = st.nodes[AZ2_NODES[0]].clone();
        node["metadata"]["name"] = json!(fresh);
        node["spec"]["unschedulable"] = json!(false);
        st.add_node(node);
    }
    let third = setup.run(&drain).expect_code(0).json();
    for name in AZ2_NODES {
        assert_ne!(node_line(&third, name)["status"], "failed", "{third}");
    }
    assert_eq!(node_line(&third, fresh)["status"], "done", "{third}");
    let records = node_records(&setup).await;
    for name in AZ2_NODES.iter().chain([&fresh]) {
        let (actions, state) = &records[*name];
        assert_eq!(actions, &["cordon"], "{name}: still a valid record listing the cordon");
        assert_eq!(state, "done", "{name}");
    }
    let status = azevac_at(&setup.moto.endpoint, &["status", "--output", "json"], &[]).expect_code(0);
    assert!(
        !status.stdout.contains("malformed") && !status.stderr.contains("malformed"),
        "{status:?}"
    );

    setup.run(&["recover", "--yes"]).expect_code(0);
    for name in AZ2_NODES.iter().chain([&fresh]) {
        let node = setup.node(name);
        assert!(!cordoned(&node), "{name}: uncordoned");
        assert!(
            taint_keys(&node).iter().all(|t| !t.starts_with("azevac")),
            "{name}: untainted"
        );
    }
    assert!(journal_items(&aws_sdk(&setup).await).await.is_empty());
}

/// A node replaced by a new instance under the same name, as autoscaling does: the new node joins
/// cordoned by its own bootstrap.
fn replace_node(setup: &Setup, name: &str, uid: &str, instance: &str) {
    let mut st = setup.kube.state.lock().expect("state");
    let mut node = st.nodes.remove(name).expect("the node");
    node["metadata"]["uid"] = json!(uid);
    node["spec"] = json!({ "providerID": format!("aws:///us-east-1c/{instance}"), "unschedulable": true });
    st.add_node(node);
}

/// Issue 31, case 4: records named nodes by name only, so `recover` uncordoned a new node of the
/// same name (cordoned by its own bootstrap) and dropped the record without a word; and a second
/// evacuation merged the old node's cordon into the new node's record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_31_a_node_replaced_under_the_same_name_is_not_touched() {
    let setup = Setup::new(CLUSTER, "eks", standard_cluster());
    let noschedule = ["evacuate", "--az-id", ZONE, "--k8s-mode", "noschedule", "--yes"];
    setup.run(&noschedule).expect_code(0);
    // The write-ahead names the very node: its uid, and the instance behind it.
    let items = journal_items(&aws_sdk(&setup).await).await;
    let record = items
        .iter()
        .find(|i| attr_s(i, "resource").ends_with(AZ2_NODES[0]))
        .expect("the node's record");
    let identity = record["identity"].as_m().expect("an identity map");
    assert_eq!(
        identity["uid"].as_s().map(String::as_str),
        Ok("uid-ip-10-0-2-21.ec2.internal")
    );
    assert_eq!(
        identity["instance_id"].as_s().map(String::as_str),
        Ok("i-09848821191019212")
    );

    replace_node(&setup, AZ2_NODES[0], "uid-new-21", "i-0new21");
    let plan = setup
        .run(&["recover", "--az-id", ZONE, "--dry-run", "--output", "json"])
        .expect_code(0)
        .json();
    let line = node_line(&plan, AZ2_NODES[0]);
    let reason = line["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains(&format!(
            "replaced since the evacuation: {} is now another node (uid uid-new-21, instance i-0new21); \
             the node azevac changed (uid uid-ip-10-0-2-21.ec2.internal, instance i-09848821191019212) is gone, \
             nothing to undo",
            AZ2_NODES[0]
        )),
        "{line}"
    );
    assert_eq!(line["actions"], json!([]), "{line}");
    setup.run(&["recover", "--az-id", ZONE, "--yes"]).expect_code(0);
    assert!(
        cordoned(&setup.node(AZ2_NODES[0])),
        "the new node keeps its bootstrap's cordon"
    );
    for name in &AZ2_NODES[1..] {
        assert!(!cordoned(&setup.node(name)), "{name}: recovered");
    }
    assert!(journal_items(&aws_sdk(&setup).await).await.is_empty());

    // Evacuated again, then replaced again, then evacuated once more: the new node's record holds
    // only what was done to it (the taint; its bootstrap cordoned it), not the old node's cordon.
    setup.run(&noschedule).expect_code(0);
    replace_node(&setup, AZ2_NODES[1], "uid-new-22", "i-0new22");
    setup.run(&noschedule).expect_code(0);
    let records = node_records(&setup).await;
    assert_eq!(
        records[AZ2_NODES[1]].0,
        ["taint:azevac.io/evacuated=use1-az2:NoSchedule"],
        "{records:?}"
    );
    setup.run(&["recover", "--yes"]).expect_code(0);
    let node = setup.node(AZ2_NODES[1]);
    assert!(cordoned(&node), "the bootstrap's cordon stays");
    assert!(
        taint_keys(&node).iter().all(|t| !t.starts_with("azevac")),
        "azevac's taint on the new node is undone"
    );
    assert!(journal_items(&aws_sdk(&setup).await).await.is_empty());
}

/// Issue 32: records written before journal format 2 (no `format`; the actions as the strings
/// `taint:KEY=VALUE:EFFECT`, `cordon`, `drain`) still recover: azevac's taint and cordon are
/// undone, a drain needs nothing, everything else stays, and the records are deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_32_records_written_before_typed_actions_still_recover() {
    let setup = Setup::new(CLUSTER, "eks", standard_cluster());
    azevac_at(&setup.moto.endpoint, &["init"], &[]).expect_code(0);
    let ours = |effect: &str| json!({ "key": "azevac.io/evacuated", "value": ZONE, "effect": effect });
    {
        // The nodes as those runs left them.
        let mut st = setup.kube.state.lock().expect("state");
        st.edit_node(AZ2_NODES[0], |n| {
            n["spec"]["unschedulable"] = json!(true);
            n["spec"]["taints"] = json!([ours("NoSchedule")]);
        });
        st.edit_node(AZ2_NODES[1], |n| {
            n["spec"]["taints"]
                .as_array_mut()
                .expect("the GPU node's own taint")
                .push(ours("NoExecute"))
        });
        // Drained by azevac, cordoned by someone else.
        st.edit_node(AZ2_NODES[2], |n| n["spec"]["unschedulable"] = json!(true));
    }
    let uid = format!("uid-{}", AZ2_NODES[0]);
    let records: [(&str, &[&str], _); 3] = [
        (
            AZ2_NODES[0],
            &["taint:azevac.io/evacuated=use1-az2:NoSchedule", "cordon"],
            Some((uid.as_str(), Some("i-09848821191019212"))),
        ),
        (AZ2_NODES[1], &["taint:azevac.io/evacuated=use1-az2:NoExecute"], None),
        (AZ2_NODES[2], &["drain"], None),
    ];
    let sdk = common::sdk(&setup.moto).await;
    for (node, actions, identity) in records {
        let resource = format!("{CLUSTER}/{node}");
        let name = resource.rsplit_once(":cluster/").map_or(resource.as_str(), |(_, n)| n);
        common::put_format_1_record(&sdk, &resource, "eks", name, actions, identity).await;
    }

    let plan = setup
        .run(&["recover", "--dry-run", "--output", "json"])
        .expect_code(0)
        .json();
    assert_eq!(
        node_line(&plan, AZ2_NODES[0])["actions"],
        json!(["untaint:azevac.io/evacuated=use1-az2:NoSchedule", "uncordon"]),
        "{plan}"
    );
    setup.run(&["recover", "--yes"]).expect_code(0);
    assert!(!cordoned(&setup.node(AZ2_NODES[0])));
    assert!(taint_keys(&setup.node(AZ2_NODES[0])).is_empty());
    assert_eq!(taint_keys(&setup.node(AZ2_NODES[1])), ["nvidia.com/gpu:NoSchedule"]);
    assert!(cordoned(&setup.node(AZ2_NODES[2])), "someone else's cordon stays");
    assert!(journal_items(&aws_sdk(&setup).await).await.is_empty());
}
