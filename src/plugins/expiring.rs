//! A capability beyond the trait: a kind whose changes end by themselves (ARC lets a zonal shift
//! expire while the journal still says evacuated) declares it in its registration
//! ([`super::Registration::expiring`]), and `status`, `doctor`, `--notify` and the watcher read
//! and renew those changes through it, without naming the kind.

use aws_config::SdkConfig;
use futures::future::BoxFuture;

use super::registry::REGISTRY;
use super::Check;
use crate::model::{Expiry, Record, Request};
use crate::Result;

/// When a kind's changes end, as its registration declares it.
pub struct Expiring {
    /// One of its changes, in running text (`zonal shift`); a table's column is named by it too.
    pub noun: &'static str,
    /// Its changes in short, in running text (`shifts`).
    pub short: &'static str,
    /// Who says when they end, in running text (`ARC`).
    pub source: &'static str,
    /// How close to its end (seconds) a change counts as expiring: warned of, and renewed by the
    /// watcher. `status --fail-if-expiring` gives another window.
    pub renew_within: i64,
    /// How a window before the end is written on the command line (`status --fail-if-expiring`:
    /// ARC's minutes or hours), in seconds; `Err` says what is allowed.
    pub window: fn(&str) -> std::result::Result<i64, String>,
    /// When each of the kind's records among `records` ends, asked of its service with `sdk` (the
    /// account the records were journalled in); per record, why not when its actions cannot be
    /// read. A change ending within `warn_within` seconds carries a warning.
    pub read: Read,
    /// A record whose account's changes could not be read (`why`): what it says, not known.
    pub not_checked: fn(&Record, &str) -> Result<Expiry>,
    /// `azevac doctor`'s line from what was read, and the problem lines of the accounts whose
    /// changes could not be read.
    pub check: fn(&[Expiry], &[String]) -> Check,
    /// What a run that renews them is called in its output (`shift extend`).
    pub renewed_as: &'static str,
    /// The request of a run that renews the kind's changes in force in a zone, starting none
    /// (`azevac watch`, and what `shift extend` asks by default).
    pub renewal: fn() -> Request,
}

/// [`Expiring::read`]: each record's expiry (or why its actions cannot be read), or why the
/// service could not be read at all.
pub type Read = for<'a> fn(&'a SdkConfig, &'a [Record], i64) -> BoxFuture<'a, Result<Vec<Result<Expiry>>>>;

/// The kinds whose changes end by themselves: each one's registry name and what it declares, in
/// registry order.
pub fn kinds() -> impl Iterator<Item = (&'static str, &'static Expiring)> {
    REGISTRY.iter().filter_map(|r| r.expiring.map(|e| (r.name, e)))
}

/// What `kind` declares, if its changes end by themselves.
pub fn of(kind: &str) -> Option<&'static Expiring> {
    kinds().find(|(name, _)| *name == kind).map(|(_, e)| e)
}

/// `status --fail-if-expiring`: a window before the end, as the expiring kinds write it (each
/// reads it its own way; the first that reads it wins, and the last one's words say what it
/// allows).
pub fn window_seconds(text: &str) -> std::result::Result<i64, String> {
    let mut why = "no kind's changes end by themselves".to_owned();
    for (_, expiring) in kinds() {
        match (expiring.window)(text) {
            Ok(seconds) => return Ok(seconds),
            Err(e) => why = e,
        }
    }
    Err(why)
}
