//! The `asg` kind's pure checks, its journal actions old and new, and pacing against mocks.

use super::waits::capacity_in_place;
use super::*;
use crate::model::action::Action as _;

fn group(desired: u64, zones: &[&str], members: &[(&str, &str)]) -> Resource {
    let members: Vec<Member> = members
        .iter()
        .enumerate()
        .map(|(n, (az, state))| Member {
            id: format!("i-{n}"),
            az: az.to_string(),
            state: state.to_string(),
        })
        .collect();
    Resource {
        detail: serde_json::json!({ "instances": members, "zones": zones, "desired": desired }),
        ..Resource::default()
    }
}

#[test]
fn capacity_is_in_place_when_every_zone_serves() {
    let zones = ["us-east-1b", "us-east-1c"];
    let ok = group(2, &zones, &[("us-east-1b", "InService"), ("us-east-1c", "InService")]);
    assert_eq!(capacity_in_place(&ok), Ok(()));
    let short = group(2, &zones, &[("us-east-1b", "InService"), ("us-east-1c", "Pending")]);
    assert_eq!(capacity_in_place(&short), Err("1 of 2 instances InService".into()));
    let lopsided = group(2, &zones, &[("us-east-1b", "InService"), ("us-east-1b", "InService")]);
    assert_eq!(
        capacity_in_place(&lopsided),
        Err("no instance InService in us-east-1c yet".into())
    );
    let stray = group(
        1,
        &["us-east-1b"],
        &[("us-east-1b", "InService"), ("us-east-1c", "InService")],
    );
    assert!(capacity_in_place(&stray)
        .err()
        .unwrap_or_default()
        .contains("still in us-east-1c"));
    // Fewer instances than zones: one zone may stay empty.
    let small = group(1, &zones, &[("us-east-1b", "InService")]);
    assert_eq!(capacity_in_place(&small), Ok(()));
}

#[test]
fn a_group_at_max_size_moves_out_a_margin_at_a_time() {
    let detail = |desired, max| GroupDetail {
        desired,
        max,
        ..GroupDetail::default()
    };
    assert_eq!(at_max_size(&detail(4, 8), 4), None);
    let note = at_max_size(&detail(4, 4), 2).unwrap_or_default();
    assert!(note.contains("room for 1 replacement(s)"), "{note}");
    assert_eq!(at_max_size(&detail(20, 20), 2), None, "10% of 20 is 2");
}

#[test]
fn name_comes_from_the_arn() {
    let arn = "arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:0a1b:autoScalingGroupName/web/blue";
    assert_eq!(name_from_arn(arn).as_deref(), Some("web/blue"));
    assert_eq!(name_from_arn("web"), None);
}

#[test]
fn subnets_come_from_vpc_zone_identifier() {
    let group = AutoScalingGroup::builder()
        .auto_scaling_group_name("web")
        .auto_scaling_group_arn("arn:web")
        .vpc_zone_identifier("subnet-a, subnet-b,,subnet-c")
        .build();
    assert_eq!(to_resource(group).subnets, ["subnet-a", "subnet-b", "subnet-c"]);
}

/// Issue 13: a group whose reads still show a terminated instance InService (Auto Scaling is
/// eventually consistent) must not have it terminated again, nor the next batch terminated
/// at once: one instance goes, then the run waits for its replacement and times out.
#[tokio::test]
async fn issue_13_pacing_terminates_each_instance_once_and_waits() {
    use aws_sdk_autoscaling::operation::describe_auto_scaling_groups::DescribeAutoScalingGroupsOutput;
    use aws_sdk_autoscaling::operation::terminate_instance_in_auto_scaling_group::TerminateInstanceInAutoScalingGroupOutput;
    use aws_sdk_autoscaling::types::{Instance, LifecycleState};
    use aws_smithy_mocks::{mock, mock_client, RuleMode};
    let instance = |id: &str| {
        Instance::builder()
            .instance_id(id)
            .availability_zone("us-east-1c")
            .lifecycle_state(LifecycleState::InService)
            .health_status("Healthy")
            .protected_from_scale_in(false)
            .build()
    };
    let stale = mock!(aws_sdk_autoscaling::Client::describe_auto_scaling_groups)
        .sequence()
        .output(move || {
            let group = AutoScalingGroup::builder()
                .auto_scaling_group_name("web")
                .desired_capacity(2)
                .instances(instance("i-a"))
                .instances(instance("i-b"))
                .build();
            DescribeAutoScalingGroupsOutput::builder()
                .auto_scaling_groups(group)
                .build()
        })
        .repeatedly()
        .build();
    let terminate = mock!(aws_sdk_autoscaling::Client::terminate_instance_in_auto_scaling_group)
        .sequence()
        .output(|| TerminateInstanceInAutoScalingGroupOutput::builder().build())
        .repeatedly()
        .build();
    let client = mock_client!(aws_sdk_autoscaling, RuleMode::MatchAny, [&stale, &terminate]);
    let asg = AutoScaling {
        client,
        sdk: aws_config::SdkConfig::builder().build(),
        force: false,
        options: super::flags::Options::default(),
    };
    let pace = Pace {
        batch: 1,
        az_name: "us-east-1c".into(),
        suspend: false,
        timeout_secs: 1,
        alarms: Vec::new(),
        alarm_prefixes: Vec::new(),
    };
    // Bounded, so that the old behaviour (terminating for ever) fails instead of hanging.
    let err = tokio::time::timeout(Duration::from_secs(60), asg.pace_out("web", &pace))
        .await
        .expect("pacing ends at its deadline")
        .expect_err("the replacement never comes");
    assert!(matches!(err, Error::NotSettled { .. }), "{err}");
    assert_eq!(terminate.num_calls(), 1, "one batch of one, terminated once");
}

#[test]
fn a_managed_node_groups_group_is_not_changed() {
    let group = AutoScalingGroup::builder()
        .auto_scaling_group_name("eks-general-1")
        .auto_scaling_group_arn("arn:eks-general-1")
        .vpc_zone_identifier("subnet-a,subnet-b")
        .tags(
            aws_sdk_autoscaling::types::TagDescription::builder()
                .key(NODEGROUP_TAG)
                .value("general")
                .build(),
        )
        .build();
    let why = to_resource(group).unsupported.unwrap_or_default();
    assert!(
        why.contains("managed node group general") && why.contains("--zonal-shift"),
        "{why}"
    );
}

/// Issue 32: both strings a paced evacuation journalled before format 2 read as their typed
/// actions, and describe as the plan has always shown them.
#[test]
fn issue_32_old_action_strings_read_as_typed_actions() {
    for (old, typed) in [
        (
            "suspend:AZRebalance",
            Action::Suspend {
                process: "AZRebalance".into(),
            },
        ),
        (
            "terminate:3 in the zone, 1 at a time",
            Action::Terminate { in_zone: 3, batch: 1 },
        ),
    ] {
        assert_eq!(Action::legacy(old), Some(typed.clone()), "{old}");
        assert_eq!(typed.describe(), old);
    }
    for not_ours in [
        "suspend:",
        "terminate:x in the zone, 1 at a time",
        "resume:AZRebalance",
        "",
    ] {
        assert_eq!(Action::legacy(not_ours), None, "{not_ours}");
    }
    assert_eq!(
        crate::model::action::encode(&[Action::Terminate { in_zone: 3, batch: 1 }]),
        [r#"{"terminate":{"in_zone":3,"batch":1}}"#]
    );
}
