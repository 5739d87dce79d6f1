//! `scripts/demo` seeds the sample estate with boto3 (scripts/seed-estate.py), so that a first run
//! builds nothing but azevac; the tests seed with the Rust SDK (tests/it/common/estate.rs). Both must
//! create the same estate from the same spec: seeded into two emulators, the estates compare equal
//! once the emulators' random IDs are replaced by what they name (NAT gateways and route tables
//! included), and so do their CloudWatch alarms (read with the SDK's CBOR, which the emulator answers).

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use common::estate;
use common::events::Placed;
use common::{snapshot, unordered, Moto, Snapshot};

/// Subnet ID → "CIDR@AZ ID Name" and security group ID → its name, for one emulator.
async fn names(sdk: &aws_config::SdkConfig) -> BTreeMap<String, String> {
    let ec2 = aws_sdk_ec2::Client::new(sdk);
    let mut names = BTreeMap::new();
    for subnet in ec2.describe_subnets().send().await.expect("DescribeSubnets").subnets() {
        let tag = subnet.tags().iter().find(|t| t.key() == Some("Name"));
        names.insert(
            subnet.subnet_id().unwrap_or_default().to_owned(),
            format!(
                "{}@{} {}",
                subnet.cidr_block().unwrap_or_default(),
                subnet.availability_zone_id().unwrap_or_default(),
                tag.and_then(|t| t.value()).unwrap_or_default()
            ),
        );
    }
    for group in ec2
        .describe_security_groups()
        .send()
        .await
        .expect("DescribeSecurityGroups")
        .security_groups()
    {
        names.insert(
            group.group_id().unwrap_or_default().to_owned(),
            group.group_name().unwrap_or_default().to_owned(),
        );
    }
    names
}

/// The NAT routes, with names for IDs: each NAT gateway's "connectivity@AZ ID of its subnet", and
/// each named route table's "subnets -> destination via NAT name".
async fn nat_routes(sdk: &aws_config::SdkConfig, names: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let ec2 = aws_sdk_ec2::Client::new(sdk);
    let name_of = |tags: &[aws_sdk_ec2::types::Tag]| {
        tags.iter()
            .find(|t| t.key() == Some("Name"))
            .and_then(|t| t.value())
            .unwrap_or_default()
            .to_owned()
    };
    let mut nats = BTreeMap::new();
    let mut out = BTreeMap::new();
    for nat in ec2
        .describe_nat_gateways()
        .send()
        .await
        .expect("DescribeNatGateways")
        .nat_gateways()
    {
        let name = name_of(nat.tags());
        nats.insert(nat.nat_gateway_id().unwrap_or_default().to_owned(), name.clone());
        let subnet = nat.subnet_id().unwrap_or_default();
        let place = names.get(subnet).cloned().unwrap_or_default();
        let kind = nat
            .connectivity_type()
            .map(|c| c.as_str().to_owned())
            .unwrap_or_default();
        out.insert(format!("nat {name}"), format!("{kind} in {place}"));
    }
    for table in ec2
        .describe_route_tables()
        .send()
        .await
        .expect("DescribeRouteTables")
        .route_tables()
    {
        let name = name_of(table.tags());
        if name.is_empty() {
            continue;
        }
        let mut subnets: Vec<String> = table
            .associations()
            .iter()
            .filter_map(|a| a.subnet_id())
            .map(|s| names.get(s).cloned().unwrap_or_default())
            .collect();
        subnets.sort();
        let mut routes: Vec<String> = table
            .routes()
            .iter()
            .filter_map(|r| {
                Some(format!(
                    "{} via {}",
                    r.destination_cidr_block()?,
                    nats.get(r.nat_gateway_id()?)?
                ))
            })
            .collect();
        routes.sort();
        out.insert(
            format!("route table {name}"),
            format!("{} -> {}", subnets.join(" "), routes.join(", ")),
        );
    }
    out
}

