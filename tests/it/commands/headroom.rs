//! The headroom check before capacity moves: the real binary against moto through the test proxy
//! (which answers ECS tasks, see tests/it/common/tasks.rs). Small /28 subnets (11 free IPs each, as
//! moto and AWS count them: 16 less the 5 AWS reserves) in the zones that remain.

use crate::common;

use serde_json::Value;

use common::estate::{self, Spec, VpcSpec};
use common::proxy::{FailRule, Fault, Faults, Proxy};
use common::{azevac_at, plan_line, Moto, ZONE};

struct Setup {
    _moto: Moto,
    proxy: Proxy,
}

async fn subnet(ec2: &aws_sdk_ec2::Client, vpc: &str, cidr: &str, az_id: &str) -> String {
    ec2.create_subnet()
        .vpc_id(vpc)
        .cidr_block(cidr)
        .availability_zone_id(az_id)
        .send()
        .await
        .expect("CreateSubnet")
        .subnet()
        .and_then(|s| s.subnet_id())
        .expect("a subnet ID")
        .to_owned()
}

/// Services `big` (14 tasks in the zone, a /28 elsewhere), `a` and `b` (6 tasks each, sharing
/// another /28), and a group `fleet` of 12 instances in the zone with a third /28 elsewhere.
async fn setup() -> Setup {
    use aws_sdk_ecs::types::{AwsVpcConfiguration, ContainerDefinition, LaunchType, NetworkConfiguration, NetworkMode};
    let moto = Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    let sdk = common::sdk(&moto).await;
    let spec = Spec {
        vpcs: vec![VpcSpec {
            name: "prod".into(),
            cidr: "10.80.0.0/16".into(),
            zones: vec![ZONE.into()],
        }],
        ..Spec::default()
    };
    let seeded = estate::seed(&sdk, &spec).await;
    let (vpc, group) = (&seeded.vpcs["prod"], &seeded.security_groups["prod"]);
    let ec2 = aws_sdk_ec2::Client::new(&sdk);
    let in_zone = seeded.subnet("prod", ZONE);
    let small_big = subnet(&ec2, vpc, "10.80.250.0/28", "use1-az1").await;
    let small_shared = subnet(&ec2, vpc, "10.80.251.0/28", "use1-az4").await;
    let small_fleet = subnet(&ec2, vpc, "10.80.252.0/28", "use1-az1").await;
    let ecs = aws_sdk_ecs::Client::new(&sdk);
    ecs.register_task_definition()
        .family("app")
        .network_mode(NetworkMode::Awsvpc)
        .container_definitions(
            ContainerDefinition::builder()
                .name("app")
                .image("nginx")
                .memory(128)
                .build(),
        )
        .send()
        .await
        .expect("RegisterTaskDefinition");
    ecs.create_cluster()
        .cluster_name("prod")
        .send()
        .await
        .expect("CreateCluster");
    for (name, small, tasks) in [
        ("big", &small_big, 14),
        ("a", &small_shared, 6),
        ("b", &small_shared, 6),
    ] {
        let awsvpc = AwsVpcConfiguration::builder()
            .subnets(&in_zone)
            .subnets(small)
            .security_groups(group)
            .build()
            .expect("awsvpc");
        ecs.create_service()
            .cluster("prod")
            .service_name(name)
            .task_definition("app")
            .desired_count(tasks)
            .launch_type(LaunchType::Fargate)
            .network_configuration(NetworkConfiguration::builder().awsvpc_configuration(awsvpc).build())
            .send()
            .await
            .expect("CreateService");
        proxy.tasks(|fake| {
            fake.tasks.extend((0..tasks).map(|n| common::tasks::Task {
                arn: format!("arn:aws:ecs:us-east-1:123456789012:task/prod/{name}{n:030}"),
                cluster: "arn:aws:ecs:us-east-1:123456789012:cluster/prod".into(),
                service: name.into(),
                az: "us-east-1c".into(),
                subnet: in_zone.clone(),
            }))
        });
    }
    let data = aws_sdk_ec2::types::RequestLaunchTemplateData::builder()
        .image_id("ami-12c6146b")
        .instance_type(aws_sdk_ec2::types::InstanceType::T3Micro)
        .build();
    ec2.create_launch_template()
        .launch_template_name("fleet")
        .launch_template_data(data)
        .send()
        .await
        .expect("CreateLaunchTemplate");
    aws_sdk_autoscaling::Client::new(&sdk)
        .create_auto_scaling_group()
        .auto_scaling_group_name("fleet")
        .launch_template(
            aws_sdk_autoscaling::types::LaunchTemplateSpecification::builder()
                .launch_template_name("fleet")
                .build(),
        )
        .min_size(0)
        .max_size(12)
        .desired_capacity(12)
        .vpc_zone_identifier(format!("{in_zone},{small_fleet}"))
        .send()
        .await
        .expect("CreateAutoScalingGroup");
    Setup { _moto: moto, proxy }
}

