//! `azevac watch`'s flags, and the runs it starts.

use clap::Args;

use super::shared::duration_within;
use super::*;
use crate::model::Request;

/// `azevac watch`.
#[derive(Debug, Args)]
pub struct Watch {
    /// The SQS queue an EventBridge rule feeds with ARC zonal shift's events
    /// (fixtures/autoshift-queue.cfn.yaml or .tf creates both).
    #[arg(long, value_name = "SQS_URL")]
    pub queue: String,
    /// The types the watcher evacuates and recovers, comma-separated: each one opted in.
    #[arg(long = "type", value_delimiter = ',', value_name = "TYPE", required = true,
          value_parser = clap::builder::PossibleValuesParser::new(crate::plugins::types()))]
    pub types: Vec<String>,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub accounts: Accounts,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub kube: KubeAccess,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub wait: Wait,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub notify: Notify,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub waves: Waves,
    /// Follow practice runs and FIS experiments too (ignored by default: they are rehearsals).
    #[arg(long)]
    pub follow_practice: bool,
    /// Change nothing: judge each event, print the plan the watcher would carry out and tell the
    /// --notify topics (no lease is taken).
    #[arg(long)]
    pub dry_run: bool,
    /// How often the watcher compares ARC's autoshifts with what it follows, whatever the queue
    /// says (a lost event costs this delay at most), and evacuates the followed zone again (which
    /// extends azevac's zonal shifts that end within the hour).
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_resync)]
    pub resync: std::time::Duration,
    /// How long one receive waits for a message (SQS long polling: 1s to 20s).
    #[arg(long, value_name = "DURATION", default_value = "20s", value_parser = parse_poll_wait)]
    pub poll_wait: std::time::Duration,
    /// Write the watcher's health to this file (JSON, replaced atomically) at start and on every
    /// turn of its loop, for `azevac health` (a container health check) to read.
    #[arg(long, value_name = "PATH", env = "AZEVAC_HEALTH_FILE", hide_env_values = true)]
    pub health_file: Option<std::path::PathBuf>,
    /// The evacuation's kind flags, as given (filled in by [`parse_from`]).
    #[arg(skip)]
    pub evacuate_options: crate::plugins::Options,
    /// The recovery's kind flags, as given (filled in by [`parse_from`]).
    #[arg(skip)]
    pub recover_options: crate::plugins::Options,
}

impl Watch {
    /// The request of every evacuation the watcher runs: the zone and the reason are each run's own.
    pub fn evacuation(&self) -> Request {
        Request {
            types: self.types.clone(),
            kube_contexts: self.kube.contexts.clone(),
            wait_timeout_seconds: Some(self.wait.wait_timeout.as_secs()),
            fleet: self.accounts.fleet(),
            options: self.evacuate_options.clone(),
            ..Request::default()
        }
    }

    /// The request of every recovery the watcher runs: in waves when it was given `--waves`.
    pub fn recovery(&self) -> Request {
        Request {
            types: self.types.clone(),
            kube_contexts: self.kube.contexts.clone(),
            wait_timeout_seconds: Some(self.wait.wait_timeout.as_secs()),
            fleet: self.accounts.fleet(),
            waves: self.waves.request(),
            options: self.recover_options.clone(),
            ..Request::default()
        }
    }
}

/// `--resync`: between 10 seconds and 1 hour.
pub(super) fn parse_resync(text: &str) -> Result<std::time::Duration, String> {
    duration_within(text, 10..=3600, "5m", "a resync comes every 10s to 1h (e.g. 5m)")
}

/// `--poll-wait`: SQS long polling waits 1 to 20 seconds.
pub(super) fn parse_poll_wait(text: &str) -> Result<std::time::Duration, String> {
    duration_within(text, 1..=20, "20s", "SQS waits 1s to 20s for a message (e.g. 20s)")
}
