//! Interface VPC endpoints (`--type vpc-endpoint`, issue 34) end to end: the real binary against
//! moto (through scripts/moto_server.py, which makes an endpoint's interfaces follow its subnets and
//! honours `SubnetConfigurations`, as EC2 does). One scenario: the plan, the evacuation that takes
//! only the zone's subnet and journals its interface's address, exposure and doctor, a recovery
//! that gets the same address back and keeps a later change, and one whose address was taken
//! meanwhile and says so. The pending waits and the refusals moto does not make are covered by the
//! aws-smithy-mocks tests in src/plugins/vpc_endpoint.rs.

use crate::common;

use std::collections::BTreeMap;

use aws_sdk_ec2::types::{Filter, VpcEndpoint, VpcEndpointType};
use common::estate::{self, Spec, VpcSpec};
use common::proxy::Proxy;
use common::{attr_s, azevac, azevac_at, journal_items, Moto, ZONE};
use serde_json::Value;

const ARN: &str = "arn:aws:ec2:us-east-1:123456789012:vpc-endpoint/";

fn zones(list: &[&str]) -> Vec<String> {
    list.iter().map(|z| z.to_string()).collect()
}

/// An endpoint of `service` in `subnets`, tagged `Name` = `name`; an interface one unless `gateway`.
async fn create(
    ec2: &aws_sdk_ec2::Client,
    vpc: &str,
    name: &str,
    service: &str,
    subnets: &[String],
    gateway: bool,
) -> String {
    let kind = if gateway {
        VpcEndpointType::Gateway
    } else {
        VpcEndpointType::Interface
    };
    ec2.create_vpc_endpoint()
        .vpc_id(vpc)
        .service_name(service)
        .vpc_endpoint_type(kind)
        .set_subnet_ids((!gateway).then(|| subnets.to_vec()))
        .private_dns_enabled(false)
        .policy_document(r#"{"Statement":[{"Effect":"Allow","Principal":"*","Action":"sqs:*","Resource":"*"}]}"#)
        .tag_specifications(estate::name_tag(aws_sdk_ec2::types::ResourceType::VpcEndpoint, name))
        .send()
        .await
        .expect("CreateVpcEndpoint")
        .vpc_endpoint()
        .and_then(|e| e.vpc_endpoint_id())
        .expect("an endpoint ID")
        .to_owned()
}

async fn endpoint(ec2: &aws_sdk_ec2::Client, id: &str) -> VpcEndpoint {
    ec2.describe_vpc_endpoints()
        .vpc_endpoint_ids(id)
        .send()
        .await
        .expect("DescribeVpcEndpoints")
        .vpc_endpoints()[0]
        .clone()
}

/// The endpoint's interface addresses by subnet; each subnet has exactly one interface.
async fn addresses(ec2: &aws_sdk_ec2::Client, id: &str) -> BTreeMap<String, String> {
    let e = endpoint(ec2, id).await;
    let found = ec2
        .describe_network_interfaces()
        .filters(
            Filter::builder()
                .name("network-interface-id")
                .set_values(Some(e.network_interface_ids().to_vec()))
                .build(),
        )
        .send()
        .await
        .expect("DescribeNetworkInterfaces");
    let by_subnet: BTreeMap<String, String> = found
        .network_interfaces()
        .iter()
        .map(|n| {
            (
                n.subnet_id().unwrap_or_default().to_owned(),
                n.private_ip_address().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let mut subnets = e.subnet_ids().to_vec();
    subnets.sort();
    assert_eq!(
        by_subnet.keys().cloned().collect::<Vec<_>>(),
        subnets,
        "one interface a subnet"
    );
    by_subnet
}

/// Everything of an endpoint but its subnets, interfaces and DNS names (which follow the interfaces).
fn kept(e: &VpcEndpoint) -> String {
    let mut e = e.clone();
    e.subnet_ids = None;
    e.network_interface_ids = None;
    e.dns_entries = None;
    format!("{e:?}")
}

fn line<'a>(plan: &'a Value, name: &str) -> &'a Value {
    plan["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|i| i["type"] == "vpc-endpoint" && i["name"] == name)
        .unwrap_or_else(|| panic!("no line for {name} in {plan:#}"))
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_34_interface_endpoints_leave_the_zone_and_come_back_with_their_addresses() {
    let moto = Moto::start();
    let sdk = common::sdk(&moto).await;
    let spec = Spec {
        vpcs: vec![VpcSpec {
            name: "prod".into(),
            cidr: "10.81.0.0/16".into(),
            zones: zones(&["use1-az1", ZONE, "use1-az4"]),
        }],
        ..Spec::default()
    };
    let seeded = estate::seed(&sdk, &spec).await;
    let ec2 = aws_sdk_ec2::Client::new(&sdk);
    let vpc = &seeded.vpcs["prod"];
    let (az1, az2, az4) = (
        seeded.subnet("prod", "use1-az1"),
        seeded.subnet("prod", ZONE),
        seeded.subnet("prod", "use1-az4"),
    );
    let sqs = create(
        &ec2,
        vpc,
        "sqs",
        "com.amazonaws.us-east-1.sqs",
        &[az1.clone(), az2.clone(), az4.clone()],
        false,
    )
    .await;
    let ssm = create(
        &ec2,
        vpc,
        "ssm",
        "com.amazonaws.us-east-1.ssm",
        &[az2.clone(), az4.clone()],
        false,
    )
    .await;
    let zonal = create(
        &ec2,
        vpc,
        "zonal",
        "com.amazonaws.us-east-1.kms",
        std::slice::from_ref(&az2),
        false,
    )
    .await;
    create(&ec2, vpc, "s3", "com.amazonaws.us-east-1.s3", &[], true).await;
    let sqs_before = endpoint(&ec2, &sqs).await;
    let (sqs_addresses, ssm_addresses) = (addresses(&ec2, &sqs).await, addresses(&ec2, &ssm).await);

    // Exposure lists each interface endpoint in the zone with its interface there, and the type that
    // moves it (or why not); doctor reads the endpoints.
    // Through the proxy, which answers ARC (moto has none) for the zonal-shift kind's reads.
    let proxy = Proxy::start(&moto.endpoint);
    let exposure = azevac_at(&proxy.endpoint, &["exposure", "--az-id", ZONE, "--output", "json"], &[])
        .expect_code(0)
        .json();
    let found: Vec<&Value> = exposure["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["kind"] == "vpc-endpoint")
        .collect();
    assert_eq!(found.len(), 3, "the gateway endpoint is not listed: {exposure:#}");
    let sqs_found = found.iter().find(|f| f["name"] == "sqs").expect("sqs");
    assert_eq!(sqs_found["resource"], format!("{ARN}{sqs}"));
    assert_eq!(
        (sqs_found["moved_by"].as_str(), sqs_found["count"].as_u64()),
        (Some("vpc-endpoint"), Some(1))
    );
    let zonal_found = found.iter().find(|f| f["name"] == "zonal").expect("zonal");
    assert!(zonal_found["not_movable"]
        .as_str()
        .unwrap_or_default()
        .contains("would leave no subnets"));
    azevac(&moto, &["init"]).expect_code(0);
    let doctor = azevac(&moto, &["doctor", "--az-id", ZONE, "--output", "json"])
        .expect_code(0)
        .json();
    let check = doctor["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["name"] == "vpc-endpoint")
        .cloned()
        .expect("a vpc-endpoint check");
    assert_eq!(check["verdict"], "ok", "{check:#}");
    assert!(
        check["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("DescribeVpcEndpoints"),
        "{check:#}"
    );

    // The plan: only the zone's subnet goes, with the address of its interface; the endpoint whose
    // only subnet is in the zone is skipped; the gateway endpoint is not listed.
    let plan = azevac(
        &moto,
        &[
            "evacuate",
            "--az-id",
            ZONE,
            "--type",
            "vpc-endpoint",
            "--dry-run",
            "--output",
            "json",
        ],
    )
    .expect_code(0)
    .json();
    let planned = line(&plan, "sqs");
    assert_eq!(planned["status"], "planned", "{planned:#}");
    assert_eq!(strings(&planned["removed_subnets"]), [az2.as_str()]);
    assert_eq!(strings(&planned["resulting_subnets"]), [az1.clone(), az4.clone()]);
    assert_eq!(
        strings(&planned["actions"]),
        [format!("address in {az2}: {}", sqs_addresses[&az2])]
    );
    assert!(line(&plan, "zonal")["reason"]
        .as_str()
        .unwrap_or_default()
        .starts_with("would leave no subnets"));
    assert!(!plan["items"]
        .as_array()
        .expect("items")
        .iter()
        .any(|i| i["name"] == "s3"));
    assert_eq!(endpoint(&ec2, &sqs).await, sqs_before, "a dry run changes nothing");

    // The run: the zone's subnet and its interface go, every other field stays; the journal holds
    // the address.
    azevac(&moto, &["evacuate", "--az-id", ZONE, "--type", "vpc-endpoint", "--yes"]).expect_code(0);
    let sqs_after = endpoint(&ec2, &sqs).await;
    assert_eq!(sqs_after.subnet_ids(), [az1.clone(), az4.clone()]);
    assert_eq!(kept(&sqs_after), kept(&sqs_before));
    let left = addresses(&ec2, &sqs).await;
    assert_eq!(
        left.get(&az1),
        sqs_addresses.get(&az1),
        "the other interfaces are untouched"
    );
    assert_eq!(endpoint(&ec2, &ssm).await.subnet_ids(), [az4.as_str()]);
    assert_eq!(endpoint(&ec2, &zonal).await.subnet_ids(), [az2.as_str()]);
    let records = journal_items(&sdk).await;
    let record = records
        .iter()
        .find(|r| attr_s(r, "resource") == format!("{ARN}{sqs}"))
        .expect("a record for sqs");
    let actions: Vec<String> = record
        .get("actions")
        .and_then(|a| a.as_l().ok())
        .map(|l| l.iter().filter_map(|v| v.as_s().ok().cloned()).collect())
        .unwrap_or_default();
    assert_eq!(
        actions,
        [format!(
            r#"{{"address":{{"subnet":"{az2}","ipv4":"{}"}}}}"#,
            sqs_addresses[&az2]
        )]
    );

    // Meanwhile: someone takes sqs out of use1-az4, and another interface takes ssm's old address.
    ec2.modify_vpc_endpoint()
        .vpc_endpoint_id(&sqs)
        .remove_subnet_ids(&az4)
        .send()
        .await
        .expect("ModifyVpcEndpoint by hand");
    ec2.create_network_interface()
        .subnet_id(&az2)
        .private_ip_address(&ssm_addresses[&az2])
        .send()
        .await
        .expect("CreateNetworkInterface on the old address");

    // Recover: sqs gets its subnet and its address back and stays out of use1-az4 (a union with the
    // live state); ssm gets its subnet back with a new address, and the line says so.
    let run = azevac(
        &moto,
        &[
            "recover",
            "--az-id",
            ZONE,
            "--type",
            "vpc-endpoint",
            "--yes",
            "--output",
            "json",
        ],
    )
    .expect_code(0);
    let recovered = run.json();
    let sqs_back = endpoint(&ec2, &sqs).await;
    assert_eq!(sqs_back.subnet_ids(), [az1.clone(), az2.clone()]);
    assert_eq!(kept(&sqs_back), kept(&sqs_before));
    assert_eq!(
        addresses(&ec2, &sqs).await[&az2],
        sqs_addresses[&az2],
        "the same address again"
    );
    let ssm_back = endpoint(&ec2, &ssm).await;
    let mut subnets = ssm_back.subnet_ids().to_vec();
    subnets.sort();
    let mut expected = vec![az2.clone(), az4.clone()];
    expected.sort();
    assert_eq!(subnets, expected);
    let new_address = addresses(&ec2, &ssm).await[&az2].clone();
    assert_ne!(new_address, ssm_addresses[&az2]);
    let told = strings(&line(&recovered, "ssm")["actions"]);
    assert_eq!(line(&recovered, "ssm")["status"], "done", "{recovered:#}");
    assert!(
        told.iter().any(|t| t.starts_with(&format!(
            "address in {az2} changed from {} to {new_address}",
            ssm_addresses[&az2]
        ))),
        "{told:?}"
    );
    assert!(journal_items(&sdk).await.is_empty(), "every record recovered");
}
