//! `azevac init`'s flags.

use clap::Args;

/// `azevac init`.
#[derive(Debug, Args)]
pub struct Init {
    /// Also turn on ARC's autoshift observer notification in this account and region: every
    /// autoshift of the region is then announced (to EventBridge, so to `azevac watch`), whatever
    /// is enrolled in zonal autoshift.
    #[arg(long)]
    pub autoshift_observer: bool,
}
