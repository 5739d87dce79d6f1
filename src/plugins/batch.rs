//! AWS Batch compute environments: subnets live in `computeResources.subnets` of a managed
//! environment (EC2, Spot, Fargate, Fargate Spot).
//!
//! The change is `UpdateComputeEnvironment` with `computeResources.subnets` alone: a field left out
//! of the update is left as it is. On EC2 and Spot it is an infrastructure update (Batch replaces
//! the instances), which AWS allows only with the `AWSServiceRoleForBatch` service-linked role and an
//! allocation strategy other than `BEST_FIT`; an environment without them is skipped with the
//! reason. The plan line says what the update does to running jobs (the environment's
//! `updatePolicy`, which azevac never changes). Unmanaged environments are listed, never changed:
//! their instances are the operator's. An environment whose update is in progress is waited for
//! (bounded); an `INVALID` one is skipped, since AWS cannot update it before it is fixed. The line
//! also says what else the infrastructure update rolls the environment onto: the version a launch
//! template at `$Latest` or `$Default` resolves to now, and, where nothing names the AMI, the newest
//! AMI Batch supports if `updateToLatestImageVersion` is on.
//! `exposure` and the headroom check count its jobs in the zone: the running tasks of its ECS
//! cluster there.

use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_batch::types::{
    CeStatus, CeType, ComputeEnvironmentDetail, ComputeResource, ComputeResourceUpdate, CrAllocationStrategy, CrType,
};
use serde::{Deserialize, Serialize};

use super::subnets::Subnets;
use super::wait::{self, Poll};
use super::{Place, Plugin, Presence, Resource, Setup, SubnetLimit, SubnetService};
use crate::model::Identity;
use crate::{Error, Result};

/// The `--type` value and journal `resource_type` of Batch compute environments.
pub const TYPE: &str = "batch";

/// How the registry knows this kind: its calls, its IAM actions, its options.
pub const REGISTRATION: super::Registration = super::Registration {
    name: TYPE,
    services: &["batch", "ecs"],
    changes_through: &["batch"],
    iam_actions: &[
        "batch:DescribeComputeEnvironments",
        "batch:UpdateComputeEnvironment",
        "ecs:ListTasks",
        "ecs:DescribeTasks",
    ],
    build: plugin,
    flags: None,
    describe: crate::model::Record::words_as::<crate::model::action::NoAction>,
    cluster: super::no_cluster,
    expiring: None,
};

/// `DescribeComputeEnvironments` pages and reads at most 100 environments.
const PAGE: usize = 100;
/// How long `apply` waits for an update in progress (someone else's) to finish before its own.
const UPDATE_WAIT: Duration = Duration::from_secs(300);
/// How often a wait reads the environment again.
const POLL: Duration = Duration::from_secs(5);

/// The role an infrastructure update needs (as its ARN's path names it).
const SERVICE_LINKED_ROLE: &str = "/aws-service-role/batch.amazonaws.com/";

/// What `apply` needs besides the subnets.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Detail {
    /// `computeResources.type` (`EC2`, `SPOT`, `FARGATE`, `FARGATE_SPOT`).
    compute_type: String,
    /// The environment's `status` when read (`VALID`, `UPDATING`...).
    status: String,
    /// The ECS cluster its jobs run in (as tasks).
    #[serde(default)]
    ecs_cluster: String,
}

/// The Batch compute environments plugin.
#[derive(Debug, Clone)]
pub struct Batch {
    client: aws_sdk_batch::Client,
    ecs: aws_sdk_ecs::Client,
    poll: Duration,
}

/// Registry constructor: Batch applies to every run.
pub fn plugin(setup: &Setup) -> futures::future::BoxFuture<'_, Result<Option<Box<dyn Plugin>>>> {
    Box::pin(async move {
        let service = Batch::new(
            crate::client!(aws_sdk_batch, &setup.sdk),
            crate::client!(aws_sdk_ecs, &setup.sdk),
        );
        Ok(Some(Subnets::plugin(service, &setup.sdk)))
    })
}

