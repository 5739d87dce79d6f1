//! The Kubernetes kinds' own flags (eks nodes and Karpenter NodePools): `--k8s-mode` and
//! `--drain-timeout` (evacuate). Both kinds register this one group; it is added once.

use clap::Args;
use serde::{Deserialize, Serialize};

use crate::model::{Command, Request};
use crate::plugins::{to_options, wait_within, CommandFlags, Flags};
use crate::Result;

/// What evacuating a node means (`--k8s-mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Taint `NoExecute`: running pods are evicted (ignoring PodDisruptionBudgets), no new ones land.
    #[default]
    Noexecute,
    /// Taint `NoSchedule` and cordon: running pods stay, no new ones land.
    Noschedule,
    /// Cordon, then evict every evictable pod through the Eviction API (PodDisruptionBudgets respected).
    Drain,
}

/// The flags, as clap reads them.
#[derive(Debug, Args)]
#[group(skip)]
struct Given {
    /// What to do to the zone's Kubernetes nodes: noexecute (taint; evicts running pods, ignoring
    /// PodDisruptionBudgets), noschedule (taint + cordon; running pods stay, and Karpenter nodes are
    /// annotated karpenter.sh/do-not-disrupt), drain (cordon + evict through the Eviction API,
    /// respecting PodDisruptionBudgets).
    #[arg(long, value_enum, default_value_t = Mode::Noexecute)]
    k8s_mode: Mode,
    /// How long `--k8s-mode drain` retries evictions a PodDisruptionBudget refuses, per node.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_drain_timeout)]
    drain_timeout: std::time::Duration,
}

/// The kinds' options in a request (and a saved plan).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Options {
    /// `--k8s-mode`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k8s_mode: Option<Mode>,
    /// `--drain-timeout` in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drain_timeout_seconds: Option<u64>,
}

/// The registry's entry for these flags (both Kubernetes kinds name it).
pub static FLAGS: Flags = Flags::of::<Given>("kubernetes", validate);

impl CommandFlags for Given {
    const COMMAND: Command = Command::Evacuate;

    fn options(self) -> crate::plugins::Options {
        to_options(&Options {
            k8s_mode: Some(self.k8s_mode),
            drain_timeout_seconds: Some(self.drain_timeout.as_secs()),
        })
    }
}

fn validate(request: &Request) -> Result<()> {
    let options: Options = request.options_as()?;
    wait_within("drain_timeout_seconds", options.drain_timeout_seconds)
}

/// `--drain-timeout`: a duration of at most 7 days (longer is a typo, and would overflow the clock
/// arithmetic of the waits).
fn parse_drain_timeout(text: &str) -> std::result::Result<std::time::Duration, String> {
    let wait = humantime::parse_duration(text).map_err(|e| format!("{e} (e.g. 5m or 90s)"))?;
    if wait.as_secs() > crate::plugins::LONGEST_WAIT_SECONDS {
        return Err("at most 7 days (e.g. 5m or 2h)".into());
    }
    Ok(wait)
}
