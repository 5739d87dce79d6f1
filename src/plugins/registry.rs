//! The registry: every kind of zonal action as data (its name, services, IAM actions, flags and
//! what it declares beyond the trait), and what the rest of azevac reads from that one list.

use std::collections::BTreeMap;
use std::path::PathBuf;

use aws_config::SdkConfig;
use futures::future::BoxFuture;

use super::expiring::Expiring;
use super::flags::Flags;
use super::iam::CORE_SERVICES;
use super::plugin::Plugin;
use super::{asg, batch, db, ecs, eks, eventbridge, karpenter, lambda, nat, scheduler, vpc_endpoint, zonal_shift};
use crate::model::{Record, Request};
use crate::Result;

/// One kind of zonal action, as the registry knows it.
pub struct Registration {
    /// The `--type` value and the journal's `resource_type`.
    pub name: &'static str,
    /// The IAM service prefixes its calls are authorized under (for the IAM policy's drift test).
    pub services: &'static [&'static str],
    /// The services its changes are made through (the signing names pacing goes by).
    pub changes_through: &'static [&'static str],
    /// The IAM actions its calls need, in the account it acts in (`service:Action`; waiters and
    /// checks AWS makes on the caller's behalf included): the IAM policy and the member role grant
    /// these and the core ones, and nothing else (tests/it/registry.rs).
    pub iam_actions: &'static [&'static str],
    /// Builds the plugin from the run's setup; `None` when the type does not apply to this run.
    pub build: Constructor,
    /// The kind's own flags (`--pace`, `--failback`), if it has any.
    pub flags: Option<&'static Flags>,
    /// A record's actions in the operator's words, read as the kind's own action type
    /// ([`crate::model::Record::words_as`]); an action that does not parse is an error, never shown as a guess.
    pub describe: fn(&Record) -> Result<Vec<String>>,
    /// What else a resource (by its journal key) belongs to that one bad change could take down
    /// with it, an EKS or ECS cluster: a recovery in waves spreads over them.
    pub cluster: fn(&str) -> Option<&str>,
    /// What the kind can do beyond the trait: its changes end by themselves, and `status`,
    /// `doctor`, `--notify` and the watcher read and renew them through this; `None`: they last.
    pub expiring: Option<&'static Expiring>,
}

/// [`Registration::cluster`] for kinds whose resources stand alone.
pub fn no_cluster(_resource: &str) -> Option<&str> {
    None
}

impl Registration {
    /// Whether the type acts through Kubernetes contexts rather than AWS APIs.
    pub fn is_kubernetes(&self) -> bool {
        self.services.is_empty()
    }
}

/// Per type, the rate its changes are paced to: the paced rate of the service its changes go
/// through; of several (databases: RDS or ElastiCache), the fastest, so that no read is taken for
/// fresh longer than the quickest of them needs. A type with a change service that is not paced
/// (or none) is left out.
pub fn paced_rates(limits: &crate::aws::pacing::Limits) -> BTreeMap<String, f64> {
    REGISTRY
        .iter()
        .filter_map(|r| {
            let rates: Option<Vec<f64>> = r.changes_through.iter().map(|s| limits.rate(s)).collect();
            let fastest = rates?.into_iter().reduce(f64::max)?;
            Some((r.name.to_owned(), fastest))
        })
        .collect()
}

/// The types that act through Kubernetes contexts (not fanned out across accounts).
pub fn kubernetes_types() -> Vec<&'static str> {
    REGISTRY.iter().filter(|r| r.is_kubernetes()).map(|r| r.name).collect()
}

/// Builds a plugin (may connect, as Kubernetes does).
pub type Constructor = for<'a> fn(&'a Setup) -> BoxFuture<'a, Result<Option<Box<dyn Plugin>>>>;

/// Every kind of zonal action, in plan order within a stage. Adding one is a file in this folder
/// and a line here; nothing else lists the types.
pub const REGISTRY: &[Registration] = &[
    asg::REGISTRATION,
    ecs::REGISTRATION,
    lambda::REGISTRATION,
    eks::REGISTRATION,
    karpenter::REGISTRATION,
    zonal_shift::REGISTRATION,
    nat::REGISTRATION,
    db::REGISTRATION,
    batch::REGISTRATION,
    vpc_endpoint::REGISTRATION,
    eventbridge::REGISTRATION,
    scheduler::REGISTRATION,
];

/// Every AWS service azevac calls (signing names; the same as the IAM prefixes here): the core
/// ones and each registered type's, for `--max-rate`.
pub fn services() -> Vec<&'static str> {
    let mut all: Vec<&'static str> = CORE_SERVICES
        .iter()
        .chain(REGISTRY.iter().flat_map(|r| r.services.iter()))
        .copied()
        .collect();
    all.sort_unstable();
    all.dedup();
    all
}

/// The `--type` values azevac knows, in registry order.
pub fn types() -> Vec<&'static str> {
    REGISTRY.iter().map(|r| r.name).collect()
}

/// What plugins are built from: the SDK configuration and the request.
#[derive(Debug, Clone)]
pub struct Setup {
    /// The shared SDK configuration (region, credentials, endpoint, retries).
    pub sdk: SdkConfig,
    /// What the operator asked for.
    pub request: Request,
    /// `--kubeconfig`, for the Kubernetes types.
    pub kubeconfig: Option<PathBuf>,
    /// The account reached by assuming a role there (`--accounts`); `None`: the caller's own.
    pub account: Option<String>,
}

/// The plugins for the request's types (every type when none is named), in registry order.
pub async fn select(setup: &Setup) -> Result<Vec<Box<dyn Plugin>>> {
    let mut plugins = Vec::new();
    for registration in REGISTRY {
        let wanted = setup.request.types.is_empty() || setup.request.names(registration.name);
        // Kubernetes types reach their clusters through kube contexts, not AWS accounts: a run
        // across accounts would act on the same clusters once per account.
        let reachable = setup.account.is_none() || !registration.is_kubernetes();
        if wanted && reachable {
            if let Some(plugin) = (registration.build)(setup).await? {
                plugins.push(plugin);
            }
        }
    }
    Ok(plugins)
}
