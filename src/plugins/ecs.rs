//! ECS services: subnets live in `networkConfiguration.awsvpcConfiguration.subnets`.
//!
//! Only services in `awsvpc` network mode have subnets; bridge/host services follow their container
//! instances, and services deployed by CodeDeploy or an external controller cannot have their network
//! configuration changed by `UpdateService`. Those are listed as skipped with the reason, and so is a
//! service being deleted (`DRAINING`), which `UpdateService` refuses; a deleted one (`INACTIVE`)
//! reads as gone. A service tagged `azevac:skip`, or in a cluster tagged so (the watcher's own,
//! fixtures/watcher-service.*), is skipped with the tag as the reason, in evacuations and
//! recoveries alike.

use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_ecs::client::Waiters;
use aws_sdk_ecs::types::{
    AssignPublicIp, AwsVpcConfiguration, ClusterField, DeploymentControllerType, NetworkConfiguration, Service,
    ServiceField,
};
use futures::{StreamExt, TryStreamExt};
use serde::{Deserialize, Serialize};

use super::subnets::Subnets;
use super::{Place, Plugin, Presence, Resource, Setup, SubnetLimit, SubnetService};
use crate::model::{timestamp, Identity};
use crate::{Error, Result};

/// The `--type` value and journal `resource_type` of ECS services.
pub const TYPE: &str = "ecs";

/// How the registry knows this kind: its calls, its IAM actions, its options.
pub const REGISTRATION: super::Registration = super::Registration {
    name: TYPE,
    services: &["ecs"],
    changes_through: &["ecs"],
    iam_actions: &[
        "ecs:ListClusters",
        "ecs:DescribeClusters",
        "ecs:ListServices",
        "ecs:DescribeServices",
        "ecs:ListTasks",
        "ecs:DescribeTasks",
        "ecs:UpdateService",
    ],
    build: plugin,
    flags: Some(&flags::FLAGS),
    describe: crate::model::Record::words_as::<crate::model::action::NoAction>,
    cluster: cluster_named,
    expiring: None,
};

/// `DescribeServices` takes at most 10 services per call on AWS (the emulator accepts more).
const DESCRIBE_BATCH: usize = 10;
/// `ListServices` pages at most 100 ARNs.
const LIST_PAGE: i32 = 100;
/// `DescribeTasks` takes at most 100 tasks per call.
const TASKS_BATCH: usize = 100;
/// Reads in flight at once (describes of 10 services, a service's task listing).
const READ_CONCURRENCY: usize = 8;

const REPLACEMENT_NOTE: &str =
    "ECS starts a new deployment: every task of the service is replaced, also those in healthy zones";

/// The status of a service whose deletion has finished (its tasks stopped): as good as gone.
const INACTIVE: &str = "INACTIVE";
/// The status of a service being deleted while its tasks stop.
const DRAINING: &str = "DRAINING";

/// What `apply` needs besides the subnets, so that nothing else in the network configuration is lost.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Detail {
    cluster: String,
    security_groups: Vec<String>,
    assign_public_ip: Option<String>,
}

/// The ECS services plugin.
#[derive(Debug, Clone)]
pub struct Ecs {
    client: aws_sdk_ecs::Client,
    clusters: Vec<String>,
}

/// Registry constructor: ECS applies to every run.
pub fn plugin(setup: &Setup) -> futures::future::BoxFuture<'_, Result<Option<Box<dyn Plugin>>>> {
    Box::pin(async move {
        let service = Ecs::new(
            crate::client!(aws_sdk_ecs, &setup.sdk),
            setup.request.options_as::<flags::Options>()?.ecs_clusters,
        );
        Ok(Some(Subnets::plugin(service, &setup.sdk)))
    })
}

impl Ecs {
    /// A plugin over this client, looking only in `clusters` (names or ARNs; every cluster if empty).
    pub fn new(client: aws_sdk_ecs::Client, clusters: Vec<String>) -> Self {
        Ecs { client, clusters }
    }

    async fn clusters(&self) -> Result<Vec<String>> {
        if !self.clusters.is_empty() {
            return Ok(self.clusters.clone());
        }
        self.client
            .list_clusters()
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .map_err(|e| Error::from_sdk("ecs:ListClusters", e))
    }

    /// Describe services of one cluster, 10 per call, several calls at a time; deleted
    /// (`INACTIVE`) services are left out, as gone.
    async fn describe(&self, cluster: &str, services: &[String]) -> Result<Vec<Resource>> {
        if services.is_empty() {
            return Ok(Vec::new());
        }
        let skipped = self.cluster_skipped(cluster).await?;
        // Collected first: a lazy map inside the stream trips async-trait's Send check.
        let calls: Vec<_> = services
            .chunks(DESCRIBE_BATCH)
            .map(|chunk| self.describe_chunk(cluster, chunk, skipped.as_deref()))
            .collect();
        let found: Vec<Vec<Resource>> = futures::stream::iter(calls)
            .buffered(READ_CONCURRENCY)
            .try_collect()
            .await?;
        Ok(found.into_iter().flatten().collect())
    }

    /// Why every service of `cluster` is left alone, if the cluster is tagged [`SKIP_TAG`]
    /// (`DescribeClusters` with `include: TAGS`: "the metadata tags associated with the cluster are
    /// included", <https://docs.aws.amazon.com/AmazonECS/latest/APIReference/API_DescribeClusters.html>).
    /// A cluster that cannot be read is an error: a tag unread must never read as no tag.
    ///
    /// [`SKIP_TAG`]: crate::model::plan::SKIP_TAG
    async fn cluster_skipped(&self, cluster: &str) -> Result<Option<String>> {
        let out = self
            .client
            .describe_clusters()
            .clusters(cluster)
            .include(ClusterField::Tags)
            .send()
            .await
            .map_err(|e| Error::from_sdk("ecs:DescribeClusters", e))?;
        // A cluster that does not exist (MISSING) has no services to skip: they read as gone.
        refuse_unread("ecs:DescribeClusters", out.failures())?;
        Ok(out.clusters().iter().find_map(|c| {
            let tags = super::tags::fold(c.tags().iter().map(|t| (t.key(), t.value())));
            let why = crate::model::plan::opted_out(&tags)?;
            Some(format!("cluster {} {why}", c.cluster_name().unwrap_or(cluster)))
        }))
    }

