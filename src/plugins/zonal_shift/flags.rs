//! The zonal shift kind's own flags: `--zonal-shift` and `--expires-in` (evacuate).

use clap::Args;
use serde::{Deserialize, Serialize};

use crate::model::{Command, Request};
use crate::plugins::{to_options, CommandFlags, Flags};
use crate::Result;

/// The flags, as clap reads them.
#[derive(Debug, Args)]
#[group(skip)]
struct Given {
    /// First shift traffic away from the zone with ARC zonal shift, for every managed resource
    /// deployed there (load balancers; Auto Scaling groups and EKS clusters with zonal shift enabled).
    #[arg(long)]
    zonal_shift: bool,
    #[command(flatten)]
    expiry: Expiry,
}

/// `--expires-in`, shared with `azevac shift start`.
#[derive(Debug, Clone, Args)]
pub struct Expiry {
    /// How long a zonal shift lasts from now (started or extended) unless `recover` cancels it
    /// first: minutes or hours, e.g. 3h (ARC allows 1m to 72h).
    #[arg(long, value_name = "DURATION", default_value = super::DEFAULT_EXPIRES_IN,
          value_parser = super::parse_expires_in)]
    pub expires_in: String,
}

/// The kind's options in a request (and a saved plan).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Options {
    /// `--zonal-shift`: start ARC zonal shifts first.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub zonal_shift: bool,
    /// `--expires-in` of those shifts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_in: Option<String>,
    /// `shift extend`: extend azevac's shifts in force for `expires_in` from now, start none.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub extend: bool,
}

/// The registry's entry for these flags.
pub static FLAGS: Flags = Flags::of::<Given>(super::TYPE, validate).asked(asked);

/// An evacuation that is to start shifts again must ask for them, with the default expiry.
fn asked() -> crate::plugins::Options {
    to_options(&Options {
        zonal_shift: true,
        expires_in: Some(super::DEFAULT_EXPIRES_IN.to_owned()),
        extend: false,
    })
}

impl CommandFlags for Given {
    const COMMAND: Command = Command::Evacuate;

    fn options(self) -> crate::plugins::Options {
        to_options(&Options {
            zonal_shift: self.zonal_shift,
            expires_in: Some(self.expiry.expires_in),
            extend: false,
        })
    }
}

fn validate(request: &Request) -> Result<()> {
    let options: Options = request.options_as()?;
    match &options.expires_in {
        Some(expires_in) => super::parse_expires_in(expires_in)
            .map(|_| ())
            .map_err(crate::Error::BadInput),
        None => Ok(()),
    }
}