impl Batch {
    /// A plugin over these clients (ECS: the tasks its jobs run as).
    pub fn new(client: aws_sdk_batch::Client, ecs: aws_sdk_ecs::Client) -> Self {
        Batch {
            client,
            ecs,
            poll: POLL,
        }
    }

    /// The running tasks (jobs) of an environment's ECS cluster.
    async fn tasks(&self, cluster: &str) -> Result<Vec<aws_sdk_ecs::types::Task>> {
        let arns: Vec<String> = self
            .ecs
            .list_tasks()
            .cluster(cluster)
            .desired_status(aws_sdk_ecs::types::DesiredStatus::Running)
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .map_err(|e| Error::from_sdk("ecs:ListTasks", e))?;
        let mut tasks = Vec::new();
        for chunk in arns.chunks(PAGE) {
            let out = self
                .ecs
                .describe_tasks()
                .cluster(cluster)
                .set_tasks(Some(chunk.to_vec()))
                .send()
                .await
                .map_err(|e| Error::from_sdk("ecs:DescribeTasks", e))?;
            tasks.extend(out.tasks().iter().cloned());
        }
        Ok(tasks)
    }

    /// How often a wait reads again (tests: at once).
    pub fn with_poll(mut self, poll: Duration) -> Self {
        self.poll = poll;
        self
    }

    /// The environments with these names or ARNs (at most [`PAGE`]); those that do not exist are
    /// absent from the answer.
    async fn describe(&self, ids: &[String]) -> Result<Vec<ComputeEnvironmentDetail>> {
        let out = self
            .client
            .describe_compute_environments()
            .set_compute_environments(Some(ids.to_vec()))
            .send()
            .await
            .map_err(|e| Error::from_sdk("batch:DescribeComputeEnvironments", e))?;
        Ok(out.compute_environments().to_vec())
    }

    /// Wait (bounded) until the environment's update in progress has finished (AWS refuses an update
    /// while one runs); `Err` with its status when time ran out. One that vanished is not waited for.
    async fn wait_while_updating(&self, arn: &str, timeout: Duration) -> Result<std::result::Result<(), String>> {
        let ids = [arn.to_owned()];
        // Said once, when there is something to wait for.
        let said = std::sync::atomic::AtomicBool::new(false);
        wait::until(timeout, self.poll, |_| async {
            let found = self.describe(&ids).await?;
            Ok(match found.first().and_then(|e| e.status()) {
                Some(status @ (CeStatus::Updating | CeStatus::Creating)) => {
                    if !said.swap(true, std::sync::atomic::Ordering::Relaxed) {
                        crate::say!(
                            "azevac: waiting for the update in progress on {} to finish",
                            crate::model::text::clean(arn)
                        );
                    }
                    Poll::Pending(status.as_str().to_owned())
                }
                _ => Poll::Reached(()),
            })
        })
        .await
    }
}