    async fn describe_chunk(&self, cluster: &str, chunk: &[String], skipped: Option<&str>) -> Result<Vec<Resource>> {
        let out = self
            .client
            .describe_services()
            .cluster(cluster)
            .set_services(Some(chunk.to_vec()))
            .include(ServiceField::Tags)
            .send()
            .await
            .map_err(|e| Error::from_sdk("ecs:DescribeServices", e))?;
        // ECS answers per service: MISSING means the service does not exist (left out, so it
        // reads as deleted); any other failure means it could not be read, which must never
        // look like a deletion (with --forget-missing that would drop its record).
        refuse_unread("ecs:DescribeServices", out.failures())?;
        Ok(out
            .services()
            .iter()
            .filter(|s| s.status() != Some(INACTIVE))
            .map(|s| {
                let mut resource = to_resource(cluster, s);
                // Its cluster's tag, unless it is being deleted (which says more).
                if let (Some(why), None) = (skipped, being_deleted(s.status())) {
                    resource.unsupported = Some(why.to_owned());
                }
                resource
            })
            .collect())
    }
}

#[async_trait]
impl SubnetService for Ecs {
    fn resource_type(&self) -> &'static str {
        TYPE
    }

    /// "There's a limit of 16 subnets that can be specified" in a service's `awsvpcConfiguration`:
    /// <https://docs.aws.amazon.com/AmazonECS/latest/APIReference/API_AwsVpcConfiguration.html>.
    fn max_subnets(&self, _resource: &Resource) -> Option<SubnetLimit> {
        Some(SubnetLimit {
            most: 16,
            what: "an ECS service",
        })
    }

    async fn discover(&self) -> Result<Vec<Resource>> {
        let mut resources = Vec::new();
        for cluster in self.clusters().await? {
            let arns: Vec<String> = self
                .client
                .list_services()
                .cluster(&cluster)
                .max_results(LIST_PAGE)
                .into_paginator()
                .items()
                .send()
                .try_collect()
                .await
                .map_err(|e| Error::from_sdk("ecs:ListServices", e))?;
            resources.extend(self.describe(&cluster, &arns).await?);
        }
        Ok(resources)
    }

    async fn read(&self, ids: &[String]) -> Result<BTreeMap<String, Resource>> {
        let mut by_cluster: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut without_cluster = false;
        for arn in ids {
            match cluster_of(arn) {
                Some(cluster) => by_cluster.entry(cluster).or_default().push(arn.clone()),
                None => without_cluster = true,
            }
        }
        let mut found = Vec::new();
        for (cluster, arns) in by_cluster {
            found.extend(self.describe(&cluster, &arns).await?);
        }
        // Old-format ARNs (service/NAME) do not say their cluster: look everywhere.
        if without_cluster {
            found.extend(self.discover().await?);
        }
        let wanted: std::collections::BTreeSet<&String> = ids.iter().collect();
        Ok(found
            .into_iter()
            .filter(|r| wanted.contains(&r.id))
            .map(|r| (r.id.clone(), r))
            .collect())
    }

    async fn apply(&self, resource: &Resource, subnets: &[String]) -> Result<()> {
        let detail: Detail = resource.detail_as()?;
        let awsvpc = AwsVpcConfiguration::builder()
            .set_subnets(Some(subnets.to_vec()))
            .set_security_groups(Some(detail.security_groups))
            .set_assign_public_ip(detail.assign_public_ip.as_deref().map(AssignPublicIp::from))
            .build()
            .map_err(|e| Error::Aws {
                operation: "ecs:UpdateService (building the request)",
                source: Box::new(e),
            })?;
        self.client
            .update_service()
            .cluster(&detail.cluster)
            .service(&resource.id)
            .network_configuration(NetworkConfiguration::builder().awsvpc_configuration(awsvpc).build())
            .send()
            .await
            .map_err(|e| Error::from_sdk("ecs:UpdateService", e))?;
        Ok(())
    }

    /// The service's running tasks in the zone (`ListTasks` / `DescribeTasks`): in the zone by the
    /// subnet of their network interface, else by their `availabilityZone`. Each needs an address in
    /// the remaining subnets (awsvpc: one interface per task).
    async fn presence(&self, resources: &[Resource], place: &Place<'_>) -> Result<BTreeMap<String, Presence>> {
        let mut by_cluster: BTreeMap<String, Vec<(&Resource, &str)>> = BTreeMap::new();
        for resource in resources {
            let detail: Detail = resource.detail_as()?;
            let service = resource.id.rsplit('/').next().unwrap_or(&resource.id);
            by_cluster.entry(detail.cluster).or_default().push((resource, service));
        }
        // One cluster (or one service) at a time would serialise the plan on the call latency.
        let reads: Vec<_> = by_cluster
            .into_iter()
            .map(|(cluster, services)| async move {
                let by_group = match services.len() {
                    1 => None,
                    planned => self.cluster_tasks(&cluster, planned).await?,
                };
                let mut found = Vec::new();
                for (resource, service) in services {
                    let tasks = match by_group.as_ref() {
                        // The same service can be asked for twice (its cluster named and ARN'd).
                        Some(by_group) => by_group.get(&format!("service:{service}")).cloned().unwrap_or_default(),
                        None => self.tasks(&cluster, service).await?,
                    };
                    let in_zone: Vec<String> = tasks
                        .iter()
                        .filter(|t| super::tasks::holds_task(place, t))
                        .filter_map(|t| t.task_arn().map(str::to_owned))
                        .collect();
                    let presence = Presence {
                        needs: in_zone.clone(),
                        in_zone,
                        units: "tasks",
                        note: None,
                    };
                    found.push((resource.id.clone(), presence));
                }
                Ok::<_, Error>(found)
            })
            .collect();
        let found: Vec<Vec<(String, Presence)>> = futures::stream::iter(reads)
            .buffer_unordered(READ_CONCURRENCY)
            .try_collect()
            .await?;
        Ok(found.into_iter().flatten().collect())
    }

    async fn settle(&self, resources: &[Resource], timeout: Duration) -> Result<Vec<(String, String)>> {
        let mut by_cluster: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for resource in resources {
            let detail: Detail = resource.detail_as()?;
            by_cluster.entry(detail.cluster).or_default().push(resource.id.clone());
        }
        let deadline = tokio::time::Instant::now() + timeout;
        let mut unsettled = Vec::new();
        for (cluster, services) in by_cluster {
            for chunk in services.chunks(DESCRIBE_BATCH) {
                let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                tracing::info!(cluster = %cluster, services = chunk.len(), "waiting for ECS services to reach steady state");
                crate::say!(
                    "azevac: waiting for {} ECS service(s) in {} to reach steady state",
                    chunk.len(),
                    crate::model::text::clean(&cluster)
                );
                let waited = self
                    .client
                    .wait_until_services_stable()
                    .cluster(&cluster)
                    .set_services(Some(chunk.to_vec()))
                    .wait(left.max(Duration::from_secs(1)))
                    .await;
                if let Err(e) = waited {
                    let why = format!("did not reach steady state within {}s: {e}", timeout.as_secs());
                    unsettled.extend(chunk.iter().map(|s| (s.clone(), why.clone())));
                }
            }
        }
        Ok(unsettled)
    }

    async fn probe(&self) -> Vec<super::Check> {
        let clusters = self.client.list_clusters().max_results(1).send().await;
        vec![super::Check::answered(TYPE, "ecs:ListClusters", clusters)]
    }
}

