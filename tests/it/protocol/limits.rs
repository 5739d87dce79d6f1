//! Issue 50, limits AWS enforces that the emulator does not: an ECS service takes at most 16
//! subnets (moto takes any number). Recover puts back the union of the live subnets and the
//! journalled ones, so a subnet added by hand during the incident can take a service over the
//! limit: that line must fail before anything is sent, at planning and again under the lock, and
//! keep its record; the rest of the run goes on.

use crate::common;

use std::process::Stdio;
use std::time::Duration;

use aws_config::SdkConfig;
use common::estate::{self, Seeded};
use common::proxy::{Faults, Hold, Proxy};
use common::*;

const SERVICE: &str = "prod/web";
const SERVICE_ARN: &str = "arn:aws:ecs:us-east-1:123456789012:service/prod/web";

/// A VPC over use1-az1 and the zone, an ECS service and a Lambda function in both.
fn spec() -> estate::Spec {
    serde_json::from_value(serde_json::json!({
        "vpcs": [{"name": "prod", "cidr": "10.60.0.0/16", "zones": ["use1-az1", ZONE]}],
        "ecs_services": [{"cluster": "prod", "name": "web", "vpc": "prod", "zones": ["use1-az1", ZONE]}],
        "lambda_functions": [{"name": "api-fn", "vpc": "prod", "zones": ["use1-az1", ZONE]}]
    }))
    .expect("spec")
}

/// A new /24 subnet of the VPC outside the zone (the `n`th), as an operator would add one.
async fn new_subnet(sdk: &SdkConfig, seeded: &Seeded, n: usize) -> String {
    aws_sdk_ec2::Client::new(sdk)
        .create_subnet()
        .vpc_id(&seeded.vpcs["prod"])
        .cidr_block(format!("10.60.{}.0/24", 100 + n))
        .availability_zone_id(if n.is_multiple_of(2) { "use1-az1" } else { "use1-az4" })
        .send()
        .await
        .expect("CreateSubnet")
        .subnet()
        .and_then(|s| s.subnet_id())
        .expect("a subnet ID")
        .to_owned()
}

/// Set the service's subnets by hand, as the operator does in the console.
async fn set_subnets(sdk: &SdkConfig, seeded: &Seeded, subnets: &[String]) {
    use aws_sdk_ecs::types::{AwsVpcConfiguration, NetworkConfiguration};
    let awsvpc = AwsVpcConfiguration::builder()
        .set_subnets(Some(subnets.to_vec()))
        .security_groups(&seeded.security_groups["prod"])
        .build()
        .expect("awsvpc");
    aws_sdk_ecs::Client::new(sdk)
        .update_service()
        .cluster("prod")
        .service("web")
        .network_configuration(NetworkConfiguration::builder().awsvpc_configuration(awsvpc).build())
        .send()
        .await
        .expect("UpdateService");
}

async fn service_subnets(sdk: &SdkConfig) -> Vec<String> {
    live_services(sdk).await[SERVICE].0.clone()
}

/// The service's journal record (there is one, in the zone).
async fn service_record_kept(sdk: &SdkConfig) -> bool {
    journal_items(sdk)
        .await
        .iter()
        .any(|r| attr_s(r, "resource") == SERVICE_ARN && attr_s(r, "az_id") == ZONE)
}

