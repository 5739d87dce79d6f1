//! `azevac exposure` and the headroom check, end to end: the real binary against moto through the
//! test proxy (which answers ARC itself and logs every call), with an in-process fake Kubernetes
//! API for the EKS nodes. Moto does not launch a service's tasks, nor filter `ListTasks` by service:
//! the tasks are started with `RunTask` in the group `service:NAME`, as ECS names a service's tasks,
//! and azevac checks that group.

use crate::common;

use std::collections::BTreeMap;

use serde_json::Value;

use common::estate::{self, AsgSpec, EcsSpec, LambdaSpec, NatSpec, RouteTableSpec, Seeded, Spec, VpcSpec};
use common::kube::{fixture_items, Cluster, FakeKube};
use common::proxy::{Faults, Proxy};
use common::{azevac_at, Moto, ZONE};

/// The zone's name in moto's mapping.
const ZONE_NAME: &str = "us-east-1c";
const LB: &str = "arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/net/edge/50dc6c495c0c9188";

struct Estate {
    _moto: Moto,
    proxy: Proxy,
    _sdk: aws_config::SdkConfig,
    seeded: Seeded,
    _kube: FakeKube,
    _dir: tempfile::TempDir,
    kubeconfig: String,
    standalone: String,
    volume: String,
    endpoint: String,
    tasks: Vec<String>,
}

fn zones(list: &[&str]) -> Vec<String> {
    list.iter().map(|z| z.to_string()).collect()
}

/// `count` running tasks of `service` in `subnet` of `az` (what a service's scheduler starts),
/// answered by the proxy (see tests/it/common/tasks.rs).
fn run_tasks(proxy: &Proxy, service: &str, az: &str, subnet: &str, count: usize) -> Vec<String> {
    let cluster = "arn:aws:ecs:us-east-1:123456789012:cluster/prod";
    let arns: Vec<String> = (0..count)
        .map(|n| format!("arn:aws:ecs:us-east-1:123456789012:task/prod/{service}{n:030}"))
        .collect();
    proxy.tasks(|fake| {
        fake.tasks.extend(arns.iter().map(|arn| common::tasks::Task {
            arn: arn.clone(),
            cluster: cluster.into(),
            service: service.into(),
            az: az.into(),
            subnet: subnet.into(),
        }))
    });
    arns
}

