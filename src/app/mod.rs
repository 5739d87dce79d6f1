//! Runs as values, above the engine: a request and a schedule (at once, in waves, for many
//! accounts, under a watcher's lease) in, a typed outcome out. Nothing here prints a plan or reads
//! a flag: the commands turn flags into requests and show the outcomes ([`run::Screen`]). Also the
//! runs' company: notifications, the watcher's events and health, the exposure report's reads.

pub mod accounts;
pub mod autoshift;
mod context;
pub mod exposure;
pub mod fanout;
pub mod health;
pub mod notify;
pub mod run;
pub mod watch;
pub mod waves;

pub use context::{Context, Settings};
pub use fanout::Fanout;
pub use run::{exit_code, Order, Outcome, Run, Schedule, Screen, EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK};

/// Check a request in one place, whether it came from flags or from a saved plan file (which
/// bypasses every check the flags make): the engine's and its kinds' checks, and the accounts and
/// waves this layer carries out. One line that says what is allowed.
pub fn validate(request: &crate::model::Request) -> crate::Result<()> {
    // In the order they were always made: an input wrong twice names the same fault first.
    crate::engine::known_types(request)?;
    accounts::validate(&request.fleet, &request.types)?;
    crate::engine::validate(request)?;
    if let Some(waves) = &request.waves {
        waves::gates::validate(waves)?;
    }
    Ok(())
}
