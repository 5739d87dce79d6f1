//! The command line, declared once with clap; each flag is documented where it is declared.

use clap::{Parser, Subcommand};

pub use crate::aws::alarms::parse_name as parse_alarm_name;
pub use crate::model::parse_tag;

mod apply;
mod doctor;
mod evacuate;
mod exposure;
mod global;
mod health;
mod init;
mod recover;
mod shared;
mod shift;
mod status;
mod watch;

pub use apply::Apply;
pub use doctor::Doctor;
pub use evacuate::Evacuate;
pub use exposure::Exposure;
pub use global::{Global, Output};
pub use health::Health;
pub use init::Init;
pub use recover::{Recover, Waves};
pub use shared::{AccountList, Accounts, Confirm, KubeAccess, Notify, Role, Types, Wait};
pub use shift::{Shift, ShiftCancel, ShiftExtend, ShiftList, ShiftStart};
pub use status::Status;
pub use watch::Watch;

/// Evacuate an AWS Availability Zone on the control plane (Auto Scaling, ECS, Lambda, EKS, Karpenter), and put it
/// back exactly. Every change is journalled in DynamoDB before it is made.
#[derive(Debug, Parser)]
#[command(
    name = "azevac",
    version = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("AZEVAC_COMMIT"), ")"),
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    /// Connection and output options shared by every command.
    #[command(flatten)]
    pub global: Global,
    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The whole command line: these definitions, and each kind's own flags on the commands that
/// take them (a kind declares its flags; nothing here names them).
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    let mut command = Cli::command();
    for (name, which) in [
        ("evacuate", crate::model::Command::Evacuate),
        ("recover", crate::model::Command::Recover),
        // A watcher evacuates and recovers: it takes both commands' kind flags.
        ("watch", crate::model::Command::Evacuate),
        ("watch", crate::model::Command::Recover),
    ] {
        command = command.mut_subcommand(name, |sub| {
            // A kind's flags come as a clap `Args` of their own, which would set the command's
            // about text: the command keeps its own.
            let (about, long_about) = (sub.get_about().cloned(), sub.get_long_about().cloned());
            let sub = crate::plugins::flags()
                .into_iter()
                .fold(sub, |sub, flags| (flags.add)(sub, which))
                .about(about.unwrap_or_default());
            match long_about {
                Some(text) => sub.long_about(text),
                None => sub.long_about(None),
            }
        });
    }
    command
}

/// Parse a command line, the kinds' flags included.
pub fn parse_from<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    use clap::FromArgMatches;
    let matches = command().try_get_matches_from(args)?;
    let mut cli = Cli::from_arg_matches(&matches)?;
    let read = |sub: &clap::ArgMatches, which| {
        let mut options = crate::plugins::Options::new();
        for flags in crate::plugins::flags() {
            options.extend((flags.read)(sub, which));
        }
        options
    };
    match (&mut cli.command, matches.subcommand()) {
        (Command::Evacuate(args), Some((_, sub))) => args.options = read(sub, crate::model::Command::Evacuate),
        (Command::Recover(args), Some((_, sub))) => args.options = read(sub, crate::model::Command::Recover),
        (Command::Watch(args), Some((_, sub))) => {
            args.evacuate_options = read(sub, crate::model::Command::Evacuate);
            args.recover_options = read(sub, crate::model::Command::Recover);
        }
        _ => {}
    }
    Ok(cli)
}

/// Parse this process's command line, or print clap's message and exit as clap does.
pub fn parse() -> Cli {
    parse_from(std::env::args_os()).unwrap_or_else(|e| e.exit())
}

impl Command {
    /// `--show-skipped`, on the commands that print a plan.
    pub fn show_skipped(&self) -> bool {
        match self {
            Command::Evacuate(Evacuate { confirm, .. })
            | Command::Recover(Recover { confirm, .. })
            | Command::Shift(Shift::Start(ShiftStart { confirm, .. }))
            | Command::Shift(Shift::Cancel(ShiftCancel { confirm, .. }))
            | Command::Shift(Shift::Extend(ShiftExtend { confirm, .. })) => confirm.show_skipped,
            Command::Apply(args) => args.show_skipped,
            _ => false,
        }
    }

