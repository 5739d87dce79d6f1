//! Lambda functions: subnets live in `VpcConfig.SubnetIds` of `$LATEST`.
//!
//! Published versions are immutable, so aliases that point at them keep the old network
//! configuration; the plan says so. A function is locked while an update is in progress: azevac waits
//! for `LastUpdateStatus` to leave `InProgress`, and retries (bounded) on `ResourceConflictException`.
//! The update carries the `RevisionId` of a read made right before it, after every wait (AWS changes
//! the revision on each update and again when it completes), so a concurrent change is detected
//! (`PreconditionFailedException`) instead of overwritten.

use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_lambda::client::Waiters;
use aws_sdk_lambda::types::{FunctionConfiguration, LastUpdateStatus, VpcConfig, VpcConfigResponse};
use backon::{ExponentialBuilder, Retryable};
use futures::{StreamExt, TryStreamExt};
use serde::{Deserialize, Serialize};

use super::subnets::Subnets;
use super::{Place, Plugin, Presence, Resource, Setup, SubnetLimit, SubnetService};
use crate::{Error, Result};

/// The `--type` value and journal `resource_type` of Lambda functions.
pub const TYPE: &str = "lambda";

/// How the registry knows this kind: its calls, its IAM actions, its options.
pub const REGISTRATION: super::Registration = super::Registration {
    name: TYPE,
    services: &["lambda", "ec2"],
    changes_through: &["lambda"],
    iam_actions: &[
        "lambda:ListFunctions",
        "lambda:GetFunction",
        "lambda:ListAliases",
        "lambda:ListTags",
        "lambda:UpdateFunctionConfiguration",
        "ec2:DescribeNetworkInterfaces",
        "ec2:DescribeSecurityGroups",
        "ec2:DescribeSubnets",
        "ec2:DescribeVpcs",
    ],
    build: plugin,
    flags: None,
    describe: crate::model::Record::words_as::<crate::model::action::NoAction>,
    cluster: super::no_cluster,
    expiring: None,
};

/// `ListFunctions` pages at most 50 functions.
const LIST_PAGE: i32 = 50;
/// Functions read at once when there is no batch read.
const READ_CONCURRENCY: usize = 16;
/// How long to wait for an in-progress update to finish, before and after ours.
const UPDATE_WAIT: Duration = Duration::from_secs(300);
/// Tries on `ResourceConflictException` (another update holds the function).
const CONFLICT_TRIES: usize = 6;

/// What `apply` needs besides the subnets.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Detail {
    security_groups: Vec<String>,
    ipv6_allowed_for_dual_stack: Option<bool>,
    revision_id: Option<String>,
    update_in_progress: bool,
}

/// What the listing of every version says: the functions it saw (their `$LATEST`) and those with
/// a published version.
#[derive(Debug, Default)]
struct Versions {
    seen: std::collections::BTreeSet<String>,
    published: std::collections::BTreeSet<String>,
}

impl Versions {
    /// Whether the listing saw the function and no published version of it: then no alias of it
    /// can be pinned to one. A function it did not see (created meanwhile) is not assumed so.
    fn unversioned(&self, name: &str) -> bool {
        self.seen.contains(name) && !self.published.contains(name)
    }
}

/// The Lambda functions plugin.
#[derive(Debug, Clone)]
pub struct Lambda {
    client: aws_sdk_lambda::Client,
    conflict_backoff: Duration,
}

/// Registry constructor: Lambda applies to every run.
pub fn plugin(setup: &Setup) -> futures::future::BoxFuture<'_, Result<Option<Box<dyn Plugin>>>> {
    Box::pin(async move {
        let service = Lambda::new(crate::client!(aws_sdk_lambda, &setup.sdk));
        Ok(Some(Subnets::plugin(service, &setup.sdk)))
    })
}

