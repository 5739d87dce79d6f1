//! EventBridge rule targets and EventBridge Scheduler schedules that run ECS tasks (issue 34): how
//! the estate seeds them with the Rust SDK (scripts/seed-estate.py does the same with boto3), and
//! their live state as tests compare it.

use std::collections::BTreeMap;

use aws_config::SdkConfig;
use serde::Deserialize;

use super::estate::Seeded;

/// The ECS cluster every seeded target runs its tasks in (neither service checks it exists).
pub const CLUSTER: &str = "arn:aws:ecs:us-east-1:123456789012:cluster/prod";
/// The task definition every seeded target runs.
pub const TASK_DEFINITION: &str = "arn:aws:ecs:us-east-1:123456789012:task-definition/report:3";
/// The role every seeded target is run with.
pub const ROLE: &str = "arn:aws:iam::123456789012:role/azevac-sample-events";
/// The dead-letter queue of every seeded target.
pub const DLQ: &str = "arn:aws:sqs:us-east-1:123456789012:azevac-sample-dlq";

/// One EventBridge rule target that runs ECS tasks (its rule and bus created as needed).
#[derive(Debug, Clone, Deserialize)]
pub struct EventTargetSpec {
    /// Its event bus (`default` if not named; another is created).
    #[serde(default = "default_name")]
    pub bus: String,
    /// Its rule (a schedule rule, created as needed).
    pub rule: String,
    /// The target's Id.
    pub id: String,
    /// The VPC (by spec name) of its subnets and security group.
    pub vpc: String,
    /// The AZ IDs of its subnets; empty: the target runs no ECS task (a Lambda function).
    #[serde(default)]
    pub zones: Vec<String>,
}

/// One EventBridge Scheduler schedule with an ECS RunTask target.
#[derive(Debug, Clone, Deserialize)]
pub struct ScheduleSpec {
    /// Its schedule group (`default` if not named; another is created).
    #[serde(default = "default_name")]
    pub group: String,
    /// Its name.
    pub name: String,
    /// The VPC (by spec name) of its subnets and security group.
    pub vpc: String,
    /// The AZ IDs of its subnets; empty: the schedule invokes a Lambda function.
    #[serde(default)]
    pub zones: Vec<String>,
}

fn default_name() -> String {
    "default".into()
}

