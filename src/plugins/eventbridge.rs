//! EventBridge rules whose targets run ECS tasks: subnets live in the target's
//! `EcsParameters.NetworkConfiguration.awsvpcConfiguration.subnets`.
//!
//! A rule places a task only when it fires, so nothing of it runs in the zone between firings; but
//! every firing after the evacuation would start tasks there again. Each such target of a rule on
//! any event bus is one resource. `PutTargets` replaces a target whole (by its Id), so the change
//! is made from the target as read right before it, with only its subnets changed: its role,
//! input, input transformer, retry policy, dead-letter queue and every other ECS parameter are
//! sent back as they were. Rules managed by another AWS service refuse changes to their targets:
//! those are listed as skipped.

use std::collections::{BTreeMap, BTreeSet};

use async_trait::async_trait;
use aws_sdk_eventbridge::types::{Rule, Target};
use futures::{StreamExt, TryStreamExt};
use serde::{Deserialize, Serialize};

use super::subnets::Subnets;
use super::{Place, Plugin, Presence, Resource, Setup, SubnetLimit, SubnetService};
use crate::{Error, Result};

/// The `--type` value and journal `resource_type` of EventBridge rule targets.
pub const TYPE: &str = "eventbridge";

/// How the registry knows this kind: its calls, its IAM actions, its options.
pub const REGISTRATION: super::Registration = super::Registration {
    name: TYPE,
    services: &["events"],
    changes_through: &["events"],
    iam_actions: &[
        "events:ListEventBuses",
        "events:ListRules",
        "events:DescribeRule",
        "events:ListTargetsByRule",
        "events:ListTagsForResource",
        "events:PutTargets",
        // PutTargets checks that the caller may pass the target's role to EventBridge.
        "iam:PassRole",
    ],
    build: plugin,
    flags: None,
    describe: crate::model::Record::words_as::<crate::model::action::NoAction>,
    cluster: super::no_cluster,
    expiring: None,
};

/// `ListEventBuses`, `ListRules` and `ListTargetsByRule` page at most 100.
const LIST_PAGE: i32 = 100;
/// Rules read at once (their targets, their tags).
const READ_CONCURRENCY: usize = 8;

/// The event bus of rules that name none.
const DEFAULT_BUS: &str = "default";

const FIRES_NOTE: &str = "places ECS tasks only when the rule fires: tasks it started earlier run on where they are";

/// Where the target lives, so that the change can read it again and put it back whole.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Detail {
    bus: String,
    rule: String,
    target: String,
}

/// The EventBridge rule targets plugin.
#[derive(Debug, Clone)]
pub struct EventBridge {
    client: aws_sdk_eventbridge::Client,
}

/// Registry constructor: EventBridge applies to every run.
pub fn plugin(setup: &Setup) -> futures::future::BoxFuture<'_, Result<Option<Box<dyn Plugin>>>> {
    Box::pin(async move {
        let service = EventBridge::new(crate::client!(aws_sdk_eventbridge, &setup.sdk));
        Ok(Some(Subnets::plugin(service, &setup.sdk)))
    })
}

/// The journal key of one target: `<rule ARN>/<target Id>`. A target has no ARN of its own; its Id
/// is unique within its rule only, and the rule's ARN names the rule and its bus, so together they
/// name the target for good. Neither a rule name nor a target Id can hold a `/`
/// (`[\.\-_A-Za-z0-9]+`), so the key splits back unambiguously ([`parse_key`]).
fn key(rule_arn: &str, target_id: &str) -> String {
    format!("{rule_arn}/{target_id}")
}