#[async_trait]
impl SubnetService for Batch {
    fn resource_type(&self) -> &'static str {
        TYPE
    }

    /// "Fargate compute resources can contain up to 16 subnets"; EC2 and Spot ones have no such
    /// limit: <https://docs.aws.amazon.com/batch/latest/APIReference/API_ComputeResource.html>.
    fn max_subnets(&self, resource: &Resource) -> Option<SubnetLimit> {
        let detail: Detail = resource.detail_as().ok()?;
        detail.compute_type.starts_with("FARGATE").then_some(SubnetLimit {
            most: 16,
            what: "a Fargate compute environment",
        })
    }

    async fn discover(&self) -> Result<Vec<Resource>> {
        let environments: Vec<ComputeEnvironmentDetail> = self
            .client
            .describe_compute_environments()
            .max_results(PAGE as i32)
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .map_err(|e| Error::from_sdk("batch:DescribeComputeEnvironments", e))?;
        Ok(environments.iter().filter_map(to_resource).collect())
    }

    async fn read(&self, ids: &[String]) -> Result<BTreeMap<String, Resource>> {
        let mut found = BTreeMap::new();
        for chunk in ids.chunks(PAGE) {
            for environment in self.describe(chunk).await? {
                if let Some(resource) = to_resource(&environment) {
                    found.insert(resource.id.clone(), resource);
                }
            }
        }
        // Asked by ARN, answered by ARN; anything else is not what was asked for.
        found.retain(|id, _| ids.contains(id));
        Ok(found)
    }

    async fn apply(&self, resource: &Resource, subnets: &[String]) -> Result<()> {
        let detail: Detail = resource.detail_as()?;
        if detail.status == CeStatus::Updating.as_str() || detail.status == CeStatus::Creating.as_str() {
            if let Err(still) = self.wait_while_updating(&resource.id, UPDATE_WAIT).await? {
                return Err(Error::NotSettled {
                    resource: resource.name.clone(),
                    why: format!(
                        "the update in progress did not finish within {}s (still {still}): nothing changed; \
                         re-run once it is VALID",
                        UPDATE_WAIT.as_secs()
                    ),
                });
            }
        }
        // Only the subnets: every field left out of ComputeResourceUpdate stays as it is, the
        // update policy included.
        let update = ComputeResourceUpdate::builder()
            .set_subnets(Some(subnets.to_vec()))
            .build();
        self.client
            .update_compute_environment()
            .compute_environment(&resource.id)
            .compute_resources(update)
            .send()
            .await
            .map_err(|e| Error::from_sdk("batch:UpdateComputeEnvironment", e))?;
        Ok(())
    }

    /// Its jobs in the zone: the running tasks of its ECS cluster there (by the subnet of their
    /// network interface, else by their zone). A Fargate job needs an address in the remaining
    /// subnets (one interface each); an EC2 job runs on an instance Batch launches, whose count
    /// azevac cannot know beforehand (noted).
    async fn presence(&self, resources: &[Resource], place: &Place<'_>) -> Result<BTreeMap<String, Presence>> {
        let mut found = BTreeMap::new();
        for resource in resources {
            let detail: Detail = resource.detail_as()?;
            if detail.ecs_cluster.is_empty() {
                continue;
            }
            let in_zone: Vec<String> = self
                .tasks(&detail.ecs_cluster)
                .await?
                .iter()
                .filter(|t| super::tasks::holds_task(place, t))
                .filter_map(|t| t.task_arn().map(str::to_owned))
                .collect();
            let fargate = detail.compute_type.starts_with("FARGATE");
            let presence = Presence {
                needs: if fargate { in_zone.clone() } else { Vec::new() },
                in_zone,
                units: "jobs",
                note: (!fargate)
                    .then(|| "its jobs move with the instances Batch launches in the remaining subnets".into()),
            };
            found.insert(resource.id.clone(), presence);
        }
        Ok(found)
    }

    /// With `--wait`: until the changed environments have left `UPDATING` (the infrastructure update
    /// that replaces their instances has finished).
    async fn settle(&self, resources: &[Resource], timeout: Duration) -> Result<Vec<(String, String)>> {
        let mut unsettled = Vec::new();
        let deadline = tokio::time::Instant::now() + timeout;
        for resource in resources {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if let Err(still) = self.wait_while_updating(&resource.id, left).await? {
                unsettled.push((
                    resource.id.clone(),
                    format!("still {still} after {}s", timeout.as_secs()),
                ));
            }
        }
        Ok(unsettled)
    }

    async fn probe(&self) -> Vec<super::Check> {
        let environments = self.client.describe_compute_environments().max_results(1).send().await;
        vec![super::Check::answered(
            TYPE,
            "batch:DescribeComputeEnvironments",
            environments,
        )]
    }
}

