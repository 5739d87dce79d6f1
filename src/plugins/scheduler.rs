//! EventBridge Scheduler schedules with an ECS RunTask target: subnets live in the schedule's
//! `Target.EcsParameters.NetworkConfiguration.AwsvpcConfiguration.Subnets`.
//!
//! A schedule places a task only when it fires; every firing after the evacuation would start
//! tasks in the zone again. `UpdateSchedule` is no patch: every optional field left out of it is
//! reset to its default (a description dropped, a flexible window closed, a disabled schedule
//! enabled, a retry policy or dead-letter queue lost). So the schedule is read whole (`GetSchedule`)
//! right before the update, and every field is sent back as read, only the subnets changed
//! ([`update_from`]). Schedules of every schedule group are looked at. Schedules with a universal
//! target (`aws-sdk:ecs:runTask`, whose network configuration is free-form input) are not listed.

use std::collections::BTreeMap;

use async_trait::async_trait;
use aws_sdk_scheduler::operation::get_schedule::GetScheduleOutput;
use aws_sdk_scheduler::operation::update_schedule::builders::UpdateScheduleFluentBuilder;
use aws_sdk_scheduler::types::Target;
use futures::{StreamExt, TryStreamExt};
use serde::{Deserialize, Serialize};

use super::subnets::Subnets;
use super::{Place, Plugin, Presence, Resource, Setup, SubnetLimit, SubnetService};
use crate::model::{timestamp, Identity};
use crate::{Error, Result};

/// The `--type` value and journal `resource_type` of EventBridge Scheduler schedules.
pub const TYPE: &str = "scheduler";

/// How the registry knows this kind: its calls, its IAM actions, its options.
pub const REGISTRATION: super::Registration = super::Registration {
    name: TYPE,
    services: &["scheduler"],
    changes_through: &["scheduler"],
    iam_actions: &[
        "scheduler:ListScheduleGroups",
        "scheduler:ListSchedules",
        "scheduler:GetSchedule",
        "scheduler:UpdateSchedule",
        // UpdateSchedule checks that the caller may pass the schedule's execution role.
        "iam:PassRole",
    ],
    build: plugin,
    flags: None,
    describe: crate::model::Record::words_as::<crate::model::action::NoAction>,
    cluster: super::no_cluster,
    expiring: None,
};

/// `ListSchedules` and `ListScheduleGroups` page at most 100.
const LIST_PAGE: i32 = 100;
/// Schedules read at once (`GetSchedule` has no batch form).
const READ_CONCURRENCY: usize = 8;

const FIRES_NOTE: &str =
    "places ECS tasks only when the schedule fires: tasks it started earlier run on where they are";

/// Where the schedule lives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Detail {
    group: String,
    name: String,
}

/// The EventBridge Scheduler plugin.
#[derive(Debug, Clone)]
pub struct Scheduler {
    client: aws_sdk_scheduler::Client,
}

/// Registry constructor: Scheduler applies to every run.
pub fn plugin(setup: &Setup) -> futures::future::BoxFuture<'_, Result<Option<Box<dyn Plugin>>>> {
    Box::pin(async move {
        let service = Scheduler::new(crate::client!(aws_sdk_scheduler, &setup.sdk));
        Ok(Some(Subnets::plugin(service, &setup.sdk)))
    })
}

/// `arn:aws:scheduler:R:A:schedule/GROUP/NAME` → (group, name); neither holds a `/`.
fn parse_arn(arn: &str) -> Option<Detail> {
    let path = arn.split_once(":schedule/")?.1;
    let (group, name) = path.split_once('/')?;
    if group.is_empty() || name.is_empty() || name.contains('/') {
        return None;
    }
    Some(Detail {
        group: group.to_owned(),
        name: name.to_owned(),
    })
}

/// Whether a target ARN is an ECS cluster (a templated RunTask target).
fn runs_ecs_tasks(target_arn: &str) -> bool {
    target_arn.starts_with("arn:") && target_arn.contains(":ecs:") && target_arn.contains(":cluster/")
}

/// The target's awsvpc subnets, if it runs ECS tasks in awsvpc mode.
fn subnets_of(target: &Target) -> Option<&[String]> {
    let awsvpc = target
        .ecs_parameters()?
        .network_configuration()?
        .awsvpc_configuration()?;
    Some(awsvpc.subnets())
}

