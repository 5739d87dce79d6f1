//! `azevac status`'s flags.

use clap::Args;

use super::*;

/// `azevac status`.
#[derive(Debug, Args)]
pub struct Status {
    /// Only this AZ ID (default: every evacuated AZ).
    #[arg(long, value_name = "AZ_ID")]
    pub az_id: Option<String>,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub types: Types,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub accounts: Accounts,
    /// Exit 3 when a zonal shift azevac started ends within DURATION (minutes or hours, e.g. 1h),
    /// or has already ended while its journal record says evacuated (for a monitor or a cron job).
    #[arg(long, value_name = "DURATION", value_parser = crate::plugins::expiring::window_seconds)]
    pub fail_if_expiring: Option<i64>,
    /// Tell these SNS topics when one of azevac's zonal shifts ends within the hour (or
    /// --fail-if-expiring's DURATION), or has ended while its record says evacuated: for a cron job
    /// or a monitor (repeatable). Nothing is published when all is well.
    #[command(flatten)]
    pub notify: Notify,
}