/// Every Batch compute environment, with names for IDs: its type, compute type, allocation
/// strategy, subnets, security groups, service role and tags.
async fn batch_environments(sdk: &aws_config::SdkConfig, names: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let environments: Vec<aws_sdk_batch::types::ComputeEnvironmentDetail> = aws_sdk_batch::Client::new(sdk)
        .describe_compute_environments()
        .into_paginator()
        .items()
        .send()
        .try_collect()
        .await
        .expect("DescribeComputeEnvironments");
    let name = |ids: &[String]| -> Vec<String> {
        ids.iter()
            .map(|id| names.get(id).cloned().unwrap_or_default())
            .collect()
    };
    environments
        .iter()
        .map(|e| {
            let resources = e.compute_resources();
            let mut tags: Vec<String> = e
                .tags()
                .into_iter()
                .flatten()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            tags.sort();
            let described = format!(
                "{:?} {:?} {:?} subnets {:?} groups {:?} role {:?} tags {tags:?}",
                e.r#type(),
                resources.and_then(|r| r.r#type()),
                resources.and_then(|r| r.allocation_strategy()),
                name(resources.map(|r| r.subnets()).unwrap_or_default()),
                name(resources.map(|r| r.security_group_ids()).unwrap_or_default()),
                e.service_role(),
            );
            (e.compute_environment_name().unwrap_or_default().to_owned(), described)
        })
        .collect()
}

/// The interface VPC endpoints, with names for IDs: each endpoint's Name tag, its service and its
/// subnets ("CIDR@AZ ID"), and the subnets of its network interfaces (one each).
async fn vpc_endpoints(sdk: &aws_config::SdkConfig, names: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let ec2 = aws_sdk_ec2::Client::new(sdk);
    let mut out = BTreeMap::new();
    for endpoint in ec2
        .describe_vpc_endpoints()
        .send()
        .await
        .expect("DescribeVpcEndpoints")
        .vpc_endpoints()
    {
        let name = endpoint
            .tags()
            .iter()
            .find(|t| t.key() == Some("Name"))
            .and_then(|t| t.value())
            .unwrap_or_default();
        let subnets: Vec<String> = endpoint
            .subnet_ids()
            .iter()
            .map(|s| names.get(s).cloned().unwrap_or_default())
            .collect();
        let mut interfaces: Vec<String> = Vec::new();
        if !endpoint.network_interface_ids().is_empty() {
            let found = ec2
                .describe_network_interfaces()
                .set_network_interface_ids(Some(endpoint.network_interface_ids().to_vec()))
                .send()
                .await
                .expect("DescribeNetworkInterfaces");
            interfaces = found
                .network_interfaces()
                .iter()
                .map(|n| {
                    names
                        .get(n.subnet_id().unwrap_or_default())
                        .cloned()
                        .unwrap_or_default()
                })
                .collect();
            interfaces.sort();
        }
        out.insert(
            format!("vpc endpoint {name}"),
            format!(
                "{} in {}; interfaces in {}",
                endpoint.service_name().unwrap_or_default(),
                subnets.join(" "),
                interfaces.join(" ")
            ),
        );
    }
    out
}

fn named(snapshot: &Snapshot, names: &BTreeMap<String, String>) -> Snapshot {
    let name = |ids: &[String]| -> Vec<String> {
        ids.iter()
            .map(|id| names.get(id).cloned().unwrap_or_else(|| format!("unknown {id}")))
            .collect()
    };
    unordered(&(
        snapshot.0.iter().map(|(k, v)| (k.clone(), name(v))).collect(),
        snapshot
            .1
            .iter()
            .map(|(k, (s, g, p))| (k.clone(), (name(s), name(g), p.clone())))
            .collect(),
        snapshot
            .2
            .iter()
            .map(|(k, (s, g))| (k.clone(), (name(s), name(g))))
            .collect(),
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_seeder_creates_the_estate_the_tests_seed() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let fixture = root.join("fixtures/sample-estate.json");
    let spec = estate::read_spec(&fixture);

    let rust = Moto::start();
    let rust_sdk = common::sdk(&rust).await;
    estate::seed(&rust_sdk, &spec).await;

    let python = Moto::start();
    let status = Command::new(root.join(".venv-moto/bin/python"))
        .arg(root.join("scripts/seed-estate.py"))
        .arg(&fixture)
        .env("AWS_ENDPOINT_URL", &python.endpoint)
        .env("AWS_REGION", common::REGION)
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing")
        .env_remove("AWS_PROFILE")
        .status()
        .expect("run scripts/seed-estate.py (scripts/moto-env installs its venv)");
    assert!(status.success(), "scripts/seed-estate.py failed");
    let python_sdk = common::sdk(&python).await;

    let (rust_names, python_names) = (names(&rust_sdk).await, names(&python_sdk).await);
    let expected = named(&snapshot(&rust_sdk).await, &rust_names);
    let seeded = named(&snapshot(&python_sdk).await, &python_names);
    assert!(!expected.0.is_empty() && !expected.1.is_empty() && !expected.2.is_empty());
    assert_eq!(seeded, expected);
    let expected_routes = nat_routes(&rust_sdk, &rust_names).await;
    assert!(
        expected_routes.keys().any(|k| k.starts_with("route table ")),
        "{expected_routes:?}"
    );
    assert_eq!(nat_routes(&python_sdk, &python_names).await, expected_routes);
    let expected_batch = batch_environments(&rust_sdk, &rust_names).await;
    assert_eq!(
        expected_batch.len(),
        spec.batch_compute_environments.len(),
        "{expected_batch:?}"
    );
    assert_eq!(batch_environments(&python_sdk, &python_names).await, expected_batch);
    let expected_endpoints = vpc_endpoints(&rust_sdk, &rust_names).await;
    assert_eq!(
        expected_endpoints.len(),
        spec.vpc_endpoints.len(),
        "{expected_endpoints:?}"
    );
    assert_eq!(vpc_endpoints(&python_sdk, &python_names).await, expected_endpoints);
    let expected_events = events_named(&rust_sdk, &rust_names).await;
    assert!(expected_events.len() >= 2, "{expected_events:?}");
    assert_eq!(events_named(&python_sdk, &python_names).await, expected_events);
    let expected_alarms = alarms(&rust_sdk).await;
    assert_eq!(expected_alarms.len(), spec.alarms.len(), "{expected_alarms:?}");
    assert_eq!(alarms(&python_sdk).await, expected_alarms);
}

/// Each alarm by name: its metric, threshold, state and the reason for it.
async fn alarms(sdk: &aws_config::SdkConfig) -> BTreeMap<String, String> {
    let described = aws_sdk_cloudwatch::Client::new(sdk)
        .describe_alarms()
        .send()
        .await
        .expect("DescribeAlarms");
    described
        .metric_alarms()
        .iter()
        .map(|a| {
            let metric = format!(
                "{}/{} {:?} {:?} {:?}: {:?} ({})",
                a.namespace().unwrap_or_default(),
                a.metric_name().unwrap_or_default(),
                a.comparison_operator(),
                a.threshold(),
                a.period(),
                a.state_value(),
                a.state_reason().unwrap_or_default()
            );
            (a.alarm_name().unwrap_or_default().to_owned(), metric)
        })
        .collect()
}

/// The ECS rule targets and schedules (issue 34), their subnets and security groups by name.
async fn events_named(sdk: &aws_config::SdkConfig, names: &BTreeMap<String, String>) -> BTreeMap<String, Placed> {
    let name = |ids: &[String]| -> Vec<String> {
        ids.iter()
            .map(|id| names.get(id).cloned().unwrap_or_else(|| format!("unknown {id}")))
            .collect()
    };
    let targets = common::events::live_rule_targets(sdk)
        .await
        .into_iter()
        .map(|(k, v)| (format!("rule {k}"), v));
    let schedules = common::events::live_schedules(sdk)
        .await
        .into_iter()
        .map(|(k, v)| (format!("schedule {k}"), v));
    targets
        .chain(schedules)
        .map(|(k, (subnets, groups, rest))| (k, (name(&subnets), name(&groups), rest)))
        .collect()
}