impl Lambda {
    /// The functions the listing of every version (`ListFunctions` with `FunctionVersion=ALL`) saw,
    /// and which of them have a published version, when the listing takes at most an eighth as many
    /// pages as there are `candidates` (each would otherwise cost a `ListAliases`; those go 16 at a
    /// time, the pages one after the other): Lambda's 15 calls a second make 200 alias listings 13 s
    /// of the plan. `None` (list every candidate's aliases) when the account has more versions than
    /// that, or the listing fails.
    async fn published(&self, candidates: usize) -> Option<Versions> {
        let budget = candidates / 8;
        let mut versions = Versions::default();
        let mut marker = None;
        for _ in 0..budget {
            let page = self
                .client
                .list_functions()
                .function_version(aws_sdk_lambda::types::FunctionVersion::All)
                .max_items(LIST_PAGE)
                .set_marker(marker)
                .send()
                .await;
            let page = match page {
                Ok(page) => page,
                Err(e) => {
                    let why = crate::error::describe(&Error::from_sdk("lambda:ListFunctions", e));
                    tracing::info!(error = %why, "versions not listed; reading each function's aliases");
                    return None;
                }
            };
            for function in page.functions() {
                let (Some(name), Some(version)) = (function.function_name(), function.version()) else {
                    continue;
                };
                if version == "$LATEST" {
                    versions.seen.insert(name.to_owned());
                } else {
                    versions.published.insert(name.to_owned());
                }
            }
            marker = page.next_marker().map(str::to_owned);
            if marker.is_none() {
                return Some(versions);
            }
        }
        None
    }

    /// Every alias of a function (`ListAliases`, paginated).
    async fn aliases(&self, function: &str) -> Result<Vec<aws_sdk_lambda::types::AliasConfiguration>> {
        self.client
            .list_aliases()
            .function_name(function)
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .map_err(|e| Error::from_sdk("lambda:ListAliases", e))
    }

    /// A plugin over this client.
    pub fn new(client: aws_sdk_lambda::Client) -> Self {
        Lambda {
            client,
            conflict_backoff: Duration::from_millis(500),
        }
    }

    /// The first delay of the bounded, exponential retry on `ResourceConflictException`.
    pub fn with_conflict_backoff(mut self, first_delay: Duration) -> Self {
        self.conflict_backoff = first_delay;
        self
    }

    async fn wait_until_updated(&self, function: &str) -> Result<()> {
        crate::say!(
            "azevac: waiting for the update in progress on {} to finish",
            crate::model::text::clean(function)
        );
        self.client
            .wait_until_function_updated_v2()
            .function_name(function)
            .wait(UPDATE_WAIT)
            .await
            .map_err(|e| Error::Aws {
                operation: "lambda:GetFunction (waiting for LastUpdateStatus to leave InProgress)",
                source: Box::new(crate::error::SdkFailure::waiting(e)),
            })?;
        Ok(())
    }

    /// One function's configuration, by `GetFunction`: it has a quota of its own (100 per
    /// second), where `GetFunctionConfiguration` shares the 15 per second of Lambda's control plane
    /// with the updates.
    async fn get(&self, arn: &str) -> Result<Option<Resource>> {
        match self.client.get_function().function_name(arn).send().await {
            // An answer without the configuration is unreadable, never a deleted function (with
            // --forget-missing that would drop its record).
            Ok(out) => match out.configuration {
                Some(configuration) => Ok(Some(to_resource(configuration))),
                None => Err(Error::Unreadable {
                    operation: "lambda:GetFunction",
                    what: format!("{arn} (no configuration in the answer)"),
                }),
            },
            Err(e)
                if e.as_service_error()
                    .is_some_and(|e| e.is_resource_not_found_exception()) =>
            {
                Ok(None)
            }
            Err(e) => Err(Error::from_sdk("lambda:GetFunction", e)),
        }
    }
}

/// How one try of an update ended badly: refused because another update holds the function
/// (tried again), or for good.
enum Try {
    Conflict(Error),
    Fatal(Error),
}

impl Try {
    fn into_error(self) -> Error {
        match self {
            Try::Conflict(e) | Try::Fatal(e) => e,
        }
    }
}

