//! The plugin seam: one file per resource type, each knowing only how to list its resources with
//! their subnets, read some back, and set new subnets. Planning, journaling, concurrency, retries and
//! reporting live outside, once.

use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;
use aws_config::SdkConfig;

use crate::Result;

pub mod asg;
pub mod ecs;
pub mod eks;
pub mod lambda;
pub mod zonal_shift;

/// Every plugin, in evacuation order: its `--type` value and how to build it.
/// Adding a resource type is one file in this folder and one line here.
const REGISTRY: &[(&str, Constructor)] = &[
    (asg::TYPE, asg::plugin),
    (ecs::TYPE, ecs::plugin),
    (lambda::TYPE, lambda::plugin),
];

/// Builds a plugin from the run's setup; `None` when the type does not apply to this run.
type Constructor = fn(&Setup) -> Option<Box<dyn Plugin>>;

/// What plugins are built from: the SDK configuration and the type-specific flags.
#[derive(Debug, Clone)]
pub struct Setup {
    /// The shared SDK configuration (region, credentials, endpoint, retries).
    pub sdk: SdkConfig,
    /// `--cluster`: the ECS clusters to look in (every cluster when empty).
    pub ecs_clusters: Vec<String>,
}

/// The `--type` values azevac knows, in evacuation order. Kubernetes nodes and zonal shifts come last:
/// they are not placed by subnets, so they have their own modules rather than registry entries.
pub fn types() -> Vec<&'static str> {
    REGISTRY
        .iter()
        .map(|(t, _)| *t)
        .chain([eks::TYPE, zonal_shift::TYPE])
        .collect()
}

/// One resource's network placement as its service reports it now.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Resource {
    /// The `--type` value of its plugin (`asg`).
    pub resource_type: &'static str,
    /// The identifier the journal keys on: the ARN.
    pub id: String,
    /// The short name an operator recognises.
    pub name: String,
    /// Its subnets, in the service's order.
    pub subnets: Vec<String>,
    /// Its tags, for `--tag` filters.
    pub tags: BTreeMap<String, String>,
    /// Why azevac cannot change this resource's subnets, if it cannot (shown as the skip reason).
    pub unsupported: Option<String>,
    /// Caveats the operator should read before this resource is changed.
    pub notes: Vec<String>,
    /// What the plugin needs to change the resource without losing other settings (security groups,
    /// cluster, revision...): the plugin's own type, serialised, opaque to everything else.
    pub detail: serde_json::Value,
}

/// A resource type azevac can evacuate. Implementations make plain service calls: the SDK retries
/// throttling, and the caller journals, plans and bounds concurrency.
#[async_trait]
pub trait Plugin: Send + Sync {
    /// The `--type` value and the journal's `resource_type` (`asg`).
    fn resource_type(&self) -> &'static str;

    /// Every resource of this type, with its current subnets (paginated, batched reads).
    async fn discover(&self) -> Result<Vec<Resource>>;

    /// The current state of the resources with these ids (ARNs); ids that no longer exist are absent.
    async fn read(&self, ids: &[String]) -> Result<BTreeMap<String, Resource>>;

    /// Set the resource's subnets to exactly `subnets`, keeping every other setting as it is.
    async fn apply(&self, resource: &Resource, subnets: &[String]) -> Result<()>;

    /// Add what discovery leaves out, for the resources about to be planned only: tags when
    /// `want_tags` (a `--tag` filter is set) and caveats. Most types have it all from discovery.
    async fn inspect(&self, _resources: &mut [Resource], _want_tags: bool) -> Result<()> {
        Ok(())
    }

    /// Add the steps an evacuation of this resource takes besides its subnets (ASG: `--pace`),
    /// recorded in its `detail` for `apply`; returns them as journal actions. Most types have none.
    fn plan_evacuation(&self, _resource: &mut Resource, _how: &Evacuation) -> Vec<String> {
        Vec::new()
    }

    /// Add what recovering this resource undoes besides its subnets, from the journal record's
    /// actions (ASG: resume what azevac suspended), recorded in its `detail` for `apply`; returns
    /// the steps as shown in the plan. Most types have none.
    fn plan_recovery(&self, _resource: &mut Resource, _record: &crate::journal::Record) -> Vec<String> {
        Vec::new()
    }

    /// Wait until the changed resources have settled (`--wait`), at most `timeout`. Returns the
    /// resources that did not, with why. Most types settle on their own.
    async fn settle(&self, _resources: &[Resource], _timeout: Duration) -> Result<Vec<(String, String)>> {
        Ok(Vec::new())
    }
}

/// How an evacuation is carried out, for the plugins that pace it.
#[derive(Debug, Clone, Default)]
pub struct Evacuation {
    /// This account's name of the zone being evacuated.
    pub az_name: String,
    /// `--pace N`: replace the zone's instances N at a time (Auto Scaling).
    pub pace: Option<u32>,
    /// How long pacing may wait for replacements, per resource.
    pub timeout: Duration,
}

/// The plugins for these types (every type when `types` is empty), in evacuation order.
pub fn select(setup: &Setup, types: &[String]) -> Vec<Box<dyn Plugin>> {
    REGISTRY
        .iter()
        .filter(|(t, _)| types.is_empty() || types.iter().any(|w| w == t))
        .filter_map(|(_, build)| build(setup))
        .collect()
}