impl Ecs {
    /// A cluster's running tasks by group (`service:NAME`, which ECS gives every task a service
    /// starts), read for the whole cluster when its listing takes at most `planned` pages: then it
    /// costs about what reading each of its `planned` services does (a listing page and a describe
    /// each). A bigger cluster (many tasks of services not in the plan) is `None`, read service by
    /// service after those pages.
    async fn cluster_tasks(
        &self,
        cluster: &str,
        planned: usize,
    ) -> Result<Option<BTreeMap<String, Vec<aws_sdk_ecs::types::Task>>>> {
        let mut arns: Vec<String> = Vec::new();
        let mut next_token = None;
        for _ in 0..planned {
            let page = self
                .client
                .list_tasks()
                .cluster(cluster)
                .desired_status(aws_sdk_ecs::types::DesiredStatus::Running)
                .max_results(LIST_PAGE)
                .set_next_token(next_token)
                .send()
                .await
                .map_err(|e| Error::from_sdk("ecs:ListTasks", e))?;
            arns.extend(page.task_arns().iter().cloned());
            next_token = page.next_token().map(str::to_owned);
            if next_token.is_none() {
                break;
            }
        }
        if next_token.is_some() {
            return Ok(None);
        }
        let describes: Vec<_> = arns
            .chunks(TASKS_BATCH)
            .map(|chunk| self.describe_tasks(cluster, chunk))
            .collect();
        let described: Vec<Vec<aws_sdk_ecs::types::Task>> = futures::stream::iter(describes)
            .buffer_unordered(READ_CONCURRENCY)
            .try_collect()
            .await?;
        let mut by_group: BTreeMap<String, Vec<aws_sdk_ecs::types::Task>> = BTreeMap::new();
        // A task started outside a service (RunTask) has a group of its own or none: no service's.
        for task in described.into_iter().flatten() {
            if let Some(group) = task.group().map(str::to_owned) {
                by_group.entry(group).or_default().push(task);
            }
        }
        Ok(Some(by_group))
    }

    /// One DescribeTasks call (at most [`TASKS_BATCH`] tasks).
    async fn describe_tasks(&self, cluster: &str, arns: &[String]) -> Result<Vec<aws_sdk_ecs::types::Task>> {
        let out = self
            .client
            .describe_tasks()
            .cluster(cluster)
            .set_tasks(Some(arns.to_vec()))
            .send()
            .await
            .map_err(|e| Error::from_sdk("ecs:DescribeTasks", e))?;
        Ok(out.tasks().to_vec())
    }

    /// The running tasks of one service. A service's tasks are in the group `service:NAME`; the
    /// group is checked too, so that a listing that does not filter by service counts none of
    /// another's.
    async fn tasks(&self, cluster: &str, service: &str) -> Result<Vec<aws_sdk_ecs::types::Task>> {
        let arns: Vec<String> = self
            .client
            .list_tasks()
            .cluster(cluster)
            .service_name(service)
            .desired_status(aws_sdk_ecs::types::DesiredStatus::Running)
            .max_results(LIST_PAGE)
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .map_err(|e| Error::from_sdk("ecs:ListTasks", e))?;
        let group = format!("service:{service}");
        let mut tasks = Vec::new();
        for chunk in arns.chunks(TASKS_BATCH) {
            let described = self.describe_tasks(cluster, chunk).await?;
            tasks.extend(described.into_iter().filter(|t| t.group().is_none_or(|g| g == group)));
        }
        Ok(tasks)
    }
}