/// `arn:aws:events:R:A:rule/[BUS/]RULE/TARGET` → (bus, rule, target). A bus name may hold `/`
/// (partner buses: `aws.partner/...`), so the rule and target are taken from the end.
fn parse_key(id: &str) -> Option<Detail> {
    let (rule_arn, target) = id.rsplit_once('/')?;
    let path = rule_arn.split_once(":rule/")?.1;
    let (bus, rule) = match path.rsplit_once('/') {
        Some((bus, rule)) => (bus, rule),
        None => (DEFAULT_BUS, path),
    };
    if rule.is_empty() || target.is_empty() || bus.is_empty() {
        return None;
    }
    Some(Detail {
        bus: bus.to_owned(),
        rule: rule.to_owned(),
        target: target.to_owned(),
    })
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

/// One target of a rule as a resource (`None`: it places no task in subnets).
fn to_resource(bus: &str, rule: &Rule, target: &Target, tags: &BTreeMap<String, String>) -> Option<Resource> {
    let subnets = subnets_of(target)?;
    let rule_name = rule.name().unwrap_or_default();
    let detail = Detail {
        bus: bus.to_owned(),
        rule: rule_name.to_owned(),
        target: target.id().to_owned(),
    };
    let name = if bus == DEFAULT_BUS {
        format!("{rule_name}/{}", target.id())
    } else {
        format!("{bus}/{rule_name}/{}", target.id())
    };
    let unsupported = rule
        .managed_by()
        .map(|by| format!("rule managed by {by}: EventBridge refuses changes to its targets (change it through {by})"));
    Some(Resource {
        resource_type: TYPE,
        id: key(rule.arn().unwrap_or_default(), target.id()),
        name,
        subnets: subnets.to_vec(),
        tags: tags.clone(),
        unsupported,
        notes: vec![FIRES_NOTE.to_owned()],
        detail: serde_json::to_value(detail).unwrap_or_default(),
        identity: None,
    })
}

/// A failed entry of `PutTargets`: the call answered, but the target was not changed.
fn failed_entries(out: &aws_sdk_eventbridge::operation::put_targets::PutTargetsOutput) -> Option<String> {
    let entries: Vec<String> = out
        .failed_entries()
        .iter()
        .map(|e| {
            format!(
                "{}: {} {}",
                e.target_id().unwrap_or("?"),
                e.error_code().unwrap_or("?"),
                e.error_message().unwrap_or_default()
            )
        })
        .collect();
    match (out.failed_entry_count(), entries.is_empty()) {
        (0, true) => None,
        (count, true) => Some(format!("{count} failed entries, none named")),
        (_, false) => Some(entries.join("; ")),
    }
}

impl EventBridge {
    /// A plugin over this client.
    pub fn new(client: aws_sdk_eventbridge::Client) -> Self {
        EventBridge { client }
    }

    // EventBridge's SDK has no paginators for these three listings: the loops follow NextToken.

    async fn buses(&self) -> Result<Vec<String>> {
        let mut buses = Vec::new();
        let mut next = None;
        loop {
            let page = self
                .client
                .list_event_buses()
                .limit(LIST_PAGE)
                .set_next_token(next)
                .send()
                .await
                .map_err(|e| Error::from_sdk("events:ListEventBuses", e))?;
            buses.extend(page.event_buses().iter().filter_map(|b| b.name().map(str::to_owned)));
            next = page.next_token;
            if next.is_none() {
                return Ok(buses);
            }
        }
    }

    async fn rules(&self, bus: &str) -> Result<Vec<Rule>> {
        let mut rules = Vec::new();
        let mut next = None;
        loop {
            let page = self
                .client
                .list_rules()
                .event_bus_name(bus)
                .limit(LIST_PAGE)
                .set_next_token(next)
                .send()
                .await
                .map_err(|e| Error::from_sdk("events:ListRules", e))?;
            rules.extend(page.rules().iter().cloned());
            next = page.next_token;
            if next.is_none() {
                return Ok(rules);
            }
        }
    }

    /// A rule's targets; `None` when the rule (or its bus) no longer exists.
    async fn targets(&self, bus: &str, rule: &str) -> Result<Option<Vec<Target>>> {
        let mut targets = Vec::new();
        let mut next = None;
        loop {
            let page = self
                .client
                .list_targets_by_rule()
                .event_bus_name(bus)
                .rule(rule)
                .limit(LIST_PAGE)
                .set_next_token(next)
                .send()
                .await;
            let page = match page {
                Ok(page) => page,
                Err(e)
                    if e.as_service_error()
                        .is_some_and(|e| e.is_resource_not_found_exception()) =>
                {
                    return Ok(None)
                }
                Err(e) => return Err(Error::from_sdk("events:ListTargetsByRule", e)),
            };
            targets.extend(page.targets().iter().cloned());
            next = page.next_token;
            if next.is_none() {
                return Ok(Some(targets));
            }
        }
    }

    /// A rule as `DescribeRule` tells it; `None` when it (or its bus) no longer exists.
    async fn rule(&self, bus: &str, name: &str) -> Result<Option<Rule>> {
        match self.client.describe_rule().event_bus_name(bus).name(name).send().await {
            Ok(out) => Ok(Some(
                Rule::builder()
                    .set_name(out.name)
                    .set_arn(out.arn)
                    .set_managed_by(out.managed_by)
                    .set_event_bus_name(out.event_bus_name)
                    .build(),
            )),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|e| e.is_resource_not_found_exception()) =>
            {
                Ok(None)
            }
            Err(e) => Err(Error::from_sdk("events:DescribeRule", e)),
        }
    }

    /// One rule's ECS targets with subnets, as resources (none when the rule is gone).
    async fn rule_resources(&self, bus: &str, rule: &Rule) -> Result<Vec<Resource>> {
        let Some(targets) = self.targets(bus, rule.name().unwrap_or_default()).await? else {
            return Ok(Vec::new());
        };
        let none = BTreeMap::new();
        Ok(targets
            .iter()
            .filter_map(|t| to_resource(bus, rule, t, &none))
            .collect())
    }

    async fn tags(&self, rule_arn: &str) -> Result<BTreeMap<String, String>> {
        let out = self
            .client
            .list_tags_for_resource()
            .resource_arn(rule_arn)
            .send()
            .await
            .map_err(|e| Error::from_sdk("events:ListTagsForResource", e))?;
        Ok(out
            .tags()
            .iter()
            .map(|t| (t.key().to_owned(), t.value().to_owned()))
            .collect())
    }
}