/// Why azevac cannot change an environment's subnets in place, if it cannot.
fn unsupported(environment: &ComputeEnvironmentDetail) -> Option<String> {
    if environment.r#type() != Some(&CeType::Managed) {
        return Some("unmanaged: azevac cannot change its instances' subnets (move them yourself)".into());
    }
    let Some(resources) = environment.compute_resources() else {
        return Some("managed, but AWS reported no compute resources: nothing to change".into());
    };
    match environment.status() {
        Some(CeStatus::Invalid) => {
            return Some(format!(
                "status INVALID ({}): AWS cannot update it until it is fixed",
                environment.status_reason().unwrap_or("no reason given")
            ))
        }
        Some(CeStatus::Deleting | CeStatus::Deleted) => return Some("being deleted".into()),
        _ => {}
    }
    match resources.r#type() {
        Some(CrType::Fargate | CrType::FargateSpot) => None,
        Some(CrType::Ec2 | CrType::Spot) => {
            infrastructure_update_refused(resources.allocation_strategy(), environment.service_role())
        }
        other => Some(format!(
            "compute resources of type {}: azevac does not change those",
            other.map_or("(none)", |t| t.as_str())
        )),
    }
}

/// Why AWS refuses an infrastructure update (EC2 and Spot: a change of subnets is one) of an
/// environment with this allocation strategy and service role, if it does. No strategy is
/// `BEST_FIT` (the default); no role is the service-linked one (the default).
fn infrastructure_update_refused(strategy: Option<&CrAllocationStrategy>, role: Option<&str>) -> Option<String> {
    if strategy.is_none_or(|s| *s == CrAllocationStrategy::BestFit) {
        return Some(
            "allocation strategy BEST_FIT: AWS refuses in-place infrastructure updates (subnets included); \
             replace it with a BEST_FIT_PROGRESSIVE environment (blue/green) to make it movable"
                .into(),
        );
    }
    match role {
        Some(role) if !role.is_empty() && !role.contains(SERVICE_LINKED_ROLE) => Some(format!(
            "service role {role} is not AWSServiceRoleForBatch: AWS refuses in-place infrastructure updates \
             (subnets included); replace it with an environment that uses the service-linked role (blue/green)"
        )),
        _ => None,
    }
}