impl Setup {
    fn plan(&self, extra: &[&str]) -> Value {
        let mut args = vec!["evacuate", "--az-id", ZONE, "--dry-run", "--output", "json"];
        args.extend(extra);
        azevac_at(&self.proxy.endpoint, &args, &[]).expect_code(0).json()
    }
}

fn reason(line: &Value) -> &str {
    line["reason"].as_str().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_remaining_subnets_cannot_hold_is_held_back_unless_forced() {
    let setup = setup().await;
    let plan = setup.plan(&[]);
    let big = plan_line(&plan, "prod/big");
    assert_eq!(big["status"], "skipped", "{big:#}");
    assert_eq!(
        reason(big),
        "not enough headroom: remaining subnets have 11 free IPs; 14 tasks would move (--force to go ahead)"
    );
    assert_eq!(big["headroom"]["free_ips"], 11);
    assert_eq!(big["headroom"]["moving"], 14);
    assert_eq!(big["headroom"]["fits"], false);
    let fleet = plan_line(&plan, "fleet");
    assert_eq!(fleet["status"], "skipped", "{fleet:#}");
    assert!(
        reason(fleet).contains("11 free IPs; 12 instances would move"),
        "{fleet:#}"
    );

    // Shared subnets counted once: a and b each fit the shared /28 alone (6 of 11), not together.
    let (a, b) = (plan_line(&plan, "prod/a"), plan_line(&plan, "prod/b"));
    let (first, second) = if a["status"] == "planned" { (a, b) } else { (b, a) };
    assert_eq!(first["status"], "planned", "{a:#}\n{b:#}");
    assert_eq!(first["headroom"]["free_ips"], 11);
    assert_eq!(first["headroom"]["fits"], true);
    assert_eq!(second["status"], "skipped");
    assert!(
        reason(second)
            .contains("remaining subnets have 11 free IPs (6 taken by other lines sharing them); 6 tasks would move"),
        "{second:#}"
    );
    assert_eq!(second["headroom"]["shared_with"].as_array().map(Vec::len), Some(1));

    // The wide table shows the headroom of what goes ahead (the fitted one only a shortfall).
    let table = azevac_at(
        &setup.proxy.endpoint,
        &["evacuate", "--az-id", ZONE, "--dry-run", "-o", "wide"],
        &[],
    )
    .expect_code(0);
    assert!(
        table.stdout.contains("headroom: 11 free IPs for 6 tasks"),
        "{}",
        table.stdout
    );

    // --force: everything goes ahead, each shortfall a warning; the group's MaxSize is noted.
    let forced = setup.plan(&["--force"]);
    for name in ["prod/big", "prod/a", "prod/b", "fleet"] {
        assert_eq!(plan_line(&forced, name)["status"], "planned", "{name}: {forced:#}");
    }
    let notes = plan_line(&forced, "prod/big")["notes"].to_string();
    assert!(
        notes.contains("warning: remaining subnets have 11 free IPs; 14 tasks would move; going ahead (--force)"),
        "{notes}"
    );
    let notes = plan_line(&forced, "fleet")["notes"].to_string();
    assert!(notes.contains("MaxSize 12 leaves room for 1 replacement(s)"), "{notes}");
    // The subnets are read in one batch, not one call per resource.
    setup.proxy.set(Default::default());
    setup.plan(&[]);
    let reads = setup
        .proxy
        .calls()
        .iter()
        .filter(|c| *c == "ec2:DescribeSubnets")
        .count();
    assert_eq!(reads, 2, "the zone's subnets, then every remaining subnet at once");

    // A policy from before the check (no ecs:ListTasks): the check is a note, never a stop; and
    // exposure says ecs could not be read (exit 1) while listing the rest.
    setup.proxy.set(Faults {
        rules: vec![FailRule {
            label: "ecs:ListTasks".into(),
            body_contains: String::new(),
            fault: Fault::AccessDenied,
        }],
        ..Faults::default()
    });
    let denied = setup.plan(&[]);
    let big = plan_line(&denied, "prod/big");
    assert_eq!(big["status"], "planned", "{big:#}");
    assert!(big["notes"].to_string().contains("headroom not checked"), "{big:#}");
    assert_eq!(
        plan_line(&denied, "fleet")["status"],
        "skipped",
        "the group's check needs no ECS read"
    );
    let run = azevac_at(
        &setup.proxy.endpoint,
        &["exposure", "--az-id", ZONE, "--output", "json"],
        &[],
    )
    .expect_code(1);
    let document = run.json();
    assert!(
        document["problems"][0]
            .as_str()
            .unwrap_or_default()
            .starts_with("ecs: could not be read"),
        "{document:#}"
    );
    assert!(document["findings"]
        .as_array()
        .is_some_and(|f| f.iter().any(|f| f["kind"] == "asg")));
}