/// Why a service in `status` cannot be changed because it is being deleted, if it is.
///
/// `DeleteService` moves a service with tasks still to stop from `ACTIVE` to `DRAINING`, and to
/// `INACTIVE` once they have; `DescribeServices` still shows both
/// (<https://docs.aws.amazon.com/AmazonECS/latest/APIReference/API_DeleteService.html>), and
/// `UpdateService` refuses a service that is not `ACTIVE` with `ServiceNotActiveException`
/// (<https://docs.aws.amazon.com/AmazonECS/latest/APIReference/API_UpdateService.html#API_UpdateService_Errors>).
/// Nothing azevac could do to it would last: it is listed, never changed, in either direction.
fn being_deleted(status: Option<&str>) -> Option<String> {
    (status == Some(DRAINING)).then(|| {
        format!(
            "being deleted (status {DRAINING}): ECS refuses UpdateService on it (ServiceNotActiveException), and \
             its tasks are stopping"
        )
    })
}

fn to_resource(cluster: &str, service: &Service) -> Resource {
    let awsvpc = service.network_configuration().and_then(|n| n.awsvpc_configuration());
    let controller = service
        .deployment_controller()
        .map(|c| c.r#type().clone())
        .unwrap_or(DeploymentControllerType::Ecs);
    let unsupported = if let Some(why) = being_deleted(service.status()) {
        Some(why)
    } else if awsvpc.is_none() {
        Some("not in awsvpc network mode: its tasks follow their container instances (evacuate their Auto Scaling group)".to_owned())
    } else if controller != DeploymentControllerType::Ecs {
        Some(format!(
            "deployment controller {}: UpdateService cannot change its network configuration",
            controller.as_str()
        ))
    } else {
        None
    };
    let detail = Detail {
        cluster: service.cluster_arn().unwrap_or(cluster).to_owned(),
        security_groups: awsvpc.map(|a| a.security_groups().to_vec()).unwrap_or_default(),
        assign_public_ip: awsvpc.and_then(|a| a.assign_public_ip()).map(|p| p.as_str().to_owned()),
    };
    let cluster_name = detail.cluster.rsplit('/').next().unwrap_or(&detail.cluster).to_owned();
    Resource {
        resource_type: TYPE,
        id: service.service_arn().unwrap_or_default().to_owned(),
        name: format!("{cluster_name}/{}", service.service_name().unwrap_or_default()),
        subnets: awsvpc.map(|a| a.subnets().to_vec()).unwrap_or_default(),
        tags: service
            .tags()
            .iter()
            .filter_map(|t| Some((t.key()?.to_owned(), t.value().unwrap_or_default().to_owned())))
            .collect(),
        unsupported,
        notes: vec![REPLACEMENT_NOTE.to_owned()],
        detail: serde_json::to_value(detail).unwrap_or_default(),
        // A service deleted and created again under the same name keeps its ARN; only `createdAt`,
        // "the Unix timestamp for the time when the service was created", tells them apart
        // (<https://docs.aws.amazon.com/AmazonECS/latest/APIReference/API_Service.html>).
        identity: Identity::created_at(service.created_at().and_then(timestamp)),
    }
}

/// A describe's per-item failures other than MISSING (which reads as gone) as an error: what could
/// not be read must never look like what is not there.
fn refuse_unread(operation: &'static str, failures: &[aws_sdk_ecs::types::Failure]) -> Result<()> {
    let unread: Vec<String> = failures
        .iter()
        .filter(|f| f.reason() != Some("MISSING"))
        .map(|f| {
            let why: Vec<&str> = [f.reason(), f.detail()].into_iter().flatten().collect();
            format!("{} ({})", f.arn().unwrap_or("?"), why.join(": "))
        })
        .collect();
    if unread.is_empty() {
        return Ok(());
    }
    Err(Error::Unreadable {
        operation,
        what: unread.join(", "),
    })
}

/// `arn:aws:ecs:REGION:ACCOUNT:service/CLUSTER/NAME` → `CLUSTER`; old-format ARNs have none.
fn cluster_of(arn: &str) -> Option<String> {
    cluster_named(arn).map(str::to_owned)
}

/// [`cluster_of`], borrowed: the registry's [`super::Registration::cluster`].
fn cluster_named(arn: &str) -> Option<&str> {
    let path = arn.split_once(":service/")?.1;
    Some(path.split_once('/')?.0)
}

/// The ECS kind's own flag: `--cluster` (evacuate).
pub mod flags {
    use clap::Args;
    use serde::{Deserialize, Serialize};

    use crate::model::{Command, Request};
    use crate::plugins::{to_options, CommandFlags, Flags};
    use crate::Result;

    /// `--cluster`, as clap reads it.
    #[derive(Debug, Args)]
    #[group(skip)]
    struct Given {
        /// Only ECS services in this cluster (name or ARN; repeatable; default: every cluster).
        #[arg(long = "cluster", value_name = "CLUSTER")]
        clusters: Vec<String>,
    }

    /// The kind's options in a request (and a saved plan).
    #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub struct Options {
        /// `--cluster`: ECS clusters (every cluster when empty).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub ecs_clusters: Vec<String>,
    }

    /// The registry's entry for this flag.
    pub static FLAGS: Flags = Flags::of::<Given>(super::TYPE, validate);

    impl CommandFlags for Given {
        const COMMAND: Command = Command::Evacuate;

        fn options(self) -> crate::plugins::Options {
            to_options(&Options {
                ecs_clusters: self.clusters,
            })
        }
    }

    fn validate(request: &Request) -> Result<()> {
        request.options_as::<Options>().map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_ecs::operation::describe_services::DescribeServicesOutput;
    use aws_sdk_ecs::operation::list_services::ListServicesOutput;
    use aws_sdk_ecs::types::DeploymentController;
    use aws_smithy_mocks::{mock, mock_client, RuleMode};

    /// DescribeClusters of `prod`, asked for its tags, with the `azevac:skip` tag set to `skip`.
    fn cluster(skip: Option<&'static str>) -> aws_smithy_mocks::Rule {
        use aws_sdk_ecs::operation::describe_clusters::DescribeClustersOutput;
        use aws_sdk_ecs::types::{Cluster, Tag};
        mock!(aws_sdk_ecs::Client::describe_clusters)
            .match_requests(|r| r.clusters() == ["prod"] && r.include() == [ClusterField::Tags])
            .then_output(move || {
                let tags =
                    skip.map(|value| vec![Tag::builder().key(crate::model::plan::SKIP_TAG).value(value).build()]);
                DescribeClustersOutput::builder()
                    .clusters(Cluster::builder().cluster_name("prod").set_tags(tags).build())
                    .build()
            })
    }

    fn service(name: &str) -> Service {
        let awsvpc = AwsVpcConfiguration::builder()
            .subnets("subnet-a")
            .subnets("subnet-b")
            .security_groups("sg-1")
            .assign_public_ip(AssignPublicIp::Enabled)
            .build()
            .expect("awsvpc");
        Service::builder()
            .service_arn(format!("arn:aws:ecs:us-east-1:123456789012:service/prod/{name}"))
            .service_name(name)
            .cluster_arn("arn:aws:ecs:us-east-1:123456789012:cluster/prod")
            .network_configuration(NetworkConfiguration::builder().awsvpc_configuration(awsvpc).build())
            .build()
    }

    #[test]
    fn the_cluster_comes_from_the_arn() {
        assert_eq!(
            cluster_of("arn:aws:ecs:us-east-1:1:service/prod/web").as_deref(),
            Some("prod")
        );
        assert_eq!(cluster_of("arn:aws:ecs:us-east-1:1:service/web"), None);
    }

    #[test]
    fn keeps_security_groups_and_public_ip_for_the_update() {
        let resource = to_resource("prod", &service("web"));
        assert_eq!(resource.name, "prod/web");
        assert_eq!(resource.subnets, ["subnet-a", "subnet-b"]);
        let detail: Detail = serde_json::from_value(resource.detail).expect("detail");
        assert_eq!(detail.security_groups, ["sg-1"]);
        assert_eq!(detail.assign_public_ip.as_deref(), Some("ENABLED"));
    }

    /// Issue 50: the service's identity is its `createdAt` (its ARN is a re-created one's too);
    /// none when ECS gives none.
    #[test]
    fn issue_50_a_services_identity_is_its_creation_time() {
        let mut svc = service("web");
        assert_eq!(to_resource("prod", &svc).identity, None);
        svc.created_at = Some(aws_sdk_ecs::primitives::DateTime::from_millis(1_772_359_200_123));
        let identity = to_resource("prod", &svc).identity.expect("an identity");
        assert_eq!(identity.uid, "2026-03-01T10:00:00.123Z");
        assert_eq!(identity.describe(), "created 2026-03-01T10:00:00.123Z");
    }

    #[test]
    fn code_deploy_services_are_unsupported() {
        let mut svc = service("blue-green");
        svc.deployment_controller = Some(
            DeploymentController::builder()
                .r#type(DeploymentControllerType::CodeDeploy)
                .build()
                .expect("controller"),
        );
        let reason = to_resource("prod", &svc).unsupported.expect("unsupported");
        assert!(reason.contains("CODE_DEPLOY"), "{reason}");
    }

    /// The emulator returns every service in one page and describes any number at once; AWS pages
    /// ListServices and describes at most 10 per call. Discovery must follow both.
    #[tokio::test]
    async fn discovery_follows_pages_and_describes_ten_at_a_time() {
        let arns: Vec<String> = (0..25)
            .map(|i| format!("arn:aws:ecs:us-east-1:1:service/prod/s{i:02}"))
            .collect();
        let (first, second) = (arns[..20].to_vec(), arns[20..].to_vec());
        let page1 = mock!(aws_sdk_ecs::Client::list_services)
            .match_requests(|r| r.next_token().is_none())
            .then_output(move || {
                ListServicesOutput::builder()
                    .set_service_arns(Some(first.clone()))
                    .next_token("page2")
                    .build()
            });
        let page2 = mock!(aws_sdk_ecs::Client::list_services)
            .match_requests(|r| r.next_token() == Some("page2"))
            .then_output(move || {
                ListServicesOutput::builder()
                    .set_service_arns(Some(second.clone()))
                    .build()
            });
        let describe = mock!(aws_sdk_ecs::Client::describe_services)
            .match_requests(|r| r.services().len() <= DESCRIBE_BATCH)
            .then_compute_output(|r| {
                DescribeServicesOutput::builder()
                    .set_services(Some(
                        r.services()
                            .iter()
                            .map(|arn| service(arn.rsplit('/').next().unwrap_or_default()))
                            .collect(),
                    ))
                    .build()
            });
        let client = mock_client!(
            aws_sdk_ecs,
            RuleMode::MatchAny,
            [&page1, &page2, &describe, &cluster(None)]
        );
        let found = Ecs::new(client, vec!["prod".into()])
            .discover()
            .await
            .expect("discover");
        assert_eq!(found.len(), 25);
        assert_eq!(page1.num_calls(), 1);
        assert_eq!(page2.num_calls(), 1);
        assert_eq!(describe.num_calls(), 3, "25 services, 10 per DescribeServices");
    }

    /// Issue 13: a service that DescribeServices could not read (a failure other than MISSING) is
    /// an error, never a deleted service; a MISSING one reads as gone.
    #[tokio::test]
    async fn issue_13_a_failed_describe_is_not_a_deleted_service() {
        use aws_sdk_ecs::types::Failure;
        let describe = mock!(aws_sdk_ecs::Client::describe_services).then_compute_output(|r| {
            let failures = r.services().iter().filter(|arn| !arn.ends_with("/web")).map(|arn| {
                let reason = if arn.ends_with("/gone") {
                    "MISSING"
                } else {
                    "INTERNAL_ERROR"
                };
                Failure::builder().arn(arn).reason(reason).build()
            });
            DescribeServicesOutput::builder()
                .services(service("web"))
                .set_failures(Some(failures.collect()))
                .build()
        });
        let client = mock_client!(aws_sdk_ecs, RuleMode::MatchAny, [&describe, &cluster(None)]);
        let ecs = Ecs::new(client, vec!["prod".into()]);
        let arn = |name: &str| format!("arn:aws:ecs:us-east-1:123456789012:service/prod/{name}");

        let read = ecs
            .read(&[arn("web"), arn("gone")])
            .await
            .expect("MISSING is gone, not an error");
        assert_eq!(read.keys().collect::<Vec<_>>(), [&arn("web")]);

        let err = ecs
            .read(&[arn("web"), arn("flaky")])
            .await
            .expect_err("an unread service is an error");
        let text = crate::error::describe(&err);
        assert!(text.contains("flaky") && text.contains("INTERNAL_ERROR"), "{text}");
    }

    /// Issue 51: the services of a cluster tagged `azevac:skip` (the watcher's own) read with the
    /// cluster's tag as the reason azevac leaves them alone; a service tagged so itself reads with
    /// its tag, which the plan's rule turns into the reason. A cluster whose tags cannot be read is
    /// an error, never an untagged cluster.
    #[tokio::test]
    async fn issue_51_services_of_a_cluster_tagged_azevac_skip_are_left_alone() {
        let describe = mock!(aws_sdk_ecs::Client::describe_services).then_compute_output(|r| {
            let services = r.services().iter().map(|arn| {
                let name = arn.rsplit('/').next().unwrap_or_default();
                let mut found = service(name);
                if name == "watcher" {
                    found.tags = Some(vec![aws_sdk_ecs::types::Tag::builder()
                        .key(crate::model::plan::SKIP_TAG)
                        .value("")
                        .build()]);
                }
                found
            });
            DescribeServicesOutput::builder()
                .set_services(Some(services.collect()))
                .build()
        });
        let arn = |name: &str| format!("arn:aws:ecs:us-east-1:123456789012:service/prod/{name}");
        let zone = std::collections::BTreeSet::from(["subnet-b".to_string()]);
        let reason = |resource: &Resource| {
            crate::model::plan::evacuation(
                "use1-az2",
                resource,
                &zone,
                &crate::model::plan::Filters::default(),
                None,
            )
            .and_then(|line| line.reason)
        };

        let tagged = cluster(Some("the watcher's own"));
        let client = mock_client!(aws_sdk_ecs, RuleMode::MatchAny, [&describe, &tagged]);
        let read = Ecs::new(client, vec!["prod".into()])
            .read(&[arn("web")])
            .await
            .expect("read");
        assert_eq!(
            reason(&read[&arn("web")]).as_deref(),
            Some("cluster prod tagged azevac:skip=the watcher's own")
        );
        assert_eq!(tagged.num_calls(), 1, "one DescribeClusters per cluster read");

        let client = mock_client!(aws_sdk_ecs, RuleMode::MatchAny, [&describe, &cluster(None)]);
        let read = Ecs::new(client, vec!["prod".into()])
            .read(&[arn("web"), arn("watcher")])
            .await
            .expect("read");
        assert_eq!(reason(&read[&arn("web")]), None, "planned");
        assert_eq!(reason(&read[&arn("watcher")]).as_deref(), Some("tagged azevac:skip="));

        let unreadable = mock!(aws_sdk_ecs::Client::describe_clusters).then_output(|| {
            aws_sdk_ecs::operation::describe_clusters::DescribeClustersOutput::builder()
                .failures(
                    aws_sdk_ecs::types::Failure::builder()
                        .arn("prod")
                        .reason("INTERNAL_ERROR")
                        .build(),
                )
                .build()
        });
        let client = mock_client!(aws_sdk_ecs, RuleMode::MatchAny, [&describe, &unreadable]);
        let err = Ecs::new(client, vec!["prod".into()])
            .read(&[arn("web")])
            .await
            .expect_err("a cluster not read is an error");
        let text = crate::error::describe(&err);
        assert!(
            text.contains("DescribeClusters") && text.contains("INTERNAL_ERROR"),
            "{text}"
        );
    }

    /// Issue 50: a service being deleted (`DRAINING`) refuses UpdateService: it reads with the
    /// reason, and the plan lists it as skipped with it; a deleted one (`INACTIVE`) reads as gone.
    #[tokio::test]
    async fn issue_50_a_draining_service_is_skipped_as_being_deleted() {
        let describe = mock!(aws_sdk_ecs::Client::describe_services).then_compute_output(|r| {
            let services = r.services().iter().map(|arn| {
                let name = arn.rsplit('/').next().unwrap_or_default();
                let mut found = service(name);
                found.status = Some(
                    match name {
                        "leaving" => DRAINING,
                        "gone" => INACTIVE,
                        _ => "ACTIVE",
                    }
                    .into(),
                );
                found
            });
            DescribeServicesOutput::builder()
                .set_services(Some(services.collect()))
                .build()
        });
        let client = mock_client!(aws_sdk_ecs, RuleMode::MatchAny, [&describe, &cluster(None)]);
        let ecs = Ecs::new(client, vec!["prod".into()]);
        let arn = |name: &str| format!("arn:aws:ecs:us-east-1:123456789012:service/prod/{name}");

        let read = ecs
            .read(&[arn("web"), arn("leaving"), arn("gone")])
            .await
            .expect("read");
        assert_eq!(read.keys().collect::<Vec<_>>(), [&arn("leaving"), &arn("web")]);
        assert_eq!(read[&arn("web")].unsupported, None);
        let zone = std::collections::BTreeSet::from(["subnet-b".to_string()]);
        let line = crate::model::plan::evacuation(
            "use1-az2",
            &read[&arn("leaving")],
            &zone,
            &crate::model::plan::Filters::default(),
            None,
        )
        .expect("listed: it has a subnet in the zone");
        assert_eq!(line.status, crate::model::Status::Skipped);
        let reason = line.reason.unwrap_or_default();
        assert!(
            reason.contains("being deleted (status DRAINING)") && reason.contains("ServiceNotActiveException"),
            "{reason}"
        );
        assert_eq!(being_deleted(Some("ACTIVE")), None);
    }

    /// The service's tasks in the zone: ListTasks pages, DescribeTasks at most 100 a call; in the
    /// zone by the subnet of the task's interface, else by its availabilityZone; another group's
    /// tasks (a listing that did not filter by service) are not counted.
    #[tokio::test]
    async fn presence_follows_pages_and_counts_only_the_services_tasks_in_the_zone() {
        use aws_sdk_ecs::operation::describe_tasks::DescribeTasksOutput;
        use aws_sdk_ecs::operation::list_tasks::ListTasksOutput;
        use aws_sdk_ecs::types::{Attachment, KeyValuePair, Task};
        let arns: Vec<String> = (0..150)
            .map(|i| format!("arn:aws:ecs:us-east-1:1:task/prod/t{i:03}"))
            .collect();
        let (first, second) = (arns[..100].to_vec(), arns[100..].to_vec());
        let page1 = mock!(aws_sdk_ecs::Client::list_tasks)
            .match_requests(|r| r.next_token().is_none() && r.service_name() == Some("web"))
            .then_output(move || {
                ListTasksOutput::builder()
                    .set_task_arns(Some(first.clone()))
                    .next_token("page2")
                    .build()
            });
        let page2 = mock!(aws_sdk_ecs::Client::list_tasks)
            .match_requests(|r| r.next_token() == Some("page2"))
            .then_output(move || ListTasksOutput::builder().set_task_arns(Some(second.clone())).build());
        let describe = mock!(aws_sdk_ecs::Client::describe_tasks)
            .match_requests(|r| r.tasks().len() <= TASKS_BATCH)
            .then_compute_output(|r| {
                let tasks = r.tasks().iter().enumerate().map(|(i, arn)| {
                    let n: usize = arn.rsplit('t').next().and_then(|n| n.parse().ok()).unwrap_or(i);
                    let task =
                        Task::builder()
                            .task_arn(arn)
                            .group(if n % 10 == 9 { "service:other" } else { "service:web" });
                    match n % 3 {
                        // In the zone by its interface's subnet, or elsewhere by it.
                        0 | 1 => task.attachments(
                            Attachment::builder()
                                .r#type("ElasticNetworkInterface")
                                .details(
                                    KeyValuePair::builder()
                                        .name("subnetId")
                                        .value(if n.is_multiple_of(3) {
                                            "subnet-zone"
                                        } else {
                                            "subnet-other"
                                        })
                                        .build(),
                                )
                                .build(),
                        ),
                        // No attachment: its availabilityZone says.
                        _ => task.availability_zone("us-east-1c"),
                    }
                    .build()
                });
                DescribeTasksOutput::builder().set_tasks(Some(tasks.collect())).build()
            });
        let client = mock_client!(aws_sdk_ecs, RuleMode::MatchAny, [&page1, &page2, &describe]);
        let ecs = Ecs::new(client, vec!["prod".into()]);
        let resource = to_resource("prod", &service("web"));
        let (zone, zone_subnets, ec2) = place_parts();
        let place = Place {
            zone: &zone,
            zone_subnets: &zone_subnets,
            ec2: &ec2,
        };
        let found = ecs
            .presence(std::slice::from_ref(&resource), &place)
            .await
            .expect("presence");
        let web = &found[&resource.id];
        let expected = (0..150).filter(|n| n % 10 != 9 && n % 3 != 1).count();
        assert_eq!(web.in_zone.len(), expected);
        assert_eq!(web.needs, web.in_zone);
        assert_eq!(describe.num_calls(), 2, "150 tasks: two DescribeTasks calls");
    }

    /// use1-az2 (us-east-1c), whose one subnet is `subnet-zone`, and an EC2 client no call reaches.
    fn place_parts() -> (
        crate::model::topology::Zone,
        std::collections::BTreeSet<String>,
        aws_sdk_ec2::Client,
    ) {
        let zone = crate::model::topology::Zone {
            id: "use1-az2".into(),
            name: "us-east-1c".into(),
        };
        let ec2 = aws_sdk_ec2::Client::from_conf(
            aws_sdk_ec2::Config::builder()
                .behavior_version(aws_sdk_ec2::config::BehaviorVersion::latest())
                .build(),
        );
        (zone, std::collections::BTreeSet::from(["subnet-zone".to_string()]), ec2)
    }

    /// A running task of `group`, in the zone's subnet or another.
    fn task(arn: &str, group: &str, in_zone: bool) -> aws_sdk_ecs::types::Task {
        use aws_sdk_ecs::types::{Attachment, KeyValuePair};
        let subnet = if in_zone { "subnet-zone" } else { "subnet-other" };
        aws_sdk_ecs::types::Task::builder()
            .task_arn(arn)
            .group(group)
            .attachments(
                Attachment::builder()
                    .r#type("ElasticNetworkInterface")
                    .details(KeyValuePair::builder().name("subnetId").value(subnet).build())
                    .build(),
            )
            .build()
    }

    /// Task `n` of the cluster listing: services web, api and jobs in turn, every fifth a RunTask
    /// (`family:batch`) task; even ones in the zone.
    fn nth_task(arn: &str) -> aws_sdk_ecs::types::Task {
        let n: usize = arn
            .rsplit('t')
            .next()
            .and_then(|n| n.parse().ok())
            .expect("task number");
        let group = match (n % 5, n % 3) {
            (4, _) => "family:batch",
            (_, 0) => "service:web",
            (_, 1) => "service:api",
            _ => "service:jobs",
        };
        task(arn, group, n.is_multiple_of(2))
    }

    /// A cluster listing of `total` tasks in pages of 100; the rules count the pages and describes.
    fn cluster_listing(total: usize) -> Vec<aws_smithy_mocks::Rule> {
        use aws_sdk_ecs::operation::describe_tasks::DescribeTasksOutput;
        use aws_sdk_ecs::operation::list_tasks::ListTasksOutput;
        let arns: Vec<String> = (0..total)
            .map(|i| format!("arn:aws:ecs:us-east-1:1:task/prod/t{i:03}"))
            .collect();
        let pages = mock!(aws_sdk_ecs::Client::list_tasks)
            .match_requests(|r| r.service_name().is_none())
            .then_compute_output(move |r| {
                let start: usize = r.next_token().map_or(0, |t| t.parse().expect("token"));
                let end = (start + 100).min(arns.len());
                let page = ListTasksOutput::builder().set_task_arns(Some(arns[start..end].to_vec()));
                if end < arns.len() {
                    page.next_token(end.to_string())
                } else {
                    page
                }
                .build()
            });
        let describe = mock!(aws_sdk_ecs::Client::describe_tasks)
            .match_requests(|r| r.tasks().len() <= TASKS_BATCH)
            .then_compute_output(|r| {
                DescribeTasksOutput::builder()
                    .set_tasks(Some(r.tasks().iter().map(|arn| nth_task(arn)).collect()))
                    .build()
            });
        vec![pages, describe]
    }

    /// The presence of these services of cluster prod in use1-az2, read through `client`.
    async fn presence_of(client: aws_sdk_ecs::Client, names: &[&str]) -> (Vec<Resource>, BTreeMap<String, Presence>) {
        let resources: Vec<Resource> = names.iter().map(|name| to_resource("prod", &service(name))).collect();
        let (zone, zone_subnets, ec2) = place_parts();
        let place = Place {
            zone: &zone,
            zone_subnets: &zone_subnets,
            ec2: &ec2,
        };
        let found = Ecs::new(client, vec!["prod".into()])
            .presence(&resources, &place)
            .await
            .expect("presence");
        (resources, found)
    }

    /// Three services of one cluster with 250 tasks between them and RunTask tasks: the whole
    /// cluster is listed (3 pages) and described (3 calls), no listing per service, and each
    /// service counts only its own tasks in the zone.
    #[tokio::test]
    async fn presence_reads_a_small_cluster_whole_and_counts_each_services_tasks() {
        let rules = cluster_listing(250);
        let by_service = mock!(aws_sdk_ecs::Client::list_tasks)
            .match_requests(|r| r.service_name().is_some())
            .then_output(|| aws_sdk_ecs::operation::list_tasks::ListTasksOutput::builder().build());
        let client = mock_client!(aws_sdk_ecs, RuleMode::MatchAny, [&rules[0], &rules[1], &by_service]);
        let (resources, found) = presence_of(client, &["web", "api", "jobs"]).await;
        for (resource, remainder) in resources.iter().zip([0, 1, 2]) {
            let expected = (0..250usize)
                .filter(|n| n % 5 != 4 && n % 3 == remainder && n.is_multiple_of(2))
                .count();
            assert_eq!(found[&resource.id].in_zone.len(), expected, "{}", resource.id);
        }
        assert_eq!((rules[0].num_calls(), rules[1].num_calls()), (3, 3));
        assert_eq!(by_service.num_calls(), 0);
    }

    /// Two services in a cluster of 250 tasks: the whole cluster would take more calls than the two
    /// services, so its listing stops after two pages and each service is read on its own.
    #[tokio::test]
    async fn presence_reads_a_big_cluster_service_by_service() {
        use aws_sdk_ecs::operation::list_tasks::ListTasksOutput;
        let rules = cluster_listing(250);
        let by_service = mock!(aws_sdk_ecs::Client::list_tasks)
            .match_requests(|r| r.service_name().is_some())
            .then_compute_output(|r| {
                let name = r.service_name().expect("service");
                let arn = format!(
                    "arn:aws:ecs:us-east-1:1:task/prod/{name}-t{:03}",
                    if name == "web" { 0 } else { 1 }
                );
                ListTasksOutput::builder().task_arns(arn).build()
            });
        let client = mock_client!(aws_sdk_ecs, RuleMode::MatchAny, [&rules[0], &rules[1], &by_service]);
        let (resources, found) = presence_of(client, &["web", "api"]).await;
        assert_eq!(rules[0].num_calls(), 2, "the cluster listing stops at two pages");
        assert_eq!(by_service.num_calls(), 2);
        assert_eq!(rules[1].num_calls(), 2, "one describe per service");
        assert_eq!(
            found[&resources[0].id].in_zone.len(),
            1,
            "web's task t000 is in the zone"
        );
        assert!(
            found[&resources[1].id].in_zone.is_empty(),
            "api's task t001 is not: {found:?}"
        );
    }
}
