//! A kind's own flags: declared by the kind with clap, carried in the request's options, read
//! back and checked by the kind; the plumbing that adds them to the commands and reads them.

use super::registry::REGISTRY;
use crate::model::{Command, Request};
use crate::Result;

/// A kind's own flags: declared by the kind with clap, kept in the request's options under their
/// JSON keys ([`Request::options`]), read back by the kind with [`Request::options_as`], and
/// checked by the kind. No shared module names them.
pub struct Flags {
    /// Who declares them: a group two kinds share (the Kubernetes ones) is added once.
    pub name: &'static str,
    /// Adds the flags `command` takes to its clap definition.
    pub add: fn(clap::Command, Command) -> clap::Command,
    /// What the operator gave on the command line of `command`, as request options.
    pub read: fn(&clap::ArgMatches, Command) -> Options,
    /// Checks them, whether they came from flags or from a saved plan (which no flag parser saw):
    /// one line that says what is allowed.
    pub validate: fn(&Request) -> Result<()>,
    /// The options of an evacuation that is to act on this kind's resources again, as an operator
    /// who asked for the kind would give them (a kind that acts only when asked, `--zonal-shift`):
    /// a recovery in waves stopped by an alarm takes its last wave back out with these.
    pub asked: fn() -> Options,
}

/// A request's per-kind options by JSON key.
pub type Options = serde_json::Map<String, serde_json::Value>;

/// A kind's flags as clap reads them: the command that takes them, and what they say as the
/// kind's request options. [`Flags::of`] makes the registry's entry from them.
pub trait CommandFlags: clap::Args + clap::FromArgMatches {
    /// The command that declares them (the other one does not know them).
    const COMMAND: Command;

    /// What the operator gave, as the kind's request options.
    fn options(self) -> Options;
}

impl Flags {
    /// The registry's entry for flags `F` that `command` takes, checked by `validate`.
    pub const fn of<F: CommandFlags>(name: &'static str, validate: fn(&Request) -> Result<()>) -> Flags {
        Flags {
            name,
            add: add_flags::<F>,
            read: read_flags::<F>,
            validate,
            asked: Options::new,
        }
    }

    /// These flags, with `asked` as the options that ask for the kind ([`Flags::asked`]).
    pub const fn asked(self, asked: fn() -> Options) -> Flags {
        Flags { asked, ..self }
    }
}

/// The options an evacuation of `types` needs to act on their resources again ([`Flags::asked`]).
pub fn asked_for(types: &[String]) -> Options {
    let mut options = Options::new();
    for flags in REGISTRY
        .iter()
        .filter(|r| types.iter().any(|t| t == r.name))
        .filter_map(|r| r.flags)
    {
        options.extend((flags.asked)());
    }
    options
}

/// Adds flags `F` to the command that takes them.
fn add_flags<F: CommandFlags>(command: clap::Command, which: Command) -> clap::Command {
    if which == F::COMMAND {
        F::augment_args(command)
    } else {
        command
    }
}

/// Flags `F` as given, on the command that takes them: only that command may be asked for them
/// (clap refuses an id it does not know).
fn read_flags<F: CommandFlags>(matches: &clap::ArgMatches, which: Command) -> Options {
    if which != F::COMMAND {
        return Options::new();
    }
    F::from_arg_matches(matches).map(F::options).unwrap_or_default()
}

/// A kind's option values as request options (its serde type; what it leaves out stays out).
pub fn to_options<T: serde::Serialize>(values: &T) -> Options {
    match serde_json::to_value(values) {
        Ok(serde_json::Value::Object(options)) => options,
        _ => Options::new(),
    }
}

/// A kind's options out of a request, checked against `longest` where they are waits: a value of
/// the wrong shape (a hand-edited plan file) or a wait over a week is bad input.
pub fn wait_within(name: &str, seconds: Option<u64>) -> Result<()> {
    match seconds {
        Some(s) if s > LONGEST_WAIT_SECONDS => Err(crate::Error::BadInput(format!(
            "{name} is {s}; at most {LONGEST_WAIT_SECONDS} (7 days)"
        ))),
        _ => Ok(()),
    }
}

/// The longest wait a request may ask for: a week (and no overflow of the clock arithmetic).
pub const LONGEST_WAIT_SECONDS: u64 = 7 * 24 * 3600;

/// Every kind's flags, each group once, in registry order.
pub fn flags() -> Vec<&'static Flags> {
    let mut all: Vec<&'static Flags> = Vec::new();
    for flags in REGISTRY.iter().filter_map(|r| r.flags) {
        if !all.iter().any(|f| f.name == flags.name) {
            all.push(flags);
        }
    }
    all
}
