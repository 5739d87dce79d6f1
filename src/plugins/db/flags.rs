//! The database kind's own flag: `--failback` (recover).

use clap::{Args, FromArgMatches};
use serde::{Deserialize, Serialize};

use crate::model::{Command, Request};
use crate::plugins::{to_options, Flags};
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
pub static FLAGS: Flags = Flags {
    name: super::TYPE,
    add,
    read,
    validate,
};

fn add(command: clap::Command, which: Command) -> clap::Command {
    match which {
        Command::Recover => Given::augment_args(command),
        Command::Evacuate => command,
    }
}

fn read(matches: &clap::ArgMatches, which: Command) -> crate::plugins::Options {
    // Only the command that declares them may be asked for them (clap refuses an unknown id).
    match which {
        Command::Recover => match Given::from_arg_matches(matches) {
            Ok(given) => to_options(&Options {
                failback: given.failback,
            }),
            Err(_) => crate::plugins::Options::new(),
        },
        _ => crate::plugins::Options::new(),
    }
}

fn validate(request: &Request) -> Result<()> {
    request.options_as::<Options>().map(|_| ())
}
