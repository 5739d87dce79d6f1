//! The Auto Scaling kind's own flags: `--pace` (evacuate), the alarms that gate it, and how long
//! pacing may wait.

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
    /// With --pace: before each batch every CloudWatch alarm named (repeatable) must be OK (the
    /// batch waits); one in ALARM stops the pacing, the instances still in the zone left there.
    #[arg(long, value_name = "NAME", value_parser = crate::aws::alarms::parse_name)]
    pace_alarm: Vec<String>,
    /// With --pace: gate each batch on every alarm whose name starts with PREFIX too (repeatable).
    #[arg(long, value_name = "PREFIX", value_parser = crate::aws::alarms::parse_name)]
    pace_alarm_prefix: Vec<String>,
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
    /// `--pace-alarm`: the alarms each batch is gated on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pace_alarms: Vec<String>,
    /// `--pace-alarm-prefix`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pace_alarm_prefixes: Vec<String>,
}

/// The registry's entry for these flags.
pub static FLAGS: Flags = Flags::of::<Given>(super::TYPE, validate);

impl CommandFlags for Given {
    const COMMAND: Command = Command::Evacuate;

    fn options(self) -> crate::plugins::Options {
        to_options(&Options {
            pace: self.pace,
            pace_timeout_seconds: None,
            pace_alarms: self.pace_alarm,
            pace_alarm_prefixes: self.pace_alarm_prefix,
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
    let gated = !options.pace_alarms.is_empty() || !options.pace_alarm_prefixes.is_empty();
    if gated && options.pace.is_none() {
        return Err(crate::Error::BadInput(
            "--pace-alarm and --pace-alarm-prefix gate --pace's batches: give --pace N too".into(),
        ));
    }
    // The alarms a batch waits for are the incident's, in the operator's own account (as recover's
    // --alarm): a member account's role is not granted them.
    if gated && !request.fleet.accounts.is_empty() {
        return Err(crate::Error::BadInput(
            "--pace-alarm reads the operator's own account's alarms: pace other accounts' groups without it, or \
             run azevac in each account"
                .into(),
        ));
    }
    // A saved plan's names, held to what the flags accept.
    for name in options.pace_alarms.iter().chain(&options.pace_alarm_prefixes) {
        crate::aws::alarms::parse_name(name).map_err(crate::Error::BadInput)?;
    }
    wait_within("pace_timeout_seconds", options.pace_timeout_seconds)
}
