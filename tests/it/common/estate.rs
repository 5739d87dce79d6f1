//! Seeds an estate (VPCs with one /20 subnet per AZ ID, NAT gateways and the route tables through
//! them, Auto Scaling groups, ECS services, Lambda functions, CloudWatch alarms) into an emulator with the real SDK,
//! from a spec that tests build in code or read from fixtures/sample-estate.json.

use std::collections::BTreeMap;

use aws_config::SdkConfig;
use aws_sdk_cloudwatch::types::{ComparisonOperator, StateValue, Statistic};
use serde::Deserialize;

/// The launch template every seeded group uses (moto accepts any image ID).
const LAUNCH_TEMPLATE: &str = "azevac-sample";

/// What to create.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Spec {
    /// The VPCs, each with a subnet in each of its zones.
    pub vpcs: Vec<VpcSpec>,
    /// The Auto Scaling groups.
    #[serde(default)]
    pub auto_scaling_groups: Vec<AsgSpec>,
    /// The ECS services (their clusters are created as needed).
    #[serde(default)]
    pub ecs_services: Vec<EcsSpec>,
    /// The Lambda functions.
    #[serde(default)]
    pub lambda_functions: Vec<LambdaSpec>,
    /// The NAT gateways.
    #[serde(default)]
    pub nat_gateways: Vec<NatSpec>,
    /// Route tables through those NAT gateways.
    #[serde(default)]
    pub route_tables: Vec<RouteTableSpec>,
    /// The AWS Batch compute environments.
    #[serde(default)]
    pub batch_compute_environments: Vec<BatchSpec>,
    /// Interface VPC endpoints.
    #[serde(default)]
    pub vpc_endpoints: Vec<EndpointSpec>,
    /// EventBridge rule targets (their rules and buses are created as needed).
    #[serde(default)]
    pub eventbridge_targets: Vec<super::events::EventTargetSpec>,
    /// EventBridge Scheduler schedules (their groups are created as needed).
    #[serde(default)]
    pub schedules: Vec<super::events::ScheduleSpec>,
    /// CloudWatch alarms, for a recovery in waves to be gated on (`--alarm`).
    #[serde(default)]
    pub alarms: Vec<AlarmSpec>,
}

/// One CloudWatch alarm (on a load balancer's 5XX count), its state set by hand (`SetAlarmState`).
#[derive(Debug, Clone, Deserialize)]
pub struct AlarmSpec {
    /// Its name.
    pub name: String,
    /// `OK`, `ALARM` or `INSUFFICIENT_DATA`.
    pub state: String,
}

/// The reason the seeder gives a seeded alarm's state (scripts/seed-estate.py gives the same).
pub const SEEDED: &str = "seeded";

/// An alarm in `state`, for `reason` (the SDK speaks CloudWatch's CBOR; the emulator answers it).
pub async fn alarm(sdk: &SdkConfig, name: &str, state: StateValue, reason: &str) {
    aws_sdk_cloudwatch::Client::new(sdk)
        .put_metric_alarm()
        .alarm_name(name)
        .namespace("AWS/ApplicationELB")
        .metric_name("HTTPCode_Target_5XX_Count")
        .statistic(Statistic::Sum)
        .period(60)
        .evaluation_periods(1)
        .threshold(1.0)
        .comparison_operator(ComparisonOperator::GreaterThanThreshold)
        .send()
        .await
        .expect("put alarm");
    set_alarm_state(sdk, name, state, reason).await;
}

/// Set an alarm's state, for `reason`.
pub async fn set_alarm_state(sdk: &SdkConfig, name: &str, state: StateValue, reason: &str) {
    aws_sdk_cloudwatch::Client::new(sdk)
        .set_alarm_state()
        .alarm_name(name)
        .state_value(state)
        .state_reason(reason)
        .send()
        .await
        .expect("set alarm state");
}

