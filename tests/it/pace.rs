//! Paced Auto Scaling evacuation (issue 8): AZRebalance suspended, the zone's instances terminated
//! N at a time with capacity kept, and on recovery only what azevac suspended resumed. Against moto
//! server through the counting proxy, which shows the order of the calls.

use crate::common;

use std::collections::BTreeMap;

use common::estate::{self, AsgSpec, Spec, VpcSpec};
use common::proxy::{Faults, Proxy};
use common::{attr_list, attr_s, azevac_at, journal_items, live_groups, Moto, ZONE};

/// The zone's name in moto's us-east-1.
const ZONE_NAME: &str = "us-east-1c";

/// A group's instances as (zone, lifecycle state), and its suspended processes.
async fn group_state(sdk: &aws_config::SdkConfig, name: &str) -> (Vec<(String, String)>, Vec<String>) {
    let out = aws_sdk_autoscaling::Client::new(sdk)
        .describe_auto_scaling_groups()
        .auto_scaling_group_names(name)
        .send()
        .await
        .expect("DescribeAutoScalingGroups");
    let group = &out.auto_scaling_groups()[0];
    let instances = group
        .instances()
        .iter()
        .map(|i| {
            (
                i.availability_zone().unwrap_or_default().to_owned(),
                i.lifecycle_state().map(|s| s.as_str().to_owned()).unwrap_or_default(),
            )
        })
        .collect();
    let suspended = group
        .suspended_processes()
        .iter()
        .filter_map(|p| p.process_name().map(str::to_owned))
        .collect();
    (instances, suspended)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_zone_is_paced_out_and_only_our_suspension_is_resumed() {
    let moto = Moto::start();
    let proxy = Proxy::start(&moto.endpoint);
    let sdk = common::sdk(&moto).await;
    let group = |name: &str, desired: i32, zones: &[&str]| AsgSpec {
        name: name.into(),
        vpc: "main".into(),
        zones: zones.iter().map(|z| z.to_string()).collect(),
        desired,
        tags: BTreeMap::new(),
    };
    // moto starts every instance in a group's first subnet: here, the zone being evacuated.
    let spec = Spec {
        vpcs: vec![VpcSpec {
            name: "main".into(),
            cidr: "10.70.0.0/16".into(),
            zones: vec!["use1-az1".into(), "use1-az2".into(), "use1-az4".into()],
        }],
        auto_scaling_groups: vec![
            group("paced", 3, &["use1-az2", "use1-az1", "use1-az4"]),
            group("held", 2, &["use1-az2", "use1-az4"]),
        ],
        ..Spec::default()
    };
    estate::seed(&sdk, &spec).await;
    let autoscaling = aws_sdk_autoscaling::Client::new(&sdk);
    // Someone suspended AZRebalance on `held` already: azevac must not resume it later.
    autoscaling
        .suspend_processes()
        .auto_scaling_group_name("held")
        .scaling_processes("AZRebalance")
        .send()
        .await
        .expect("SuspendProcesses");
    let original = live_groups(&sdk).await;
    let (before, _) = group_state(&sdk, "paced").await;
    assert!(
        before.iter().all(|(az, _)| az == ZONE_NAME) && before.len() == 3,
        "{before:?}"
    );

    let plan = azevac_at(
        &proxy.endpoint,
        &["evacuate", "--az-id", ZONE, "--type", "asg", "--pace", "1", "--dry-run"],
        &[],
    )
    .expect_code(0);
    assert!(
        plan.stdout
            .contains("-1 subnet, 2 left; suspend:AZRebalance, terminate:3 in the zone, 1 at a time"),
        "{}",
        plan.stdout
    );

    proxy.set(Faults::default());
    azevac_at(
        &proxy.endpoint,
        &[
            "evacuate",
            "--az-id",
            ZONE,
            "--type",
            "asg",
            "--pace",
            "1",
            "--concurrency",
            "1",
            "--yes",
        ],
        &[],
    )
    .expect_code(0);
    let calls = proxy.calls();
    // One group at a time (--concurrency 1): paced's calls follow its SuspendProcesses.
    let suspend = calls
        .iter()
        .position(|c| c == "autoscaling:SuspendProcesses")
        .expect("suspended");
    let after: Vec<&str> = calls[suspend + 1..].iter().map(String::as_str).collect();
    let update = after.iter().position(|c| *c == "autoscaling:UpdateAutoScalingGroup");
    let terminate = after
        .iter()
        .position(|c| *c == "autoscaling:TerminateInstanceInAutoScalingGroup");
    assert!(
        update.is_some() && update < terminate,
        "suspend, then subnets, then instances: {calls:?}"
    );
    let terminations = calls
        .iter()
        .filter(|c| *c == "autoscaling:TerminateInstanceInAutoScalingGroup")
        .count();
    assert_eq!(terminations, 5, "every instance in the zone, one at a time: {calls:?}");
    assert_eq!(
        calls.iter().filter(|c| *c == "autoscaling:SuspendProcesses").count(),
        1,
        "not on held"
    );
    for (name, desired) in [("paced", 3), ("held", 2)] {
        let (instances, suspended) = group_state(&sdk, name).await;
        let serving: Vec<_> = instances.iter().filter(|(_, s)| s == "InService").collect();
        assert_eq!(serving.len(), desired, "{name}: capacity kept: {instances:?}");
        assert!(
            serving.iter().all(|(az, _)| az != ZONE_NAME),
            "{name}: out of the zone: {instances:?}"
        );
        assert_eq!(suspended, ["AZRebalance"], "{name}");
    }
    let actions: BTreeMap<String, Vec<String>> = journal_items(&sdk)
        .await
        .iter()
        .map(|r| (attr_s(r, "resource_name"), attr_list(r, "actions")))
        .collect();
    assert_eq!(
        actions["paced"],
        [
            r#"{"suspend":{"process":"AZRebalance"}}"#,
            r#"{"terminate":{"in_zone":3,"batch":1}}"#
        ]
    );
    assert_eq!(actions["held"], [r#"{"terminate":{"in_zone":2,"batch":1}}"#]);

    let plan = azevac_at(&proxy.endpoint, &["recover", "--dry-run"], &[]).expect_code(0);
    assert!(plan.stdout.contains("resume:AZRebalance"), "{}", plan.stdout);
    azevac_at(&proxy.endpoint, &["recover", "--yes"], &[]).expect_code(0);
    assert_eq!(live_groups(&sdk).await, original);
    assert!(
        group_state(&sdk, "paced").await.1.is_empty(),
        "azevac's suspension resumed"
    );
    assert_eq!(
        group_state(&sdk, "held").await.1,
        ["AZRebalance"],
        "someone else's left alone"
    );
    assert!(journal_items(&sdk).await.is_empty());
}
