//! Karpenter NodePools and managed node groups end to end (issue 14): the real binary, the real
//! `kube` client, the in-process fake API server serving NodePools as a custom resource
//! (tests/it/common/kube.rs, seeded from fixtures/karpenter-nodepools.json), and moto for the AZ
//! mapping, the journal and a managed node group's Auto Scaling group. Every Kubernetes call azevac
//! makes is checked against the ClusterRole it documents (fixtures/clusterrole.json).

use crate::common;

use std::collections::BTreeMap;

use azevac::model::action::Action as _;
use azevac::plugins::karpenter;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use serde_json::{json, Value};

use common::estate::{self, AsgSpec, Spec, VpcSpec};
use common::kube::{fixture, fixture_items, Cluster, Harness, KillWhen};
use common::{attr_list, attr_s, azevac, journal_items, live_groups, Moto, ZONE};

const CLUSTER: &str = "arn:aws:eks:us-east-1:123456789012:cluster/prod";
const ZONE_NAME: &str = "us-east-1c";

fn cluster() -> Cluster {
    let mut cluster = Cluster::default();
    for node in fixture_items("eks-nodes.json") {
        cluster.add_node(node);
    }
    for pool in fixture("karpenter-nodepools.json")["items"]
        .as_array()
        .expect("nodepools")
    {
        cluster.add_nodepool(pool.clone());
    }
    cluster
}

/// The harness, with what these tests read of NodePools and RBAC.
struct Setup(Harness);

impl std::ops::Deref for Setup {
    type Target = Harness;

    fn deref(&self) -> &Harness {
        &self.0
    }
}

impl Setup {
    fn new(cluster: Cluster) -> Setup {
        Setup(Harness::new(CLUSTER, "karpenter", cluster))
    }

    fn pools(&self) -> BTreeMap<String, Value> {
        self.kube
            .state
            .lock()
            .expect("state")
            .nodepools
            .clone()
            .unwrap_or_default()
    }

    fn requirements(&self, pool: &str) -> Value {
        self.pools()[pool]["spec"]["template"]["spec"]["requirements"].clone()
    }

    /// Every Kubernetes call so far is one the documented ClusterRole allows.
    fn assert_rbac_allows_every_call(&self) {
        let role = fixture("clusterrole.json");
        let requests = self.kube.requests();
        assert!(!requests.is_empty());
        for request in requests {
            let (group, resource, verb) = rbac_of(&request);
            let allowed = role["rules"].as_array().expect("rules").iter().any(|rule| {
                let has = |field: &str, want: &str| {
                    rule[field]
                        .as_array()
                        .is_some_and(|v| v.iter().any(|x| x == want || x == "*"))
                };
                has("apiGroups", group) && has("resources", &resource) && has("verbs", verb)
            });
            assert!(
                allowed,
                "{request} ({verb} {group}/{resource}) is not in fixtures/clusterrole.json"
            );
        }
    }
}

/// The RBAC (API group, resource, verb) of a `METHOD /path` request.
fn rbac_of(request: &str) -> (&'static str, String, &'static str) {
    let (method, path) = request.split_once(' ').expect("METHOD /path");
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let (group, rest) = match parts.as_slice() {
        ["api", "v1", rest @ ..] => ("", rest.to_vec()),
        ["apis", "karpenter.sh", "v1", rest @ ..] => ("karpenter.sh", rest.to_vec()),
        _ => panic!("unexpected path {path}"),
    };
    let rest: Vec<&str> = match rest.as_slice() {
        ["namespaces", _, tail @ ..] => tail.to_vec(),
        other => other.to_vec(),
    };
    let (resource, named) = match rest.as_slice() {
        [resource] => (resource.to_string(), false),
        [resource, _] => (resource.to_string(), true),
        [resource, _, sub] => (format!("{resource}/{sub}"), true),
        _ => panic!("unexpected path {path}"),
    };
    let verb = match (method, named) {
        ("GET", false) => "list",
        ("GET", true) => "get",
        ("PATCH", _) => "patch",
        ("POST", _) => "create",
        _ => panic!("unexpected method {method}"),
    };
    (group, resource, verb)
}