/// One AWS Batch compute environment (moto launches no instance: EC2 ones have minvCpus 0).
#[derive(Debug, Clone, Deserialize)]
pub struct BatchSpec {
    /// Its name.
    pub name: String,
    /// The VPC (by spec name) of its subnets and security group (managed ones).
    #[serde(default)]
    pub vpc: String,
    /// The AZ IDs of its subnets, in order.
    #[serde(default)]
    pub zones: Vec<String>,
    /// `EC2`, `SPOT`, `FARGATE` (default) or `FARGATE_SPOT`.
    #[serde(default = "fargate")]
    pub compute_type: String,
    /// Its allocation strategy (EC2 and Spot; none given: AWS's default, BEST_FIT).
    #[serde(default)]
    pub allocation_strategy: Option<String>,
    /// Unmanaged when false (default: managed).
    #[serde(default = "yes")]
    pub managed: bool,
    /// A service role of its own instead of the service-linked AWSServiceRoleForBatch.
    #[serde(default)]
    pub own_service_role: bool,
    /// Tags.
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
}

fn fargate() -> String {
    "FARGATE".into()
}
fn yes() -> bool {
    true
}

/// One interface VPC endpoint, tagged `Name`, in its VPC's subnets of `zones`.
#[derive(Debug, Clone, Deserialize)]
pub struct EndpointSpec {
    /// Its Name tag.
    pub name: String,
    /// The VPC (by spec name).
    pub vpc: String,
    /// The service (`com.amazonaws.us-east-1.sqs`).
    pub service: String,
    /// The AZ IDs of its subnets, in order.
    pub zones: Vec<String>,
}

/// One NAT gateway, in its VPC's subnet of one zone, tagged `Name`.
#[derive(Debug, Clone, Deserialize)]
pub struct NatSpec {
    /// Its Name tag.
    pub name: String,
    /// The VPC (by spec name).
    pub vpc: String,
    /// The AZ ID of its subnet.
    pub zone: String,
    /// A private NAT gateway (default: public, with an Elastic IP).
    #[serde(default)]
    pub private: bool,
}

/// One route table, tagged `Name`, associated with its VPC's subnets in `zones`.
#[derive(Debug, Clone, Deserialize)]
pub struct RouteTableSpec {
    /// Its Name tag.
    pub name: String,
    /// The VPC (by spec name).
    pub vpc: String,
    /// The AZ IDs of the subnets associated with it.
    pub zones: Vec<String>,
    /// Destination CIDR → NAT gateway (by spec name).
    #[serde(default)]
    pub routes: BTreeMap<String, String>,
}

/// One ECS service.
#[derive(Debug, Clone, Deserialize)]
pub struct EcsSpec {
    /// Its cluster's name.
    pub cluster: String,
    /// Its name.
    pub name: String,
    /// The VPC (by spec name) of its subnets and security group.
    pub vpc: String,
    /// The AZ IDs of its subnets; empty for a bridge-mode service.
    #[serde(default)]
    pub zones: Vec<String>,
    /// `awsvpc` (default) or `bridge`.
    #[serde(default = "awsvpc")]
    pub network_mode: String,
    /// `ECS` (default), `CODE_DEPLOY` or `EXTERNAL`.
    #[serde(default = "ecs_controller")]
    pub controller: String,
    /// `ENABLED` or `DISABLED` (default).
    #[serde(default = "disabled")]
    pub assign_public_ip: String,
    /// Desired tasks.
    #[serde(default)]
    pub desired: i32,
    /// Tags.
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
}

/// One Lambda function.
#[derive(Debug, Clone, Deserialize)]
pub struct LambdaSpec {
    /// Its name.
    pub name: String,
    /// The VPC (by spec name) of its subnets, if it is in one.
    #[serde(default)]
    pub vpc: Option<String>,
    /// The AZ IDs of its subnets.
    #[serde(default)]
    pub zones: Vec<String>,
    /// Publish a version and point an alias `live` at it.
    #[serde(default)]
    pub published_alias: bool,
    /// Tags.
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
}

fn awsvpc() -> String {
    "awsvpc".into()
}
fn ecs_controller() -> String {
    "ECS".into()
}
fn disabled() -> String {
    "DISABLED".into()
}

/// One VPC.
#[derive(Debug, Clone, Deserialize)]
pub struct VpcSpec {
    /// A name for the spec to refer to.
    pub name: String,
    /// Its /16, e.g. `10.10.0.0/16`.
    pub cidr: String,
    /// AZ IDs to give a subnet each.
    pub zones: Vec<String>,
}

/// One Auto Scaling group.
#[derive(Debug, Clone, Deserialize)]
pub struct AsgSpec {
    /// Its name.
    pub name: String,
    /// The VPC (by spec name) its subnets are in.
    pub vpc: String,
    /// The AZ IDs of its subnets, in order.
    pub zones: Vec<String>,
    /// Desired capacity (instances moto launches).
    #[serde(default)]
    pub desired: i32,
    /// Tags.
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
}