impl Lambda {
    /// One try of setting `subnets` on the function `resource` was read as: a fresh read (once any
    /// update in progress has ended), then the update, sent with that read's `RevisionId`. AWS
    /// changes a function's revision on every update and again when the update completes
    /// (aws/aws-sdk#377; Lambda API reference, UpdateFunctionConfiguration: "RevisionId: update
    /// the function only if the revision ID matches"), so a revision read before a wait, or before
    /// the previous line's update of the same function, is refused (`PreconditionFailedException`).
    /// The change was computed from `resource`: a function whose network settings differ now was
    /// changed by someone else, and the line is planned again rather than overwriting it.
    async fn update_once(&self, resource: &Resource, subnets: &[String]) -> std::result::Result<(), Try> {
        let mut current = self.current(&resource.id).await.map_err(Try::Fatal)?;
        if current.1.update_in_progress {
            self.wait_until_updated(&resource.id).await.map_err(Try::Fatal)?;
            current = self.current(&resource.id).await.map_err(Try::Fatal)?;
        }
        let (live, detail) = current;
        let planned: Detail = resource.detail_as().map_err(Try::Fatal)?;
        let same = |a: &[String], b: &[String]| {
            let set = |v: &[String]| v.iter().cloned().collect::<std::collections::BTreeSet<_>>();
            set(a) == set(b)
        };
        if !same(&live.subnets, &resource.subnets) || !same(&detail.security_groups, &planned.security_groups) {
            return Err(Try::Fatal(Error::ChangedSincePlan {
                resource: resource.name.clone(),
                source: format!(
                    "its subnets are now [{}], the change was computed from [{}]",
                    live.subnets.join(", "),
                    resource.subnets.join(", ")
                )
                .into(),
            }));
        }
        let vpc = VpcConfig::builder()
            .set_subnet_ids(Some(subnets.to_vec()))
            .set_security_group_ids(Some(detail.security_groups.clone()))
            .set_ipv6_allowed_for_dual_stack(detail.ipv6_allowed_for_dual_stack)
            .build();
        let out = self
            .client
            .update_function_configuration()
            .function_name(&resource.id)
            .vpc_config(vpc)
            .set_revision_id(detail.revision_id.clone())
            .send()
            .await
            .map_err(|e| match e.as_service_error() {
                Some(s) if s.is_resource_conflict_exception() => {
                    Try::Conflict(Error::from_sdk("lambda:UpdateFunctionConfiguration", e))
                }
                Some(s) if s.is_precondition_failed_exception() => Try::Fatal(Error::ChangedSincePlan {
                    resource: resource.name.clone(),
                    source: Box::new(crate::error::SdkFailure::new(e)),
                }),
                _ => Try::Fatal(Error::from_sdk("lambda:UpdateFunctionConfiguration", e)),
            })?;
        if out.last_update_status() == Some(&LastUpdateStatus::InProgress) {
            self.wait_until_updated(&resource.id).await.map_err(Try::Fatal)?;
        }
        Ok(())
    }

    /// The function as it is now, with its detail; gone is an error here (it existed under the lock).
    async fn current(&self, arn: &str) -> Result<(Resource, Detail)> {
        let Some(live) = self.get(arn).await? else {
            return Err(Error::NotFound {
                operation: "lambda:GetFunction",
                resource: arn.to_owned(),
                source: "it was deleted while azevac held its lock".into(),
            });
        };
        let detail: Detail = live.detail_as()?;
        Ok((live, detail))
    }
}

