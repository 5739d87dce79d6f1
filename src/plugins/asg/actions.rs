//! What the `asg` kind journals besides subnets, with `--pace`: the process azevac suspended (and
//! `recover` resumes), and the paced terminations (for the operator: `recover` undoes nothing of
//! them, the group's replacements are in the other zones already).

use serde::{Deserialize, Serialize};

/// One step of a paced evacuation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// A scaling process azevac suspended (`AZRebalance`): `recover` resumes it.
    Suspend {
        /// The Auto Scaling process name.
        process: String,
    },
    /// The zone's instances terminated `batch` at a time, each batch once its replacements serve.
    Terminate {
        /// How many instances were in the zone when planned.
        in_zone: usize,
        /// Instances terminated at once (`--pace`).
        batch: u32,
    },
}

/// Before journal format 2, a suspension: `suspend:<process>`.
const LEGACY_SUSPEND: &str = "suspend:";
/// Before journal format 2, the paced terminations: `terminate:<N> in the zone, <B> at a time`.
const LEGACY_TERMINATE: (&str, &str, &str) = ("terminate:", " in the zone, ", " at a time");

impl crate::model::action::Action for Action {
    /// The plan's words, as azevac has always shown them.
    fn describe(&self) -> String {
        match self {
            Action::Suspend { process } => format!("{LEGACY_SUSPEND}{process}"),
            Action::Terminate { in_zone, batch } => format!(
                "{}{in_zone}{}{batch}{}",
                LEGACY_TERMINATE.0, LEGACY_TERMINATE.1, LEGACY_TERMINATE.2
            ),
        }
    }

    /// Reads the records written before journal format 2: `suspend:AZRebalance` and
    /// `terminate:<N> in the zone, <B> at a time`.
    fn legacy(text: &str) -> Option<Self> {
        if let Some(process) = text.strip_prefix(LEGACY_SUSPEND) {
            return (!process.is_empty()).then(|| Action::Suspend {
                process: process.to_owned(),
            });
        }
        let (in_zone, batch) = text
            .strip_prefix(LEGACY_TERMINATE.0)?
            .strip_suffix(LEGACY_TERMINATE.2)?
            .split_once(LEGACY_TERMINATE.1)?;
        Some(Action::Terminate {
            in_zone: in_zone.parse().ok()?,
            batch: batch.parse().ok()?,
        })
    }
}