/// What was created: subnet IDs by (VPC name, AZ ID), and VPC IDs by name.
#[derive(Debug, Clone, Default)]
pub struct Seeded {
    /// Subnet ID for each (VPC name, AZ ID).
    pub subnets: BTreeMap<(String, String), String>,
    /// VPC ID for each VPC name.
    pub vpcs: BTreeMap<String, String>,
    /// The security group made in each VPC (by VPC name).
    pub security_groups: BTreeMap<String, String>,
    /// NAT gateway ID for each NAT gateway name.
    pub nat_gateways: BTreeMap<String, String>,
    /// Route table ID for each route table name.
    pub route_tables: BTreeMap<String, String>,
    /// VPC endpoint ID for each endpoint name.
    pub vpc_endpoints: BTreeMap<String, String>,
}

impl Seeded {
    /// The subnet of `vpc` in `az_id`.
    pub fn subnet(&self, vpc: &str, az_id: &str) -> String {
        self.subnets
            .get(&(vpc.to_owned(), az_id.to_owned()))
            .unwrap_or_else(|| panic!("no subnet for {vpc} in {az_id}"))
            .clone()
    }
}

/// One VPC `main` (`cidr`) over use1-az1 and use1-az2, and empty Auto Scaling groups with these
/// names in both zones: the smallest estate a real run changes something in.
pub fn groups_in_two_zones(cidr: &str, groups: &[&str]) -> Spec {
    Spec {
        vpcs: vec![VpcSpec {
            name: "main".into(),
            cidr: cidr.into(),
            zones: ["use1-az1", "use1-az2"].iter().map(|z| z.to_string()).collect(),
        }],
        auto_scaling_groups: groups
            .iter()
            .map(|name| AsgSpec {
                name: (*name).into(),
                vpc: "main".into(),
                zones: vec!["use1-az1".into(), "use1-az2".into()],
                desired: 0,
                tags: BTreeMap::new(),
            })
            .collect(),
        ..Spec::default()
    }
}

