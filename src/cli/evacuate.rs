//! `azevac evacuate`'s flags, and the request they make.

use clap::Args;

use super::*;
use crate::model::Request;

/// `azevac evacuate`.
#[derive(Debug, Args)]
pub struct Evacuate {
    /// The AZ ID to evacuate, e.g. use1-az2 (an ID, not a name such as us-east-1c).
    #[arg(long, value_name = "AZ_ID")]
    pub az_id: String,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub types: Types,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub accounts: Accounts,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub confirm: Confirm,
    /// Only resources with this tag (repeatable: all must match).
    #[arg(long = "tag", value_name = "KEY=VALUE", value_parser = parse_tag)]
    pub tags: Vec<(String, String)>,
    /// Only resources whose name starts with this (ECS: CLUSTER/SERVICE).
    #[arg(long, value_name = "PREFIX")]
    pub name_prefix: Option<String>,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub wait: Wait,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub notify: Notify,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub kube: KubeAccess,
    /// Why, recorded in every journal record this run writes (e.g. an incident ticket).
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
    /// Go ahead, with a warning, past the checks that hold a resource back: an Auto Scaling group
    /// behind a load balancer with cross-zone load balancing off and no zonal shift away from the
    /// zone, and a resource whose remaining subnets lack the free IP addresses for what moves there.
    #[arg(long)]
    pub force: bool,
    /// The kinds' own flags, as given (filled in by [`parse_from`]).
    #[arg(skip)]
    pub options: crate::plugins::Options,
}

impl Evacuate {
    /// The plan's inputs as given on the command line.
    pub fn request(&self) -> Request {
        Request {
            types: self.types.types.clone(),
            tags: self.tags.iter().map(|(k, v)| format!("{k}={v}")).collect(),
            name_prefix: self.name_prefix.clone(),
            kube_contexts: self.kube.contexts.clone(),
            reason: self.reason.clone(),
            forget_missing: false,
            force: self.force,
            wait_timeout_seconds: Some(self.wait.wait_timeout.as_secs()),
            fleet: self.accounts.fleet(),
            waves: None,
            options: self.options.clone(),
        }
    }
}