/// The target as read with its subnets set to `subnets`, every other field kept.
fn with_subnets(target: &Target, subnets: &[String]) -> Option<Target> {
    let mut changed = target.clone();
    let awsvpc = changed
        .ecs_parameters
        .as_mut()?
        .network_configuration
        .as_mut()?
        .awsvpc_configuration
        .as_mut()?;
    awsvpc.subnets = subnets.to_vec();
    Some(changed)
}

/// The update that puts the schedule back exactly as `read`, with only the target's subnets set to
/// `subnets`: every field of `GetSchedule`'s answer that `UpdateSchedule` takes is sent (a field
/// left out would be reset to its default). The unit test
/// `every_field_of_get_schedule_is_sent_back` fails when the SDK gains a field this leaves out.
fn update_from(
    request: UpdateScheduleFluentBuilder,
    read: &GetScheduleOutput,
    subnets: &[String],
) -> Option<UpdateScheduleFluentBuilder> {
    let target = with_subnets(read.target()?, subnets)?;
    Some(
        request
            .set_name(read.name.clone())
            .set_group_name(read.group_name.clone())
            .set_schedule_expression(read.schedule_expression.clone())
            .set_start_date(read.start_date)
            .set_end_date(read.end_date)
            .set_description(read.description.clone())
            .set_schedule_expression_timezone(read.schedule_expression_timezone.clone())
            .set_state(read.state.clone())
            .set_kms_key_arn(read.kms_key_arn.clone())
            .target(target)
            .set_flexible_time_window(read.flexible_time_window.clone())
            .set_action_after_completion(read.action_after_completion.clone()),
    )
}

/// A schedule as a resource (`None`: its target places no task in subnets).
fn to_resource(schedule: &GetScheduleOutput) -> Option<Resource> {
    let subnets = subnets_of(schedule.target()?)?;
    let detail = Detail {
        group: schedule.group_name().unwrap_or("default").to_owned(),
        name: schedule.name().unwrap_or_default().to_owned(),
    };
    Some(Resource {
        resource_type: TYPE,
        id: schedule.arn().unwrap_or_default().to_owned(),
        name: format!("{}/{}", detail.group, detail.name),
        subnets: subnets.to_vec(),
        // Schedules carry no tags (their groups do): a --tag filter leaves them out.
        tags: BTreeMap::new(),
        unsupported: None,
        notes: vec![FIRES_NOTE.to_owned()],
        detail: serde_json::to_value(detail).unwrap_or_default(),
        // The ARN names the schedule by group and name; `CreationDate`, "the time at which the
        // schedule was created", tells a re-created one apart
        // (<https://docs.aws.amazon.com/scheduler/latest/APIReference/API_GetSchedule.html>).
        identity: Identity::created_at(schedule.creation_date().and_then(timestamp)),
    })
}

impl Scheduler {
    /// A plugin over this client.
    pub fn new(client: aws_sdk_scheduler::Client) -> Self {
        Scheduler { client }
    }

    /// The whole schedule; `None` when it (or its group) no longer exists.
    async fn get(&self, group: &str, name: &str) -> Result<Option<GetScheduleOutput>> {
        match self.client.get_schedule().group_name(group).name(name).send().await {
            Ok(out) => Ok(Some(out)),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|e| e.is_resource_not_found_exception()) =>
            {
                Ok(None)
            }
            Err(e) => Err(Error::from_sdk("scheduler:GetSchedule", e)),
        }
    }

    /// Schedules read whole, several at a time; those gone meanwhile are left out. By group and
    /// name: the listing's order (newest first) would make every plan's order a new one.
    async fn get_all(&self, schedules: &[Detail]) -> Result<Vec<Resource>> {
        let reads: Vec<_> = schedules.iter().map(|d| self.get(&d.group, &d.name)).collect();
        let got: Vec<Option<GetScheduleOutput>> = futures::stream::iter(reads)
            .buffer_unordered(READ_CONCURRENCY)
            .try_collect()
            .await?;
        let mut found: Vec<Resource> = got.iter().flatten().filter_map(to_resource).collect();
        found.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(found)
    }
}