/// Read a spec from a JSON file.
pub fn read_spec(path: &std::path::Path) -> Spec {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Create everything in the spec.
pub async fn seed(sdk: &SdkConfig, spec: &Spec) -> Seeded {
    let ec2 = aws_sdk_ec2::Client::new(sdk);
    let autoscaling = aws_sdk_autoscaling::Client::new(sdk);
    let mut seeded = Seeded::default();
    for vpc in &spec.vpcs {
        let vpc_id = ec2
            .create_vpc()
            .cidr_block(&vpc.cidr)
            .send()
            .await
            .expect("CreateVpc")
            .vpc()
            .and_then(|v| v.vpc_id())
            .expect("a VPC ID")
            .to_owned();
        let prefix: Vec<&str> = vpc.cidr.split('.').take(2).collect();
        for (i, zone) in vpc.zones.iter().enumerate() {
            // Named as people name them, for the tables that show names (`-o wide`).
            let name = aws_sdk_ec2::types::Tag::builder()
                .key("Name")
                .value(format!("{}-{zone}", vpc.name))
                .build();
            let subnet_id = ec2
                .create_subnet()
                .vpc_id(&vpc_id)
                .cidr_block(format!("{}.{}.{}.0/20", prefix[0], prefix[1], i * 16))
                .availability_zone_id(zone)
                .tag_specifications(
                    aws_sdk_ec2::types::TagSpecification::builder()
                        .resource_type(aws_sdk_ec2::types::ResourceType::Subnet)
                        .tags(name)
                        .build(),
                )
                .send()
                .await
                .expect("CreateSubnet")
                .subnet()
                .and_then(|s| s.subnet_id())
                .expect("a subnet ID")
                .to_owned();
            seeded.subnets.insert((vpc.name.clone(), zone.clone()), subnet_id);
        }
        let group = ec2
            .create_security_group()
            .group_name(format!("{}-app", vpc.name))
            .description("azevac sample")
            .vpc_id(&vpc_id)
            .send()
            .await
            .expect("CreateSecurityGroup")
            .group_id()
            .expect("a group ID")
            .to_owned();
        seeded.security_groups.insert(vpc.name.clone(), group);
        seeded.vpcs.insert(vpc.name.clone(), vpc_id);
    }
    if !spec.auto_scaling_groups.is_empty() {
        let data = aws_sdk_ec2::types::RequestLaunchTemplateData::builder()
            .image_id("ami-12c6146b")
            .instance_type(aws_sdk_ec2::types::InstanceType::T3Micro)
            .build();
        let created = ec2
            .create_launch_template()
            .launch_template_name(LAUNCH_TEMPLATE)
            .launch_template_data(data)
            .send()
            .await;
        // The estate is seeded on a fresh or just-reset server, so the only template of this name is
        // this one: the SDK retried a create whose first attempt landed (a pooled connection the server
        // closed as the answer went out), which moto answers as a duplicate.
        if let Err(e) = created {
            let code = e.as_service_error().and_then(|e| e.meta().code()).map(str::to_owned);
            assert_eq!(
                code.as_deref(),
                Some("InvalidLaunchTemplateName.AlreadyExistsException"),
                "CreateLaunchTemplate: {e:?}"
            );
        }
    }
    for group in &spec.auto_scaling_groups {
        let subnets: Vec<String> = group.zones.iter().map(|z| seeded.subnet(&group.vpc, z)).collect();
        create_group(&autoscaling, group, &subnets).await;
    }
    for nat in &spec.nat_gateways {
        let id = create_nat(&ec2, &nat.name, &seeded.subnet(&nat.vpc, &nat.zone), nat.private).await;
        seeded.nat_gateways.insert(nat.name.clone(), id);
    }
    for table in &spec.route_tables {
        let subnets: Vec<String> = table.zones.iter().map(|z| seeded.subnet(&table.vpc, z)).collect();
        let routes: Vec<(String, String)> = table
            .routes
            .iter()
            .map(|(destination, nat)| (destination.clone(), seeded.nat_gateways[nat].clone()))
            .collect();
        let id = create_route_table(&ec2, &table.name, &seeded.vpcs[&table.vpc], &subnets, &routes).await;
        seeded.route_tables.insert(table.name.clone(), id);
    }
    for endpoint in &spec.vpc_endpoints {
        let id = ec2
            .create_vpc_endpoint()
            .vpc_id(&seeded.vpcs[&endpoint.vpc])
            .service_name(&endpoint.service)
            .vpc_endpoint_type(aws_sdk_ec2::types::VpcEndpointType::Interface)
            .set_subnet_ids(Some(
                endpoint.zones.iter().map(|z| seeded.subnet(&endpoint.vpc, z)).collect(),
            ))
            .tag_specifications(name_tag(aws_sdk_ec2::types::ResourceType::VpcEndpoint, &endpoint.name))
            .send()
            .await
            .expect("CreateVpcEndpoint")
            .vpc_endpoint()
            .and_then(|e| e.vpc_endpoint_id())
            .expect("an endpoint ID")
            .to_owned();
        seeded.vpc_endpoints.insert(endpoint.name.clone(), id);
    }
    seed_ecs(sdk, spec, &seeded).await;
    seed_lambda(sdk, spec, &seeded).await;
    seed_batch(sdk, spec, &seeded).await;
    super::events::seed_rules(sdk, &spec.eventbridge_targets, &seeded).await;
    super::events::seed_schedules(sdk, &spec.schedules, &seeded).await;
    for spec in &spec.alarms {
        alarm(sdk, &spec.name, StateValue::from(spec.state.as_str()), SEEDED).await;
    }
    seeded
}

/// A `Name` tag for a resource being created.
pub fn name_tag(kind: aws_sdk_ec2::types::ResourceType, name: &str) -> aws_sdk_ec2::types::TagSpecification {
    aws_sdk_ec2::types::TagSpecification::builder()
        .resource_type(kind)
        .tags(aws_sdk_ec2::types::Tag::builder().key("Name").value(name).build())
        .build()
}

/// A NAT gateway named `name` in `subnet`: public with a new Elastic IP, or private.
pub async fn create_nat(ec2: &aws_sdk_ec2::Client, name: &str, subnet: &str, private: bool) -> String {
    let mut request = ec2
        .create_nat_gateway()
        .subnet_id(subnet)
        .tag_specifications(name_tag(aws_sdk_ec2::types::ResourceType::Natgateway, name));
    if private {
        request = request.connectivity_type(aws_sdk_ec2::types::ConnectivityType::Private);
    } else {
        let eip = ec2
            .allocate_address()
            .domain(aws_sdk_ec2::types::DomainType::Vpc)
            .send()
            .await
            .expect("AllocateAddress");
        request = request.allocation_id(eip.allocation_id().expect("allocation"));
    }
    request
        .send()
        .await
        .unwrap_or_else(|e| panic!("CreateNatGateway {name}: {e:?}"))
        .nat_gateway()
        .and_then(|n| n.nat_gateway_id())
        .expect("a NAT gateway ID")
        .to_owned()
}

/// A route table named `name` in `vpc_id`, associated with `subnets`, with `routes`
/// (destination → NAT gateway ID; see [`create_routes`]).
pub async fn create_route_table(
    ec2: &aws_sdk_ec2::Client,
    name: &str,
    vpc_id: &str,
    subnets: &[String],
    routes: &[(String, String)],
) -> String {
    let id = ec2
        .create_route_table()
        .vpc_id(vpc_id)
        .tag_specifications(name_tag(aws_sdk_ec2::types::ResourceType::RouteTable, name))
        .send()
        .await
        .expect("CreateRouteTable")
        .route_table()
        .and_then(|t| t.route_table_id())
        .expect("a route table ID")
        .to_owned();
    for subnet in subnets {
        ec2.associate_route_table()
            .route_table_id(&id)
            .subnet_id(subnet)
            .send()
            .await
            .expect("AssociateRouteTable");
    }
    create_routes(ec2, &id, routes).await;
    id
}

/// Route table name → destination → target, for every named table.
pub type Routes = BTreeMap<String, BTreeMap<String, String>>;

/// Every named table's routes through a gateway or NAT gateway (the `local` route left out).
pub async fn routes(ec2: &aws_sdk_ec2::Client) -> Routes {
    let tables: Vec<aws_sdk_ec2::types::RouteTable> = ec2
        .describe_route_tables()
        .into_paginator()
        .items()
        .send()
        .try_collect()
        .await
        .expect("DescribeRouteTables");
    let mut out = Routes::new();
    for table in tables {
        let Some(name) = table
            .tags()
            .iter()
            .find(|t| t.key() == Some("Name"))
            .and_then(|t| t.value())
        else {
            continue;
        };
        let mut routes = BTreeMap::new();
        for route in table.routes() {
            let destination = route
                .destination_cidr_block()
                .or(route.destination_ipv6_cidr_block())
                .or(route.destination_prefix_list_id())
                .unwrap_or("?");
            let target = route.nat_gateway_id().or(route.gateway_id()).unwrap_or("?");
            if target != "local" {
                routes.insert(destination.to_owned(), target.to_owned());
            }
        }
        out.insert(name.to_owned(), routes);
    }
    out
}

/// Routes through NAT gateways: destination (an IPv4 or IPv6 CIDR, or a prefix-list ID) → NAT ID.
pub async fn create_routes(ec2: &aws_sdk_ec2::Client, table: &str, routes: &[(String, String)]) {
    for (destination, nat) in routes {
        let request = ec2.create_route().route_table_id(table).nat_gateway_id(nat);
        let request = if destination.starts_with("pl-") {
            request.destination_prefix_list_id(destination)
        } else if destination.contains(':') {
            request.destination_ipv6_cidr_block(destination)
        } else {
            request.destination_cidr_block(destination)
        };
        request
            .send()
            .await
            .unwrap_or_else(|e| panic!("CreateRoute {destination}: {e:?}"));
    }
}

async fn seed_ecs(sdk: &SdkConfig, spec: &Spec, seeded: &Seeded) {
    use aws_sdk_ecs::types::{
        AssignPublicIp, AwsVpcConfiguration, ContainerDefinition, DeploymentController, DeploymentControllerType,
        NetworkConfiguration, NetworkMode, Tag,
    };
    if spec.ecs_services.is_empty() {
        return;
    }
    let ecs = aws_sdk_ecs::Client::new(sdk);
    for mode in ["awsvpc", "bridge"] {
        ecs.register_task_definition()
            .family(format!("sample-{mode}"))
            .network_mode(NetworkMode::from(mode))
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
    }
    let clusters: std::collections::BTreeSet<&str> = spec.ecs_services.iter().map(|s| s.cluster.as_str()).collect();
    for cluster in clusters {
        ecs.create_cluster()
            .cluster_name(cluster)
            .send()
            .await
            .expect("CreateCluster");
    }
    for service in &spec.ecs_services {
        let mut request = ecs
            .create_service()
            .cluster(&service.cluster)
            .service_name(&service.name)
            .task_definition(format!("sample-{}", service.network_mode))
            .desired_count(service.desired)
            .deployment_controller(
                DeploymentController::builder()
                    .r#type(DeploymentControllerType::from(service.controller.as_str()))
                    .build()
                    .expect("controller"),
            );
        if service.network_mode == "awsvpc" {
            let subnets: Vec<String> = service.zones.iter().map(|z| seeded.subnet(&service.vpc, z)).collect();
            let awsvpc = AwsVpcConfiguration::builder()
                .set_subnets(Some(subnets))
                .security_groups(&seeded.security_groups[&service.vpc])
                .assign_public_ip(AssignPublicIp::from(service.assign_public_ip.as_str()))
                .build()
                .expect("awsvpc");
            request = request
                .launch_type(aws_sdk_ecs::types::LaunchType::Fargate)
                .network_configuration(NetworkConfiguration::builder().awsvpc_configuration(awsvpc).build());
        }
        for (key, value) in &service.tags {
            request = request.tags(Tag::builder().key(key).value(value).build());
        }
        request
            .send()
            .await
            .unwrap_or_else(|e| panic!("CreateService {}: {e:?}", service.name));
    }
}

async fn seed_lambda(sdk: &SdkConfig, spec: &Spec, seeded: &Seeded) {
    if spec.lambda_functions.is_empty() {
        return;
    }
    let trust = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"lambda.amazonaws.com"},"Action":"sts:AssumeRole"}]}"#;
    let role = aws_sdk_iam::Client::new(sdk)
        .create_role()
        .role_name("azevac-sample-lambda")
        .assume_role_policy_document(trust)
        .send()
        .await
        .expect("CreateRole")
        .role()
        .map(|r| r.arn().to_owned())
        .expect("a role ARN");
    let lambda = aws_sdk_lambda::Client::new(sdk);
    // The smallest valid zip archive: an empty end-of-central-directory record.
    let empty_zip = {
        let mut bytes = b"PK\x05\x06".to_vec();
        bytes.resize(22, 0);
        bytes
    };
    for function in &spec.lambda_functions {
        let mut request = lambda
            .create_function()
            .function_name(&function.name)
            .runtime(aws_sdk_lambda::types::Runtime::Python312)
            .role(&role)
            .handler("index.handler")
            .code(
                aws_sdk_lambda::types::FunctionCode::builder()
                    .zip_file(aws_sdk_lambda::primitives::Blob::new(empty_zip.clone()))
                    .build(),
            );
        if let Some(vpc) = &function.vpc {
            let subnets: Vec<String> = function.zones.iter().map(|z| seeded.subnet(vpc, z)).collect();
            request = request.vpc_config(
                aws_sdk_lambda::types::VpcConfig::builder()
                    .set_subnet_ids(Some(subnets))
                    .security_group_ids(&seeded.security_groups[vpc])
                    .build(),
            );
        }
        for (key, value) in &function.tags {
            request = request.tags(key, value);
        }
        match request.send().await {
            Ok(_) => {}
            // The SDK tried again a create whose first attempt landed but was never answered in
            // time (a loaded machine): the function is there, as asked.
            Err(e) if e.as_service_error().is_some_and(|e| e.is_resource_conflict_exception()) => {}
            Err(e) => panic!("CreateFunction {}: {e:?}", function.name),
        }
        if function.published_alias {
            let version = lambda
                .publish_version()
                .function_name(&function.name)
                .send()
                .await
                .expect("PublishVersion")
                .version()
                .unwrap_or("1")
                .to_owned();
            lambda
                .create_alias()
                .function_name(&function.name)
                .name("live")
                .function_version(version)
                .send()
                .await
                .expect("CreateAlias");
        }
    }
}