/// The service's line says it cannot be recovered, naming the count and the limit.
fn assert_over_the_limit(report: &serde_json::Value, count: usize) {
    let line = plan_line(report, SERVICE);
    assert_eq!(line["status"], "failed", "{line:#}");
    let reason = line["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains(&format!(
            "would give it {count} subnets, and an ECS service takes at most 16: remove {} of its subnets, then run recover again",
            count - 16
        )) && reason.contains("journal record kept"),
        "{reason}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn issue_50_recover_never_sends_an_ecs_service_more_than_16_subnets() {
    let moto = Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    let sdk = common::sdk(&moto).await;
    let seeded = estate::seed(&sdk, &spec()).await;
    let zonal = seeded.subnet("prod", ZONE);
    // 16 subnets, the most ECS takes: the seeded two and 14 more.
    let mut sixteen = service_subnets(&sdk).await;
    for n in 0..14 {
        sixteen.push(new_subnet(&sdk, &seeded, n).await);
    }
    set_subnets(&sdk, &seeded, &sixteen).await;
    assert_eq!(service_subnets(&sdk).await.len(), 16);

    azevac_at(&proxy.endpoint, &["evacuate", "--az-id", ZONE, "--yes"], &[]).expect_code(0);
    let fifteen = service_subnets(&sdk).await;
    assert_eq!(fifteen.len(), 15);
    assert!(!fifteen.contains(&zonal));

    // During the incident the operator gives the service another subnet: 16 again, and putting
    // the zone's subnet back would make 17.
    let added = new_subnet(&sdk, &seeded, 14).await;
    let live: Vec<String> = fifteen.iter().cloned().chain([added.clone()]).collect();
    set_subnets(&sdk, &seeded, &live).await;

    // The dry run says so and exits 1; the function's line is unaffected.
    let dry = azevac_at(&proxy.endpoint, &["recover", "--dry-run", "--output", "json"], &[]).expect_code(1);
    let plan = dry.json();
    assert_over_the_limit(&plan, 17);
    assert_eq!(plan_line(&plan, "api-fn")["status"], "planned");

    // The real run: the service's line fails before anything is sent to ECS, its record is kept;
    // the function is recovered.
    proxy.set(Faults::default());
    let run = azevac_at(&proxy.endpoint, &["recover", "--yes", "--output", "json"], &[]).expect_code(1);
    let report = run.json();
    assert_over_the_limit(&report, 17);
    assert_eq!(plan_line(&report, "api-fn")["status"], "done");
    assert!(
        !proxy.calls().iter().any(|c| c == "ecs:UpdateService"),
        "{:?}",
        proxy.calls()
    );
    assert_eq!(service_subnets(&sdk).await, live);
    assert!(service_record_kept(&sdk).await);

    // The operator removes the added subnet; between the plan and the lock it is added once more:
    // the line is planned (16), then fails when it is computed again under the lock (17).
    set_subnets(&sdk, &seeded, &fifteen).await;
    let lock = Hold {
        label: Some("dynamodb:TransactWriteItems".into()),
        body_contains: String::new(),
        nth: 1,
    };
    proxy.set(Faults::default());
    proxy.hold(lock);
    let mut child = command(&proxy.endpoint, &["recover", "--yes", "--output", "json"], &[])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn azevac");
    let held = proxy.wait_held(Some(&mut child), Duration::from_secs(60));
    assert!(held.is_some(), "the recover took no lock");
    let planned_reads = proxy.calls().iter().filter(|c| *c == "ecs:DescribeServices").count();
    set_subnets(&sdk, &seeded, &live).await;
    proxy.release();
    let out = child.wait_with_output().expect("wait");
    let run = Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
    .expect_code(1);
    assert_over_the_limit(&run.json(), 17);
    let calls = proxy.calls();
    assert!(
        calls.iter().filter(|c| *c == "ecs:DescribeServices").count() > planned_reads,
        "read again under the lock: {calls:?}"
    );
    assert!(!calls.iter().any(|c| c == "ecs:UpdateService"), "{calls:?}");
    assert_eq!(service_subnets(&sdk).await, live);
    assert!(service_record_kept(&sdk).await);

    // Once the service is back at 15, recover puts the zone's subnet back: 16.
    set_subnets(&sdk, &seeded, &fifteen).await;
    azevac_at(&proxy.endpoint, &["recover", "--yes"], &[]).expect_code(0);
    let mut back = service_subnets(&sdk).await;
    back.sort();
    sixteen.sort();
    assert_eq!(back, sixteen);
    assert!(journal_items(&sdk).await.is_empty());
}
