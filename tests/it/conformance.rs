//! Conformance (issue 31): one suite for every kind the registry lists (`azevac::plugins::REGISTRY`).
//! A kind's fixture here says how to seed a small estate of it (six resources an evacuation of
//! use1-az2 changes, and others it must leave alone), the flags that evacuate and recover it, a
//! snapshot of its live state, a change an operator makes by hand and how its resource vanishes.
//! Every kind then gets every property, each its own test (`conformance::<kind>::issue_31_*`):
//! - a round trip: evacuate, read back (the zone gone from exactly what changed), recover (the
//!   original exactly, no record and no lock left); a second evacuate and recover do nothing;
//! - a crash between intent and act: killed at the first changing call, before and after it lands;
//! - a kill at every journal write and every change of an evacuate and of a recover, and at a
//!   sample of the other calls, at the default concurrency with two batches in flight;
//! - a resource changed by hand between the plan and the change (held at the proxy meanwhile);
//! - a record whose resource vanished before recover: reported and kept, `--forget-missing` drops it.
//!
//! Every run is the real binary, through the fault-injecting proxy (AWS, and ARC's fake) and
//! watched by the fake Kubernetes API server, in journal batches of three lines (`AZEVAC_BATCH`),
//! so that six resources make two batches. A kind registered without a fixture fails
//! `every_registered_kind_has_a_fixture`. The figures printed ("conformance: ...", with
//! `--nocapture`) are the ones the manual's Reliability page (docs/src/reliability.md) quotes.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::process::Child;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_config::SdkConfig;
use serde_json::{json, Value};

use common::estate::{
    self, AsgSpec, BatchSpec, EcsSpec, EndpointSpec, LambdaSpec, NatSpec, RouteTableSpec, Seeded, Spec, VpcSpec,
};
use common::events::{EventTargetSpec, ScheduleSpec};
use common::kill_points::{self, intent_batches, journal_write, named_points, Target};
use common::kube::{fixture, fixture_items, Cluster, FakeKube};
use common::proxy::{Faults, Hold, KillOn, KillWhen, Proxy};
use common::{attr_s, azevac_at, journal_items, lock_items, Run, ZONE};

/// Journal lines per batch in every run here: six resources make two batches, both in flight at
/// the default concurrency.
const BATCH: &str = "3";
/// The resources of each kind that an evacuation of use1-az2 changes: `r0` to `r5`.
const CHANGED: usize = 6;
/// The EKS cluster (and kube context `prod`) of the Kubernetes kinds.
const EKS_CLUSTER: &str = "arn:aws:eks:us-east-1:123456789012:cluster/prod";
/// The zones every estate spans, the evacuated one (use1-az2, moto's us-east-1c) in the middle.
const ZONES: [&str; 3] = ["use1-az1", ZONE, "use1-az4"];
/// Zone names of [`ZONES`], in the same order.
const ZONE_NAMES: [&str; 3] = ["us-east-1b", "us-east-1c", "us-east-1d"];
/// How long a hold waits for its call.
const HOLD_WAIT: Duration = Duration::from_secs(60);

/// Every kind with a fixture, by the name it is registered under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Asg,
    Ecs,
    Lambda,
    Eks,
    Karpenter,
    ZonalShift,
    Nat,
    Db,
    Batch,
    VpcEndpoint,
    EventBridge,
    Scheduler,
}

/// The kinds with a fixture; each has its line at the end of this file (`kind!`), which makes its
/// tests.
const KINDS: [Kind; 12] = [
    Kind::Asg,
    Kind::Ecs,
    Kind::Lambda,
    Kind::Eks,
    Kind::Karpenter,
    Kind::ZonalShift,
    Kind::Nat,
    Kind::Db,
    Kind::Batch,
    Kind::VpcEndpoint,
    Kind::EventBridge,
    Kind::Scheduler,
];

impl Kind {
    /// Whether a recover keeps the record of a resource that has vanished (until `--forget-missing`):
    /// every kind that keeps a record of a resource does (a group's, service's, function's subnets,
    /// a route, a writer, a node's taint, a NodePool's requirement: issue 32); a shift's record says
    /// nothing of the resource, and cancelling the shift is the whole recovery.
    fn keeps_a_vanished_record(self) -> bool {
        !matches!(self, Kind::ZonalShift)
    }

    /// The `--type` value, as the registry names it.
    fn name(self) -> &'static str {
        match self {
            Kind::Asg => "asg",
            Kind::Ecs => "ecs",
            Kind::Lambda => "lambda",
            Kind::Eks => "eks",
            Kind::Karpenter => "karpenter",
            Kind::ZonalShift => "zonal-shift",
            Kind::Nat => "nat",
            Kind::Db => "db",
            Kind::Batch => "batch",
            Kind::VpcEndpoint => "vpc-endpoint",
            Kind::EventBridge => "eventbridge",
            Kind::Scheduler => "scheduler",
        }
    }

    /// Whether it acts through the Kubernetes API.
    fn kubernetes(self) -> bool {
        matches!(self, Kind::Eks | Kind::Karpenter)
    }

    /// The key of the `i`th changed resource in [`State`].
    fn key(self, i: usize) -> String {
        match self {
            Kind::Ecs => format!("prod/r{i}"),
            Kind::Karpenter => format!("nodepool/r{i}"),
            Kind::Batch => format!("ce-r{i}"),
            _ => format!("r{i}"),
        }
    }
}

/// A new kind gets the whole suite by registering and adding its fixture here: until it has one,
/// this test names it.
#[test]
fn every_registered_kind_has_a_fixture() {
    let missing: Vec<&str> = azevac::plugins::REGISTRY
        .iter()
        .map(|r| r.name)
        .filter(|name| !KINDS.iter().any(|k| k.name() == *name))
        .collect();
    assert!(
        missing.is_empty(),
        "registered kinds without a conformance fixture in tests/it/conformance.rs: {missing:?}"
    );
    let gone: Vec<&str> = KINDS
        .iter()
        .map(|k| k.name())
        .filter(|name| !azevac::plugins::types().contains(name))
        .collect();
    assert!(gone.is_empty(), "fixtures of kinds no longer registered: {gone:?}");
}

/// A kind's live state as the suite compares it: each resource's state, by key.
type State = BTreeMap<String, Value>;

/// The two commands every property runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Evacuate,
    Recover,
}

/// A freshly seeded estate: its state, and the state a complete evacuation leaves.
struct Start {
    original: State,
    evacuated: State,
}

/// One kind's estate: its own moto server, the proxy in front of it (ARC's fake included), a fake
/// Kubernetes API server and a kubeconfig naming it.
struct World {
    kind: Kind,
    moto: common::Moto,
    proxy: Proxy,
    kube: FakeKube,
    sdk: SdkConfig,
    dir: tempfile::TempDir,
    /// IDs learnt when seeding (subnets, NAT gateways, route tables), by name.
    ids: Mutex<BTreeMap<String, String>>,
}

impl World {
    async fn new(kind: Kind) -> World {
        let moto = common::Moto::start();
        let proxy = Proxy::start(&moto.endpoint);
        // Every kind answers to AWS's documented behaviour, not to the emulator's leniency.
        proxy.strict();
        let sdk = common::sdk(&moto).await;
        let kube = FakeKube::start(Cluster::default());
        let dir = tempfile::tempdir().expect("tempdir");
        kube.kubeconfig(dir.path(), &[("prod", EKS_CLUSTER)]);
        World {
            kind,
            moto,
            proxy,
            kube,
            sdk,
            dir,
            ids: Mutex::new(BTreeMap::new()),
        }
    }

    fn id(&self, name: &str) -> String {
        self.ids.lock().expect("ids")[name].clone()
    }

    /// The full arguments of `phase` (JSON output), with `extra`.
    fn args(&self, phase: Phase, extra: &[&str]) -> Vec<String> {
        self.args_in(ZONE, phase, extra)
    }