const BATCH_TRUST: &str = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"batch.amazonaws.com"},"Action":"sts:AssumeRole"}]}"#;

async fn seed_batch(sdk: &SdkConfig, spec: &Spec, seeded: &Seeded) {
    use aws_sdk_batch::types::{CeType, ComputeResource, CrAllocationStrategy, CrType};
    let environments = &spec.batch_compute_environments;
    if environments.is_empty() {
        return;
    }
    let iam = aws_sdk_iam::Client::new(sdk);
    let role = |name: &'static str, path: Option<&'static str>| {
        let iam = iam.clone();
        async move {
            iam.create_role()
                .role_name(name)
                .set_path(path.map(str::to_owned))
                .assume_role_policy_document(BATCH_TRUST)
                .send()
                .await
                .expect("CreateRole")
                .role()
                .map(|r| r.arn().to_owned())
                .expect("a role ARN")
        }
    };
    // Batch's service-linked role, where AWS creates it (moto has no Batch name for CreateServiceLinkedRole).
    let service_role = role("AWSServiceRoleForBatch", Some("/aws-service-role/batch.amazonaws.com/")).await;
    let own_role = match environments.iter().any(|e| e.own_service_role) {
        true => Some(role("azevac-sample-batch-service", None).await),
        false => None,
    };
    let profile = match environments
        .iter()
        .any(|e| matches!(e.compute_type.as_str(), "EC2" | "SPOT"))
    {
        true => iam
            .create_instance_profile()
            .instance_profile_name("azevac-sample-batch")
            .send()
            .await
            .expect("CreateInstanceProfile")
            .instance_profile()
            .map(|p| p.arn().to_owned()),
        false => None,
    };
    let batch = aws_sdk_batch::Client::new(sdk);
    for environment in environments {
        let mut request = batch
            .create_compute_environment()
            .compute_environment_name(&environment.name)
            .r#type(if environment.managed {
                CeType::Managed
            } else {
                CeType::Unmanaged
            })
            .service_role(match environment.own_service_role {
                true => own_role.clone().expect("own role"),
                false => service_role.clone(),
            });
        if environment.managed {
            let kind = CrType::from(environment.compute_type.as_str());
            let ec2 = matches!(kind, CrType::Ec2 | CrType::Spot);
            let mut resources = ComputeResource::builder()
                .r#type(kind)
                .maxv_cpus(16)
                .set_subnets(Some(
                    environment
                        .zones
                        .iter()
                        .map(|z| seeded.subnet(&environment.vpc, z))
                        .collect(),
                ))
                .security_group_ids(&seeded.security_groups[&environment.vpc])
                .set_allocation_strategy(
                    environment
                        .allocation_strategy
                        .as_deref()
                        .map(CrAllocationStrategy::from),
                );
            if ec2 {
                // minvCpus 0: moto launches no instance for it.
                resources = resources
                    .minv_cpus(0)
                    .instance_types("optimal")
                    .set_instance_role(profile.clone());
            }
            request = request.compute_resources(resources.build());
        }
        for (key, value) in &environment.tags {
            request = request.tags(key, value);
        }
        request
            .send()
            .await
            .unwrap_or_else(|e| panic!("CreateComputeEnvironment {}: {e:?}", environment.name));
    }
}

