//! Seeds an estate (VPCs with one /20 subnet per AZ ID, Auto Scaling groups) into an emulator
//! with the real SDK, from a spec that tests build in code or read from fixtures/sample-estate.json.

use std::collections::BTreeMap;

use aws_config::SdkConfig;
use serde::Deserialize;

/// The launch template every seeded group uses (moto accepts any image ID).
const LAUNCH_TEMPLATE: &str = "azevac-sample";

/// What to create.
#[derive(Debug, Clone, Deserialize)]
pub struct Spec {
    /// The VPCs, each with a subnet in each of its zones.
    pub vpcs: Vec<VpcSpec>,
    /// The Auto Scaling groups.
    #[serde(default)]
    pub auto_scaling_groups: Vec<AsgSpec>,
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
            let subnet_id = ec2
                .create_subnet()
                .vpc_id(&vpc_id)
                .cidr_block(format!("{}.{}.{}.0/20", prefix[0], prefix[1], i * 16))
                .availability_zone_id(zone)
                .send()
                .await
                .expect("CreateSubnet")
                .subnet()
                .and_then(|s| s.subnet_id())
                .expect("a subnet ID")
                .to_owned();
            seeded.subnets.insert((vpc.name.clone(), zone.clone()), subnet_id);
        }
        seeded.vpcs.insert(vpc.name.clone(), vpc_id);
    }
    if !spec.auto_scaling_groups.is_empty() {
        let data = aws_sdk_ec2::types::RequestLaunchTemplateData::builder()
            .image_id("ami-12c6146b")
            .instance_type(aws_sdk_ec2::types::InstanceType::T3Micro)
            .build();
        ec2.create_launch_template()
            .launch_template_name(LAUNCH_TEMPLATE)
            .launch_template_data(data)
            .send()
            .await
            .expect("CreateLaunchTemplate");
    }
    for group in &spec.auto_scaling_groups {
        let subnets: Vec<String> = group.zones.iter().map(|z| seeded.subnet(&group.vpc, z)).collect();
        create_group(&autoscaling, group, &subnets).await;
    }
    seeded
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