    /// What the plan's heading calls a command that plans as evacuate or recover but is not
    /// either (`shift extend`): an operator who extended shifts must not read "evacuate".
    pub fn heading(&self) -> Option<&'static str> {
        match self {
            Command::Shift(Shift::Start(_)) => Some("shift start"),
            Command::Shift(Shift::Cancel(_)) => Some("shift cancel"),
            Command::Shift(Shift::Extend(_)) => Some("shift extend"),
            _ => None,
        }
    }

    /// The AZ ID the command names, if any: it also says which region the command is about.
    pub fn az_id(&self) -> Option<&str> {
        match self {
            Command::Evacuate(args) => Some(&args.az_id),
            Command::Recover(args) => args.az_id.as_deref(),
            Command::Status(args) => args.az_id.as_deref(),
            Command::Shift(Shift::Start(args)) => Some(&args.az_id),
            Command::Shift(Shift::List(args)) => args.az_id.as_deref(),
            Command::Shift(Shift::Cancel(args)) => args.az_id.as_deref(),
            Command::Shift(Shift::Extend(args)) => args.az_id.as_deref(),
            Command::Doctor(args) => args.az_id.as_deref(),
            Command::Exposure(args) => Some(&args.az_id),
            _ => None,
        }
    }
}

/// What azevac does.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create the journal table and its index (safe to run again).
    Init(Init),
    /// Take a zone's subnets out of every resource's network configuration.
    Evacuate(Evacuate),
    /// Put journalled subnets back (union with the current configuration), then delete the records.
    Recover(Recover),
    /// Carry out a plan saved with `--dry-run --output json`, exactly, after checking that the live
    /// state still gives the same plan (refuses with the differences if not).
    Apply(Apply),
    /// Show what the journal says is evacuated now.
    Status(Status),
    /// List, read-only, what has presence in a zone now (instances, tasks, nodes, functions, load
    /// balancers, VPC endpoints, volumes), each with the --type that moves it or why nothing does.
    Exposure(Exposure),
    /// ARC zonal shifts on their own: start them away from a zone, list them, cancel azevac's.
    #[command(subcommand)]
    Shift(Shift),
    /// Follow AWS's zonal autoshift onto the control plane (long-running): read ARC's events from an
    /// SQS queue, evacuate the zone an autoshift moves traffic away from, recover it in waves when
    /// the autoshift ends. One watcher acts per region (a lease in the journal); others stand by.
    Watch(Watch),
    /// Whether `azevac watch` is healthy, from the file its --health-file writes (no AWS call): exit 0
    /// healthy, 1 unhealthy or stalled (one line: the state, since when, what to do), 2 no readable
    /// file. For container health checks.
    Health(Health),
    /// Check, read-only, what an incident needs: credentials, region, the journal table, each type's
    /// read permissions, kube contexts, ARC; a checklist with a fix per failure (exit 1 on a failure).
    Doctor(Doctor),
    /// Print a shell completion script (e.g. `azevac completions bash > /etc/bash_completion.d/azevac`).
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), generated from these definitions: `azevac man | man -l -`.
    Man,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cli_is_well_formed() {
        command().debug_assert();
    }

    /// `--help` as an operator sees it (issue 7); a changed flag shows up in review.
    #[test]
    fn help_text() {
        let mut command = command().term_width(100);
        insta::assert_snapshot!("help", command.render_help().to_string());
        let evacuate = command.find_subcommand_mut("evacuate").expect("evacuate");
        insta::assert_snapshot!("evacuate_help", evacuate.render_help().to_string());
        let recover = command.find_subcommand_mut("recover").expect("recover");
        insta::assert_snapshot!("recover_help", recover.render_help().to_string());
    }

    #[test]
    fn tags_need_a_key_and_an_equals_sign() {
        assert_eq!(parse_tag("team=a=b"), Ok(("team".into(), "a=b".into())));
        assert_eq!(parse_tag("env="), Ok(("env".into(), String::new())));
        assert!(parse_tag("team").is_err());
        assert!(parse_tag("=a").is_err());
    }
}