async fn create_group(autoscaling: &aws_sdk_autoscaling::Client, group: &AsgSpec, subnets: &[String]) {
    let template = aws_sdk_autoscaling::types::LaunchTemplateSpecification::builder()
        .launch_template_name(LAUNCH_TEMPLATE)
        .build();
    let mut request = autoscaling
        .create_auto_scaling_group()
        .auto_scaling_group_name(&group.name)
        .launch_template(template)
        .min_size(0)
        .max_size(group.desired.max(1))
        .desired_capacity(group.desired)
        .vpc_zone_identifier(subnets.join(","));
    for (key, value) in &group.tags {
        request = request.tags(
            aws_sdk_autoscaling::types::Tag::builder()
                .key(key)
                .value(value)
                .resource_id(&group.name)
                .resource_type("auto-scaling-group")
                .propagate_at_launch(false)
                .build(),
        );
    }
    request
        .send()
        .await
        .unwrap_or_else(|e| panic!("CreateAutoScalingGroup {}: {e:?}", group.name));
}

/// Another empty Auto Scaling group `name` in the subnets `like` has now (a group made between
/// two runs).
pub async fn add_group_like(sdk: &SdkConfig, like: &str, name: &str) {
    let autoscaling = aws_sdk_autoscaling::Client::new(sdk);
    let subnets = super::live_groups(sdk).await.remove(like).expect("the group to copy");
    let group = AsgSpec {
        name: name.into(),
        vpc: "main".into(),
        zones: Vec::new(),
        desired: 0,
        tags: BTreeMap::new(),
    };
    create_group(&autoscaling, &group, &subnets).await;
}