/// The sample estate: a group `web` with 2 instances in the zone (moto launches a group's instances
/// in its first subnet's zone), an ECS service `api` with 2 tasks there, a function with a subnet
/// there, 2 EKS nodes there, an interface endpoint, a standalone instance `bastion` with an attached
/// data volume, and a load balancer registered with ARC.
async fn estate() -> Estate {
    let moto = Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    let sdk = common::sdk(&moto).await;
    let spec = Spec {
        vpcs: vec![VpcSpec {
            name: "prod".into(),
            cidr: "10.70.0.0/16".into(),
            zones: zones(&["use1-az1", ZONE, "use1-az4"]),
        }],
        auto_scaling_groups: vec![AsgSpec {
            name: "web".into(),
            vpc: "prod".into(),
            zones: zones(&[ZONE, "use1-az1", "use1-az4"]),
            desired: 2,
            tags: BTreeMap::new(),
        }],
        ecs_services: vec![EcsSpec {
            cluster: "prod".into(),
            name: "api".into(),
            vpc: "prod".into(),
            zones: zones(&[ZONE, "use1-az1"]),
            network_mode: "awsvpc".into(),
            controller: "ECS".into(),
            assign_public_ip: "DISABLED".into(),
            desired: 0,
            tags: BTreeMap::new(),
        }],
        lambda_functions: vec![LambdaSpec {
            name: "worker".into(),
            vpc: Some("prod".into()),
            zones: zones(&[ZONE, "use1-az4"]),
            published_alias: false,
            tags: BTreeMap::new(),
        }],
        // Private subnets in two healthy zones whose egress goes through the zone's NAT gateway.
        nat_gateways: vec![
            NatSpec {
                name: "nat-az2".into(),
                vpc: "prod".into(),
                zone: ZONE.into(),
                private: false,
            },
            NatSpec {
                name: "nat-az1".into(),
                vpc: "prod".into(),
                zone: "use1-az1".into(),
                private: false,
            },
        ],
        route_tables: ["use1-az1", "use1-az4"]
            .iter()
            .map(|z| RouteTableSpec {
                name: format!("private-{}", &z[5..]),
                vpc: "prod".into(),
                zones: zones(&[z]),
                routes: BTreeMap::from([("0.0.0.0/0".to_owned(), "nat-az2".to_owned())]),
            })
            .collect(),
        ..Spec::default()
    };
    let seeded = estate::seed(&sdk, &spec).await;
    let tasks = run_tasks(&proxy, "api", ZONE_NAME, &seeded.subnet("prod", ZONE), 2);
    let ec2 = aws_sdk_ec2::Client::new(&sdk);
    let standalone = ec2
        .run_instances()
        .image_id("ami-12c6146b")
        .min_count(1)
        .max_count(1)
        .subnet_id(seeded.subnet("prod", ZONE))
        .tag_specifications(
            aws_sdk_ec2::types::TagSpecification::builder()
                .resource_type(aws_sdk_ec2::types::ResourceType::Instance)
                .tags(aws_sdk_ec2::types::Tag::builder().key("Name").value("bastion").build())
                .build(),
        )
        .send()
        .await
        .expect("RunInstances")
        .instances()[0]
        .instance_id()
        .expect("an instance ID")
        .to_owned();
    let volume = ec2
        .create_volume()
        .availability_zone(ZONE_NAME)
        .size(20)
        .send()
        .await
        .expect("CreateVolume")
        .volume_id()
        .expect("a volume ID")
        .to_owned();
    ec2.attach_volume()
        .volume_id(&volume)
        .instance_id(&standalone)
        .device("/dev/sdf")
        .send()
        .await
        .expect("AttachVolume");
    let endpoint = ec2
        .create_vpc_endpoint()
        .vpc_id(&seeded.vpcs["prod"])
        .service_name("com.amazonaws.us-east-1.sqs")
        .vpc_endpoint_type(aws_sdk_ec2::types::VpcEndpointType::Interface)
        .subnet_ids(seeded.subnet("prod", ZONE))
        .subnet_ids(seeded.subnet("prod", "use1-az1"))
        .send()
        .await
        .expect("CreateVpcEndpoint")
        .vpc_endpoint()
        .and_then(|e| e.vpc_endpoint_id())
        .expect("an endpoint ID")
        .to_owned();
    proxy.arc.lock().expect("arc").managed.push(common::zonal::Managed {
        arn: LB.into(),
        name: "edge".into(),
        az_ids: zones(&["use1-az1", ZONE, "use1-az4"]),
        autoshift_away_from: None,
    });
    let mut cluster = Cluster::default();
    for node in fixture_items("eks-nodes.json") {
        cluster.add_node(node);
    }
    let kube = FakeKube::start(cluster);
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = kube
        .kubeconfig(
            dir.path(),
            &[("prod", "arn:aws:eks:us-east-1:123456789012:cluster/prod")],
        )
        .display()
        .to_string();
    Estate {
        _moto: moto,
        proxy,
        _sdk: sdk,
        seeded,
        _kube: kube,
        _dir: dir,
        kubeconfig,
        standalone,
        volume,
        endpoint,
        tasks,
    }
}

impl Estate {
    fn run(&self, args: &[&str]) -> common::Run {
        let mut all = args.to_vec();
        all.extend(["--kube-context", "prod", "--kubeconfig", &self.kubeconfig]);
        azevac_at(&self.proxy.endpoint, &all, &[])
    }

    fn exposure(&self, extra: &[&str]) -> common::Run {
        let mut args = vec!["exposure", "--az-id", ZONE];
        args.extend(extra);
        self.run(&args)
    }
}

