//! `azevac health`'s flags.

use clap::Args;

use super::shared::duration_within;

/// `azevac health`.
#[derive(Debug, Args)]
pub struct Health {
    /// The file `azevac watch --health-file` writes.
    #[arg(long, value_name = "PATH", env = "AZEVAC_HEALTH_FILE", hide_env_values = true)]
    pub health_file: Option<std::path::PathBuf>,
    /// Unhealthy ("stalled") when the watcher's last beat is older than this (default: the bound
    /// the watcher wrote in the file: its --operation-timeout, a third of its --lease or its
    /// --poll-wait, and 30s; 4m10s with the defaults).
    #[arg(long, value_name = "DURATION", value_parser = parse_stall_after)]
    pub stall_after: Option<std::time::Duration>,
}

/// `--stall-after`: between 1 second and 1 day.
pub(super) fn parse_stall_after(text: &str) -> Result<std::time::Duration, String> {
    duration_within(
        text,
        1..=86_400,
        "5m",
        "a watcher stalls after 1s to 1 day without a beat (e.g. 5m)",
    )
}
