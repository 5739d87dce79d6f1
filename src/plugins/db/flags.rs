//! The database kind's own flag: `--failback` (recover).

use clap::Args;
use serde::{Deserialize, Serialize};

use crate::model::{Command, Request};
use crate::plugins::{to_options, CommandFlags, Flags};
use crate::Result;

/// `--failback`, as clap reads it.
#[derive(Debug, Args)]
#[group(skip)]
struct Given {
    /// Fail database writers back to the instance that was the writer before the evacuation, when it
    /// is available again (default: the writer stays where it is and only the record goes).
    #[arg(long)]
    failback: bool,
}

/// The kind's options in a request (and a saved plan).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Options {
    /// `--failback`: fail database writers back to where they were.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub failback: bool,
}

/// The registry's entry for this flag.
pub static FLAGS: Flags = Flags::of::<Given>(super::TYPE, validate);

impl CommandFlags for Given {
    const COMMAND: Command = Command::Recover;

    fn options(self) -> crate::plugins::Options {
        to_options(&Options {
            failback: self.failback,
        })
    }
}

fn validate(request: &Request) -> Result<()> {
    request.options_as::<Options>().map(|_| ())
}