/// A NodePool's stored requirements, to edit.
fn requirements_of(pool: &mut Value) -> &mut Vec<Value> {
    pool["spec"]["template"]["spec"]["requirements"]
        .as_array_mut()
        .expect("requirements")
}

fn zone_requirement(key: &str, operator: &str, values: &[&str]) -> Value {
    json!({ "key": key, "operator": operator, "values": values })
}

fn line<'a>(out: &'a Value, name: &str) -> &'a Value {
    out["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|i| i["name"].as_str().is_some_and(|n| n.ends_with(name)))
        .unwrap_or_else(|| panic!("no line {name} in {out}"))
}

/// The journal's records by resource: (type, actions in the plan's words, each checked to be a
/// typed action of journal format 2).
async fn journal(setup: &Setup) -> BTreeMap<String, (String, Vec<String>)> {
    journal_items(&common::sdk(&setup.moto).await)
        .await
        .iter()
        .map(|i| {
            (
                attr_s(i, "resource"),
                (attr_s(i, "resource_type"), words(&attr_list(i, "actions"))),
            )
        })
        .collect()
}

/// Stored actions in the plan's words; each must be a typed action (JSON), not an old string.
fn words(actions: &[String]) -> Vec<String> {
    actions
        .iter()
        .map(|a| {
            serde_json::from_str::<karpenter::Action>(a)
                .unwrap_or_else(|e| panic!("{a} is not a typed action: {e}"))
                .describe()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodepools_exclude_the_zone_and_recover_takes_out_exactly_that() {
    let setup = Setup::new(cluster());
    let original = setup.pools();
    // A concurrent edit lands between azevac's read of a NodePool and its write: 409, read again.
    setup
        .kube
        .state
        .lock()
        .expect("state")
        .conflict_once
        .insert("general".into());

    let dry = setup
        .run(&["evacuate", "--az-id", ZONE, "--dry-run", "--output", "json"])
        .expect_code(0)
        .json();
    assert_eq!(dry["summary"]["planned"], 3, "{dry}");
    let general = line(&dry, "nodepool/general");
    assert_eq!(
        general["actions"],
        json!([format!("in-value-removed:topology.kubernetes.io/zone={ZONE_NAME}@1")])
    );
    let notes = general["notes"].to_string();
    assert!(
        notes.contains("drift") && notes.contains("nodes: 10%") && notes.contains("0 9 * * mon-fri"),
        "{notes}"
    );
    assert_eq!(
        line(&dry, "nodepool/batch")["actions"],
        json!([format!("notin-value:topology.k8s.aws/zone-id={ZONE}")])
    );
    let pinned = line(&dry, "nodepool/pinned");
    assert_eq!(pinned["status"], "skipped");
    assert!(pinned["reason"]
        .as_str()
        .unwrap_or_default()
        .contains("would leave the NodePool no zone"));
    let platform = line(&dry, "nodepool/platform");
    assert_eq!(
        platform["actions"],
        json!([format!("requirement:topology.k8s.aws/zone-id NotIn {ZONE}")])
    );
    assert!(platform["notes"].to_string().contains("Argo CD"), "{platform}");
    assert_eq!(setup.pools(), original, "a dry run changes nothing");

    setup.run(&["evacuate", "--az-id", ZONE, "--yes"]).expect_code(0);
    assert_eq!(
        setup.requirements("general")[5],
        zone_requirement("topology.kubernetes.io/zone", "In", &["us-east-1b", "us-east-1d"])
    );
    assert_eq!(
        setup.requirements("batch")[1],
        zone_requirement("topology.k8s.aws/zone-id", "NotIn", &["use1-az1", ZONE])
    );
    let platform_now = setup.requirements("platform");
    assert_eq!(platform_now.as_array().map(Vec::len), Some(4), "kept every requirement");
    assert_eq!(
        platform_now[3],
        zone_requirement("topology.k8s.aws/zone-id", "NotIn", &[ZONE])
    );
    assert_eq!(setup.pools()["pinned"], original["pinned"]);
    assert!(
        setup.kube.state.lock().expect("state").conflicts >= 1,
        "the 409 was met"
    );
    // Nothing else in the NodePools changed.
    for name in ["general", "batch", "platform"] {
        let (mut before, mut after) = (original[name].clone(), setup.pools()[name].clone());
        for pool in [&mut before, &mut after] {
            pool["spec"]["template"]["spec"]["requirements"] = json!(null);
            pool["metadata"]["resourceVersion"] = json!(null);
            pool["metadata"]["labels"]["example.com/touched-by"] = json!(null);
        }
        assert_eq!(before, after, "{name}");
    }

    let journal_now = journal(&setup).await;
    assert_eq!(
        journal_now,
        BTreeMap::from([
            (
                format!("{CLUSTER}/nodepool/batch"),
                (
                    "karpenter".to_owned(),
                    vec![format!("notin-value:topology.k8s.aws/zone-id={ZONE}")]
                )
            ),
            (
                format!("{CLUSTER}/nodepool/general"),
                (
                    "karpenter".to_owned(),
                    vec![format!("in-value-removed:topology.kubernetes.io/zone={ZONE_NAME}@1")]
                )
            ),
            (
                format!("{CLUSTER}/nodepool/platform"),
                (
                    "karpenter".to_owned(),
                    vec![format!("requirement:topology.k8s.aws/zone-id NotIn {ZONE}")]
                )
            ),
        ])
    );

    // Re-run: every NodePool already excludes the zone (or cannot lose it): nothing to do.
    let again = setup
        .run(&["evacuate", "--az-id", ZONE, "--yes", "--output", "json"])
        .expect_code(0)
        .json();
    assert_eq!(again["summary"]["planned"], 0, "{again}");
    assert_eq!(again["summary"]["done"], 0, "{again}");
    assert!(line(&again, "nodepool/general")["reason"]
        .as_str()
        .unwrap_or_default()
        .contains("already evacuated"));
    assert_eq!(journal(&setup).await, journal_now);

    // An operator edits a NodePool meanwhile: recover leaves that edit alone.
    let extra = zone_requirement("karpenter.k8s.aws/instance-family", "In", &["m7i"]);
    setup.kube.state.lock().expect("state").edit_nodepool("platform", |p| {
        p["spec"]["template"]["spec"]["requirements"]
            .as_array_mut()
            .expect("requirements")
            .push(extra.clone())
    });

    setup.run(&["recover", "--az-id", ZONE, "--yes"]).expect_code(0);
    for name in ["general", "batch", "pinned"] {
        assert_eq!(
            setup.requirements(name),
            original[name]["spec"]["template"]["spec"]["requirements"],
            "{name}"
        );
    }
    let mut platform_back = original["platform"]["spec"]["template"]["spec"]["requirements"].clone();
    platform_back.as_array_mut().expect("requirements").push(extra);
    assert_eq!(
        setup.requirements("platform"),
        platform_back,
        "only azevac's requirement went"
    );
    assert!(journal(&setup).await.is_empty());

    let again = setup
        .run(&["recover", "--yes", "--output", "json"])
        .expect_code(0)
        .json();
    assert_eq!(again["summary"]["done"], 0, "{again}");
    setup.assert_rbac_allows_every_call();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn noschedule_keeps_the_zones_karpenter_nodes_and_recover_removes_only_azevacs_annotation() {
    // Someone else already keeps one of the zone's Karpenter nodes: its annotation is not azevac's.
    let (cluster, ours, theirs) = karpenter_nodes_cluster();
    let setup = Setup::new(cluster);

    let dry = setup
        .run(&[
            "evacuate",
            "--az-id",
            ZONE,
            "--k8s-mode",
            "noschedule",
            "--dry-run",
            "--output",
            "json",
        ])
        .expect_code(0)
        .json();
    assert!(line(&dry, "nodepool/general")["notes"]
        .to_string()
        .contains("except the nodes annotated karpenter.sh/do-not-disrupt"));
    assert_eq!(
        line(&dry, &format!("node/{ours}"))["actions"],
        json!(["annotate:karpenter.sh/do-not-disrupt=true"])
    );
    assert!(line(&dry, &format!("node/{theirs}"))["reason"]
        .as_str()
        .unwrap_or_default()
        .contains("not by azevac"));

    setup
        .run(&["evacuate", "--az-id", ZONE, "--k8s-mode", "noschedule", "--yes"])
        .expect_code(0);
    assert_eq!(
        setup.node(ours)["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"],
        "true"
    );
    let journalled = journal(&setup).await;
    assert_eq!(
        journalled.get(&format!("{CLUSTER}/node/{ours}")),
        Some(&(
            "karpenter".to_owned(),
            vec!["annotate:karpenter.sh/do-not-disrupt=true".to_owned()]
        ))
    );
    assert!(!journalled.contains_key(&format!("{CLUSTER}/node/{theirs}")));

    setup.run(&["recover", "--az-id", ZONE, "--yes"]).expect_code(0);
    assert!(setup.node(ours)["metadata"]["annotations"]
        .get("karpenter.sh/do-not-disrupt")
        .is_none());
    assert_eq!(
        setup.node(theirs)["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"],
        "true",
        "the annotation azevac did not add stays"
    );
    assert!(journal(&setup).await.is_empty());
    setup.assert_rbac_allows_every_call();
}

/// The cluster of the noschedule scenario: two of the zone's nodes are Karpenter's, one of them
/// already kept by someone else.
fn karpenter_nodes_cluster() -> (Cluster, &'static str, &'static str) {
    let mut cluster = cluster();
    let (ours, theirs) = ("ip-10-0-2-21.ec2.internal", "ip-10-0-2-22.ec2.internal");
    for name in [ours, theirs] {
        cluster.edit_node(name, |n| {
            n["metadata"]["labels"]["karpenter.sh/nodepool"] = json!("general")
        });
    }
    cluster.edit_node(theirs, |n| {
        n["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"] = json!("true")
    });
    (cluster, ours, theirs)
}

/// NodePools and nodes without their resourceVersions, to compare states.
fn state_of(setup: &Setup) -> (Vec<Value>, Vec<Value>) {
    let st = setup.kube.state.lock().expect("state");
    let strip = |o: &Value| {
        let mut o = o.clone();
        o["metadata"]["resourceVersion"] = json!(null);
        o
    };
    (
        st.nodepools.iter().flat_map(|p| p.values()).map(strip).collect(),
        st.nodes.values().map(strip).collect(),
    )
}

/// A kill at any Kubernetes request of an evacuation (before the API server applies it, or after,
/// the reply never heard) loses nothing: recover puts NodePools and nodes back exactly and empties
/// the journal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kill_at_any_kubernetes_request_loses_nothing() {
    let setup = Setup::new(karpenter_nodes_cluster().0);
    let evacuate = [
        "evacuate",
        "--az-id",
        ZONE,
        "--k8s-mode",
        "noschedule",
        "--concurrency",
        "1",
        "--yes",
    ];
    let mut tried = 0;
    for when in [KillWhen::BeforeForward, KillWhen::AfterForward] {
        for n in 1.. {
            setup.moto.reset();
            setup.kube.set_kill_at(None);
            *setup.kube.state.lock().expect("state") = karpenter_nodes_cluster().0;
            let start = state_of(&setup);
            setup.kube.set_kill_at(Some((n, when)));
            let code = setup.run_watched(&evacuate);
            if !setup.kube.killed() {
                assert_eq!(code, Some(0), "ran to the end past request {n}");
                assert!(n > 8, "the sweep covered the writes: {:?}", setup.kube.requests());
                break;
            }
            let point = format!(
                "killed at request {n} ({when:?}): {:?}",
                setup.kube.requests().get(n - 1)
            );
            tried += 1;
            setup.kube.set_kill_at(None);
            let recovered = setup.run(&["recover", "--yes"]);
            // Killed before the journal table existed: recover says to run `azevac init`.
            let no_table = recovered.code == 2 && recovered.stderr.contains("azevac init");
            assert!(recovered.code == 0 || no_table, "{point}: {recovered:?}");
            assert!(state_of(&setup) == start, "{point}: not restored exactly");
            if !no_table {
                assert!(journal(&setup).await.is_empty(), "{point}: the journal is not empty");
            }
        }
    }
    assert!(tried >= 16, "only {tried} kill points");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_without_karpenter_has_no_nodepools() {
    let mut cluster = Cluster::default();
    for node in fixture_items("eks-nodes.json") {
        cluster.add_node(node);
    }
    let setup = Setup::new(cluster);
    let out = setup
        .run(&["evacuate", "--az-id", ZONE, "--yes", "--output", "json"])
        .expect_code(0)
        .json();
    assert_eq!(out["items"], json!([]), "{out}");
    assert!(setup
        .kube
        .requests()
        .contains(&"GET /apis/karpenter.sh/v1/nodepools".to_owned()));
}

/// NodePools the operator may not read fail the cluster's line (exit 1), with what to grant.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodepools_that_cannot_be_read_fail_the_line_with_what_to_grant() {
    let mut cluster = cluster();
    cluster.nodepools_forbidden = true;
    let setup = Setup::new(cluster);
    let out = setup
        .run(&["evacuate", "--az-id", ZONE, "--yes", "--output", "json"])
        .expect_code(1)
        .json();
    let failed = line(&out, "prod/nodepools");
    assert_eq!(failed["status"], "failed");
    assert!(
        failed["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("clusterrole.json"),
        "{failed}"
    );
}

/// The fake refuses what a real API server refuses for a NodePool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fake_api_server_validates_nodepools_as_the_crd_does() {
    let setup = Setup::new(cluster());
    let config = kube::Config::new(setup.kube.url.parse().expect("url"));
    let client = kube::Client::try_from(config).expect("client");
    let resource =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("karpenter.sh", "v1", "NodePool"), "nodepools");
    let api: Api<DynamicObject> = Api::all_with(client, &resource);
    let code = |e: kube::Error| match e {
        kube::Error::Api(status) => status.code,
        other => panic!("{other}"),
    };
    let with = |requirement: Value| {
        let mut reqs = setup.requirements("batch");
        reqs.as_array_mut().expect("requirements").push(requirement);
        json!({ "spec": { "template": { "spec": { "requirements": reqs } } } })
    };
    let params = PatchParams::default();
    for bad in [
        json!({ "key": "topology.k8s.aws/zone-id", "operator": "NotIn", "values": [] }),
        json!({ "key": "topology.k8s.aws/zone-id", "operator": "In" }),
        json!({ "key": "topology.k8s.aws/zone-id", "operator": "Exists", "values": ["use1-az1"] }),
        json!({ "key": "karpenter.k8s.aws/instance-cpu", "operator": "Gt", "values": ["4", "8"] }),
        json!({ "key": "karpenter.k8s.aws/instance-cpu", "operator": "Lt", "values": ["many"] }),
        json!({ "key": "topology.k8s.aws/zone-id", "operator": "Near", "values": ["use1-az1"] }),
    ] {
        let refused = api.patch("batch", &params, &Patch::Merge(&with(bad.clone()))).await;
        assert_eq!(refused.map_err(code).err(), Some(422), "{bad}");
    }
    let fine = json!({ "key": "topology.k8s.aws/zone-id", "operator": "Exists" });
    api.patch("batch", &params, &Patch::Merge(&with(fine)))
        .await
        .expect("a valid requirement is accepted");
    let strategic = api
        .patch(
            "batch",
            &params,
            &Patch::Strategic(json!({ "metadata": { "labels": { "a": "b" } } })),
        )
        .await;
    assert_eq!(
        strategic.map_err(code).err(),
        Some(415),
        "no strategic merge for custom resources"
    );
    let stale = json!({ "metadata": { "resourceVersion": "1" }, "spec": { "weight": 10 } });
    assert_eq!(
        api.patch("batch", &params, &Patch::Merge(&stale))
            .await
            .map_err(code)
            .err(),
        Some(409)
    );
    assert_eq!(api.get_opt("nope").await.expect("404 is None").map(|_| ()), None);
}

/// An Auto Scaling group of an EKS managed node group keeps its subnets; the plan says what to use.
#[tokio::test]
async fn a_managed_node_groups_auto_scaling_group_is_skipped_with_the_supported_path() {
    let moto = Moto::start();
    let sdk = common::sdk(&moto).await;
    let zones: Vec<String> = ["use1-az1", "use1-az2", "use1-az4"]
        .iter()
        .map(|z| z.to_string())
        .collect();
    let group = |name: &str, tags: &[(&str, &str)]| AsgSpec {
        name: name.into(),
        vpc: "prod".into(),
        zones: zones.clone(),
        desired: 0,
        tags: tags.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
    };
    estate::seed(
        &sdk,
        &Spec {
            vpcs: vec![VpcSpec {
                name: "prod".into(),
                cidr: "10.10.0.0/16".into(),
                zones: zones.clone(),
            }],
            auto_scaling_groups: vec![
                group(
                    "eks-general-20261002",
                    &[("eks:nodegroup-name", "general"), ("eks:cluster-name", "prod")],
                ),
                group("self-managed-workers", &[("k8s.io/cluster-autoscaler/enabled", "true")]),
            ],
            ..Spec::default()
        },
    )
    .await;
    let before = live_groups(&sdk).await;

    let out = azevac(
        &moto,
        &[
            "evacuate", "--az-id", ZONE, "--type", "asg", "--yes", "--output", "json",
        ],
    )
    .expect_code(0)
    .json();
    let managed = line(&out, "eks-general-20261002");
    assert_eq!(managed["status"], "skipped");
    let reason = managed["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("managed node group general") && reason.contains("--zonal-shift") && reason.contains("taints"),
        "{reason}"
    );
    assert_eq!(line(&out, "self-managed-workers")["status"], "done");
    let after = live_groups(&sdk).await;
    let managed_arn = before
        .keys()
        .find(|k| k.contains("eks-general"))
        .expect("managed group")
        .clone();
    assert_eq!(after[&managed_arn], before[&managed_arn], "its subnets are untouched");
    let journalled: Vec<String> = journal_items(&sdk)
        .await
        .iter()
        .map(|i| attr_s(i, "resource"))
        .collect();
    assert_eq!(journalled.len(), 1);
    assert!(journalled[0].contains("self-managed-workers"), "{journalled:?}");
}

/// Issue 31, case 4: records named NodePools and nodes by name only, so `recover` took a
/// requirement out of a NodePool deleted and created again under the same name (here from a
/// manifest that now excludes the zone itself), and the `do-not-disrupt` annotation off a new node
/// of the same name that carries it for its own reasons.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_31_a_nodepool_or_node_replaced_under_the_same_name_is_not_touched() {
    let (cluster, ours, _) = karpenter_nodes_cluster();
    let setup = Setup::new(cluster);
    let original = setup.pools();
    setup
        .run(&["evacuate", "--az-id", ZONE, "--k8s-mode", "noschedule", "--yes"])
        .expect_code(0);
    let excluded = zone_requirement("topology.k8s.aws/zone-id", "NotIn", &[ZONE]);
    assert_eq!(setup.requirements("platform")[3], excluded);
    {
        let mut st = setup.kube.state.lock().expect("state");
        let mut pool = st
            .nodepools
            .as_mut()
            .and_then(|p| p.remove("platform"))
            .expect("platform");
        pool["metadata"]["uid"] = json!("uid-platform-2");
        st.add_nodepool(pool);
        let mut node = st.nodes.remove(ours).expect("the annotated node");
        node["metadata"]["uid"] = json!("uid-new-21");
        node["spec"]["providerID"] = json!("aws:///us-east-1c/i-0new21");
        st.add_node(node);
    }

    let plan = setup
        .run(&["recover", "--az-id", ZONE, "--dry-run", "--output", "json"])
        .expect_code(0)
        .json();
    let platform = line(&plan, "nodepool/platform");
    assert!(
        platform["reason"].as_str().unwrap_or_default().contains(
            "replaced since the evacuation: platform is now another NodePool (uid uid-platform-2); \
             the NodePool azevac changed (uid 0c4d7d3e-1b2a-4c55-9a0e-3f1e5a1c2b04) is gone, nothing to undo"
        ),
        "{platform}"
    );
    let node = line(&plan, &format!("node/{ours}"));
    assert!(
        node["reason"].as_str().unwrap_or_default().contains(&format!(
            "replaced since the evacuation: {ours} is now another node (uid uid-new-21, instance i-0new21)"
        )),
        "{node}"
    );

    setup.run(&["recover", "--az-id", ZONE, "--yes"]).expect_code(0);
    assert_eq!(
        setup.requirements("platform")[3],
        excluded,
        "the new NodePool's own requirement stays"
    );
    assert_eq!(
        setup.node(ours)["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"],
        "true",
        "the new node's own annotation stays"
    );
    for name in ["general", "batch", "pinned"] {
        assert_eq!(
            setup.requirements(name),
            original[name]["spec"]["template"]["spec"]["requirements"],
            "{name}"
        );
    }
    assert!(journal(&setup).await.is_empty());
}

/// Issue 32: records written before journal format 2 (no `format`; the actions as the strings
/// `requirement:KEY NotIn VALUE`, `notin-value:KEY=VALUE`, `in-value-removed:KEY=VALUE@AT`,
/// `annotate:karpenter.sh/do-not-disrupt=true`) still recover: each NodePool gets its zone back
/// where it was, the node loses azevac's annotation, and the records are deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_32_records_written_before_typed_actions_still_recover() {
    let (cluster, ours, _) = karpenter_nodes_cluster();
    let setup = Setup::new(cluster);
    common::azevac_at(&setup.moto.endpoint, &["init"], &[]).expect_code(0);
    let original = setup.pools();
    let node_before = setup.node(ours);
    {
        // The NodePools and the node as that run left them.
        let mut st = setup.kube.state.lock().expect("state");
        st.edit_nodepool("general", |p| {
            requirements_of(p)[5]["values"] = json!(["us-east-1b", "us-east-1d"])
        });
        st.edit_nodepool("batch", |p| requirements_of(p)[1]["values"] = json!(["use1-az1", ZONE]));
        st.edit_nodepool("platform", |p| {
            requirements_of(p).push(zone_requirement("topology.k8s.aws/zone-id", "NotIn", &[ZONE]))
        });
        st.edit_node(ours, |n| {
            n["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"] = json!("true")
        });
    }
    let records = [
        (
            format!("{CLUSTER}/nodepool/general"),
            format!("in-value-removed:topology.kubernetes.io/zone={ZONE_NAME}@1"),
        ),
        (
            format!("{CLUSTER}/nodepool/batch"),
            format!("notin-value:topology.k8s.aws/zone-id={ZONE}"),
        ),
        (
            format!("{CLUSTER}/nodepool/platform"),
            format!("requirement:topology.k8s.aws/zone-id NotIn {ZONE}"),
        ),
        (
            format!("{CLUSTER}/node/{ours}"),
            "annotate:karpenter.sh/do-not-disrupt=true".to_owned(),
        ),
    ];
    let sdk = common::sdk(&setup.moto).await;
    for (resource, action) in &records {
        let name = resource.rsplit_once(":cluster/").map_or(resource.as_str(), |(_, n)| n);
        common::put_format_1_record(&sdk, resource, "karpenter", name, &[action.as_str()], None).await;
    }

    let plan = setup
        .run(&["recover", "--dry-run", "--output", "json"])
        .expect_code(0)
        .json();
    assert_eq!(
        line(&plan, "nodepool/general")["actions"],
        json!([format!(
            "revert in-value-removed:topology.kubernetes.io/zone={ZONE_NAME}@1"
        )]),
        "{plan}"
    );
    setup.run(&["recover", "--yes"]).expect_code(0);
    for name in ["general", "batch", "platform", "pinned"] {
        assert_eq!(
            setup.requirements(name),
            original[name]["spec"]["template"]["spec"]["requirements"],
            "{name}"
        );
    }
    assert_eq!(
        setup.node(ours)["metadata"]["annotations"].get("karpenter.sh/do-not-disrupt"),
        node_before["metadata"]["annotations"].get("karpenter.sh/do-not-disrupt"),
        "azevac's annotation is gone"
    );
    assert!(journal(&setup).await.is_empty());
}

