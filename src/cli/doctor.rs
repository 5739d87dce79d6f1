//! `azevac doctor`'s flags.

use clap::Args;

use super::*;

/// `azevac doctor`.
#[derive(Debug, Args)]
pub struct Doctor {
    /// Also check that this AZ ID is one of the region's, e.g. use1-az2.
    #[arg(long, value_name = "AZ_ID")]
    pub az_id: Option<String>,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub kube: KubeAccess,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub accounts: Accounts,
}