#[async_trait]
impl SubnetService for EventBridge {
    fn resource_type(&self) -> &'static str {
        TYPE
    }

    /// An ECS target's `AwsVpcConfiguration` takes "as many as 16 subnets":
    /// <https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_AwsVpcConfiguration.html>.
    fn max_subnets(&self, _resource: &Resource) -> Option<SubnetLimit> {
        Some(SubnetLimit {
            most: 16,
            what: "an EventBridge ECS target",
        })
    }

    async fn discover(&self) -> Result<Vec<Resource>> {
        let mut rules = Vec::new();
        for bus in self.buses().await? {
            rules.extend(self.rules(&bus).await?.into_iter().map(|r| (bus.clone(), r)));
        }
        // Collected first: a lazy map inside the stream trips async-trait's Send check.
        let reads: Vec<_> = rules.iter().map(|(bus, rule)| self.rule_resources(bus, rule)).collect();
        let found: Vec<Vec<Resource>> = futures::stream::iter(reads)
            .buffered(READ_CONCURRENCY)
            .try_collect()
            .await?;
        Ok(found.into_iter().flatten().collect())
    }

    async fn read(&self, ids: &[String]) -> Result<BTreeMap<String, Resource>> {
        let mut rules: BTreeSet<(String, String)> = BTreeSet::new();
        for id in ids {
            let detail = parse_key(id).ok_or_else(|| {
                Error::BadInput(format!(
                    "{} is not an EventBridge rule target key",
                    crate::model::text::clean(id)
                ))
            })?;
            rules.insert((detail.bus, detail.rule));
        }
        let reads: Vec<_> = rules
            .iter()
            .map(|(bus, name)| async move {
                match self.rule(bus, name).await? {
                    Some(rule) => self.rule_resources(bus, &rule).await,
                    None => Ok(Vec::new()),
                }
            })
            .collect();
        let found: Vec<Vec<Resource>> = futures::stream::iter(reads)
            .buffer_unordered(READ_CONCURRENCY)
            .try_collect()
            .await?;
        let wanted: BTreeSet<&String> = ids.iter().collect();
        Ok(found
            .into_iter()
            .flatten()
            .filter(|r| wanted.contains(&r.id))
            .map(|r| (r.id.clone(), r))
            .collect())
    }

    /// Tags are the rule's (a target has none), read only for a `--tag` filter.
    async fn inspect(&self, resources: &mut [Resource], want_tags: bool) -> Result<()> {
        if !want_tags {
            return Ok(());
        }
        let rules: BTreeSet<String> = resources
            .iter()
            .filter_map(|r| r.id.rsplit_once('/').map(|(rule, _)| rule.to_owned()))
            .collect();
        let reads: Vec<_> = rules
            .iter()
            .map(|rule| async move { Ok::<_, Error>((rule.clone(), self.tags(rule).await?)) })
            .collect();
        let tags: BTreeMap<String, BTreeMap<String, String>> = futures::stream::iter(reads)
            .buffer_unordered(READ_CONCURRENCY)
            .try_collect()
            .await?;
        for resource in resources {
            if let Some(found) = resource.id.rsplit_once('/').and_then(|(rule, _)| tags.get(rule)) {
                resource.tags = found.clone();
            }
        }
        Ok(())
    }

    /// `PutTargets` replaces the target with the same Id whole: it is read again right before, and
    /// sent back with only its subnets changed. A target whose subnets moved since the line was
    /// planned from them is left alone (someone else changed it meanwhile).
    async fn apply(&self, resource: &Resource, subnets: &[String]) -> Result<()> {
        let detail: Detail = resource.detail_as()?;
        let targets = self.targets(&detail.bus, &detail.rule).await?.unwrap_or_default();
        let gone = || Error::NotFound {
            operation: "events:ListTargetsByRule",
            resource: resource.name.clone(),
            source: "the rule or its target no longer exists".into(),
        };
        let current = targets.iter().find(|t| t.id() == detail.target).ok_or_else(gone)?;
        if subnets_of(current) != Some(resource.subnets.as_slice()) {
            return Err(Error::ChangedSincePlan {
                resource: resource.name.clone(),
                source: format!(
                    "its subnets are now [{}], the change was computed from [{}]",
                    subnets_of(current).unwrap_or_default().join(", "),
                    resource.subnets.join(", ")
                )
                .into(),
            });
        }
        let changed = with_subnets(current, subnets).ok_or_else(gone)?;
        let out = self
            .client
            .put_targets()
            .event_bus_name(&detail.bus)
            .rule(&detail.rule)
            .targets(changed)
            .send()
            .await
            .map_err(|e| Error::from_sdk("events:PutTargets", e))?;
        match failed_entries(&out) {
            None => Ok(()),
            Some(why) => Err(Error::Aws {
                operation: "events:PutTargets",
                source: format!("the target was not changed: {}", crate::model::text::clean(&why)).into(),
            }),
        }
    }

    /// Nothing of it runs in the zone between firings, and moving it takes no address now: the
    /// headroom check sees a demand of none (its tasks take addresses only when the rule fires).
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
        let buses = self.client.list_event_buses().limit(1).send().await;
        let rules = self.client.list_rules().limit(1).send().await;
        vec![
            super::Check::answered(TYPE, "events:ListEventBuses", buses),
            super::Check::answered(TYPE, "events:ListRules", rules),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_eventbridge::operation::list_targets_by_rule::ListTargetsByRuleOutput;
    use aws_sdk_eventbridge::operation::put_targets::PutTargetsOutput;
    use aws_sdk_eventbridge::types::{
        AssignPublicIp, AwsVpcConfiguration, DeadLetterConfig, EcsParameters, InputTransformer, LaunchType,
        NetworkConfiguration, PutTargetsResultEntry, RetryPolicy,
    };
    use aws_smithy_mocks::{mock, mock_client, RuleMode};
    use proptest::prelude::*;

    const RULE: &str = "arn:aws:events:us-east-1:123456789012:rule/ops/nightly";

    fn target(id: &str, subnets: &[&str]) -> Target {
        let awsvpc = AwsVpcConfiguration::builder()
            .set_subnets(Some(subnets.iter().map(|s| s.to_string()).collect()))
            .security_groups("sg-1")
            .assign_public_ip(AssignPublicIp::Disabled)
            .build()
            .expect("awsvpc");
        Target::builder()
            .id(id)
            .arn("arn:aws:ecs:us-east-1:123456789012:cluster/prod")
            .role_arn("arn:aws:iam::123456789012:role/events-ecs")
            .input_transformer(
                InputTransformer::builder()
                    .input_paths_map("day", "$.time")
                    .input_template(r#"{"day": <day>}"#)
                    .build()
                    .expect("transformer"),
            )
            .retry_policy(RetryPolicy::builder().maximum_retry_attempts(3).build())
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

    fn rule() -> Rule {
        Rule::builder().name("nightly").arn(RULE).event_bus_name("ops").build()
    }

    #[test]
    fn a_key_names_its_bus_rule_and_target() {
        let id = key(RULE, "report");
        assert_eq!(
            parse_key(&id),
            Some(Detail {
                bus: "ops".into(),
                rule: "nightly".into(),
                target: "report".into()
            })
        );
        let default = parse_key("arn:aws:events:us-east-1:1:rule/hourly/t1").expect("default bus");
        assert_eq!((default.bus.as_str(), default.rule.as_str()), (DEFAULT_BUS, "hourly"));
        let partner = parse_key("arn:aws:events:us-east-1:1:rule/aws.partner/saas.com/123/r/t").expect("partner");
        assert_eq!(
            (partner.bus.as_str(), partner.rule.as_str(), partner.target.as_str()),
            ("aws.partner/saas.com/123", "r", "t")
        );
        assert_eq!(parse_key("arn:aws:events:us-east-1:1:rule/only"), None);
        assert_eq!(parse_key("arn:aws:ecs:us-east-1:1:service/a/b"), None);
    }

    proptest! {
        /// Any bus (with `/`), rule and target Id the service allows makes a key that splits back.
        #[test]
        fn every_key_splits_back(
            bus in "[a-z][a-z0-9.]{0,8}(/[a-z0-9.]{1,8}){0,2}",
            rule in "[.\\-_A-Za-z0-9]{1,16}",
            target in "[.\\-_A-Za-z0-9]{1,16}",
        ) {
            let arn = if bus == DEFAULT_BUS {
                format!("arn:aws:events:us-east-1:1:rule/{rule}")
            } else {
                format!("arn:aws:events:us-east-1:1:rule/{bus}/{rule}")
            };
            let detail = parse_key(&key(&arn, &target)).expect("a key");
            prop_assert_eq!(detail, Detail { bus, rule, target });
        }
    }

    #[test]
    fn only_targets_with_subnets_are_resources_and_managed_rules_are_skipped() {
        let placed = to_resource(
            "ops",
            &rule(),
            &target("report", &["subnet-a", "subnet-b"]),
            &BTreeMap::new(),
        )
        .expect("a resource");
        assert_eq!(placed.id, format!("{RULE}/report"));
        assert_eq!(placed.name, "ops/nightly/report");
        assert_eq!(placed.subnets, ["subnet-a", "subnet-b"]);
        assert!(placed.unsupported.is_none());
        let lambda = Target::builder()
            .id("fn")
            .arn("arn:aws:lambda:us-east-1:1:function:f")
            .build()
            .expect("t");
        assert!(to_resource("ops", &rule(), &lambda, &BTreeMap::new()).is_none());
        let managed = Rule::builder()
            .name("nightly")
            .arn(RULE)
            .managed_by("batch.amazonaws.com")
            .build();
        let skipped =
            to_resource("ops", &managed, &target("report", &["subnet-a"]), &BTreeMap::new()).expect("a resource");
        assert!(skipped
            .unsupported
            .expect("unsupported")
            .contains("batch.amazonaws.com"));
    }

    /// The target sent back differs from the one read in its subnets only.
    #[test]
    fn the_changed_target_keeps_every_other_field() {
        let read = target("report", &["subnet-a", "subnet-zone", "subnet-b"]);
        let changed = with_subnets(&read, &["subnet-a".into(), "subnet-b".into()]).expect("changed");
        assert_eq!(
            subnets_of(&changed),
            Some(&["subnet-a".to_string(), "subnet-b".to_string()][..])
        );
        let back = with_subnets(&changed, subnets_of(&read).expect("subnets")).expect("back");
        assert_eq!(back, read);
    }

    /// Against the service: the change reads the rule's targets, sends only that target back with
    /// its subnets changed, and a failed entry in the answer fails the change.
    #[tokio::test]
    async fn put_targets_sends_the_target_as_read_and_a_failed_entry_fails() {
        let listed = mock!(aws_sdk_eventbridge::Client::list_targets_by_rule).then_output(|| {
            ListTargetsByRuleOutput::builder()
                .targets(target("other", &["subnet-zone"]))
                .targets(target("report", &["subnet-a", "subnet-zone"]))
                .build()
        });
        let put = mock!(aws_sdk_eventbridge::Client::put_targets)
            .match_requests(|r| {
                r.rule() == Some("nightly")
                    && r.event_bus_name() == Some("ops")
                    && r.targets() == [target("report", &["subnet-a"])]
            })
            .then_output(|| PutTargetsOutput::builder().failed_entry_count(0).build());
        let client = mock_client!(aws_sdk_eventbridge, RuleMode::MatchAny, [&listed, &put]);
        let resource = to_resource(
            "ops",
            &rule(),
            &target("report", &["subnet-a", "subnet-zone"]),
            &BTreeMap::new(),
        )
        .expect("resource");
        EventBridge::new(client)
            .apply(&resource, &["subnet-a".into()])
            .await
            .expect("changed");
        assert_eq!(put.num_calls(), 1);

        let refused = mock!(aws_sdk_eventbridge::Client::put_targets).then_output(|| {
            PutTargetsOutput::builder()
                .failed_entry_count(1)
                .failed_entries(
                    PutTargetsResultEntry::builder()
                        .target_id("report")
                        .error_code("ConcurrentModificationException")
                        .build(),
                )
                .build()
        });
        let client = mock_client!(aws_sdk_eventbridge, RuleMode::MatchAny, [&listed, &refused]);
        let err = EventBridge::new(client)
            .apply(&resource, &["subnet-a".into()])
            .await
            .expect_err("a failed entry is a failure");
        let text = crate::error::describe(&err);
        assert!(text.contains("ConcurrentModificationException"), "{text}");
    }

    /// A target whose subnets changed after the line was planned is not overwritten.
    #[tokio::test]
    async fn a_target_changed_since_the_read_is_left_alone() {
        let listed = mock!(aws_sdk_eventbridge::Client::list_targets_by_rule).then_output(|| {
            ListTargetsByRuleOutput::builder()
                .targets(target("report", &["subnet-b", "subnet-zone"]))
                .build()
        });
        let put = mock!(aws_sdk_eventbridge::Client::put_targets)
            .then_output(|| PutTargetsOutput::builder().failed_entry_count(0).build());
        let client = mock_client!(aws_sdk_eventbridge, RuleMode::MatchAny, [&listed, &put]);
        let resource = to_resource(
            "ops",
            &rule(),
            &target("report", &["subnet-a", "subnet-zone"]),
            &BTreeMap::new(),
        )
        .expect("resource");
        let err = EventBridge::new(client)
            .apply(&resource, &["subnet-a".into()])
            .await
            .expect_err("changed since");
        assert!(matches!(err, Error::ChangedSincePlan { .. }), "{err:?}");
        assert_eq!(put.num_calls(), 0);
    }

    /// Discovery follows NextToken on every listing (the SDK has no paginators here).
    #[tokio::test]
    async fn discovery_follows_every_page() {
        use aws_sdk_eventbridge::operation::list_event_buses::ListEventBusesOutput;
        use aws_sdk_eventbridge::operation::list_rules::ListRulesOutput;
        use aws_sdk_eventbridge::types::EventBus;
        let buses =
            mock!(aws_sdk_eventbridge::Client::list_event_buses).then_compute_output(|r| match r.next_token() {
                None => ListEventBusesOutput::builder()
                    .event_buses(EventBus::builder().name("default").build())
                    .next_token("b2")
                    .build(),
                Some(_) => ListEventBusesOutput::builder()
                    .event_buses(EventBus::builder().name("ops").build())
                    .build(),
            });
        let rules = mock!(aws_sdk_eventbridge::Client::list_rules).then_compute_output(|r| {
            let bus = r.event_bus_name().unwrap_or_default().to_owned();
            let rule = |n: &str| {
                let arn = if bus == "default" {
                    format!("arn:aws:events:us-east-1:1:rule/{n}")
                } else {
                    format!("arn:aws:events:us-east-1:1:rule/{bus}/{n}")
                };
                Rule::builder().name(n).arn(arn).build()
            };
            match r.next_token() {
                None => ListRulesOutput::builder().rules(rule("r1")).next_token("r2").build(),
                Some(_) => ListRulesOutput::builder().rules(rule("r2")).build(),
            }
        });
        let targets =
            mock!(aws_sdk_eventbridge::Client::list_targets_by_rule).then_compute_output(|r| match r.next_token() {
                None => ListTargetsByRuleOutput::builder()
                    .targets(target("t1", &["subnet-a"]))
                    .next_token("t2")
                    .build(),
                Some(_) => ListTargetsByRuleOutput::builder()
                    .targets(target("t2", &["subnet-b"]))
                    .build(),
            });
        let client = mock_client!(aws_sdk_eventbridge, RuleMode::MatchAny, [&buses, &rules, &targets]);
        let found = EventBridge::new(client).discover().await.expect("discover");
        let names: BTreeSet<String> = found.iter().map(|r| r.name.clone()).collect();
        assert_eq!(names.len(), 8, "{names:?}");
        assert!(names.contains("r1/t1") && names.contains("ops/r2/t2"), "{names:?}");
        assert_eq!((buses.num_calls(), rules.num_calls(), targets.num_calls()), (2, 4, 8));
    }
}
