//! `azevac exposure`'s flags.

use clap::Args;

use super::*;

/// `azevac exposure`.
#[derive(Debug, Args)]
pub struct Exposure {
    /// The AZ ID to look at, e.g. use1-az2.
    #[arg(long, value_name = "AZ_ID")]
    pub az_id: String,
    /// Exit 3 when anything azevac can move is still in the zone (for runbooks and CI after an
    /// evacuation). Findings azevac cannot move (standalone instances, VPC endpoints, EBS volumes)
    /// and traffic already shifted away do not count.
    #[arg(long)]
    pub fail_if_exposed: bool,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub kube: KubeAccess,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub accounts: Accounts,
}