/// Issue 32: a NodePool deleted after the evacuation keeps its record for the operator to decide
/// on (exit 1), until `--forget-missing` drops it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_32_a_vanished_nodepools_record_is_kept_until_forget_missing() {
    let setup = Setup::new(cluster());
    setup.run(&["evacuate", "--az-id", ZONE, "--yes"]).expect_code(0);
    setup
        .kube
        .state
        .lock()
        .expect("state")
        .nodepools
        .as_mut()
        .expect("nodepools")
        .remove("batch");
    let run = setup.run(&["recover", "--yes", "--output", "json"]).expect_code(1);
    let gone = line(&run.json(), "nodepool/batch").clone();
    assert_eq!(gone["status"], "skipped", "{gone}");
    assert!(
        gone["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("NodePool no longer exists: journal record kept"),
        "{gone}"
    );
    let left: Vec<String> = journal(&setup).await.into_keys().collect();
    assert_eq!(left, [format!("{CLUSTER}/nodepool/batch")]);
    setup.run(&["recover", "--yes", "--forget-missing"]).expect_code(0);
    assert!(journal(&setup).await.is_empty());
}

/// One of EKS Auto Mode's built-in NodePools as EKS makes it (Amazon EKS User Guide, "Enable or
/// Disable Built-in NodePools"): labelled `app.kubernetes.io/managed-by: eks`, on the NodeClass
/// `default` of `eks.amazonaws.com`; `system` is tainted for critical add-ons.
fn auto_mode_pool(name: &str, labelled: bool) -> Value {
    let mut pool = json!({
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": { "name": name, "uid": format!("auto-{name}"), "labels": {} },
        "spec": {
            "disruption": { "budgets": [{ "nodes": "10%" }], "consolidateAfter": "30s",
                            "consolidationPolicy": "WhenEmptyOrUnderutilized" },
            "template": { "metadata": {}, "spec": {
                "expireAfter": "336h",
                "nodeClassRef": { "group": "eks.amazonaws.com", "kind": "NodeClass", "name": "default" },
                "requirements": [
                    { "key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"] },
                    { "key": "eks.amazonaws.com/instance-category", "operator": "In", "values": ["c", "m", "r"] },
                    { "key": "eks.amazonaws.com/instance-generation", "operator": "Gt", "values": ["4"] },
                    { "key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"] },
                    { "key": "kubernetes.io/os", "operator": "In", "values": ["linux"] }
                ],
                "terminationGracePeriod": "24h0m0s"
            } }
        }
    });
    if labelled {
        pool["metadata"]["labels"]["app.kubernetes.io/managed-by"] = json!("eks");
    }
    pool
}

