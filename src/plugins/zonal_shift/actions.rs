//! What the `zonal-shift` kind journals: written ahead, the shift it is about to start (its ID is
//! not known yet: `recover` finds it by the run ID in its comment); once ARC answered, the ID of
//! the shift it started, which `recover` cancels. Extending a shift in force (`shift extend`, an
//! evacuation run again near its end) is written ahead as [`Action::Extend`] with the expiry it had,
//! and kept as [`Action::Extended`] with the expiry it had and the one ARC gave it.

use serde::{Deserialize, Serialize};

use crate::model::Record;
use crate::Result;

/// One journalled step of a shift record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// A shift away from `away_from` is about to be started (written ahead, before ARC is asked).
    Start {
        /// The AZ ID traffic is moved away from.
        away_from: String,
        /// ARC's `ExpiresIn` (`3h`, `180m`).
        expires_in: String,
    },
    /// The shift azevac started: `recover` cancels it.
    Started {
        /// The zonal shift ID.
        id: String,
    },
    /// azevac's shift `id` is about to be given a new expiry (written ahead, before ARC is asked).
    Extend {
        /// The zonal shift ID.
        id: String,
        /// Its expiry before (RFC 3339), as ARC listed it when the extension was planned.
        was: Option<String>,
        /// ARC's `ExpiresIn` from now (`3h`, `180m`).
        expires_in: String,
    },
    /// azevac's shift `id` was given a new expiry: the latest extension (one record per resource,
    /// not a history).
    Extended {
        /// The zonal shift ID.
        id: String,
        /// Its expiry before (RFC 3339).
        was: Option<String>,
        /// Its expiry since (RFC 3339), as ARC answered.
        until: Option<String>,
    },
}

/// Before journal format 2, a started shift: `zonal-shift:<id>`.
const LEGACY_STARTED: &str = "zonal-shift:";
/// Before journal format 2, the plan's words written ahead: `start zonal shift away from <AZ ID>,
/// expires in <duration>`.
const LEGACY_START: (&str, &str) = ("start zonal shift away from ", ", expires in ");

impl crate::model::action::Action for Action {
    fn describe(&self) -> String {
        match self {
            Action::Start { away_from, expires_in } => {
                format!("start zonal shift away from {away_from}, expires in {expires_in}")
            }
            Action::Started { id } => format!("started zonal shift {id}"),
            Action::Extend { id, was, expires_in } => {
                format!(
                    "extend zonal shift {id} (ends {}) to end in {expires_in}",
                    or_unknown(was)
                )
            }
            Action::Extended { id, was, until } => {
                format!(
                    "extended zonal shift {id} until {} (was {})",
                    or_unknown(until),
                    or_unknown(was)
                )
            }
        }
    }

    /// Reads the records written before journal format 2: `zonal-shift:<id>` once the shift was
    /// started, and the plan's words `start zonal shift away from <AZ ID>, expires in <duration>`
    /// written ahead before it was.
    fn legacy(text: &str) -> Option<Self> {
        if let Some(id) = text.strip_prefix(LEGACY_STARTED) {
            return (!id.is_empty()).then(|| Action::Started { id: id.to_owned() });
        }
        let (away_from, expires_in) = text.strip_prefix(LEGACY_START.0)?.split_once(LEGACY_START.1)?;
        (!away_from.is_empty() && !expires_in.is_empty()).then(|| Action::Start {
            away_from: away_from.to_owned(),
            expires_in: expires_in.to_owned(),
        })
    }
}

/// The shift ID a record says azevac started (`None`: the start was not acknowledged). A record
/// whose actions this version cannot read is an error, never "no shift".
pub fn started_id(record: &Record) -> Result<Option<String>> {
    Ok(record.actions_as::<Action>()?.into_iter().find_map(|a| match a {
        Action::Started { id } => Some(id),
        Action::Start { .. } | Action::Extend { .. } | Action::Extended { .. } => None,
    }))
}

/// An expiry as the journal keeps it, or words saying it was not known.
fn or_unknown(at: &Option<String>) -> &str {
    at.as_deref().unwrap_or("at an unknown time")
}

/// An evacuation line's private state when it extends a shift in force rather than starting one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Extension {
    /// The zonal shift ID.
    pub id: String,
    /// Its expiry when planned (RFC 3339).
    pub was: Option<String>,
}

/// A recovery line's private state: the shift it cancels.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cancel {
    /// The zonal shift ID.
    pub id: String,
}