#[async_trait]
impl SubnetService for Lambda {
    fn resource_type(&self) -> &'static str {
        TYPE
    }

    /// `VpcConfig.SubnetIds` takes at most 16 items:
    /// <https://docs.aws.amazon.com/lambda/latest/api/API_VpcConfig.html>.
    fn max_subnets(&self, _resource: &Resource) -> Option<SubnetLimit> {
        Some(SubnetLimit {
            most: 16,
            what: "a Lambda function",
        })
    }

    async fn discover(&self) -> Result<Vec<Resource>> {
        let functions = self
            .client
            .list_functions()
            .max_items(LIST_PAGE)
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .map_err(|e| Error::from_sdk("lambda:ListFunctions", e))?;
        // Functions outside a VPC have no subnets and nothing to evacuate.
        Ok(functions
            .into_iter()
            .filter(|f| f.vpc_config().is_some_and(|v| !v.subnet_ids().is_empty()))
            .map(to_resource)
            .collect())
    }

    async fn read(&self, ids: &[String]) -> Result<BTreeMap<String, Resource>> {
        // No batch read exists: several at a time, each starting as soon as one ends.
        // Collected first: a lazy map inside the stream trips async-trait's Send check.
        let reads: Vec<_> = ids.iter().map(|arn| self.get(arn)).collect();
        let got: Vec<Option<Resource>> = futures::stream::iter(reads)
            .buffer_unordered(READ_CONCURRENCY)
            .try_collect()
            .await?;
        Ok(got.into_iter().flatten().map(|r| (r.id.clone(), r)).collect())
    }

    async fn apply(&self, resource: &Resource, subnets: &[String]) -> Result<()> {
        let backoff = ExponentialBuilder::default()
            .with_min_delay(self.conflict_backoff)
            .with_max_delay(self.conflict_backoff * 16)
            .with_max_times(CONFLICT_TRIES - 1);
        (|| self.update_once(resource, subnets))
            .retry(backoff)
            .sleep(tokio::time::sleep)
            .when(|e| matches!(e, Try::Conflict(_)))
            .notify(|_, delay| {
                tracing::info!(function = %resource.id, ?delay, "function is locked by another update; retrying")
            })
            .await
            .map_err(Try::into_error)
    }

    /// A function's Lambda-managed network interfaces (Hyperplane: one per subnet and
    /// security-group set, shared by every function with that pair). In the zone: those of its
    /// security groups in its zone subnets. Needed elsewhere: one per remaining subnet whose pair
    /// has no interface yet (usually none: the function already runs there), keyed by the pair so
    /// that functions sharing it count it once.
    async fn presence(&self, resources: &[Resource], place: &Place<'_>) -> Result<BTreeMap<String, Presence>> {
        let subnets: std::collections::BTreeSet<String> =
            resources.iter().flat_map(|r| r.subnets.iter().cloned()).collect();
        // Filtered here rather than by `interface-type`, which not every EC2 endpoint supports.
        let interfaces: Vec<crate::model::topology::Interface> = if subnets.is_empty() {
            Vec::new()
        } else {
            crate::model::topology::interfaces(place.ec2, "subnet-id", &subnets).await?
        };
        let interfaces: Vec<&crate::model::topology::Interface> =
            interfaces.iter().filter(|i| i.kind == "lambda").collect();
        let mut found = BTreeMap::new();
        for resource in resources {
            let detail: Detail = resource.detail_as()?;
            let mut groups = detail.security_groups.clone();
            groups.sort();
            let groups = groups.join(",");
            let mut in_zone = Vec::new();
            let mut needs = Vec::new();
            for subnet in &resource.subnets {
                let existing: Vec<&String> = interfaces
                    .iter()
                    .filter(|i| &i.subnet == subnet && i.groups == groups)
                    .map(|i| &i.id)
                    .collect();
                if place.zone_subnets.contains(subnet) {
                    in_zone.extend(existing.into_iter().cloned());
                } else if existing.is_empty() {
                    needs.push(format!("lambda-eni:{subnet}:{groups}"));
                }
            }
            found.insert(
                resource.id.clone(),
                Presence {
                    in_zone,
                    needs,
                    units: "network interfaces",
                    note: None,
                },
            );
        }
        Ok(found)
    }

    async fn inspect(&self, resources: &mut [Resource], want_tags: bool) -> Result<()> {
        // Only a function with a published version can have an alias pinned to one.
        let versioned = self.published(resources.len()).await;
        let versioned = &versioned;
        // One function's aliases (and tags) at a time would serialise the plan on the call latency:
        // read them side by side, as many as a batch read would cover (paced by crate::aws::pacing).
        let reads: Vec<_> = resources
            .iter_mut()
            .map(|resource| async move {
                let unversioned = versioned.as_ref().is_some_and(|v| v.unversioned(&resource.name));
                let aliases = if unversioned {
                    Vec::new()
                } else {
                    self.aliases(&resource.name).await?
                };
                let pinned: Vec<String> = aliases
                    .iter()
                    .filter(|a| a.function_version().is_some_and(|v| v != "$LATEST"))
                    .map(|a| {
                        format!(
                            "{} -> {}",
                            a.name().unwrap_or_default(),
                            a.function_version().unwrap_or_default()
                        )
                    })
                    .collect();
                if !pinned.is_empty() {
                    resource.notes.push(format!(
                        "{}: aliases on published versions keep the old network configuration ({})",
                        resource.name,
                        pinned.join(", ")
                    ));
                }
                if want_tags {
                    let out = self
                        .client
                        .list_tags()
                        .resource(&resource.id)
                        .send()
                        .await
                        .map_err(|e| Error::from_sdk("lambda:ListTags", e))?;
                    resource.tags = out.tags().map(|t| t.clone().into_iter().collect()).unwrap_or_default();
                }
                Ok::<(), Error>(())
            })
            .collect();
        futures::stream::iter(reads)
            .buffer_unordered(READ_CONCURRENCY)
            .try_collect::<Vec<()>>()
            .await?;
        Ok(())
    }

    async fn probe(&self) -> Vec<super::Check> {
        let functions = self.client.list_functions().max_items(1).send().await;
        vec![super::Check::answered(TYPE, "lambda:ListFunctions", functions)]
    }
}