#[async_trait]
impl SubnetService for Scheduler {
    fn resource_type(&self) -> &'static str {
        TYPE
    }

    /// A schedule's ECS `AwsVpcConfiguration` takes at most 16 subnets:
    /// <https://docs.aws.amazon.com/scheduler/latest/APIReference/API_AwsVpcConfiguration.html>.
    fn max_subnets(&self, _resource: &Resource) -> Option<SubnetLimit> {
        Some(SubnetLimit {
            most: 16,
            what: "an EventBridge Scheduler ECS target",
        })
    }

    async fn discover(&self) -> Result<Vec<Resource>> {
        let groups: Vec<aws_sdk_scheduler::types::ScheduleGroupSummary> = self
            .client
            .list_schedule_groups()
            .max_results(LIST_PAGE)
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .map_err(|e| Error::from_sdk("scheduler:ListScheduleGroups", e))?;
        let mut candidates = Vec::new();
        for group in groups.iter().filter_map(|g| g.name()) {
            let schedules: Vec<aws_sdk_scheduler::types::ScheduleSummary> = self
                .client
                .list_schedules()
                .group_name(group)
                .max_results(LIST_PAGE)
                .into_paginator()
                .items()
                .send()
                .try_collect()
                .await
                .map_err(|e| Error::from_sdk("scheduler:ListSchedules", e))?;
            // The listing names each target's ARN: only those of an ECS cluster are read whole.
            candidates.extend(
                schedules
                    .iter()
                    .filter(|s| s.target().is_some_and(|t| runs_ecs_tasks(t.arn())))
                    .filter_map(|s| {
                        Some(Detail {
                            group: s.group_name().unwrap_or(group).to_owned(),
                            name: s.name()?.to_owned(),
                        })
                    }),
            );
        }
        self.get_all(&candidates).await
    }

    async fn read(&self, ids: &[String]) -> Result<BTreeMap<String, Resource>> {
        let schedules = ids
            .iter()
            .map(|id| {
                parse_arn(id)
                    .ok_or_else(|| Error::BadInput(format!("{} is not a schedule ARN", crate::model::text::clean(id))))
            })
            .collect::<Result<Vec<Detail>>>()?;
        Ok(self
            .get_all(&schedules)
            .await?
            .into_iter()
            .map(|r| (r.id.clone(), r))
            .collect())
    }

    /// Read whole right before the update and sent back whole, only the subnets changed; a
    /// schedule whose subnets moved since the line was planned from them is left alone.
    async fn apply(&self, resource: &Resource, subnets: &[String]) -> Result<()> {
        let detail: Detail = resource.detail_as()?;
        let gone = || Error::NotFound {
            operation: "scheduler:GetSchedule",
            resource: resource.name.clone(),
            source: "the schedule no longer exists, or no longer runs ECS tasks in subnets".into(),
        };
        let read = self.get(&detail.group, &detail.name).await?.ok_or_else(gone)?;
        let now = read.target().and_then(subnets_of);
        if now != Some(resource.subnets.as_slice()) {
            return Err(Error::ChangedSincePlan {
                resource: resource.name.clone(),
                source: format!(
                    "its subnets are now [{}], the change was computed from [{}]",
                    now.unwrap_or_default().join(", "),
                    resource.subnets.join(", ")
                )
                .into(),
            });
        }
        let update = update_from(self.client.update_schedule(), &read, subnets).ok_or_else(gone)?;
        update
            .send()
            .await
            .map_err(|e| Error::from_sdk("scheduler:UpdateSchedule", e))?;
        Ok(())
    }

    /// Nothing of it runs in the zone between firings, and moving it takes no address now: the
    /// headroom check sees a demand of none (its tasks take addresses only when the schedule fires).
    async fn presence(&self, resources: &[Resource], _place: &Place<'_>) -> Result<BTreeMap<String, Presence>> {
        Ok(resources
            .iter()
            .map(|r| {
                let presence = Presence {
                    units: "tasks",
                    ..Presence::default()
                };
                (r.id.clone(), presence)
            })
            .collect())
    }

    async fn probe(&self) -> Vec<super::Check> {
        let groups = self.client.list_schedule_groups().max_results(1).send().await;
        vec![super::Check::answered(TYPE, "scheduler:ListScheduleGroups", groups)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_scheduler::primitives::DateTime;
    use aws_sdk_scheduler::types::{
        ActionAfterCompletion, AssignPublicIp, AwsVpcConfiguration, DeadLetterConfig, EcsParameters,
        FlexibleTimeWindow, FlexibleTimeWindowMode, LaunchType, NetworkConfiguration, RetryPolicy, ScheduleState,
    };
    use aws_smithy_mocks::{mock, mock_client, RuleMode};
    use proptest::prelude::*;

    const ARN: &str = "arn:aws:scheduler:us-east-1:123456789012:schedule/reports/nightly";

    fn target(subnets: &[&str]) -> Target {
        let awsvpc = AwsVpcConfiguration::builder()
            .set_subnets(Some(subnets.iter().map(|s| s.to_string()).collect()))
            .security_groups("sg-1")
            .assign_public_ip(AssignPublicIp::Disabled)
            .build()
            .expect("awsvpc");
        Target::builder()
            .arn("arn:aws:ecs:us-east-1:123456789012:cluster/prod")
            .role_arn("arn:aws:iam::123456789012:role/scheduler-ecs")
            .input(r#"{"report": "daily"}"#)
            .retry_policy(
                RetryPolicy::builder()
                    .maximum_retry_attempts(3)
                    .maximum_event_age_in_seconds(600)
                    .build(),
            )
            .dead_letter_config(DeadLetterConfig::builder().arn("arn:aws:sqs:us-east-1:1:dlq").build())
            .ecs_parameters(
                EcsParameters::builder()
                    .task_definition_arn("arn:aws:ecs:us-east-1:1:task-definition/report:3")
                    .task_count(2)
                    .launch_type(LaunchType::Fargate)
                    .platform_version("1.4.0")
                    .group("reports")
                    .enable_execute_command(true)
                    .network_configuration(NetworkConfiguration::builder().awsvpc_configuration(awsvpc).build())
                    .build()
                    .expect("ecs"),
            )
            .build()
            .expect("target")
    }

    /// A schedule with every field of `GetSchedule`'s answer set.
    fn schedule(subnets: &[&str]) -> GetScheduleOutput {
        GetScheduleOutput::builder()
            .arn(ARN)
            .group_name("reports")
            .name("nightly")
            .schedule_expression("cron(0 2 * * ? *)")
            .start_date(DateTime::from_secs(1_900_000_000))
            .end_date(DateTime::from_secs(2_000_000_000))
            .description("the nightly report")
            .schedule_expression_timezone("Europe/Paris")
            .state(ScheduleState::Disabled)
            .creation_date(DateTime::from_secs(1_700_000_000))
            .last_modification_date(DateTime::from_secs(1_800_000_000))
            .kms_key_arn("arn:aws:kms:us-east-1:1:key/k")
            .target(target(subnets))
            .flexible_time_window(
                FlexibleTimeWindow::builder()
                    .mode(FlexibleTimeWindowMode::Flexible)
                    .maximum_window_in_minutes(15)
                    .build()
                    .expect("window"),
            )
            .action_after_completion(ActionAfterCompletion::Delete)
            .build()
    }

    /// The top-level fields of a value's pretty Debug form, each with its value's text.
    fn fields(debug: &str) -> BTreeMap<String, String> {
        let mut found: BTreeMap<String, String> = BTreeMap::new();
        let mut current: Option<String> = None;
        // The first line opens the value and the last closes it.
        for line in debug.lines().skip(1).filter(|l| *l != "}") {
            let top = line.strip_prefix("    ").filter(|rest| !rest.starts_with(' '));
            match top.and_then(|rest| rest.split_once(": ")) {
                Some((name, value)) => {
                    found.insert(name.to_owned(), value.to_owned());
                    current = Some(name.to_owned());
                }
                None => {
                    if let Some(entry) = current.as_ref().and_then(|c| found.get_mut(c)) {
                        entry.push('\n');
                        entry.push_str(line);
                    }
                }
            }
        }
        found
    }

    /// Every field `GetSchedule` answers with goes back in the update with the value read, except
    /// those only the service sets (ARN, dates of creation and change) and the subnets. The
    /// fields are those of the SDK's own types (their Debug form), so a field the SDK gains fails
    /// here until it is set in [`schedule`] and sent back by [`update_from`].
    #[test]
    fn every_field_of_get_schedule_is_sent_back() {
        const SET_BY_THE_SERVICE: [&str; 3] = ["arn", "creation_date", "last_modification_date"];
        let read = schedule(&["subnet-a", "subnet-zone", "subnet-b"]);
        let read_fields = fields(&format!("{read:#?}"));
        let unset: Vec<&String> = read_fields
            .iter()
            .filter(|(name, value)| !name.starts_with('_') && value.as_str() == "None,")
            .map(|(name, _)| name)
            .collect();
        assert!(unset.is_empty(), "set these in the test's schedule too: {unset:?}");

        let client = aws_sdk_scheduler::Client::from_conf(
            aws_sdk_scheduler::Config::builder()
                .behavior_version(aws_sdk_scheduler::config::BehaviorVersion::latest())
                .build(),
        );
        let kept = ["subnet-a".to_string(), "subnet-b".to_string()];
        let request = update_from(client.update_schedule(), &read, &kept).expect("an update");
        let sent = request.as_input().clone().build().expect("input");
        let sent_fields = fields(&format!("{sent:#?}"));
        let mut expected = read.clone();
        expected.target = with_subnets(read.target().expect("target"), &kept);
        let expected_fields = fields(&format!("{expected:#?}"));
        for (name, value) in &expected_fields {
            if name.starts_with('_') || SET_BY_THE_SERVICE.contains(&name.as_str()) {
                continue;
            }
            assert_eq!(sent_fields.get(name), Some(value), "UpdateSchedule's {name}");
        }
        assert_eq!(subnets_of(sent.target().expect("target")), Some(&kept[..]));
    }

    #[test]
    fn a_schedule_arn_names_its_group_and_name() {
        assert_eq!(
            parse_arn(ARN),
            Some(Detail {
                group: "reports".into(),
                name: "nightly".into()
            })
        );
        assert_eq!(parse_arn("arn:aws:scheduler:us-east-1:1:schedule/only"), None);
        assert_eq!(parse_arn("arn:aws:scheduler:us-east-1:1:schedule-group/g"), None);
        assert!(runs_ecs_tasks("arn:aws:ecs:us-east-1:1:cluster/prod"));
        assert!(!runs_ecs_tasks("arn:aws:scheduler:::aws-sdk:ecs:runTask"));
        assert!(!runs_ecs_tasks("arn:aws:lambda:us-east-1:1:function:f"));
    }

    proptest! {
        /// Any group and name the service allows make an ARN that splits back.
        #[test]
        fn every_schedule_arn_splits_back(group in "[0-9a-zA-Z.\\-_]{1,64}", name in "[0-9a-zA-Z.\\-_]{1,64}") {
            let arn = format!("arn:aws:scheduler:us-east-1:1:schedule/{group}/{name}");
            prop_assert_eq!(parse_arn(&arn), Some(Detail { group, name }));
        }
    }

    #[test]
    fn only_ecs_targets_with_subnets_are_resources() {
        let placed = to_resource(&schedule(&["subnet-a"])).expect("a resource");
        assert_eq!((placed.id.as_str(), placed.name.as_str()), (ARN, "reports/nightly"));
        let mut lambda = schedule(&["subnet-a"]);
        lambda.target = Some(
            Target::builder()
                .arn("arn:aws:lambda:us-east-1:1:function:f")
                .role_arn("arn:aws:iam::1:role/r")
                .build()
                .expect("target"),
        );
        assert!(to_resource(&lambda).is_none());
    }

    /// Against the service: the update is made from the schedule read right before it; one
    /// changed since the line was planned is left alone.
    #[tokio::test]
    async fn the_update_is_made_from_a_fresh_read_and_a_change_since_is_left_alone() {
        use aws_sdk_scheduler::operation::update_schedule::UpdateScheduleOutput;
        let got = mock!(aws_sdk_scheduler::Client::get_schedule).then_output(|| schedule(&["subnet-a", "subnet-zone"]));
        let update = mock!(aws_sdk_scheduler::Client::update_schedule)
            .match_requests(|r| {
                r.description() == Some("the nightly report")
                    && r.state() == Some(&ScheduleState::Disabled)
                    && r.action_after_completion() == Some(&ActionAfterCompletion::Delete)
                    && r.target().and_then(subnets_of) == Some(&["subnet-a".to_string()][..])
            })
            .then_output(|| UpdateScheduleOutput::builder().schedule_arn(ARN).build().expect("out"));
        let client = mock_client!(aws_sdk_scheduler, RuleMode::MatchAny, [&got, &update]);
        let scheduler = Scheduler::new(client);
        let planned = to_resource(&schedule(&["subnet-a", "subnet-zone"])).expect("resource");
        scheduler.apply(&planned, &["subnet-a".into()]).await.expect("updated");
        assert_eq!(update.num_calls(), 1);

        let stale = to_resource(&schedule(&["subnet-b", "subnet-zone"])).expect("resource");
        let err = scheduler
            .apply(&stale, &["subnet-b".into()])
            .await
            .expect_err("changed since");
        assert!(matches!(err, Error::ChangedSincePlan { .. }), "{err:?}");
        assert_eq!(update.num_calls(), 1);
    }
}