fn finding<'a>(document: &'a Value, kind: &str, name: &str) -> &'a Value {
    document["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["kind"] == kind && f["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} finding {name} in {document:#}"))
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exposure_lists_what_is_in_the_zone_and_what_moves_it() {
    let estate = estate().await;
    estate.proxy.set(Faults::default());
    let run = estate.exposure(&["--output", "json"]).expect_code(0);
    let document = run.json();
    assert_eq!(document["az_id"], ZONE);
    // Every finding carries its ID or ARN.
    for f in document["findings"].as_array().expect("findings") {
        assert!(!f["resource"].as_str().unwrap_or_default().is_empty(), "{f:#}");
    }
    let web = finding(&document, "asg", "web");
    assert_eq!(web["moved_by"], "asg");
    assert_eq!(web["count"], 2, "{web:#}");
    assert!(web["resource"]
        .as_str()
        .unwrap_or_default()
        .starts_with("arn:aws:autoscaling:"));
    let api = finding(&document, "ecs", "prod/api");
    assert_eq!(api["moved_by"], "ecs");
    let mut found = strings(&api["in_zone"]);
    found.sort();
    let mut expected = estate.tasks.clone();
    expected.sort();
    assert_eq!(found, expected, "the service's tasks in the zone");
    let worker = finding(&document, "lambda", "worker");
    assert_eq!(worker["moved_by"], "lambda");
    assert_eq!(strings(&worker["in_zone"]), [estate.seeded.subnet("prod", ZONE)]);
    let nodes = finding(&document, "eks", "prod");
    assert_eq!(nodes["moved_by"], "eks");
    assert_eq!(nodes["count"], 3, "{nodes:#}");
    let bastion = finding(&document, "ec2-instance", "bastion");
    assert_eq!(bastion["resource"], estate.standalone.as_str());
    assert!(bastion["moved_by"].is_null());
    assert!(bastion["not_movable"]
        .as_str()
        .unwrap_or_default()
        .contains("no Auto Scaling group"));
    let endpoint = document["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["kind"] == "vpc-endpoint")
        .expect("the interface endpoint");
    assert_eq!(
        endpoint["resource"],
        format!("arn:aws:ec2:us-east-1:123456789012:vpc-endpoint/{}", estate.endpoint)
    );
    assert_eq!(endpoint["count"], 1, "its one interface in the zone: {endpoint:#}");
    assert_eq!(endpoint["moved_by"], "vpc-endpoint", "{endpoint:#}");
    let volume = document["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["kind"] == "ebs-volume")
        .expect("the attached volume");
    assert_eq!(volume["resource"], estate.volume.as_str());
    assert_eq!(strings(&volume["in_zone"]), std::slice::from_ref(&estate.standalone));
    let lb = finding(&document, "load-balancer", "edge");
    assert_eq!(lb["resource"], LB);
    assert!(lb["away"].is_null(), "no shift active yet");
    // Only the group's instances, not its root volumes, nor the group's instances as standalone.
    let kinds: Vec<&str> = document["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter_map(|f| f["kind"].as_str())
        .collect();
    assert_eq!(kinds.iter().filter(|k| **k == "ec2-instance").count(), 1, "{kinds:?}");
    assert_eq!(kinds.iter().filter(|k| **k == "ebs-volume").count(), 1, "{kinds:?}");
    // The NAT gateway in the zone cannot move; the route tables outside the zone that use it can.
    for table in ["private-az1", "private-az4"] {
        let routes = finding(&document, "nat-route-table", table);
        assert_eq!(routes["moved_by"], "nat", "{routes:#}");
        assert!(
            routes["resource"]
                .as_str()
                .unwrap_or_default()
                .starts_with("arn:aws:ec2:"),
            "{routes:#}"
        );
        assert!(
            strings(&routes["in_zone"])[0].starts_with("0.0.0.0/0 via nat-"),
            "{routes:#}"
        );
    }
    let gateways: Vec<&Value> = document["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["kind"] == "nat-gateway")
        .collect();
    assert_eq!(gateways.len(), 1, "only the zone's NAT gateway: {gateways:#?}");
    assert!(gateways[0]["not_movable"]
        .as_str()
        .unwrap_or_default()
        .contains("2 route table(s)"));
    assert_eq!(
        document["summary"],
        serde_json::json!({ "findings": 11, "movable": 8, "not_movable": 3, "away": 0 })
    );
    // Read-only: describe and list calls only (Lambda's, Batch's and Scheduler's REST calls are
    // labelled by path: the one read of Lambda is ListFunctions, a GET of the collection).
    let calls = estate.proxy.calls();
    let writes: Vec<String> = estate
        .proxy
        .requests()
        .into_iter()
        .filter(|(c, body)| {
            let action = c.split(':').nth(1).unwrap_or_default();
            !["Describe", "List", "Get"].iter().any(|p| action.starts_with(p))
                && c != "lambda:/2015-03-31/functions"
                // Batch's REST paths name the operation, in lower case.
                && !c.starts_with("batch:/v1/describe")
                // A read of Scheduler's has no body.
                && (!c.starts_with("scheduler:/") || !body.is_empty())
        })
        .map(|(c, _)| c)
        .collect();
    assert!(writes.is_empty(), "exposure changed something: {writes:?}");
    for needed in [
        "ecs:ListTasks",
        "ecs:DescribeTasks",
        "ec2:DescribeVpcEndpoints",
        "ec2:DescribeVolumes",
    ] {
        assert!(calls.iter().any(|c| c == needed), "{needed} in {calls:?}");
    }

    // The table names the same things, escaped.
    let table = estate.exposure(&[]).expect_code(0).stdout;
    for expected in [
        "bastion",
        "prod/api",
        "  asg  ",
        "  nothing  ",
        &estate.volume,
        "movable still in the zone",
    ] {
        assert!(table.contains(expected), "{expected} in\n{table}");
    }

    // --fail-if-exposed: 3 while movable units are there.
    estate.exposure(&["--fail-if-exposed"]).expect_code(3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_evacuate_only_what_is_left_is_listed_and_still_fails_while_instances_remain() {
    let estate = estate().await;
    estate
        .run(&["evacuate", "--az-id", ZONE, "--yes", "--zonal-shift", "--force"])
        .expect_code(0);
    let run = estate.exposure(&["--output", "json", "--fail-if-exposed"]);
    let document = run.json();
    // The function and the service left the zone's subnet; the function is gone from the list.
    assert!(
        !document["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .any(|f| f["kind"] == "lambda"),
        "{document:#}"
    );
    // The route tables now send their egress through the NAT gateway in use1-az1.
    assert!(
        !document["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .any(|f| f["kind"] == "nat-route-table"),
        "{document:#}"
    );
    // The load balancer's traffic is shifted away; the nodes carry azevac's taint.
    assert!(finding(&document, "load-balancer", "edge")["away"].is_string());
    assert!(finding(&document, "eks", "prod")["away"].is_string());
    // Instances and tasks stay until replaced (moto replaces nothing): still exposed.
    let web = finding(&document, "asg", "web");
    assert_eq!(web["count"], 2);
    assert!(strings(&web["notes"])[0].contains("subnets are out of the zone already"));
    assert_eq!(run.code, 3, "{}", run.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_az_id_is_refused_with_the_valid_ones() {
    let moto = Moto::start();
    let run = azevac_at(&moto.endpoint, &["exposure", "--az-id", "use1-az9"], &[]).expect_code(2);
    assert!(
        run.stderr
            .contains("\"use1-az9\" is not an AZ ID in us-east-1; valid AZ IDs:")
            && run.stderr.contains(ZONE),
        "{}",
        run.stderr
    );
}

/// Both questions on the sample estate (fixtures/sample-estate.json): what is in the zone, and
/// whether the other zones hold it (every planned subnet change carries its headroom).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sample_estate_answers_both_questions() {
    let moto = Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    let sdk = common::sdk(&moto).await;
    let spec = estate::read_spec(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sample-estate.json"));
    estate::seed(&sdk, &spec).await;
    let exposure = azevac_at(&proxy.endpoint, &["exposure", "--az-id", ZONE, "--output", "json"], &[]).expect_code(0);
    let document = exposure.json();
    let findings = document["findings"].as_array().expect("findings");
    let groups_in_zone = spec
        .auto_scaling_groups
        .iter()
        .filter(|g| g.zones.iter().any(|z| z == ZONE))
        .count();
    assert_eq!(
        findings.iter().filter(|f| f["kind"] == "asg").count(),
        groups_in_zone,
        "{document:#}"
    );
    assert!(findings.iter().any(|f| f["kind"] == "lambda"), "{document:#}");
    assert_eq!(
        findings.iter().filter(|f| f["kind"] == "nat-route-table").count(),
        spec.route_tables.len(),
        "{document:#}"
    );
    let plan = azevac_at(
        &proxy.endpoint,
        &["evacuate", "--az-id", ZONE, "--dry-run", "--output", "json"],
        &[],
    )
    .expect_code(0)
    .json();
    let planned: Vec<&Value> = plan["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|i| i["status"] == "planned" && i["removed_subnets"].as_array().is_some_and(|r| !r.is_empty()))
        .collect();
    assert!(!planned.is_empty());
    for line in planned {
        assert_eq!(line["headroom"]["fits"], true, "{line:#}");
    }
    assert_eq!(
        document["summary"],
        serde_json::json!({ "findings": 18, "movable": 13, "not_movable": 5, "away": 0 })
    );
}