fn to_resource(function: FunctionConfiguration) -> Resource {
    let vpc = function
        .vpc_config()
        .cloned()
        .unwrap_or_else(|| VpcConfigResponse::builder().build());
    let detail = Detail {
        security_groups: vpc.security_group_ids().to_vec(),
        ipv6_allowed_for_dual_stack: vpc.ipv6_allowed_for_dual_stack(),
        revision_id: function.revision_id().map(str::to_owned),
        update_in_progress: function.last_update_status() == Some(&LastUpdateStatus::InProgress),
    };
    Resource {
        resource_type: TYPE,
        id: function.function_arn().unwrap_or_default().to_owned(),
        name: function.function_name().unwrap_or_default().to_owned(),
        subnets: vpc.subnet_ids().to_vec(),
        tags: BTreeMap::new(),
        unsupported: None,
        notes: vec!["only $LATEST changes: published versions are immutable".to_owned()],
        detail: serde_json::to_value(detail).unwrap_or_default(),
        identity: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_lambda::operation::get_function::GetFunctionOutput;
    use aws_sdk_lambda::operation::list_functions::ListFunctionsOutput;
    use aws_sdk_lambda::operation::update_function_configuration::{
        UpdateFunctionConfigurationError, UpdateFunctionConfigurationOutput,
    };
    use aws_sdk_lambda::types::error::{PreconditionFailedException, ResourceConflictException};
    use aws_smithy_mocks::{mock, mock_client, RuleMode};

    fn function(name: &str, subnets: &[&str]) -> FunctionConfiguration {
        let mut vpc = VpcConfigResponse::builder()
            .security_group_ids("sg-1")
            .ipv6_allowed_for_dual_stack(true);
        for s in subnets {
            vpc = vpc.subnet_ids(*s);
        }
        FunctionConfiguration::builder()
            .function_name(name)
            .function_arn(format!("arn:aws:lambda:us-east-1:123456789012:function:{name}"))
            .revision_id("rev-1")
            .vpc_config(vpc.build())
            .build()
    }

    fn resource(in_progress: bool) -> Resource {
        let mut f = function("fn", &["subnet-a", "subnet-b"]);
        if in_progress {
            f.last_update_status = Some(LastUpdateStatus::InProgress);
        }
        to_resource(f)
    }

    /// GetFunction answering the function of [`resource`] with `revision`, every time.
    fn live(revision: &'static str) -> aws_smithy_mocks::Rule {
        mock!(aws_sdk_lambda::Client::get_function)
            .sequence()
            .output(move || {
                let mut f = function("fn", &["subnet-a", "subnet-b"]);
                f.revision_id = Some(revision.into());
                f.last_update_status = Some(LastUpdateStatus::Successful);
                GetFunctionOutput::builder().configuration(f).build()
            })
            .repeatedly()
            .build()
    }

    #[tokio::test]
    async fn discovery_pages_and_leaves_out_functions_without_a_vpc() {
        let page1 = mock!(aws_sdk_lambda::Client::list_functions)
            .match_requests(|r| r.marker().is_none())
            .then_output(|| {
                ListFunctionsOutput::builder()
                    .functions(function("in-vpc", &["subnet-a"]))
                    .functions(FunctionConfiguration::builder().function_name("no-vpc").build())
                    .next_marker("m2")
                    .build()
            });
        let page2 = mock!(aws_sdk_lambda::Client::list_functions)
            .match_requests(|r| r.marker() == Some("m2"))
            .then_output(|| {
                ListFunctionsOutput::builder()
                    .functions(function("second", &["subnet-b"]))
                    .build()
            });
        let client = mock_client!(aws_sdk_lambda, RuleMode::MatchAny, [&page1, &page2]);
        let found = Lambda::new(client).discover().await.expect("discover");
        let names: Vec<&str> = found.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["in-vpc", "second"]);
    }

    /// Reads go through GetFunction (its own quota); an answer without the configuration is an
    /// unreadable function, never a deleted one, and a function that is not found is left out.
    #[tokio::test]
    async fn reads_take_the_configuration_of_get_function_and_never_mistake_an_empty_answer_for_a_deletion() {
        let arn = |name: &str| format!("arn:aws:lambda:us-east-1:123456789012:function:{name}");
        let found = mock!(aws_sdk_lambda::Client::get_function)
            .match_requests(move |r| r.function_name() == Some(&arn("web")))
            .then_output(|| {
                GetFunctionOutput::builder()
                    .configuration(function("web", &["subnet-a", "subnet-b"]))
                    .build()
            });
        let empty = mock!(aws_sdk_lambda::Client::get_function)
            .match_requests(move |r| r.function_name() == Some(&arn("odd")))
            .then_output(|| GetFunctionOutput::builder().build());
        let gone = mock!(aws_sdk_lambda::Client::get_function)
            .match_requests(move |r| r.function_name() == Some(&arn("gone")))
            .then_error(|| {
                aws_sdk_lambda::operation::get_function::GetFunctionError::ResourceNotFoundException(
                    aws_sdk_lambda::types::error::ResourceNotFoundException::builder().build(),
                )
            });
        let client = mock_client!(aws_sdk_lambda, RuleMode::MatchAny, [&found, &empty, &gone]);
        let lambda = Lambda::new(client);
        let read = lambda.read(&[arn("web"), arn("gone")]).await.expect("read");
        assert_eq!(read.len(), 1, "the function not found is left out");
        assert_eq!(read[&arn("web")].subnets, ["subnet-a", "subnet-b"]);
        let err = lambda.read(&[arn("odd")]).await.expect_err("no configuration");
        assert!(
            crate::error::describe(&err).contains("no configuration"),
            "{}",
            crate::error::describe(&err)
        );
    }

    /// ResourceConflictException (another update holds the function) is retried, bounded; the update
    /// keeps the security groups, the IPv6 setting and the RevisionId.
    #[tokio::test]
    async fn a_locked_function_is_retried_then_updated() {
        let update = mock!(aws_sdk_lambda::Client::update_function_configuration)
            .match_requests(|r| {
                let vpc = r.vpc_config().expect("vpc config");
                r.revision_id() == Some("rev-1")
                    && vpc.subnet_ids() == ["subnet-a"]
                    && vpc.security_group_ids() == ["sg-1"]
                    && vpc.ipv6_allowed_for_dual_stack() == Some(true)
            })
            .sequence()
            .error(|| {
                UpdateFunctionConfigurationError::ResourceConflictException(
                    ResourceConflictException::builder()
                        .message("update in progress")
                        .build(),
                )
            })
            .times(2)
            .output(|| UpdateFunctionConfigurationOutput::builder().build())
            .build();
        let get = live("rev-1");
        let client = mock_client!(aws_sdk_lambda, RuleMode::MatchAny, [&get, &update]);
        let plugin = Lambda::new(client).with_conflict_backoff(Duration::from_millis(1));
        plugin
            .apply(&resource(false), &["subnet-a".into()])
            .await
            .expect("third try succeeds");
        assert_eq!(update.num_calls(), 3);
        assert_eq!(get.num_calls(), 3, "each try reads the revision afresh");
    }

    #[tokio::test]
    async fn a_function_that_stays_locked_fails_after_bounded_tries() {
        let update = mock!(aws_sdk_lambda::Client::update_function_configuration)
            .sequence()
            .error(|| {
                UpdateFunctionConfigurationError::ResourceConflictException(
                    ResourceConflictException::builder()
                        .message("update in progress")
                        .build(),
                )
            })
            .repeatedly()
            .build();
        let get = live("rev-1");
        let client = mock_client!(aws_sdk_lambda, RuleMode::MatchAny, [&get, &update]);
        let plugin = Lambda::new(client).with_conflict_backoff(Duration::from_millis(1));
        let err = plugin
            .apply(&resource(false), &["subnet-a".into()])
            .await
            .expect_err("gives up");
        assert_eq!(update.num_calls(), CONFLICT_TRIES);
        assert!(
            crate::error::describe(&err).contains("ResourceConflictException"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn a_concurrent_change_is_detected_not_overwritten() {
        let update = mock!(aws_sdk_lambda::Client::update_function_configuration).then_error(|| {
            UpdateFunctionConfigurationError::PreconditionFailedException(
                PreconditionFailedException::builder()
                    .message("revision mismatch")
                    .build(),
            )
        });
        let get = live("rev-1");
        let client = mock_client!(aws_sdk_lambda, RuleMode::MatchAny, [&get, &update]);
        let err = Lambda::new(client)
            .apply(&resource(false), &["subnet-a".into()])
            .await
            .expect_err("refused");
        assert!(
            err.to_string().contains("changed by someone else since the plan"),
            "{err}"
        );
        assert_eq!(update.num_calls(), 1, "a precondition failure is not retried");
    }

    /// Issue 50: a function whose update is in progress is waited for before and after the change,
    /// and the update carries the revision read after the wait: AWS changes it when the update in
    /// progress completes (aws/aws-sdk#377), so the one read before the wait would be refused.
    #[tokio::test]
    async fn issue_50_the_revision_sent_is_the_one_read_after_the_wait() {
        let answer = |status: LastUpdateStatus, revision: &str| {
            let mut f = function("fn", &["subnet-a", "subnet-b"]);
            f.last_update_status = Some(status);
            f.revision_id = Some(revision.into());
            GetFunctionOutput::builder().configuration(f).build()
        };
        let get = mock!(aws_sdk_lambda::Client::get_function)
            .sequence()
            .output(move || answer(LastUpdateStatus::InProgress, "rev-1"))
            .output(move || answer(LastUpdateStatus::Successful, "rev-2"))
            .output(move || answer(LastUpdateStatus::Successful, "rev-2"))
            .output(move || answer(LastUpdateStatus::Successful, "rev-4"))
            .build();
        let update = mock!(aws_sdk_lambda::Client::update_function_configuration)
            .match_requests(|r| r.revision_id() == Some("rev-2"))
            .then_output(|| {
                UpdateFunctionConfigurationOutput::builder()
                    .last_update_status(LastUpdateStatus::InProgress)
                    .revision_id("rev-3")
                    .build()
            });
        let client = mock_client!(aws_sdk_lambda, RuleMode::MatchAny, [&get, &update]);
        Lambda::new(client)
            .apply(&resource(true), &["subnet-a".into()])
            .await
            .expect("updated with the revision read after the wait");
        assert_eq!(update.num_calls(), 1);
        assert_eq!(
            get.num_calls(),
            4,
            "read, polled until Successful, read afresh, and polled once after the update"
        );
    }

    /// Issue 50: the change was computed from subnets the function no longer has (someone changed
    /// it since the read under the lock): nothing is sent, and the line is planned again.
    #[tokio::test]
    async fn issue_50_a_function_changed_since_the_read_is_not_overwritten() {
        let get = mock!(aws_sdk_lambda::Client::get_function)
            .sequence()
            .output(|| {
                let f = function("fn", &["subnet-a", "subnet-b", "subnet-c"]);
                GetFunctionOutput::builder().configuration(f).build()
            })
            .repeatedly()
            .build();
        let update = mock!(aws_sdk_lambda::Client::update_function_configuration)
            .then_output(|| UpdateFunctionConfigurationOutput::builder().build());
        let client = mock_client!(aws_sdk_lambda, RuleMode::MatchAny, [&get, &update]);
        let err = Lambda::new(client)
            .apply(&resource(false), &["subnet-a".into()])
            .await
            .expect_err("refused");
        assert!(err.to_string().contains("changed by someone else"), "{err}");
        assert_eq!(update.num_calls(), 0);
    }

    /// The listing of every version, `pages` pages of 50 entries: each function's `$LATEST`, and
    /// version 1 of `versioned`; the rules count the listing pages and the alias listings.
    fn versions_listing(names: &[String], versioned: &'static str, pages: usize) -> [aws_smithy_mocks::Rule; 2] {
        use aws_sdk_lambda::operation::list_aliases::ListAliasesOutput;
        use aws_sdk_lambda::types::{AliasConfiguration, FunctionVersion};
        let mut entries: Vec<FunctionConfiguration> = names
            .iter()
            .map(|n| {
                FunctionConfiguration::builder()
                    .function_name(n)
                    .version("$LATEST")
                    .build()
            })
            .collect();
        entries.push(
            FunctionConfiguration::builder()
                .function_name(versioned)
                .version("1")
                .build(),
        );
        let listing = mock!(aws_sdk_lambda::Client::list_functions)
            .match_requests(|r| r.function_version() == Some(&FunctionVersion::All))
            .then_compute_output(move |r| {
                let page: usize = r.marker().map_or(0, |m| m.parse().expect("marker"));
                let out = ListFunctionsOutput::builder().set_functions(Some(if page == 0 {
                    entries.clone()
                } else {
                    Vec::new()
                }));
                if page + 1 < pages {
                    out.next_marker((page + 1).to_string())
                } else {
                    out
                }
                .build()
            });
        let aliases = mock!(aws_sdk_lambda::Client::list_aliases).then_compute_output(|r| {
            let name = r.function_name().unwrap_or_default();
            ListAliasesOutput::builder()
                .aliases(
                    AliasConfiguration::builder()
                        .name("live")
                        .function_version(if name == "b" { "1" } else { "$LATEST" })
                        .build(),
                )
                .build()
        });
        [listing, aliases]
    }

    /// Sixteen candidates a, b, f2 to f15 (b with a published version; f15 missing from the listing,
    /// created since) inspected against a listing of every version in `pages` pages (two within
    /// the budget): the calls of the listing and of ListAliases, and the resources.
    async fn inspect_sixteen(pages: usize) -> (usize, usize, Vec<Resource>) {
        let mut names: Vec<String> = ["a", "b"].map(String::from).to_vec();
        names.extend((2..16).map(|n| format!("f{n}")));
        let [listing, aliases] = versions_listing(&names[..15], "b", pages);
        let client = mock_client!(aws_sdk_lambda, RuleMode::MatchAny, [&listing, &aliases]);
        let mut resources: Vec<Resource> = names.iter().map(|n| to_resource(function(n, &["subnet-a"]))).collect();
        Lambda::new(client)
            .inspect(&mut resources, false)
            .await
            .expect("inspect");
        (listing.num_calls(), aliases.num_calls(), resources)
    }

    /// Sixteen candidates, one listing page of every version: only `b`, which has a published
    /// version, and f15, which the listing did not see, have their aliases listed; b's alias pinned
    /// to version 1 is noted.
    #[tokio::test]
    async fn only_functions_with_published_versions_have_their_aliases_listed() {
        let (listings, alias_listings, resources) = inspect_sixteen(1).await;
        assert_eq!((listings, alias_listings), (1, 2));
        assert!(
            resources[1].notes.iter().any(|n| n.contains("live -> 1")),
            "{:?}",
            resources[1].notes
        );
        let noted = |r: &Resource| r.notes.iter().any(|n| n.contains("aliases on published versions"));
        assert_eq!(resources.iter().filter(|r| noted(r)).count(), 1);
    }

    /// An account whose versions take more pages than an eighth of the candidates: the listing stops
    /// at that budget and every candidate's aliases are listed, as before.
    #[tokio::test]
    async fn many_versions_fall_back_to_every_functions_aliases() {
        let (listings, alias_listings, resources) = inspect_sixteen(3).await;
        assert_eq!((listings, alias_listings), (2, 16));
        assert!(resources[1].notes.iter().any(|n| n.contains("live -> 1")));
    }
}