/// Create the rules and their targets: every field a target can carry for ECS set, so that a
/// change that loses one shows.
pub async fn seed_rules(sdk: &SdkConfig, targets: &[EventTargetSpec], seeded: &Seeded) {
    use aws_sdk_eventbridge::types::{
        AssignPublicIp, AwsVpcConfiguration, DeadLetterConfig, EcsParameters, InputTransformer, LaunchType,
        NetworkConfiguration, RetryPolicy, Target,
    };
    if targets.is_empty() {
        return;
    }
    let events = aws_sdk_eventbridge::Client::new(sdk);
    let mut made = std::collections::BTreeSet::new();
    for spec in targets {
        if spec.bus != "default" && made.insert(format!("bus {}", spec.bus)) {
            events
                .create_event_bus()
                .name(&spec.bus)
                .send()
                .await
                .expect("CreateEventBus");
        }
        if made.insert(format!("rule {}/{}", spec.bus, spec.rule)) {
            // A schedule on the default bus, a pattern on another (only the default one takes schedules).
            let rule = events.put_rule().name(&spec.rule).event_bus_name(&spec.bus);
            let rule = if spec.bus == "default" {
                rule.schedule_expression("rate(1 hour)")
            } else {
                rule.event_pattern(r#"{"source":["azevac.sample"]}"#)
            };
            rule.description("azevac sample").send().await.expect("PutRule");
        }
        let target = if spec.zones.is_empty() {
            Target::builder()
                .id(&spec.id)
                .arn("arn:aws:lambda:us-east-1:123456789012:function:azevac-sample")
                .input(r#"{"from":"azevac"}"#)
        } else {
            let awsvpc = AwsVpcConfiguration::builder()
                .set_subnets(Some(spec.zones.iter().map(|z| seeded.subnet(&spec.vpc, z)).collect()))
                .security_groups(&seeded.security_groups[&spec.vpc])
                .assign_public_ip(AssignPublicIp::Disabled)
                .build()
                .expect("awsvpc");
            Target::builder()
                .id(&spec.id)
                .arn(CLUSTER)
                .role_arn(ROLE)
                .input_transformer(
                    InputTransformer::builder()
                        .input_paths_map("time", "$.time")
                        .input_template(r#"{"at":<time>}"#)
                        .build()
                        .expect("transformer"),
                )
                .retry_policy(
                    RetryPolicy::builder()
                        .maximum_retry_attempts(3)
                        .maximum_event_age_in_seconds(600)
                        .build(),
                )
                .dead_letter_config(DeadLetterConfig::builder().arn(DLQ).build())
                .ecs_parameters(
                    EcsParameters::builder()
                        .task_definition_arn(TASK_DEFINITION)
                        .task_count(2)
                        .launch_type(LaunchType::Fargate)
                        .platform_version("1.4.0")
                        .group("reports")
                        .network_configuration(NetworkConfiguration::builder().awsvpc_configuration(awsvpc).build())
                        .build()
                        .expect("ecs parameters"),
                )
        };
        let out = events
            .put_targets()
            .rule(&spec.rule)
            .event_bus_name(&spec.bus)
            .targets(target.build().expect("target"))
            .send()
            .await
            .expect("PutTargets");
        assert_eq!(out.failed_entry_count(), 0, "PutTargets {}", spec.id);
    }
}

/// Create the schedules: every optional field set, so that an update that resets one shows.
pub async fn seed_schedules(sdk: &SdkConfig, schedules: &[ScheduleSpec], seeded: &Seeded) {
    use aws_sdk_scheduler::types::{
        ActionAfterCompletion, AssignPublicIp, AwsVpcConfiguration, DeadLetterConfig, EcsParameters,
        FlexibleTimeWindow, FlexibleTimeWindowMode, LaunchType, NetworkConfiguration, RetryPolicy, ScheduleState,
        Target,
    };
    if schedules.is_empty() {
        return;
    }
    let scheduler = aws_sdk_scheduler::Client::new(sdk);
    let mut groups = std::collections::BTreeSet::new();
    for spec in schedules {
        if spec.group != "default" && groups.insert(spec.group.clone()) {
            scheduler
                .create_schedule_group()
                .name(&spec.group)
                .send()
                .await
                .expect("CreateScheduleGroup");
        }
        let target = if spec.zones.is_empty() {
            Target::builder()
                .arn("arn:aws:lambda:us-east-1:123456789012:function:azevac-sample")
                .role_arn(ROLE)
        } else {
            let awsvpc = AwsVpcConfiguration::builder()
                .set_subnets(Some(spec.zones.iter().map(|z| seeded.subnet(&spec.vpc, z)).collect()))
                .security_groups(&seeded.security_groups[&spec.vpc])
                .assign_public_ip(AssignPublicIp::Disabled)
                .build()
                .expect("awsvpc");
            Target::builder()
                .arn(CLUSTER)
                .role_arn(ROLE)
                .input(r#"{"from":"azevac"}"#)
                .retry_policy(
                    RetryPolicy::builder()
                        .maximum_retry_attempts(3)
                        .maximum_event_age_in_seconds(600)
                        .build(),
                )
                .dead_letter_config(DeadLetterConfig::builder().arn(DLQ).build())
                .ecs_parameters(
                    EcsParameters::builder()
                        .task_definition_arn(TASK_DEFINITION)
                        .task_count(2)
                        .launch_type(LaunchType::Fargate)
                        .platform_version("1.4.0")
                        .group("reports")
                        .network_configuration(NetworkConfiguration::builder().awsvpc_configuration(awsvpc).build())
                        .build()
                        .expect("ecs parameters"),
                )
        };
        scheduler
            .create_schedule()
            .name(&spec.name)
            .group_name(&spec.group)
            .schedule_expression("rate(1 hour)")
            .schedule_expression_timezone("Europe/Paris")
            .description("azevac sample")
            .state(ScheduleState::Disabled)
            .kms_key_arn("arn:aws:kms:us-east-1:123456789012:key/azevac-sample")
            .end_date(aws_sdk_scheduler::primitives::DateTime::from_secs(4_102_444_800))
            .action_after_completion(ActionAfterCompletion::Delete)
            .flexible_time_window(
                FlexibleTimeWindow::builder()
                    .mode(FlexibleTimeWindowMode::Flexible)
                    .maximum_window_in_minutes(15)
                    .build()
                    .expect("window"),
            )
            .target(target.build().expect("target"))
            .send()
            .await
            .unwrap_or_else(|e| panic!("CreateSchedule {}: {e:?}", spec.name));
    }
}

/// One target's or schedule's live state: its subnets, its security groups, and everything else
/// about it (with neither), as text.
pub type Placed = (Vec<String>, Vec<String>, String);

/// Every rule target that runs ECS tasks, by `[bus/]rule/target` (the default bus unnamed).
pub async fn live_rule_targets(sdk: &SdkConfig) -> BTreeMap<String, Placed> {
    let events = aws_sdk_eventbridge::Client::new(sdk);
    let mut out = BTreeMap::new();
    let buses = events.list_event_buses().send().await.expect("ListEventBuses");
    for bus in buses.event_buses().iter().filter_map(|b| b.name()) {
        let rules = events.list_rules().event_bus_name(bus).send().await.expect("ListRules");
        for rule in rules.rules().iter().filter_map(|r| r.name()) {
            let targets = events
                .list_targets_by_rule()
                .event_bus_name(bus)
                .rule(rule)
                .send()
                .await
                .expect("ListTargetsByRule");
            for target in targets.targets() {
                let mut rest = target.clone();
                let Some(awsvpc) = rest
                    .ecs_parameters
                    .as_mut()
                    .and_then(|e| e.network_configuration.as_mut())
                    .and_then(|n| n.awsvpc_configuration.as_mut())
                else {
                    continue;
                };
                let subnets = std::mem::take(&mut awsvpc.subnets);
                let groups = awsvpc.security_groups.take().unwrap_or_default();
                let name = if bus == "default" {
                    format!("{rule}/{}", target.id())
                } else {
                    format!("{bus}/{rule}/{}", target.id())
                };
                out.insert(name, (subnets, groups, format!("{rest:?}")));
            }
        }
    }
    out
}

/// Every schedule with an ECS target, by `group/name`.
pub async fn live_schedules(sdk: &SdkConfig) -> BTreeMap<String, Placed> {
    let scheduler = aws_sdk_scheduler::Client::new(sdk);
    let mut out = BTreeMap::new();
    let groups = scheduler
        .list_schedule_groups()
        .send()
        .await
        .expect("ListScheduleGroups");
    for group in groups.schedule_groups().iter().filter_map(|g| g.name()) {
        let listed = scheduler
            .list_schedules()
            .group_name(group)
            .send()
            .await
            .expect("ListSchedules");
        for name in listed.schedules().iter().filter_map(|s| s.name()) {
            let got = scheduler
                .get_schedule()
                .group_name(group)
                .name(name)
                .send()
                .await
                .expect("GetSchedule");
            let mut target = got.target.clone();
            let Some(awsvpc) = target
                .as_mut()
                .and_then(|t| t.ecs_parameters.as_mut())
                .and_then(|e| e.network_configuration.as_mut())
                .and_then(|n| n.awsvpc_configuration.as_mut())
            else {
                continue;
            };
            let subnets = std::mem::take(&mut awsvpc.subnets);
            let groups = awsvpc.security_groups.take().unwrap_or_default();
            // Everything UpdateSchedule takes besides the subnets (not the service's own dates).
            let rest = format!(
                "{:?}",
                (
                    got.schedule_expression(),
                    got.schedule_expression_timezone(),
                    got.description(),
                    got.state(),
                    got.kms_key_arn(),
                    got.start_date(),
                    got.end_date(),
                    got.flexible_time_window(),
                    got.action_after_completion(),
                    target,
                )
            );
            out.insert(format!("{group}/{name}"), (subnets, groups, rest));
        }
    }
    out
}

/// An operator's change to a rule target's subnets, the service's way: the whole target put again.
pub async fn change_rule_target(
    sdk: &SdkConfig,
    bus: &str,
    rule: &str,
    id: &str,
    change: impl FnOnce(&[String]) -> Vec<String>,
) {
    let events = aws_sdk_eventbridge::Client::new(sdk);
    let listed = events
        .list_targets_by_rule()
        .event_bus_name(bus)
        .rule(rule)
        .send()
        .await
        .expect("ListTargetsByRule");
    let mut target = listed
        .targets()
        .iter()
        .find(|t| t.id() == id)
        .unwrap_or_else(|| panic!("no target {id} on {bus}/{rule}"))
        .clone();
    let awsvpc = target
        .ecs_parameters
        .as_mut()
        .and_then(|e| e.network_configuration.as_mut())
        .and_then(|n| n.awsvpc_configuration.as_mut())
        .expect("an awsvpc target");
    awsvpc.subnets = change(&awsvpc.subnets);
    let out = events
        .put_targets()
        .event_bus_name(bus)
        .rule(rule)
        .targets(target)
        .send()
        .await
        .expect("PutTargets");
    assert_eq!(out.failed_entry_count(), 0);
}

/// An operator's change to a schedule's subnets, the service's way: every field sent back.
pub async fn change_schedule(sdk: &SdkConfig, group: &str, name: &str, change: impl FnOnce(&[String]) -> Vec<String>) {
    let scheduler = aws_sdk_scheduler::Client::new(sdk);
    let got = scheduler
        .get_schedule()
        .group_name(group)
        .name(name)
        .send()
        .await
        .expect("GetSchedule");
    let mut target = got.target.clone().expect("a target");
    let awsvpc = target
        .ecs_parameters
        .as_mut()
        .and_then(|e| e.network_configuration.as_mut())
        .and_then(|n| n.awsvpc_configuration.as_mut())
        .expect("an awsvpc target");
    awsvpc.subnets = change(&awsvpc.subnets);
    scheduler
        .update_schedule()
        .set_name(got.name.clone())
        .set_group_name(got.group_name.clone())
        .set_schedule_expression(got.schedule_expression.clone())
        .set_start_date(got.start_date)
        .set_end_date(got.end_date)
        .set_description(got.description.clone())
        .set_schedule_expression_timezone(got.schedule_expression_timezone.clone())
        .set_state(got.state.clone())
        .set_kms_key_arn(got.kms_key_arn.clone())
        .target(target)
        .set_flexible_time_window(got.flexible_time_window.clone())
        .set_action_after_completion(got.action_after_completion.clone())
        .send()
        .await
        .expect("UpdateSchedule");
}