/// Issue 50: EKS Auto Mode's built-in NodePools (`general-purpose`, `system`) are EKS's, which undoes
/// a change to them within minutes: they are skipped with the reason and what works instead, and
/// never patched; every other NodePool (one's own on Auto Mode's NodeClass too) as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_50_eks_auto_modes_built_in_nodepools_are_skipped_and_never_patched() {
    let mut cluster = cluster();
    cluster.add_nodepool(auto_mode_pool("general-purpose", true));
    // Without the label, its name on Auto Mode's NodeClass still says it is EKS's.
    cluster.add_nodepool(auto_mode_pool("system", false));
    let mut own = auto_mode_pool("web", false);
    own["metadata"]["uid"] = json!("own-web");
    cluster.add_nodepool(own);
    let setup = Setup::new(cluster);
    let original = setup.pools();

    let out = setup
        .run(&["evacuate", "--az-id", ZONE, "--yes", "--output", "json"])
        .expect_code(0)
        .json();
    for name in ["nodepool/general-purpose", "nodepool/system"] {
        let built_in = line(&out, name);
        assert_eq!(built_in["status"], "skipped", "{built_in}");
        let reason = built_in["reason"].as_str().unwrap_or_default();
        assert!(
            reason.contains("built-in NodePool of EKS Auto Mode")
                && reason.contains("zonal shift")
                && reason.contains("NodePool of your own"),
            "{reason}"
        );
    }
    assert!(line(&out, "nodepool/general-purpose")["reason"]
        .to_string()
        .contains("app.kubernetes.io/managed-by=eks"));
    assert_eq!(line(&out, "nodepool/web")["status"], "done");
    assert_eq!(
        setup.requirements("web")[5],
        zone_requirement("topology.k8s.aws/zone-id", "NotIn", &[ZONE])
    );
    for name in ["general-purpose", "system"] {
        assert_eq!(setup.pools()[name], original[name], "{name} untouched");
        assert!(
            !setup
                .kube
                .requests()
                .iter()
                .any(|r| r.starts_with("PATCH") && r.ends_with(&format!("/nodepools/{name}"))),
            "no PATCH of {name}"
        );
    }
    let journal_now = journal(&setup).await;
    assert!(journal_now.contains_key(&format!("{CLUSTER}/nodepool/web")));
    assert!(!journal_now
        .keys()
        .any(|k| k.ends_with("/general-purpose") || k.ends_with("/system")));
    setup.assert_rbac_allows_every_call();
}