/// What the update does to running jobs, in the plan line.
fn jobs_note(environment: &ComputeEnvironmentDetail) -> String {
    let fargate = environment
        .compute_resources()
        .and_then(|r| r.r#type())
        .is_some_and(|t| matches!(t, CrType::Fargate | CrType::FargateSpot));
    if fargate {
        return "new jobs start only in the remaining subnets; running jobs are not moved".into();
    }
    let policy = environment.update_policy();
    let terminate = policy.and_then(|p| p.terminate_jobs_on_update()).unwrap_or(false);
    let minutes = policy.and_then(|p| p.job_execution_timeout_minutes()).unwrap_or(30);
    if terminate {
        "Batch replaces its instances: running jobs are terminated at once (updatePolicy terminateJobsOnUpdate)".into()
    } else {
        format!(
            "Batch replaces its instances: running jobs get up to {minutes} min to finish \
             (updatePolicy jobExecutionTimeoutMinutes)"
        )
    }
}

/// The launch template versions Batch resolves again on every infrastructure update.
const MOVING_VERSIONS: [&str; 2] = ["$Latest", "$Default"];

/// What else an infrastructure update (the change of subnets on EC2 and Spot) rolls the
/// environment onto, in the plan line's words; nothing on Fargate, which has no launch template.
///
/// - A launch template (or an override) at `$Latest` or `$Default` (the default when no version is
///   given) is evaluated again, "even if the launch template isn't specified in the update": the new
///   instances get the version it names now, which need not be the one running (Batch API Reference,
///   LaunchTemplateSpecification,
///   <https://docs.aws.amazon.com/batch/latest/APIReference/API_LaunchTemplateSpecification.html>).
/// - With `updateToLatestImageVersion` the update also moves the instances to the newest AMI Batch
///   supports, unless an AMI is named (`imageId`, `imageIdOverride`, the launch template)
///   (ComputeResourceUpdate,
///   <https://docs.aws.amazon.com/batch/latest/APIReference/API_ComputeResourceUpdate.html>; AWS Batch
///   User Guide, "Perform infrastructure updates",
///   <https://docs.aws.amazon.com/batch/latest/userguide/infrastructure-updates.html>).
///   `DescribeComputeEnvironments` does not say whether it is on, so where nothing names the AMI the
///   line says that it may happen.
fn rollover_notes(resources: &ComputeResource) -> Vec<String> {
    if !matches!(resources.r#type(), Some(CrType::Ec2 | CrType::Spot)) {
        return Vec::new();
    }
    let mut notes = Vec::new();
    let template = resources.launch_template();
    let moving: Vec<String> = template
        .into_iter()
        .map(|t| (t.launch_template_name().or(t.launch_template_id()), t.version()))
        .chain(
            template
                .into_iter()
                .flat_map(|t| t.overrides())
                .map(|o| (o.launch_template_name().or(o.launch_template_id()), o.version())),
        )
        .filter_map(|(name, version)| {
            let version = version.unwrap_or(MOVING_VERSIONS[1]);
            MOVING_VERSIONS
                .contains(&version)
                .then(|| format!("{} ({version})", name.unwrap_or("?")))
        })
        .collect();
    if !moving.is_empty() {
        notes.push(format!(
            "the update re-reads launch template {}: its new instances get the version that resolves to now, which \
             may not be the one running",
            moving.join(", ")
        ));
    }
    // `imageId` is deprecated for `imageIdOverride`, but an environment made with it still names
    // its AMI there.
    #[allow(deprecated)]
    let image_id = resources.image_id();
    let ami_named = image_id.is_some()
        || resources
            .ec2_configuration()
            .iter()
            .any(|c| c.image_id_override().is_some())
        || template.is_some();
    if !ami_named {
        notes.push(
            "if updateToLatestImageVersion is on (DescribeComputeEnvironments does not show it), the update also \
             moves its instances to the newest AMI Batch supports"
                .to_owned(),
        );
    }
    notes
}

fn to_resource(environment: &ComputeEnvironmentDetail) -> Option<Resource> {
    let id = environment.compute_environment_arn()?.to_owned();
    let unsupported = unsupported(environment);
    let mut notes = Vec::new();
    if unsupported.is_none() {
        notes.push(jobs_note(environment));
        notes.extend(environment.compute_resources().map(rollover_notes).unwrap_or_default());
        if environment.status() == Some(&CeStatus::Updating) {
            notes.push("an update is in progress: azevac waits for it to finish first".into());
        }
    }
    let detail = Detail {
        compute_type: environment
            .compute_resources()
            .and_then(|r| r.r#type())
            .map(|t| t.as_str().to_owned())
            .unwrap_or_default(),
        status: environment.status().map(|s| s.as_str().to_owned()).unwrap_or_default(),
        ecs_cluster: environment.ecs_cluster_arn().unwrap_or_default().to_owned(),
    };
    Some(Resource {
        resource_type: TYPE,
        id,
        name: environment.compute_environment_name().unwrap_or_default().to_owned(),
        // An unmanaged environment's instances are the operator's: it has no subnets of its own.
        subnets: environment
            .compute_resources()
            .filter(|_| environment.r#type() == Some(&CeType::Managed))
            .map(|r| r.subnets().to_vec())
            .unwrap_or_default(),
        tags: environment
            .tags()
            .map(|t| t.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default(),
        unsupported,
        notes,
        detail: serde_json::to_value(detail).unwrap_or_default(),
        // The ARN names the environment by name; its `uuid` is the one a re-created one does not share
        // (<https://docs.aws.amazon.com/batch/latest/APIReference/API_ComputeEnvironmentDetail.html>).
        // DescribeComputeEnvironments gives no creation time.
        identity: environment.uuid().and_then(|uuid| Identity::aws(uuid, None)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_batch::operation::describe_compute_environments::DescribeComputeEnvironmentsOutput;
    use aws_sdk_batch::operation::update_compute_environment::UpdateComputeEnvironmentOutput;
    use aws_sdk_batch::types::{ComputeResource, UpdatePolicy};
    use aws_smithy_mocks::{create_mock_http_client, mock, MockResponseInterceptor, Rule, RuleMode};

    /// An ECS client that is never called.
    fn ecs_client() -> aws_sdk_ecs::Client {
        let config = aws_sdk_ecs::Config::builder()
            .behavior_version(aws_sdk_ecs::config::BehaviorVersion::latest())
            .region(aws_sdk_ecs::config::Region::new("us-east-1"))
            .build();
        aws_sdk_ecs::Client::from_conf(config)
    }

    /// A client answered by `rules` (what `mock_client!` builds, without the SDK's `test-util`).
    fn mock_client(rules: &[&Rule]) -> aws_sdk_batch::Client {
        let mut interceptor = MockResponseInterceptor::new().rule_mode(RuleMode::MatchAny);
        for rule in rules {
            interceptor = interceptor.with_rule(rule);
        }
        let config = aws_sdk_batch::Config::builder()
            .behavior_version(aws_sdk_batch::config::BehaviorVersion::latest())
            .region(aws_sdk_batch::config::Region::new("us-east-1"))
            .credentials_provider(aws_sdk_batch::config::Credentials::new("a", "b", None, None, "test"))
            .http_client(create_mock_http_client())
            .interceptor(interceptor)
            .build();
        aws_sdk_batch::Client::from_conf(config)
    }

    const SLR: &str = "arn:aws:iam::123456789012:role/aws-service-role/batch.amazonaws.com/AWSServiceRoleForBatch";

    fn environment(name: &str, kind: CrType, strategy: Option<CrAllocationStrategy>) -> ComputeEnvironmentDetail {
        let resources = ComputeResource::builder()
            .r#type(kind)
            .set_allocation_strategy(strategy)
            .maxv_cpus(16)
            .subnets("subnet-a")
            .subnets("subnet-b")
            .security_group_ids("sg-1")
            .build();
        ComputeEnvironmentDetail::builder()
            .compute_environment_name(name)
            .compute_environment_arn(format!(
                "arn:aws:batch:us-east-1:123456789012:compute-environment/{name}"
            ))
            .ecs_cluster_arn("arn:aws:ecs:us-east-1:123456789012:cluster/x")
            .r#type(CeType::Managed)
            .status(CeStatus::Valid)
            .service_role(SLR)
            .compute_resources(resources)
            .build()
    }

    #[test]
    fn which_environments_azevac_can_move_and_why_not() {
        let ok = unsupported;
        let progressive = environment("p", CrType::Ec2, Some(CrAllocationStrategy::BestFitProgressive));
        assert_eq!(ok(&progressive), None);
        assert_eq!(
            ok(&environment("f", CrType::Fargate, None)),
            None,
            "Fargate takes it directly"
        );
        assert_eq!(ok(&environment("fs", CrType::FargateSpot, None)), None);
        let best_fit = ok(&environment("b", CrType::Ec2, Some(CrAllocationStrategy::BestFit))).expect("skipped");
        assert!(
            best_fit.contains("BEST_FIT") && best_fit.contains("blue/green"),
            "{best_fit}"
        );
        assert!(
            ok(&environment("d", CrType::Spot, None)).is_some_and(|w| w.contains("BEST_FIT")),
            "no strategy is BEST_FIT, the default"
        );
        let mut own_role = progressive.clone();
        own_role.service_role = Some("arn:aws:iam::123456789012:role/AWSBatchServiceRole".into());
        assert!(ok(&own_role).is_some_and(|w| w.contains("not AWSServiceRoleForBatch")));
        let mut no_role = progressive.clone();
        no_role.service_role = None;
        assert_eq!(ok(&no_role), None, "no role given is the service-linked one");
        let mut invalid = progressive.clone();
        invalid.status = Some(CeStatus::Invalid);
        invalid.status_reason = Some("CLIENT_ERROR - bad role".into());
        assert!(ok(&invalid).is_some_and(|w| w.contains("INVALID (CLIENT_ERROR - bad role)")));
        let mut unmanaged = progressive.clone();
        unmanaged.r#type = Some(CeType::Unmanaged);
        assert!(ok(&unmanaged).is_some_and(|w| w.starts_with("unmanaged")));
        let resource = to_resource(&unmanaged).expect("listed");
        assert!(resource.subnets.is_empty(), "its instances are not placed by it");
    }

    /// Issue 50: a Fargate environment takes at most 16 subnets, an EC2 or Spot one has no such
    /// limit.
    #[test]
    fn issue_50_only_fargate_environments_have_a_subnet_limit() {
        let batch = Batch::new(mock_client(&[]), ecs_client());
        for (kind, limit) in [
            (CrType::Fargate, Some(16)),
            (CrType::FargateSpot, Some(16)),
            (CrType::Ec2, None),
            (CrType::Spot, None),
        ] {
            let resource = to_resource(&environment("e", kind.clone(), None)).expect("resource");
            assert_eq!(batch.max_subnets(&resource).map(|l| l.most), limit, "{kind:?}");
        }
    }

    #[test]
    fn the_plan_says_what_the_update_does_to_running_jobs() {
        let mut ec2 = environment("p", CrType::Ec2, Some(CrAllocationStrategy::BestFitProgressive));
        assert!(jobs_note(&ec2).contains("up to 30 min"), "{}", jobs_note(&ec2));
        ec2.update_policy = Some(UpdatePolicy::builder().job_execution_timeout_minutes(90).build());
        assert!(jobs_note(&ec2).contains("up to 90 min"));
        ec2.update_policy = Some(UpdatePolicy::builder().terminate_jobs_on_update(true).build());
        assert!(jobs_note(&ec2).contains("terminated at once"));
        let fargate = environment("f", CrType::Fargate, None);
        assert!(jobs_note(&fargate).contains("not moved"));
        let resource = to_resource(&ec2).expect("resource");
        assert_eq!(resource.subnets, ["subnet-a", "subnet-b"]);
        // Issue 50: its identity is its uuid, when Batch gives one (the emulator does not).
        assert_eq!(resource.identity, None);
        let mut with_uuid = ec2.clone();
        with_uuid.uuid = Some("9f0c1e2d".into());
        let identity = to_resource(&with_uuid).and_then(|r| r.identity).expect("an identity");
        assert_eq!(identity.describe(), "uid 9f0c1e2d");
        assert_eq!(
            resource.notes.len(),
            2,
            "the jobs, and the AMI it may roll onto: {:?}",
            resource.notes
        );
    }

    /// Issue 50: the change of subnets is an infrastructure update, which also rolls the
    /// environment onto what its launch template at `$Latest`/`$Default` names now, and (where no
    /// AMI is named) onto the newest AMI if `updateToLatestImageVersion` is on: the line says so.
    #[test]
    fn issue_50_the_plan_says_what_else_the_infrastructure_update_rolls_onto() {
        use aws_sdk_batch::types::{
            Ec2Configuration, LaunchTemplateSpecification, LaunchTemplateSpecificationOverride,
        };
        let with_template = |template: Option<LaunchTemplateSpecification>, image: Option<&str>| {
            let mut e = environment("p", CrType::Ec2, Some(CrAllocationStrategy::BestFitProgressive));
            let resources = e.compute_resources.as_mut().expect("resources");
            resources.launch_template = template;
            resources.ec2_configuration = image.map(|i| {
                vec![Ec2Configuration::builder()
                    .image_type("ECS_AL2023")
                    .image_id_override(i)
                    .build()]
            });
            to_resource(&e).expect("resource").notes
        };
        let latest = LaunchTemplateSpecification::builder()
            .launch_template_name("web")
            .version("$Latest")
            .overrides(
                LaunchTemplateSpecificationOverride::builder()
                    .launch_template_name("gpu")
                    .build(),
            )
            .build();
        let notes = with_template(Some(latest), None).join(" | ");
        assert!(
            notes.contains("re-reads launch template web ($Latest), gpu ($Default)"),
            "an override without a version is $Default: {notes}"
        );
        assert!(
            !notes.contains("updateToLatestImageVersion"),
            "the template may name the AMI: {notes}"
        );
        let pinned = LaunchTemplateSpecification::builder()
            .launch_template_name("web")
            .version("7")
            .build();
        assert_eq!(
            with_template(Some(pinned), None).len(),
            1,
            "a pinned version: only the jobs note"
        );
        let batch_ami = with_template(None, None).join(" | ");
        assert!(batch_ami.contains("if updateToLatestImageVersion is on"), "{batch_ami}");
        assert_eq!(with_template(None, Some("ami-1")).len(), 1, "an AMI of its own stays");
        let fargate = to_resource(&environment("f", CrType::Fargate, None)).expect("resource");
        assert_eq!(
            fargate.notes.len(),
            1,
            "Fargate has no launch template or AMI: {:?}",
            fargate.notes
        );
    }

    /// Discovery pages; the update sends the subnets and nothing else of the compute resources.
    #[tokio::test]
    async fn discovery_pages_and_the_update_sends_only_the_subnets() {
        let page1 = mock!(aws_sdk_batch::Client::describe_compute_environments)
            .match_requests(|r| r.next_token().is_none())
            .then_output(|| {
                DescribeComputeEnvironmentsOutput::builder()
                    .compute_environments(environment("a", CrType::Fargate, None))
                    .next_token("t2")
                    .build()
            });
        let page2 = mock!(aws_sdk_batch::Client::describe_compute_environments)
            .match_requests(|r| r.next_token() == Some("t2"))
            .then_output(|| {
                DescribeComputeEnvironmentsOutput::builder()
                    .compute_environments(environment(
                        "b",
                        CrType::Ec2,
                        Some(CrAllocationStrategy::BestFitProgressive),
                    ))
                    .build()
            });
        let update = mock!(aws_sdk_batch::Client::update_compute_environment)
            .match_requests(|r| {
                let cr = r.compute_resources().expect("compute resources");
                r.compute_environment().is_some_and(|e| e.ends_with("/b"))
                    && cr.subnets() == ["subnet-b"]
                    && cr.security_group_ids.is_none()
                    && cr.maxv_cpus.is_none()
                    && cr.allocation_strategy.is_none()
                    && r.update_policy().is_none()
                    && r.state().is_none()
                    && r.service_role().is_none()
            })
            .then_output(|| UpdateComputeEnvironmentOutput::builder().build());
        let client = mock_client(&[&page1, &page2, &update]);
        let batch = Batch::new(client, ecs_client());
        let found = batch.discover().await.expect("discover");
        let names: Vec<&str> = found.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        batch.apply(&found[1], &["subnet-b".into()]).await.expect("updated");
        assert_eq!(update.num_calls(), 1);
    }

    /// An environment whose update is in progress is waited for before the change.
    #[tokio::test]
    async fn an_update_in_progress_is_waited_for() {
        let status = |s: CeStatus| {
            let mut e = environment("u", CrType::Fargate, None);
            e.status = Some(s);
            DescribeComputeEnvironmentsOutput::builder()
                .compute_environments(e)
                .build()
        };
        let describe = mock!(aws_sdk_batch::Client::describe_compute_environments)
            .sequence()
            .output(move || status(CeStatus::Updating))
            .output(move || status(CeStatus::Valid))
            .build();
        let update = mock!(aws_sdk_batch::Client::update_compute_environment)
            .then_output(|| UpdateComputeEnvironmentOutput::builder().build());
        let client = mock_client(&[&describe, &update]);
        let mut busy = environment("u", CrType::Fargate, None);
        busy.status = Some(CeStatus::Updating);
        let resource = to_resource(&busy).expect("resource");
        assert!(resource.notes.iter().any(|n| n.contains("in progress")));
        Batch::new(client, ecs_client())
            .with_poll(Duration::from_millis(1))
            .apply(&resource, &["subnet-a".into()])
            .await
            .expect("updated");
        assert_eq!((describe.num_calls(), update.num_calls()), (2, 1));
    }
}