    /// The full arguments of `phase` (JSON output) in `zone` (evacuate), with `extra`.
    fn args_in(&self, zone: &str, phase: Phase, extra: &[&str]) -> Vec<String> {
        let name = self.kind.name();
        let mut args: Vec<String> = match phase {
            Phase::Evacuate => vec!["evacuate", "--az-id", zone, "--type", name, "--yes", "--output", "json"],
            Phase::Recover => vec!["recover", "--type", name, "--yes", "--output", "json"],
        }
        .into_iter()
        .map(str::to_owned)
        .collect();
        match (self.kind, phase) {
            (Kind::Eks, Phase::Evacuate) => args.extend(["--k8s-mode".into(), "noschedule".into()]),
            // By default a writer stays where it was failed over to: failing back restores it.
            (Kind::Db, Phase::Recover) => args.push("--failback".into()),
            _ => {}
        }
        if self.kind.kubernetes() {
            let kubeconfig = self.dir.path().join("kubeconfig").display().to_string();
            args.extend([
                "--kube-context".into(),
                "prod".into(),
                "--kubeconfig".into(),
                kubeconfig,
            ]);
        }
        args.extend(extra.iter().map(|a| a.to_string()));
        args
    }

    /// Run `phase` to its end.
    fn run(&self, phase: Phase, extra: &[&str]) -> Run {
        // An operator's next command comes later than a read lags a write: the strict layer's
        // stale reads live within one run (its read-back, its later batches, its second line).
        self.proxy.settle_reads();
        let args = self.args(phase, extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        azevac_at(&self.proxy.endpoint, &args, &[("AZEVAC_BATCH", Some(BATCH))])
    }

    /// Run `phase` in `zone` to its end.
    fn run_in(&self, zone: &str, phase: Phase) -> Run {
        self.proxy.settle_reads();
        let args = self.args_in(zone, phase, &[]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        azevac_at(&self.proxy.endpoint, &args, &[("AZEVAC_BATCH", Some(BATCH))])
    }

    /// Start `phase`, watched by the proxy and the fake API server (either may kill it).
    fn spawn(&self, phase: Phase) -> Arc<Mutex<Child>> {
        self.proxy.settle_reads();
        let args = self.args(phase, &[]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let child = common::spawn_quiet(&self.proxy.endpoint, &args, &[("AZEVAC_BATCH", Some(BATCH))]);
        self.proxy.watch(child.clone());
        self.kube.watch(child.clone());
        child
    }

    /// Run `phase` watched; its exit code (`None`: killed).
    fn run_watched(&self, phase: Phase) -> Option<i32> {
        common::wait_watched(&self.spawn(phase))
    }

    fn killed(&self) -> bool {
        self.proxy.killed() || self.kube.killed()
    }

    /// No fault, no kill point, no hold; the call logs emptied.
    fn disarm(&self) {
        self.proxy.set(Faults::default());
        self.kube.set_kill_on(None);
    }

    /// How the journal table differs from empty: its records and locks.
    async fn leftovers(&self) -> Vec<String> {
        let records = journal_items(&self.sdk).await.into_iter().map(|i| {
            format!(
                "record {} {} ({})",
                attr_s(&i, "resource_type"),
                attr_s(&i, "resource"),
                attr_s(&i, "state")
            )
        });
        let locks = lock_items(&self.sdk)
            .await
            .into_iter()
            .map(|i| format!("lock {}", attr_s(&i, "resource")));
        records.chain(locks).collect()
    }

    /// Recover until nothing is left to do: until a run leaves no record and no lock (the next
    /// would find nothing to do), three runs at most. Returns the problems met and how many runs it
    /// took. Killed before the journal table existed, recover asks for `azevac init`: nothing can
    /// have changed.
    async fn recover_fully(&self) -> (Vec<String>, usize) {
        let mut problems = Vec::new();
        for attempt in 1..=3 {
            let run = self.run(Phase::Recover, &[]);
            if run.code == 2 && run.stderr.contains("azevac init") {
                return (problems, attempt);
            }
            if run.code != 0 {
                problems.push(format!(
                    "recover #{attempt} exited {}: {}",
                    run.code,
                    failed_lines(&run)
                ));
            }
            if self.leftovers().await.is_empty() {
                return (problems, attempt);
            }
        }
        problems.push("records or locks left after three recovers".into());
        (problems, 3)
    }

    /// How the live state and the journal differ from `expected` and an empty table.
    async fn off(&self, expected: &State) -> Vec<String> {
        let mut off = diff(expected, &self.state().await);
        off.extend(self.leftovers().await);
        off
    }
}

/// The failed lines of a run's JSON result (name: reason), or its stderr if it printed none.
fn failed_lines(run: &Run) -> String {
    let doc: Value = serde_json::from_str(&run.stdout).unwrap_or_default();
    let failed: Vec<String> = doc["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["status"] == "failed")
        .map(|i| format!("{}: {}", i["name"], i["reason"]))
        .collect();
    if failed.is_empty() {
        run.stderr.trim().to_owned()
    } else {
        failed.join("; ")
    }
}

/// Whether a run's JSON result says it had nothing to do.
fn did_nothing(run: &Run) -> bool {
    let doc = run.json();
    ["planned", "done", "failed"]
        .iter()
        .all(|k| doc["summary"][k].as_u64().unwrap_or_default() == 0)
}

/// Each resource whose state differs, with both states.
fn diff(expected: &State, now: &State) -> Vec<String> {
    let keys: BTreeSet<&String> = expected.keys().chain(now.keys()).collect();
    keys.into_iter()
        .filter(|k| expected.get(*k) != now.get(*k))
        .map(|k| format!("{k}: {} (expected {})", show(now.get(k)), show(expected.get(k))))
        .collect()
}

fn show(value: Option<&Value>) -> String {
    value.map_or_else(|| "absent".to_owned(), Value::to_string)
}

/// Run `property` on a runtime of its own.
fn block_on(property: impl std::future::Future<Output = ()>) {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a Tokio runtime")
        .block_on(property)
}

// ---------------------------------------------------------------------------------------------
// The fixtures: seeding, state, hand changes and vanishing, per kind.

fn zones(list: &[&str]) -> Vec<String> {
    list.iter().map(|z| z.to_string()).collect()
}

/// The zones of the `i`th changed resource of a subnet kind: all three (in two orders), or the
/// zone and one other; each keeps a subnet outside the zone.
fn zones_of(i: usize) -> Vec<String> {
    match i % 3 {
        0 => zones(&ZONES),
        1 => zones(&[ZONE, "use1-az4"]),
        _ => zones(&["use1-az4", ZONE, "use1-az1"]),
    }
}

/// The subnet kinds' estate: `r0`..`r5` in the zone and elsewhere, `solo` only in the zone (it
/// would lose its last subnet: skipped), `far` outside it.
fn subnet_spec(kind: Kind) -> Spec {
    let placed: Vec<(String, Vec<String>)> = (0..CHANGED)
        .map(|i| (format!("r{i}"), zones_of(i)))
        .chain([
            ("solo".to_owned(), zones(&[ZONE])),
            ("far".to_owned(), zones(&["use1-az1", "use1-az4"])),
        ])
        .collect();
    let mut spec = Spec {
        vpcs: vec![VpcSpec {
            name: "main".into(),
            cidr: "10.31.0.0/16".into(),
            zones: zones(&ZONES),
        }],
        ..Spec::default()
    };
    for (name, zones) in placed {
        match kind {
            Kind::Asg => spec.auto_scaling_groups.push(AsgSpec {
                name,
                vpc: "main".into(),
                zones,
                desired: 0,
                tags: BTreeMap::new(),
            }),
            Kind::Ecs => spec.ecs_services.push(EcsSpec {
                cluster: "prod".into(),
                name,
                vpc: "main".into(),
                zones,
                network_mode: "awsvpc".into(),
                controller: "ECS".into(),
                assign_public_ip: "DISABLED".into(),
                desired: 0,
                tags: BTreeMap::new(),
            }),
            // Batch names are three characters at least (in moto).
            Kind::Batch => spec
                .batch_compute_environments
                .push(batch_environment(format!("ce-{name}"), zones)),
            Kind::VpcEndpoint => spec.vpc_endpoints.push(EndpointSpec {
                name,
                vpc: "main".into(),
                service: "com.amazonaws.us-east-1.sqs".into(),
                zones,
            }),
            // Two rules: the even targets on the default bus, the odd ones on another.
            Kind::EventBridge => {
                let odd = name.ends_with(['1', '3', '5']) || name == "far";
                spec.eventbridge_targets.push(EventTargetSpec {
                    bus: if odd { "ops" } else { "default" }.into(),
                    rule: if odd { "odd" } else { "even" }.into(),
                    id: name,
                    vpc: "main".into(),
                    zones,
                })
            }
            Kind::Scheduler => spec.schedules.push(ScheduleSpec {
                group: "reports".into(),
                name,
                vpc: "main".into(),
                zones,
            }),
            _ => spec.lambda_functions.push(LambdaSpec {
                name,
                vpc: Some("main".into()),
                zones,
                published_alias: false,
                tags: BTreeMap::new(),
            }),
        }
    }
    spec
}

/// Batch compute environments: the odd ones EC2 (an infrastructure update), the others Fargate.
fn batch_environment(name: String, zones: Vec<String>) -> BatchSpec {
    let ec2 = ["ce-r1", "ce-r3", "ce-r5"].contains(&name.as_str());
    BatchSpec {
        name,
        vpc: "main".into(),
        zones,
        compute_type: if ec2 { "EC2" } else { "FARGATE" }.into(),
        allocation_strategy: ec2.then(|| "BEST_FIT_PROGRESSIVE".into()),
        managed: true,
        own_service_role: false,
        tags: BTreeMap::new(),
    }
}

/// Every Batch compute environment's placement, and what else an update could change.
async fn batch_state(sdk: &SdkConfig) -> State {
    let environments: Vec<aws_sdk_batch::types::ComputeEnvironmentDetail> = aws_sdk_batch::Client::new(sdk)
        .describe_compute_environments()
        .into_paginator()
        .items()
        .send()
        .try_collect()
        .await
        .expect("DescribeComputeEnvironments");
    environments
        .iter()
        .map(|e| {
            let r = e.compute_resources();
            let mut state = placement(
                r.map(|r| r.subnets()).unwrap_or_default(),
                r.map(|r| r.security_group_ids()).unwrap_or_default(),
                None,
            );
            state["rest"] = json!(format!(
                "{:?} {:?} {:?} {:?} {:?} {:?}",
                r.and_then(|r| r.r#type()),
                r.and_then(|r| r.allocation_strategy()),
                r.and_then(|r| r.maxv_cpus()),
                e.state(),
                e.service_role(),
                e.update_policy()
            ));
            (e.compute_environment_name().unwrap_or_default().to_owned(), state)
        })
        .collect()
}

/// Subnets, security groups and public IP setting as one state.
fn placement(subnets: &[String], groups: &[String], public_ip: Option<&str>) -> Value {
    let mut state = json!({ "subnets": subnets, "security_groups": groups });
    if let Some(public_ip) = public_ip {
        state["public_ip"] = json!(public_ip);
    }
    state
}

/// The NAT estate: VPCs `v0`..`v2`, each with a NAT gateway in every zone; in each, the route
/// tables of its use1-az1 and use1-az4 subnets (`r0`..`r5`) send 0.0.0.0/0 through the zone's NAT
/// gateway (they move to their own zone's); `inside`, the zone's own table, stays.
fn nat_spec() -> Spec {
    let mut spec = Spec::default();
    for v in 0..3 {
        let vpc = format!("v{v}");
        spec.vpcs.push(VpcSpec {
            name: vpc.clone(),
            cidr: format!("10.{}.0.0/16", 40 + v),
            zones: zones(&ZONES),
        });
        for zone in ZONES {
            spec.nat_gateways.push(NatSpec {
                name: format!("{vpc}-{zone}"),
                vpc: vpc.clone(),
                zone: zone.into(),
                private: false,
            });
        }
        for (i, zone) in [(2 * v, "use1-az1"), (2 * v + 1, "use1-az4")] {
            spec.route_tables.push(RouteTableSpec {
                name: format!("r{i}"),
                vpc: vpc.clone(),
                zones: zones(&[zone]),
                routes: BTreeMap::from([("0.0.0.0/0".to_owned(), format!("{vpc}-{ZONE}"))]),
            });
        }
    }
    spec.route_tables.push(RouteTableSpec {
        name: "inside".into(),
        vpc: "v0".into(),
        zones: zones(&[ZONE]),
        routes: BTreeMap::from([("0.0.0.0/0".to_owned(), format!("v0-{ZONE}"))]),
    });
    spec
}

/// The `n`th node, in `ZONES[zone]`, from the fixture's first use1-az2 node.
fn node(name: &str, zone: usize, n: usize) -> Value {
    let mut node = fixture_items("eks-nodes.json")
        .into_iter()
        .find(|n| n["metadata"]["name"] == "ip-10-0-2-21.ec2.internal")
        .expect("fixture node");
    node["metadata"]["name"] = json!(name);
    node["metadata"]["uid"] = json!(format!("uid-{name}"));
    for label in ["topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone"] {
        node["metadata"]["labels"][label] = json!(ZONE_NAMES[zone]);
    }
    node["metadata"]["labels"]["topology.k8s.aws/zone-id"] = json!(ZONES[zone]);
    node["metadata"]["labels"]["kubernetes.io/hostname"] = json!(name);
    node["spec"]["providerID"] = json!(format!("aws:///{}/i-0{n:016}", ZONE_NAMES[zone]));
    node
}

/// Nodes `r0`..`r5` in the zone (`r5` cordoned and tainted by someone else), `a1` and `a4`
/// elsewhere.
fn eks_cluster() -> Cluster {
    let mut cluster = Cluster::default();
    for i in 0..CHANGED {
        cluster.add_node(node(&format!("r{i}"), 1, i));
    }
    cluster.add_node(node("a1", 0, CHANGED));
    cluster.add_node(node("a4", 2, CHANGED + 1));
    cluster.edit_node("r5", |n| {
        n["spec"]["unschedulable"] = json!(true);
        n["spec"]["taints"] = json!([{ "key": "example.com/maintenance", "effect": "NoSchedule" }]);
    });
    cluster
}

/// A NodePool named `name` with these requirements, from the fixture's `general`.
fn nodepool(name: &str, requirements: Value) -> Value {
    let mut pool = fixture("karpenter-nodepools.json")["items"][0].clone();
    pool["metadata"]["name"] = json!(name);
    pool["metadata"]["uid"] = json!(format!("uid-{name}"));
    pool["spec"]["template"]["spec"]["requirements"] = requirements;
    pool
}

fn requirement(key: &str, operator: &str, values: &[&str]) -> Value {
    json!({ "key": key, "operator": operator, "values": values })
}

/// NodePools `r0`..`r5`: the even ones in three zones by name (the zone's name comes out), the odd
/// ones out of use1-az1 by ID (the zone's ID is added); `pinned` only in the zone (skipped: it
/// would have no zone left), `far` outside it. The fixture's nodes beside them.
fn karpenter_cluster() -> Cluster {
    let mut cluster = Cluster::default();
    for n in fixture_items("eks-nodes.json") {
        cluster.add_node(n);
    }
    let arch = requirement("kubernetes.io/arch", "In", &["amd64"]);
    for i in 0..CHANGED {
        let zone = if i % 2 == 0 {
            requirement("topology.kubernetes.io/zone", "In", &ZONE_NAMES)
        } else {
            requirement("topology.k8s.aws/zone-id", "NotIn", &["use1-az1"])
        };
        cluster.add_nodepool(nodepool(&format!("r{i}"), json!([arch, zone])));
    }
    let pinned = requirement("topology.k8s.aws/zone-id", "In", &[ZONE]);
    cluster.add_nodepool(nodepool("pinned", json!([arch, pinned])));
    let far = requirement("topology.kubernetes.io/zone", "In", &["us-east-1b", "us-east-1d"]);
    cluster.add_nodepool(nodepool("far", json!([arch, far])));
    cluster
}

/// The ARN ARC knows a load balancer by.
fn balancer(name: &str) -> String {
    format!("arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/net/{name}/31")
}

/// Database clusters `r0`..`r5`, each with its writer `rN-1` in the zone and a reader `rN-2` in
/// use1-az4; `far`, with its writer in use1-az1.
async fn seed_db(sdk: &SdkConfig) {
    let rds = aws_sdk_rds::Client::new(sdk);
    let clusters = (0..CHANGED)
        .map(|i| (format!("r{i}"), ZONE_NAMES[1]))
        .chain([("far".to_owned(), ZONE_NAMES[0])]);
    for (id, writer_zone) in clusters {
        let (writer, reader) = (format!("{id}-1"), format!("{id}-2"));
        let members = [
            (writer.as_str(), writer_zone, 1, "db.r6g.large"),
            (reader.as_str(), ZONE_NAMES[2], 1, "db.r6g.large"),
        ];
        common::rds::cluster(&rds, &id, &members).await;
    }
}

impl World {
    /// A fresh estate of the kind: no fault, no kill point, the journal table gone.
    async fn reset(&self) -> Start {
        self.moto.reset();
        self.disarm();
        *self.kube.state.lock().expect("state") = Cluster::default();
        {
            let mut arc = self.proxy.arc.lock().expect("arc");
            arc.managed.clear();
            arc.shifts.clear();
        }
        let mut ids = BTreeMap::new();
        match self.kind {
            Kind::Asg
            | Kind::Ecs
            | Kind::Lambda
            | Kind::Batch
            | Kind::VpcEndpoint
            | Kind::EventBridge
            | Kind::Scheduler => {
                let seeded = estate::seed(&self.sdk, &subnet_spec(self.kind)).await;
                ids.insert("zone subnet".to_owned(), seeded.subnet("main", ZONE));
                ids.insert("use1-az4 subnet".to_owned(), seeded.subnet("main", "use1-az4"));
                ids.extend(seeded.vpc_endpoints);
            }
            Kind::Nat => {
                let Seeded {
                    nat_gateways,
                    route_tables,
                    ..
                } = estate::seed(&self.sdk, &nat_spec()).await;
                ids.extend(nat_gateways);
                ids.extend(route_tables);
            }
            Kind::Eks => *self.kube.state.lock().expect("state") = eks_cluster(),
            Kind::Karpenter => *self.kube.state.lock().expect("state") = karpenter_cluster(),
            Kind::ZonalShift => {
                let mut arc = self.proxy.arc.lock().expect("arc");
                for i in 0..CHANGED {
                    arc.manage(&balancer(&format!("r{i}")), &format!("r{i}"), &ZONES);
                }
                arc.manage(&balancer("far"), "far", &["use1-az1", "use1-az4"]);
                arc.manage(&balancer("other"), "other", &ZONES);
                arc.start_by_hand(&balancer("other"), "use1-az1", "ZONAL_SHIFT");
            }
            Kind::Db => seed_db(&self.sdk).await,
        }
        *self.ids.lock().expect("ids") = ids;
        let original = self.state().await;
        let evacuated = self.evacuated(&original);
        Start { original, evacuated }
    }

    /// The kind's live state.
    async fn state(&self) -> State {
        match self.kind {
            Kind::Asg => common::live_groups(&self.sdk)
                .await
                .into_iter()
                .map(|(k, s)| (k, placement(&s, &[], None)))
                .collect(),
            Kind::Ecs => common::live_services(&self.sdk)
                .await
                .into_iter()
                .map(|(k, (s, g, p))| (k, placement(&s, &g, Some(&p))))
                .collect(),
            Kind::Lambda => common::live_functions(&self.sdk)
                .await
                .into_iter()
                .map(|(k, (s, g))| (k, placement(&s, &g, None)))
                .collect(),
            Kind::Eks | Kind::Karpenter => self.kube_state(),
            Kind::ZonalShift => self.shift_state(),
            Kind::Nat => nat_state(&self.sdk).await,
            Kind::Db => db_state(&self.sdk).await,
            Kind::Batch => batch_state(&self.sdk).await,
            Kind::VpcEndpoint => endpoint_state(&self.sdk).await,
            // By target Id and schedule name (`r0`), what else they hold as text beside.
            Kind::EventBridge => placed_state(common::events::live_rule_targets(&self.sdk).await),
            Kind::Scheduler => placed_state(common::events::live_schedules(&self.sdk).await),
        }
    }

    /// Nodes (and NodePools) without their resourceVersions.
    fn kube_state(&self) -> State {
        let st = self.kube.state.lock().expect("state");
        let strip = |o: &Value| {
            let mut o = o.clone();
            if let Some(meta) = o["metadata"].as_object_mut() {
                meta.remove("resourceVersion");
            }
            o
        };
        let nodes = st.nodes.iter().map(|(name, n)| match self.kind {
            Kind::Karpenter => (format!("node/{name}"), strip(n)),
            _ => (name.clone(), strip(n)),
        });
        let pools = st
            .nodepools
            .iter()
            .flatten()
            .map(|(name, p)| (format!("nodepool/{name}"), strip(p)));
        nodes.chain(pools).collect()
    }

    /// Each managed resource's active shifts: away from which zone, and whose (azevac's or the
    /// comment of whoever started it).
    fn shift_state(&self) -> State {
        let arc = self.proxy.arc.lock().expect("arc");
        let active = arc.active();
        arc.managed
            .iter()
            .map(|m| {
                let shifts: Vec<Value> = active
                    .iter()
                    .filter(|s| s.resource == m.arn)
                    .map(|s| {
                        let by = if s.comment.starts_with("azevac run ") {
                            "azevac"
                        } else {
                            s.comment.as_str()
                        };
                        json!({ "away_from": s.away_from, "type": s.shift_type, "by": by })
                    })
                    .collect();
                (m.name.clone(), json!(shifts))
            })
            .collect()
    }

    /// What a complete evacuation leaves: `r0`..`r5` out of the zone, the rest as it was.
    fn evacuated(&self, original: &State) -> State {
        let mut state = original.clone();
        for i in 0..CHANGED {
            let key = self.kind.key(i);
            let Some(resource) = state.get_mut(&key) else {
                panic!("{}: no {key} in {original:?}", self.kind.name());
            };
            match self.kind {
                Kind::Asg | Kind::Ecs | Kind::Lambda | Kind::Batch | Kind::EventBridge | Kind::Scheduler => {
                    let zone = self.id("zone subnet");
                    if let Some(subnets) = resource["subnets"].as_array_mut() {
                        subnets.retain(|s| s != &json!(zone));
                    }
                }
                Kind::Eks => {
                    let taint = json!({ "key": "azevac.io/evacuated", "value": ZONE, "effect": "NoSchedule" });
                    match resource["spec"]["taints"].as_array_mut() {
                        Some(taints) => taints.push(taint),
                        None => resource["spec"]["taints"] = json!([taint]),
                    }
                    resource["spec"]["unschedulable"] = json!(true);
                }
                Kind::Karpenter => {
                    let zone = &mut resource["spec"]["template"]["spec"]["requirements"][1];
                    *zone = if i % 2 == 0 {
                        requirement("topology.kubernetes.io/zone", "In", &["us-east-1b", "us-east-1d"])
                    } else {
                        requirement("topology.k8s.aws/zone-id", "NotIn", &["use1-az1", ZONE])
                    };
                }
                Kind::ZonalShift => {
                    *resource = json!([{ "away_from": ZONE, "type": "ZONAL_SHIFT", "by": "azevac" }]);
                }
                Kind::Nat => {
                    let own = if i % 2 == 0 { "use1-az1" } else { "use1-az4" };
                    *resource = json!({ "0.0.0.0/0": self.id(&format!("v{}-{own}", i / 2)) });
                }
                Kind::Db => *resource = json!(format!("r{i}-2")),
                Kind::VpcEndpoint => {
                    let zone = self.id("zone subnet");
                    if let Some(subnets) = resource["subnets"].as_array_mut() {
                        subnets.retain(|s| s != &json!(zone));
                    }
                    if let Some(addresses) = resource["addresses"].as_object_mut() {
                        addresses.remove(&zone);
                    }
                }
            }
        }
        state
    }

    /// What the journal's key of `ri`'s record (its ARN) ends with.
    fn record_of(&self, i: usize) -> String {
        match self.kind {
            Kind::Nat | Kind::VpcEndpoint => self.id(&format!("r{i}")),
            _ => format!("r{i}"),
        }
    }

    /// An operator's own change to `r0`, made between azevac's plan and its change: a subnet
    /// outside the zone taken out (groups, services, functions), the node cordoned, a zone name
    /// taken out of the NodePool, a shift of their own started, the route moved to the table's
    /// own zone, the writer failed over by hand.
    async fn change_by_hand(&self) {
        let keep = |subnets: &[String]| -> Vec<String> {
            let far = self.id("use1-az4 subnet");
            subnets.iter().filter(|s| **s != far).cloned().collect()
        };
        match self.kind {
            Kind::Asg => {
                let now = &common::live_groups(&self.sdk).await["r0"];
                aws_sdk_autoscaling::Client::new(&self.sdk)
                    .update_auto_scaling_group()
                    .auto_scaling_group_name("r0")
                    .vpc_zone_identifier(keep(now).join(","))
                    .send()
                    .await
                    .expect("UpdateAutoScalingGroup");
            }
            Kind::Ecs => {
                let (subnets, groups, _) = common::live_services(&self.sdk).await["prod/r0"].clone();
                let awsvpc = aws_sdk_ecs::types::AwsVpcConfiguration::builder()
                    .set_subnets(Some(keep(&subnets)))
                    .set_security_groups(Some(groups))
                    .assign_public_ip(aws_sdk_ecs::types::AssignPublicIp::Disabled)
                    .build()
                    .expect("awsvpc");
                aws_sdk_ecs::Client::new(&self.sdk)
                    .update_service()
                    .cluster("prod")
                    .service("r0")
                    .network_configuration(
                        aws_sdk_ecs::types::NetworkConfiguration::builder()
                            .awsvpc_configuration(awsvpc)
                            .build(),
                    )
                    .send()
                    .await
                    .expect("UpdateService");
            }
            Kind::Lambda => {
                let (subnets, groups) = common::live_functions(&self.sdk).await["r0"].clone();
                aws_sdk_lambda::Client::new(&self.sdk)
                    .update_function_configuration()
                    .function_name("r0")
                    .vpc_config(
                        aws_sdk_lambda::types::VpcConfig::builder()
                            .set_subnet_ids(Some(keep(&subnets)))
                            .set_security_group_ids(Some(groups))
                            .build(),
                    )
                    .send()
                    .await
                    .expect("UpdateFunctionConfiguration");
            }
            Kind::Eks => self
                .kube
                .state
                .lock()
                .expect("state")
                .edit_node("r0", |n| n["spec"]["unschedulable"] = json!(true)),
            Kind::Karpenter => self.kube.state.lock().expect("state").edit_nodepool("r0", |p| {
                p["spec"]["template"]["spec"]["requirements"][1]["values"] = json!(["us-east-1b", "us-east-1c"])
            }),
            Kind::ZonalShift => {
                let mut arc = self.proxy.arc.lock().expect("arc");
                arc.start_by_hand(&balancer("r0"), "use1-az1", "ZONAL_SHIFT");
            }
            Kind::Nat => {
                aws_sdk_ec2::Client::new(&self.sdk)
                    .replace_route()
                    .route_table_id(self.id("r0"))
                    .destination_cidr_block("0.0.0.0/0")
                    .nat_gateway_id(self.id("v0-use1-az1"))
                    .send()
                    .await
                    .expect("ReplaceRoute");
            }
            Kind::VpcEndpoint => {
                aws_sdk_ec2::Client::new(&self.sdk)
                    .modify_vpc_endpoint()
                    .vpc_endpoint_id(self.id("r0"))
                    .remove_subnet_ids(self.id("use1-az4 subnet"))
                    .send()
                    .await
                    .expect("ModifyVpcEndpoint");
            }
            Kind::EventBridge => {
                common::events::change_rule_target(&self.sdk, "default", "even", "r0", |subnets| keep(subnets)).await
            }
            Kind::Scheduler => {
                common::events::change_schedule(&self.sdk, "reports", "r0", |subnets| keep(subnets)).await
            }
            Kind::Db => {
                aws_sdk_rds::Client::new(&self.sdk)
                    .failover_db_cluster()
                    .db_cluster_identifier("r0")
                    .target_db_instance_identifier("r0-2")
                    .send()
                    .await
                    .expect("FailoverDBCluster");
            }
            Kind::Batch => {
                let now = batch_state(&self.sdk).await["ce-r0"]["subnets"].clone();
                let now: Vec<String> = serde_json::from_value(now).expect("subnets");
                aws_sdk_batch::Client::new(&self.sdk)
                    .update_compute_environment()
                    .compute_environment("ce-r0")
                    .compute_resources(
                        aws_sdk_batch::types::ComputeResourceUpdate::builder()
                            .set_subnets(Some(keep(&now)))
                            .build(),
                    )
                    .send()
                    .await
                    .expect("UpdateComputeEnvironment");
            }
        }
    }

    /// `r1` deleted by hand (a node or NodePool gone, a resource no longer registered with ARC).
    async fn delete_by_hand(&self) {
        match self.kind {
            Kind::Asg => {
                aws_sdk_autoscaling::Client::new(&self.sdk)
                    .delete_auto_scaling_group()
                    .auto_scaling_group_name("r1")
                    .force_delete(true)
                    .send()
                    .await
                    .expect("DeleteAutoScalingGroup");
            }
            Kind::Ecs => {
                aws_sdk_ecs::Client::new(&self.sdk)
                    .delete_service()
                    .cluster("prod")
                    .service("r1")
                    .force(true)
                    .send()
                    .await
                    .expect("DeleteService");
            }
            Kind::Lambda => {
                aws_sdk_lambda::Client::new(&self.sdk)
                    .delete_function()
                    .function_name("r1")
                    .send()
                    .await
                    .expect("DeleteFunction");
            }
            Kind::Eks => {
                self.kube.state.lock().expect("state").nodes.remove("r1");
            }
            Kind::Karpenter => {
                let mut st = self.kube.state.lock().expect("state");
                st.nodepools.as_mut().and_then(|p| p.remove("r1"));
            }
            Kind::ZonalShift => {
                let mut arc = self.proxy.arc.lock().expect("arc");
                let arn = balancer("r1");
                arc.managed.retain(|m| m.arn != arn);
            }
            Kind::Nat => {
                let ec2 = aws_sdk_ec2::Client::new(&self.sdk);
                let table = self.id("r1");
                let described = ec2
                    .describe_route_tables()
                    .route_table_ids(&table)
                    .send()
                    .await
                    .expect("DescribeRouteTables");
                for association in described.route_tables().iter().flat_map(|t| t.associations()) {
                    ec2.disassociate_route_table()
                        .association_id(association.route_table_association_id().unwrap_or_default())
                        .send()
                        .await
                        .expect("DisassociateRouteTable");
                }
                ec2.delete_route_table()
                    .route_table_id(&table)
                    .send()
                    .await
                    .expect("DeleteRouteTable");
            }
            Kind::EventBridge => {
                aws_sdk_eventbridge::Client::new(&self.sdk)
                    .remove_targets()
                    .event_bus_name("ops")
                    .rule("odd")
                    .ids("r1")
                    .send()
                    .await
                    .expect("RemoveTargets");
            }
            Kind::Scheduler => {
                aws_sdk_scheduler::Client::new(&self.sdk)
                    .delete_schedule()
                    .group_name("reports")
                    .name("r1")
                    .send()
                    .await
                    .expect("DeleteSchedule");
            }
            Kind::Db => {
                let rds = aws_sdk_rds::Client::new(&self.sdk);
                for instance in ["r1-1", "r1-2"] {
                    rds.delete_db_instance()
                        .db_instance_identifier(instance)
                        .skip_final_snapshot(true)
                        .send()
                        .await
                        .expect("DeleteDBInstance");
                }
                rds.delete_db_cluster()
                    .db_cluster_identifier("r1")
                    .skip_final_snapshot(true)
                    .send()
                    .await
                    .expect("DeleteDBCluster");
            }
            Kind::Batch => {
                // AWS deletes only a disabled environment.
                let batch = aws_sdk_batch::Client::new(&self.sdk);
                batch
                    .update_compute_environment()
                    .compute_environment("ce-r1")
                    .state(aws_sdk_batch::types::CeState::Disabled)
                    .send()
                    .await
                    .expect("UpdateComputeEnvironment");
                batch
                    .delete_compute_environment()
                    .compute_environment("ce-r1")
                    .send()
                    .await
                    .expect("DeleteComputeEnvironment");
            }
            Kind::VpcEndpoint => {
                aws_sdk_ec2::Client::new(&self.sdk)
                    .delete_vpc_endpoints()
                    .vpc_endpoint_ids(self.id("r1"))
                    .send()
                    .await
                    .expect("DeleteVpcEndpoints");
            }
        }
    }
}

/// Rule targets or schedules by their last name (`r0`): subnets, security groups, and the rest.
fn placed_state(placed: BTreeMap<String, common::events::Placed>) -> State {
    placed
        .into_iter()
        .map(|(name, (subnets, groups, rest))| {
            let key = name.rsplit('/').next().unwrap_or(&name).to_owned();
            let mut state = placement(&subnets, &groups, None);
            state["rest"] = json!(rest);
            (key, state)
        })
        .collect()
}

/// Every named route table's routes (the `local` one left out), by destination.
async fn nat_state(sdk: &SdkConfig) -> State {
    let routes = estate::routes(&aws_sdk_ec2::Client::new(sdk)).await;
    routes
        .into_iter()
        .map(|(table, routes)| (table, json!(routes)))
        .collect()
}

/// Every interface endpoint (by Name tag) that is not deleted: its subnets (sorted: EC2 keeps them
/// as a set) and its interfaces' addresses by subnet (recover asks for the same ones again).
async fn endpoint_state(sdk: &SdkConfig) -> State {
    let ec2 = aws_sdk_ec2::Client::new(sdk);
    let endpoints = ec2.describe_vpc_endpoints().send().await.expect("DescribeVpcEndpoints");
    let mut state = State::new();
    for e in endpoints
        .vpc_endpoints()
        .iter()
        .filter(|e| e.state().is_none_or(|s| !s.as_str().eq_ignore_ascii_case("deleted")))
    {
        let name = e
            .tags()
            .iter()
            .find(|t| t.key() == Some("Name"))
            .and_then(|t| t.value())
            .unwrap_or_default()
            .to_owned();
        let mut subnets = e.subnet_ids().to_vec();
        subnets.sort();
        let mut addresses = serde_json::Map::new();
        if !e.network_interface_ids().is_empty() {
            let found = ec2
                .describe_network_interfaces()
                .set_network_interface_ids(Some(e.network_interface_ids().to_vec()))
                .send()
                .await
                .expect("DescribeNetworkInterfaces");
            for n in found.network_interfaces() {
                addresses.insert(
                    n.subnet_id().unwrap_or_default().to_owned(),
                    json!(n.private_ip_address().unwrap_or_default()),
                );
            }
        }
        state.insert(name, json!({ "subnets": subnets, "addresses": addresses }));
    }
    state
}

/// Every database cluster's writer.
async fn db_state(sdk: &SdkConfig) -> State {
    let clusters: Vec<aws_sdk_rds::types::DbCluster> = aws_sdk_rds::Client::new(sdk)
        .describe_db_clusters()
        .into_paginator()
        .items()
        .send()
        .try_collect()
        .await
        .expect("DescribeDBClusters");
    clusters
        .iter()
        .map(|c| {
            let writer = c
                .db_cluster_members()
                .iter()
                .find(|m| m.is_cluster_writer() == Some(true))
                .and_then(|m| m.db_instance_identifier());
            (c.db_cluster_identifier().unwrap_or_default().to_owned(), json!(writer))
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The properties.

/// Evacuate, read back, evacuate again (nothing to do), recover (the original exactly, the table
/// empty), recover again (nothing to do).
fn round_trip(kind: Kind) {
    block_on(async move {
        let world = World::new(kind).await;
        let start = world.reset().await;
        let run = world.run(Phase::Evacuate, &[]).expect_code(0);
        let batches = intent_batches(&world.proxy.requests());
        assert!(batches > 1, "{}: {batches} batch(es), not several", kind.name());
        let now = world.state().await;
        let off = diff(&start.evacuated, &now);
        assert!(
            off.is_empty(),
            "{}: evacuated state: {off:#?}\n{}",
            kind.name(),
            run.stdout
        );
        let records = journal_items(&world.sdk).await;
        assert_eq!(
            records.len(),
            CHANGED,
            "{}: one record per change: {records:?}",
            kind.name()
        );
        assert!(
            records.iter().all(|r| attr_s(r, "state") == "done"),
            "{}: {records:?}",
            kind.name()
        );
        assert!(
            lock_items(&world.sdk).await.is_empty(),
            "{}: locks released",
            kind.name()
        );

        let again = world.run(Phase::Evacuate, &[]).expect_code(0);
        assert!(
            did_nothing(&again),
            "{}: evacuated twice: {}",
            kind.name(),
            again.stdout
        );
        assert_eq!(
            world.state().await,
            now,
            "{}: the second evacuate changed nothing",
            kind.name()
        );

        let back = world.run(Phase::Recover, &[]).expect_code(0);
        let off = world.off(&start.original).await;
        assert!(
            off.is_empty(),
            "{}: recovered state: {off:#?}\n{}",
            kind.name(),
            back.stdout
        );
        let again = world.run(Phase::Recover, &[]).expect_code(0);
        assert!(
            did_nothing(&again),
            "{}: recovered twice: {}",
            kind.name(),
            again.stdout
        );
    });
}

/// Issue 50: evacuated from two zones, one run each, then recovered in one run (no `--az-id`),
/// through the strict layer: a resource with two records is one unit of work (a Lambda function's
/// second line sends the revision read after the first one's update completed), and the original
/// comes back exactly, the table empty.
fn two_zones_recovered_in_one_run(kind: Kind) {
    block_on(async move {
        let world = World::new(kind).await;
        let start = world.reset().await;
        world.run(Phase::Evacuate, &[]).expect_code(0);
        let second = world.run_in(ZONES[2], Phase::Evacuate);
        assert!(
            matches!(second.code, 0 | 1),
            "{}: the second zone's evacuation: {second:?}",
            kind.name()
        );
        let started = std::time::Instant::now();
        let back = world.run(Phase::Recover, &[]);
        let took = started.elapsed();
        assert_eq!(back.code, 0, "{}: {}", kind.name(), failed_lines(&back));
        let off = world.off(&start.original).await;
        assert!(
            off.is_empty(),
            "{}: after one recover of two zones: {off:#?}",
            kind.name()
        );
        let (stale, refusals) = world.proxy.strictness();
        eprintln!(
            "conformance: {}: two zones recovered in one run in {:.1}s ({stale} stale reads answered, refusals {refusals:?})",
            kind.name(),
            took.as_secs_f64()
        );
    });
}

/// The first call of `phase` (from an unkilled run) that changes the live state, as a kill point.
fn first_change(world: &World, phase: Phase) -> Target {
    world.disarm();
    assert_eq!(
        world.run_watched(phase),
        Some(0),
        "{}: the unkilled run",
        world.kind.name()
    );
    let aws = world.proxy.requests();
    let kube = world.kube.requests();
    named_points(&aws, &kube)
        .into_iter()
        .find(|t| !matches!(t, Target::Aws(on) if journal_write(&on.label)))
        .unwrap_or_else(|| panic!("{}: no changing call in {aws:?} {kube:?}", world.kind.name()))
}

/// Killed at the first change, before it lands and after: the intent is journalled, and recover
/// puts back exactly the original (exit 0), leaving the table empty.
fn crash_between_intent_and_act(kind: Kind) {
    block_on(async move {
        let world = World::new(kind).await;
        world.reset().await;
        let first = first_change(&world, Phase::Evacuate);
        for when in [KillWhen::BeforeForward, KillWhen::AfterForward] {
            let start = world.reset().await;
            let target = match &first {
                Target::Aws(on) => Target::Aws(KillOn { when, ..on.clone() }),
                Target::Kube(on) => Target::Kube(KillOn { when, ..on.clone() }),
                other => other.clone(),
            };
            world.arm(&target);
            let code = world.run_watched(Phase::Evacuate);
            assert!(
                world.killed(),
                "{}: killed at {target:?} ({when:?}): exit {code:?}",
                kind.name()
            );
            let records = journal_items(&world.sdk).await;
            assert!(
                records.iter().any(|r| attr_s(r, "state") == "intent"),
                "{}: the intent is written ahead of {target:?}: {records:?}",
                kind.name()
            );
            world.disarm();
            // The killed run's calls already sent still land, as at AWS, and the operator's recover
            // comes after them: azevac itself waits the dead run's longest call before taking its
            // locks over (tests/it/interleave.rs proves that wait); the harness waits for the proxy
            // to have answered them instead, which is what that wait stands for, in no time.
            assert!(
                world.proxy.wait_quiet(HOLD_WAIT),
                "{}: the killed run's calls never ended",
                kind.name()
            );
            let run = world.run(Phase::Recover, &[]);
            assert_eq!(run.code, 0, "{}: {when:?}: {run:?}", kind.name());
            let off = world.off(&start.original).await;
            assert!(
                off.is_empty(),
                "{}: killed {when:?} {target:?}, then recovered: {off:#?}",
                kind.name()
            );
        }
    });
}

impl World {
    /// Kill the next run at `target`; a named target is killed `when` it says.
    fn arm(&self, target: &Target) {
        self.disarm();
        kill_points::arm(target, &self.proxy, Some(&self.kube));
    }
}

/// What one part of a sweep found.
#[derive(Default)]
struct Tally {
    tried: usize,
    exact: usize,
    /// Kill points whose call the killed run never made (the run ended first).
    unreached: usize,
    /// Kill points that took more than one recover to put right.
    second_recovers: usize,
    problems: Vec<String>,
}

/// One part of the sweep: `phase` killed at each of its journal writes and changes, and at a
/// sample of its reads ([`sampled_reads`]); after each kill, recover until nothing is left to do:
/// the original state exactly, no record, no lock. One estate throughout, seeded again only after
/// a point that was not restored, or before one that needs the journal table not to exist yet.
async fn sweep(kind: Kind, phase: Phase) -> Tally {
    let world = World::new(kind).await;
    let name = kind.name();
    let mut start = world.reset().await;
    let prepare = |world: &World| {
        if phase == Phase::Recover {
            world.run(Phase::Evacuate, &[]).expect_code(0);
        }
    };
    prepare(&world);
    world.disarm();
    assert_eq!(world.run_watched(phase), Some(0), "{name}: the unkilled {phase:?}");
    let (aws, kube) = (world.proxy.requests(), world.kube.requests());
    if phase == Phase::Evacuate {
        assert!(intent_batches(&aws) > 1, "{name}: more than one batch: {aws:?}");
    }
    let targets = kill_points::every_point(&aws, &kube);
    let mut tally = Tally::default();
    // The unkilled evacuation left the estate evacuated.
    let mut clean = phase == Phase::Recover;
    for target in targets {
        if !clean || target.needs_no_table() {
            start = world.reset().await;
        }
        prepare(&world);
        world.arm(&target);
        let code = world.run_watched(phase);
        let point = format!("{name}: {phase:?} killed at {target:?}");
        if !world.killed() {
            assert_eq!(code, Some(0), "{point}: the run that went past it");
            tally.unreached += 1;
            clean = false;
            continue;
        }
        tally.tried += 1;
        world.disarm();
        // Calls the killed run had already sent still reach the service, as they would AWS's: the
        // operator's recover comes after them. (One that races them refuses the line it lost and asks
        // for a re-run, which tests/it/interleave.rs proves; here it would only make recover #1's exit
        // code depend on the machine's load.)
        assert!(
            world.proxy.wait_quiet(HOLD_WAIT),
            "{point}: the killed run's calls never ended"
        );
        let (mut problems, runs) = world.recover_fully().await;
        tally.second_recovers += usize::from(runs > 1);
        problems.extend(world.off(&start.original).await);
        clean = problems.is_empty();
        if clean {
            tally.exact += 1;
        } else {
            tally.problems.push(format!("{point}: {problems:#?}"));
        }
    }
    tally
}

/// Kill an evacuate and a recover at every journal write and every change (the odd calls of
/// each kind before they land, the even ones after, their answer never heard) and before the
/// first call and every tenth after it (a sample of the reads, each of which only ends the run
/// earlier); after each, recover until nothing is left to do. Default concurrency, batches of
/// three: two batches in flight. The two phases run side by side.
fn kill_at_every_call(kind: Kind) {
    let phases = vec![Phase::Evacuate, Phase::Recover];
    let tallies = common::on_threads(phases.clone(), |phase| sweep(kind, phase));
    let name = kind.name();
    let tried: usize = tallies.iter().map(|t| t.tried).sum();
    let exact: usize = tallies.iter().map(|t| t.exact).sum();
    let unreached: usize = tallies.iter().map(|t| t.unreached).sum();
    let second: usize = tallies.iter().map(|t| t.second_recovers).sum();
    let by_phase: Vec<String> = phases
        .iter()
        .zip(&tallies)
        .map(|(p, t)| format!("{p:?}: {}", t.tried))
        .collect();
    eprintln!(
        "conformance: {name}: kill points tried {tried}, restored exactly {exact} ({}; {unreached} not reached; \
         {second} needed a second recover)",
        by_phase.join(", ")
    );
    let problems: Vec<&String> = tallies.iter().flat_map(|t| &t.problems).collect();
    for problem in &problems {
        eprintln!("problem: {problem}");
    }
    assert!(
        problems.is_empty(),
        "{name}: {} kill points not restored exactly (above)",
        problems.len()
    );
    assert!(tallies.iter().all(|t| t.tried >= CHANGED), "{name}: {by_phase:?}");
    assert_eq!(exact, tried);
}

/// An operator changes `r0` while azevac holds its plan: its write-ahead is parked at the proxy
/// meanwhile. The change computed under the lock keeps the operator's, and recover undoes only
/// what azevac did: the state as the operator left it, the table empty.
fn changed_by_hand(kind: Kind) {
    block_on(async move {
        let world = World::new(kind).await;
        world.reset().await;
        world.proxy.hold(Hold {
            label: Some("dynamodb:TransactWriteItems".into()),
            body_contains: format!("{}\"", world.record_of(0)),
            nth: 1,
        });
        let child = world.spawn(Phase::Evacuate);
        let held = world
            .proxy
            .wait_held(Some(&mut child.lock().expect("child")), HOLD_WAIT);
        assert!(held.is_some(), "{}: r0's write-ahead was never sent", kind.name());
        world.change_by_hand().await;
        let by_hand = world.state().await;
        world.proxy.release();
        let code = common::wait_watched(&child);
        assert!(matches!(code, Some(0 | 1)), "{}: evacuate exited {code:?}", kind.name());
        let (problems, _) = world.recover_fully().await;
        assert!(problems.is_empty(), "{}: {problems:#?}", kind.name());
        let off = world.off(&by_hand).await;
        assert!(off.is_empty(), "{}: not as the operator left it: {off:#?}", kind.name());
    });
}

/// `r1` is deleted after the evacuation: recover puts the others back and reports it. A kind whose
/// change lives outside the object keeps its record for the operator to decide on (exit 1) until
/// `--forget-missing` drops it (exit 0); a kind whose change ended with the object drops its record
/// (exit 0). See [`Kind::keeps_a_vanished_record`].
fn vanished(kind: Kind) {
    block_on(async move {
        let world = World::new(kind).await;
        let start = world.reset().await;
        world.run(Phase::Evacuate, &[]).expect_code(0);
        world.delete_by_hand().await;
        let gone = kind.key(1);
        let mut expected = start.original.clone();
        expected.remove(&gone);
        let mut problems = Vec::new();
        let run = world.run(Phase::Recover, &[]);
        let line = run.json()["items"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|i| {
                let name = i["name"].as_str().unwrap_or_default();
                name == gone || name.ends_with(&format!("/{gone}"))
            })
            .cloned();
        let reported = line.as_ref().is_some_and(|l| l.to_string().contains("no longer exist"));
        // A shift's record says nothing of the resource: cancelling the shift is the whole recovery.
        if !reported && kind != Kind::ZonalShift {
            problems.push(format!("{gone} is not reported as gone: {line:?}"));
        }
        problems.extend(diff(&expected, &world.state().await));
        let left = world.leftovers().await;
        if kind.keeps_a_vanished_record() {
            if run.code != 1 {
                problems.push(format!(
                    "recover kept a record to decide on but exited {}, not 1",
                    run.code
                ));
            }
            if !(left.len() == 1 && left[0].ends_with(&format!("{} (done)", world.record_of(1)))) {
                problems.push(format!("not only the record of {gone} is kept: {left:?}"));
            }
            let forget = world.run(Phase::Recover, &["--forget-missing"]);
            if forget.code != 0 {
                problems.push(format!("recover --forget-missing exited {}", forget.code));
            }
        } else {
            if run.code != 0 {
                problems.push(format!("recover exited {}, not 0", run.code));
            }
            if !left.is_empty() {
                problems.push(format!("the change ended with {gone}, its record too: {left:?}"));
            }
        }
        problems.extend(world.off(&expected).await);
        assert!(problems.is_empty(), "{}: {problems:#?}", kind.name());
    });
}

/// Each kind's tests, one module a kind.
macro_rules! kind {
    ($module:ident = $kind:ident; $($(#[$meta:meta])* $property:ident: $test:ident),* $(,)?) => {
        mod $module {
            use super::Kind;
            $(
                #[test]
                $(#[$meta])*
                fn $test() {
                    super::$property(Kind::$kind);
                }
            )*
        }
    };
}

kind!(asg = Asg;
    round_trip: issue_31_round_trip_is_exact,
    crash_between_intent_and_act: issue_31_a_crash_between_intent_and_act_is_recovered,
    kill_at_every_call: issue_31_a_kill_at_every_call_loses_nothing,
    changed_by_hand: issue_31_a_change_by_hand_before_the_change_is_kept,
    vanished: issue_31_a_vanished_resource_is_reported,
    two_zones_recovered_in_one_run: issue_50_two_zones_are_recovered_in_one_run,
);
kind!(ecs = Ecs;
    round_trip: issue_31_round_trip_is_exact,
    crash_between_intent_and_act: issue_31_a_crash_between_intent_and_act_is_recovered,
    kill_at_every_call: issue_31_a_kill_at_every_call_loses_nothing,
    changed_by_hand: issue_31_a_change_by_hand_before_the_change_is_kept,
    vanished: issue_31_a_vanished_resource_is_reported,
    two_zones_recovered_in_one_run: issue_50_two_zones_are_recovered_in_one_run,
);
kind!(lambda = Lambda;
    round_trip: issue_31_round_trip_is_exact,
    crash_between_intent_and_act: issue_31_a_crash_between_intent_and_act_is_recovered,
    kill_at_every_call: issue_31_a_kill_at_every_call_loses_nothing,
    changed_by_hand: issue_31_a_change_by_hand_before_the_change_is_kept,
    vanished: issue_31_a_vanished_resource_is_reported,
    two_zones_recovered_in_one_run: issue_50_two_zones_are_recovered_in_one_run,
);
kind!(eks = Eks;
    round_trip: issue_31_round_trip_is_exact,
    crash_between_intent_and_act: issue_31_a_crash_between_intent_and_act_is_recovered,
    kill_at_every_call: issue_31_a_kill_at_every_call_loses_nothing,
    changed_by_hand: issue_31_a_change_by_hand_before_the_change_is_kept,
    vanished: issue_31_a_vanished_resource_is_reported,
    two_zones_recovered_in_one_run: issue_50_two_zones_are_recovered_in_one_run,
);
kind!(karpenter = Karpenter;
    round_trip: issue_31_round_trip_is_exact,
    crash_between_intent_and_act: issue_31_a_crash_between_intent_and_act_is_recovered,
    kill_at_every_call: issue_31_a_kill_at_every_call_loses_nothing,
    changed_by_hand: issue_31_a_change_by_hand_before_the_change_is_kept,
    vanished: issue_31_a_vanished_resource_is_reported,
    two_zones_recovered_in_one_run: issue_50_two_zones_are_recovered_in_one_run,
);
kind!(zonal_shift = ZonalShift;
    round_trip: issue_31_round_trip_is_exact,
    crash_between_intent_and_act: issue_31_a_crash_between_intent_and_act_is_recovered,
    kill_at_every_call: issue_31_a_kill_at_every_call_loses_nothing,
    changed_by_hand: issue_31_a_change_by_hand_before_the_change_is_kept,
    vanished: issue_31_a_vanished_resource_is_reported,
    two_zones_recovered_in_one_run: issue_50_two_zones_are_recovered_in_one_run,
);
kind!(nat = Nat;
    round_trip: issue_31_round_trip_is_exact,
    crash_between_intent_and_act: issue_31_a_crash_between_intent_and_act_is_recovered,
    kill_at_every_call: issue_31_a_kill_at_every_call_loses_nothing,
    changed_by_hand: issue_31_a_change_by_hand_before_the_change_is_kept,
    vanished: issue_31_a_vanished_resource_is_reported,
    two_zones_recovered_in_one_run: issue_50_two_zones_are_recovered_in_one_run,
);
kind!(db = Db;
    round_trip: issue_31_round_trip_is_exact,
    crash_between_intent_and_act: issue_31_a_crash_between_intent_and_act_is_recovered,
    kill_at_every_call: issue_31_a_kill_at_every_call_loses_nothing,
    changed_by_hand: issue_31_a_change_by_hand_before_the_change_is_kept,
    vanished: issue_31_a_vanished_resource_is_reported,
    two_zones_recovered_in_one_run: issue_50_two_zones_are_recovered_in_one_run,
);
kind!(batch = Batch;
    round_trip: issue_31_round_trip_is_exact,
    crash_between_intent_and_act: issue_31_a_crash_between_intent_and_act_is_recovered,
    kill_at_every_call: issue_31_a_kill_at_every_call_loses_nothing,
    changed_by_hand: issue_31_a_change_by_hand_before_the_change_is_kept,
    vanished: issue_31_a_vanished_resource_is_reported,
    two_zones_recovered_in_one_run: issue_50_two_zones_are_recovered_in_one_run,
);
kind!(eventbridge = EventBridge;
    round_trip: issue_31_round_trip_is_exact,
    crash_between_intent_and_act: issue_31_a_crash_between_intent_and_act_is_recovered,
    kill_at_every_call: issue_31_a_kill_at_every_call_loses_nothing,
    changed_by_hand: issue_31_a_change_by_hand_before_the_change_is_kept,
    vanished: issue_31_a_vanished_resource_is_reported,
    two_zones_recovered_in_one_run: issue_50_two_zones_are_recovered_in_one_run,
);
kind!(vpc_endpoint = VpcEndpoint;
    round_trip: issue_31_round_trip_is_exact,
    crash_between_intent_and_act: issue_31_a_crash_between_intent_and_act_is_recovered,
    kill_at_every_call: issue_31_a_kill_at_every_call_loses_nothing,
    changed_by_hand: issue_31_a_change_by_hand_before_the_change_is_kept,
    vanished: issue_31_a_vanished_resource_is_reported,
    two_zones_recovered_in_one_run: issue_50_two_zones_are_recovered_in_one_run,
);
kind!(scheduler = Scheduler;
    round_trip: issue_31_round_trip_is_exact,
    crash_between_intent_and_act: issue_31_a_crash_between_intent_and_act_is_recovered,
    kill_at_every_call: issue_31_a_kill_at_every_call_loses_nothing,
    changed_by_hand: issue_31_a_change_by_hand_before_the_change_is_kept,
    vanished: issue_31_a_vanished_resource_is_reported,
    two_zones_recovered_in_one_run: issue_50_two_zones_are_recovered_in_one_run,
);
