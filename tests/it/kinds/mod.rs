//! Each kind's conformance fixture (issue 31), a file a kind named for it, implementing one trait
//! ([`Fixture`]): how to seed a small estate of it (six resources an evacuation of use1-az2
//! changes, `r0` to `r5`, and others it must leave alone), the flags that evacuate and recover
//! it, a snapshot of its live state, a change an operator makes by hand and how its resource
//! vanishes. The suite (tests/it/protocol/conformance.rs) finds a fixture through the registry's name
//! ([`fixture`]) and makes every kind's tests from the one list below. What several fixtures
//! share (the subnet kinds' estate, the Kubernetes state) is here, owned by none of them.

pub mod end_to_end;

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde_json::{json, Value};

use crate::common::estate::{self, Spec, VpcSpec};
use crate::common::{self, ZONE};
use crate::protocol::conformance::{Phase, State, World};

/// The resources of each kind that an evacuation of use1-az2 changes: `r0` to `r5`.
pub const CHANGED: usize = 6;
/// The zones every estate spans, the evacuated one (use1-az2, moto's us-east-1c) in the middle.
pub const ZONES: [&str; 3] = ["use1-az1", ZONE, "use1-az4"];
/// Zone names of [`ZONES`], in the same order.
pub const ZONE_NAMES: [&str; 3] = ["us-east-1b", "us-east-1c", "us-east-1d"];

/// What the suite needs of one kind to run every property on it.
#[async_trait(?Send)]
pub trait Fixture: Sync {
    /// The `--type` value, as the registry names it.
    fn name(&self) -> &'static str;

    /// Whether it acts through the Kubernetes API (the runs name the fake's context).
    fn kubernetes(&self) -> bool {
        false
    }

    /// The kind's own flags of `phase`, if it needs any.
    fn flags(&self, _phase: Phase) -> &'static [&'static str] {
        &[]
    }

    /// The key of the `i`th changed resource in [`State`].
    fn key(&self, i: usize) -> String {
        format!("r{i}")
    }

    /// Whether a recover reports a vanished resource and keeps its record (until
    /// `--forget-missing`): every kind that keeps a record of a resource does (a group's,
    /// service's, function's subnets, a route, a writer, a node's taint, a NodePool's requirement:
    /// issue 32); a shift's record says nothing of the resource, and cancelling the shift is the
    /// whole recovery.
    fn keeps_a_vanished_record(&self) -> bool {
        true
    }

    /// What the journal's key of `ri`'s record (its ARN) ends with.
    fn record_of(&self, _world: &World, i: usize) -> String {
        format!("r{i}")
    }

    /// Seed a fresh estate (moto, ARC's fake and the fake API server are empty); returns the IDs
    /// learnt, by name ([`World::id`]).
    async fn seed(&self, world: &World) -> BTreeMap<String, String>;

    /// The kind's live state.
    async fn state(&self, world: &World) -> State;

    /// What a complete evacuation makes of `resource`, the `i`th changed one.
    fn evacuated(&self, world: &World, i: usize, resource: &mut Value);

    /// An operator's own change to `r0`, made between azevac's plan and its change.
    async fn change_by_hand(&self, world: &World);

    /// `r1` deleted by hand.
    async fn delete_by_hand(&self, world: &World);
}

/// The fixtures, a module a kind: the one list of them.
macro_rules! kinds {
    ($($kind:ident),* $(,)?) => {
        $(pub mod $kind;)*

        /// Every fixture, in this list's order.
        pub fn all() -> Vec<&'static dyn Fixture> {
            vec![$(&$kind::FIXTURE),*]
        }

        /// Calls `$make!` with every fixture's module name: the suite makes each kind's tests so.
        macro_rules! each_kind {
            ($make:ident) => {
                $make!($($kind),*);
            };
        }
        pub(crate) use each_kind;
    };
}

kinds!(
    asg,
    ecs,
    lambda,
    eks,
    karpenter,
    zonal_shift,
    nat,
    db,
    batch,
    vpc_endpoint,
    eventbridge,
    scheduler,
);

/// The fixture of the kind registered as `name`.
pub fn fixture(name: &str) -> Option<&'static dyn Fixture> {
    all().into_iter().find(|f| f.name() == name)
}

/// Zone IDs as the estate's specs take them.
pub fn zones(list: &[&str]) -> Vec<String> {
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

/// The subnet kinds' estate, each resource added by `add` (its name, its zones): `r0`..`r5` in
/// the zone and elsewhere, `solo` only in the zone (it would lose its last subnet: skipped),
/// `far` outside it. Returns the IDs of the zone's subnet, use1-az4's and the VPC endpoints.
pub async fn seed_subnet_kind(world: &World, add: impl Fn(&mut Spec, String, Vec<String>)) -> BTreeMap<String, String> {
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
        add(&mut spec, name, zones);
    }
    let seeded = estate::seed(&world.sdk, &spec).await;
    let mut ids = BTreeMap::new();
    ids.insert("zone subnet".to_owned(), seeded.subnet("main", ZONE));
    ids.insert("use1-az4 subnet".to_owned(), seeded.subnet("main", "use1-az4"));
    ids.extend(seeded.vpc_endpoints);
    ids
}

/// A subnet kind's resource evacuated: the zone's subnet gone from its `subnets`.
pub fn out_of_the_zone(world: &World, resource: &mut Value) {
    let zone = world.id("zone subnet");
    if let Some(subnets) = resource["subnets"].as_array_mut() {
        subnets.retain(|s| s != &json!(zone));
    }
}

/// `subnets` with the one outside the zone in use1-az4 taken out: an operator's own change.
pub fn keep(world: &World, subnets: &[String]) -> Vec<String> {
    let far = world.id("use1-az4 subnet");
    subnets.iter().filter(|s| **s != far).cloned().collect()
}

/// Subnets, security groups and public IP setting as one state.
pub fn placement(subnets: &[String], groups: &[String], public_ip: Option<&str>) -> Value {
    let mut state = json!({ "subnets": subnets, "security_groups": groups });
    if let Some(public_ip) = public_ip {
        state["public_ip"] = json!(public_ip);
    }
    state
}

/// Rule targets or schedules by their last name (`r0`): subnets, security groups, and the rest.
pub fn placed_state(placed: BTreeMap<String, common::events::Placed>) -> State {
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

/// Nodes (keyed `node/NAME` when `nodes_prefixed`, beside NodePools) and NodePools, without their
/// resourceVersions.
pub fn kube_state(world: &World, nodes_prefixed: bool) -> State {
    let st = world.kube.state.lock().expect("state");
    let strip = |o: &Value| {
        let mut o = o.clone();
        if let Some(meta) = o["metadata"].as_object_mut() {
            meta.remove("resourceVersion");
        }
        o
    };
    let nodes = st.nodes.iter().map(|(name, n)| match nodes_prefixed {
        true => (format!("node/{name}"), strip(n)),
        false => (name.clone(), strip(n)),
    });
    let pools = st
        .nodepools
        .iter()
        .flatten()
        .map(|(name, p)| (format!("nodepool/{name}"), strip(p)));
    nodes.chain(pools).collect()
}
