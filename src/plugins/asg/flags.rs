//! The Auto Scaling kind's own flag: `--pace` (evacuate), and how long pacing may wait.

use clap::Args;
use serde::{Deserialize, Serialize};

use crate::model::{Command, Request};
use crate::plugins::{to_options, wait_within, CommandFlags, Flags};
use crate::Result;

/// `--pace`, as clap reads it.
#[derive(Debug, Args)]
#[group(skip)]
struct Given {
    /// Pace Auto Scaling groups: suspend AZRebalance, then terminate the zone's instances N at a
    /// time (capacity kept), each batch once the last one's replacements are InService elsewhere
    /// (at most --wait-timeout per group). `recover` resumes what azevac suspended.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pace: Option<u32>,
}

/// The kind's options in a request (and a saved plan).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Options {
    /// `--pace N`: the zone's instances replaced N at a time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pace: Option<u32>,
    /// How long pacing waits for replacements per group, in seconds (plans saved before it was
    /// `--wait-timeout`'s own value; now `--wait-timeout` is read where this is absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pace_timeout_seconds: Option<u64>,
}

/// The registry's entry for these flags.
pub static FLAGS: Flags = Flags::of::<Given>(super::TYPE, validate);

impl CommandFlags for Given {
    const COMMAND: Command = Command::Evacuate;

    fn options(self) -> crate::plugins::Options {
        to_options(&Options {
            pace: self.pace,
            pace_timeout_seconds: None,
        })
    }
}

fn validate(request: &Request) -> Result<()> {
    let options: Options = request.options_as()?;
    if options.pace == Some(0) {
        return Err(crate::Error::BadInput(
            "pace must be at least 1 instance at a time".into(),
        ));
    }
    wait_within("pace_timeout_seconds", options.pace_timeout_seconds)
}
