//! `azevac apply`'s flags.

use clap::Args;

use super::*;

/// `azevac apply`.
#[derive(Debug, Args)]
pub struct Apply {
    /// The saved plan: `azevac evacuate|recover ... --dry-run --output json > plan.json` (`-`: stdin).
    #[arg(value_name = "PLAN_FILE")]
    pub plan: std::path::PathBuf,
    /// Do not ask for confirmation (required when stdin is not a terminal).
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// List every skipped line of the plan: a plan with more than 20 counts them by reason.
    #[arg(long)]
    pub show_skipped: bool,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub wait: Wait,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub notify: Notify,
    /// Kubeconfig file for the plan's kube contexts (default: KUBECONFIG, then ~/.kube/config).
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<std::path::PathBuf>,
    // The role the plan must assume in each account: a plan file can be edited, and one that
    // names another role or external ID is refused with --yes and asked about without.
    #[command(flatten)]
    #[allow(missing_docs)]
    pub role: Role,
    /// Assume the plan's role and external ID where they differ from the command line's, once you
    /// have checked that the plan should act under that identity.
    #[arg(long)]
    pub accept_plan_role: bool,
}
