//! The command line, declared once with clap; each flag is documented where it is declared.

use clap::{Args, Parser, Subcommand};

pub use crate::aws::alarms::parse_name as parse_alarm_name;
use crate::journal::DEFAULT_TABLE;
pub use crate::model::parse_tag;
use crate::model::Request;

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

/// Options every command takes.
#[derive(Debug, Args)]
pub struct Global {
    /// AWS region (default: the SDK chain: AWS_REGION, then the profile).
    #[arg(long, global = true)]
    pub region: Option<String>,
    /// Named profile from ~/.aws/config (SSO profiles work; default: AWS_PROFILE).
    #[arg(long, global = true)]
    pub profile: Option<String>,
    /// Send every AWS call to this endpoint, e.g. an emulator (default: AWS_ENDPOINT_URL, else AWS).
    #[arg(long, global = true, value_name = "URL")]
    pub endpoint_url: Option<String>,
    /// DynamoDB journal table.
    #[arg(long, global = true, env = "AZEVAC_TABLE", hide_env_values = true, default_value = DEFAULT_TABLE)]
    pub table: String,
    /// Output format: a table for people (`wide`: with every identifier), or exactly one JSON
    /// document on stdout.
    #[arg(long, short = 'o', global = true, default_value = "table", value_parser = output_parser())]
    pub output: Output,
    /// Resources of each type changed at the same time; the types are changed side by side, as each
    /// service has its own quota (in each account, with --accounts). 1: one resource at a time, in
    /// plan order.
    #[arg(long, global = true, default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub concurrency: u16,
    /// With --accounts: accounts planned and changed at the same time (each account's control plane
    /// throttles on its own, so an organization of up to this many takes about as long as one).
    #[arg(long, global = true, default_value_t = 64, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub account_concurrency: u16,
    /// No progress bar, even on a terminal (plain lines only).
    #[arg(long, global = true)]
    pub no_progress: bool,
    /// Print AWS calls per operation, retries and wall time per phase to stderr (and into --output json).
    #[arg(long, global = true)]
    pub stats: bool,
    /// How long a resource's lock lasts between renewals: a run that dies holds its resources this
    /// long at most, then the next run takes them over.
    #[arg(long, global = true, env = "AZEVAC_LEASE", hide_env_values = true, value_name = "DURATION", default_value = "2m",
          value_parser = parse_lease)]
    pub lease: std::time::Duration,
    /// How long one attempt of an AWS call may take before it is abandoned and retried: a control
    /// plane that accepts the connection and never answers must not hang the run.
    #[arg(long, global = true, env = "AZEVAC_ATTEMPT_TIMEOUT", hide_env_values = true, value_name = "DURATION",
          default_value = "30s", value_parser = parse_call_timeout)]
    pub attempt_timeout: std::time::Duration,
    /// How long one AWS call may take in all, retries and backoff included; then it fails.
    #[arg(long, global = true, env = "AZEVAC_OPERATION_TIMEOUT", hide_env_values = true, value_name = "DURATION",
          default_value = "3m", value_parser = parse_call_timeout)]
    pub operation_timeout: std::time::Duration,
    /// Pace calls to one AWS service to N requests per second (SERVICE=N, repeatable; SERVICE=unlimited
    /// lifts a default). Defaults follow the published quotas: ec2=20 (burst 100), lambda=15.
    #[arg(long, global = true, env = "AZEVAC_MAX_RATE", hide_env_values = true, value_name = "SERVICE=N",
          value_delimiter = ',', value_parser = parse_max_rate)]
    pub max_rate: Vec<(String, Option<crate::aws::pacing::Rate>)>,
    /// More log lines on stderr (-v info, -vv debug); RUST_LOG overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// What goes to stderr: lines for people, or one JSON object per line for the incident timeline
    /// (run started, each line planned and changed / failed / skipped, run ended; each with an
    /// RFC 3339 timestamp and the run ID). No progress bar with json.
    #[arg(long, global = true, env = "AZEVAC_LOG_FORMAT", hide_env_values = true, value_enum,
          default_value_t = crate::process::events::LogFormat::Text)]
    pub log_format: crate::process::events::LogFormat,
}

pub use crate::model::Output;

/// `--output`: the model's plain `Output`, with the words and help clap shows for it.
fn output_parser() -> impl clap::builder::TypedValueParser<Value = Output> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    PossibleValuesParser::new([
        PossibleValue::new("table").help("A table that fits the screen (COLUMNS, else the terminal), and a summary"),
        PossibleValue::new("wide")
            .help("The same table with every identifier in full: ARNs, subnet IDs with their Name tags, whole reasons"),
        PossibleValue::new("json").help("One JSON document"),
    ])
    .map(|word| match word.as_str() {
        "json" => Output::Json,
        "wide" => Output::Wide,
        _ => Output::Table,
    })
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

/// `--type`, shared by the commands that act per resource type.
#[derive(Debug, Args)]
pub struct Types {
    /// Resource types, comma-separated (default: every type).
    #[arg(long = "type", value_delimiter = ',', value_name = "TYPE",
          value_parser = clap::builder::PossibleValuesParser::new(crate::plugins::types()))]
    pub types: Vec<String>,
}

/// `--dry-run` and `--yes`, shared by the commands that change things.
#[derive(Debug, Args)]
pub struct Confirm {
    /// Print the plan and change nothing (no journal record is written either).
    #[arg(long)]
    pub dry_run: bool,
    /// Do not ask for confirmation (required when stdin is not a terminal).
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// List every skipped line of the plan: a plan with more than 20 counts them by reason.
    #[arg(long)]
    pub show_skipped: bool,
}

/// `--wait` and `--wait-timeout`, shared by the commands that change things.
#[derive(Debug, Clone, Args)]
pub struct Wait {
    /// After the changes, wait until the services have settled (ECS: the new deployment is steady).
    #[arg(long)]
    pub wait: bool,
    /// How long `--wait` waits at most, e.g. 15m or 90s.
    #[arg(long, value_name = "DURATION", default_value = "15m", value_parser = parse_wait)]
    pub wait_timeout: std::time::Duration,
}

/// How to reach Kubernetes clusters (the `eks` and `karpenter` types), shared by evacuate and recover.
#[derive(Debug, Clone, Args)]
pub struct KubeAccess {
    /// Kube context of a cluster whose nodes and Karpenter NodePools azevac acts on (repeatable, one
    /// cluster each). Without one, the eks and karpenter types are left out.
    #[arg(long = "kube-context", value_name = "CONTEXT")]
    pub contexts: Vec<String>,
    /// Kubeconfig file (default: KUBECONFIG, then ~/.kube/config); exec auth (`aws eks get-token`) works.
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<std::path::PathBuf>,
}

/// `--notify`, shared by the commands that change things.
#[derive(Debug, Clone, Args)]
pub struct Notify {
    /// SNS topic to tell when a real run starts and when it ends (repeatable; AWS Chatbot,
    /// PagerDuty or e-mail subscribe to it). A publish that fails is a warning, never a stop.
    #[arg(long = "notify", value_name = "TOPIC_ARN", env = "AZEVAC_NOTIFY", hide_env_values = true, value_delimiter = ',',
          value_parser = crate::app::notify::parse_topic_arn)]
    pub topics: Vec<String>,
}

/// Which accounts a command acts in, and the role it assumes in each (default: the caller's own
/// account, with its own credentials).
#[derive(Debug, Clone, Args, Default)]
pub struct Accounts {
    /// Act in these accounts (comma-separated twelve-digit IDs), or `org` for every ACTIVE account of
    /// the organization, each through the role assumed there; the journal stays in this account.
    /// recover and status default to every account that has records.
    #[arg(long, value_name = "IDS|org", value_parser = parse_account_list)]
    pub accounts: Option<AccountList>,
    /// With `--accounts org`: only the accounts under this OU or root, at any depth (repeatable).
    #[arg(long = "ou", value_name = "OU_ID", value_parser = crate::app::accounts::parse_ou)]
    pub ous: Vec<String>,
    /// Leave this account out (repeatable).
    #[arg(long = "exclude-account", value_name = "ID", value_parser = crate::app::accounts::parse_account_id)]
    pub exclude: Vec<String>,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub role: Role,
}

/// The role assumed in each account, and how: the commands that act across accounts take it, and
/// `apply` holds a saved plan's against it.
#[derive(Debug, Clone, Args, Default)]
pub struct Role {
    /// The role assumed in each account: arn:aws:iam::ACCOUNT:role/NAME [default: azevac].
    #[arg(long, value_name = "NAME", conflicts_with = "role_arn_template")]
    pub role_name: Option<String>,
    /// The role's ARN for other shapes, with {account} (and {partition}) in it, e.g.
    /// arn:aws:iam::{account}:role/ops/azevac.
    #[arg(long, value_name = "TEMPLATE")]
    pub role_arn_template: Option<String>,
    /// The external ID the roles' trust policies require.
    #[arg(long, value_name = "ID")]
    pub external_id: Option<String>,
}

impl Role {
    /// These settings in a fan-out that names no account.
    pub fn fleet(&self) -> crate::model::Fleet {
        crate::model::Fleet {
            role_name: self.role_name.clone(),
            role_arn_template: self.role_arn_template.clone(),
            external_id: self.external_id.clone(),
            ..crate::model::Fleet::default()
        }
    }
}

impl Accounts {
    /// The fan-out as the plan records it.
    pub fn fleet(&self) -> crate::model::Fleet {
        crate::model::Fleet {
            accounts: self.accounts.clone().map(|a| a.0).unwrap_or_default(),
            ous: self.ous.clone(),
            exclude: self.exclude.clone(),
            ..self.role.fleet()
        }
    }
}

/// One `--accounts` value, parsed.
#[derive(Debug, Clone, Default)]
pub struct AccountList(pub Vec<String>);

fn parse_account_list(value: &str) -> Result<AccountList, String> {
    crate::app::accounts::parse_accounts(value).map(AccountList)
}

/// `azevac evacuate`.
#[derive(Debug, Args)]
pub struct Evacuate {
    /// The AZ ID to evacuate, e.g. use1-az2 (an ID, not a name such as us-east-1c).
    #[arg(long, value_name = "AZ_ID")]
    pub az_id: String,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub types: Types,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub accounts: Accounts,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub confirm: Confirm,
    /// Only resources with this tag (repeatable: all must match).
    #[arg(long = "tag", value_name = "KEY=VALUE", value_parser = parse_tag)]
    pub tags: Vec<(String, String)>,
    /// Only resources whose name starts with this (ECS: CLUSTER/SERVICE).
    #[arg(long, value_name = "PREFIX")]
    pub name_prefix: Option<String>,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub wait: Wait,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub notify: Notify,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub kube: KubeAccess,
    /// Why, recorded in every journal record this run writes (e.g. an incident ticket).
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
    /// Go ahead, with a warning, past the checks that hold a resource back: an Auto Scaling group
    /// behind a load balancer with cross-zone load balancing off and no zonal shift away from the
    /// zone, and a resource whose remaining subnets lack the free IP addresses for what moves there.
    #[arg(long)]
    pub force: bool,
    /// The kinds' own flags, as given (filled in by [`parse_from`]).
    #[arg(skip)]
    pub options: crate::plugins::Options,
}

/// `azevac shift`.
#[derive(Debug, Subcommand)]
pub enum Shift {
    /// Start zonal shifts away from a zone for every managed resource deployed there.
    Start(ShiftStart),
    /// List the active zonal shifts (and practice runs), marking the ones azevac started.
    List(ShiftList),
    /// Cancel the zonal shifts azevac started (and clear their journal records).
    Cancel(ShiftCancel),
    /// Give the zonal shifts azevac started and that are still active a new expiry, `--expires-in`
    /// from now (journalled); never another party's shift, an autoshift or a practice run.
    Extend(ShiftExtend),
}

/// `azevac shift start`.
#[derive(Debug, Args)]
pub struct ShiftStart {
    /// The AZ ID to shift traffic away from, e.g. use1-az2.
    #[arg(long, value_name = "AZ_ID")]
    pub az_id: String,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub expiry: crate::plugins::zonal_shift::flags::Expiry,
    /// Why (an incident ticket): in the shifts' comment and the journal.
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub confirm: Confirm,
}

impl Evacuate {
    /// The plan's inputs as given on the command line.
    pub fn request(&self) -> Request {
        Request {
            types: self.types.types.clone(),
            tags: self.tags.iter().map(|(k, v)| format!("{k}={v}")).collect(),
            name_prefix: self.name_prefix.clone(),
            kube_contexts: self.kube.contexts.clone(),
            reason: self.reason.clone(),
            forget_missing: false,
            force: self.force,
            wait_timeout_seconds: Some(self.wait.wait_timeout.as_secs()),
            fleet: self.accounts.fleet(),
            waves: None,
            options: self.options.clone(),
        }
    }
}

impl Recover {
    /// The plan's inputs as given on the command line.
    pub fn request(&self) -> Request {
        Request {
            types: self.types.types.clone(),
            kube_contexts: self.kube.contexts.clone(),
            forget_missing: self.forget_missing,
            wait_timeout_seconds: Some(self.wait.wait_timeout.as_secs()),
            fleet: self.accounts.fleet(),
            waves: self.waves.request(),
            options: self.options.clone(),
            ..Request::default()
        }
    }
}

impl ShiftStart {
    /// The evacuation this is: zonal shifts only.
    pub fn request(&self) -> Request {
        use crate::plugins::zonal_shift::{flags::Options, TYPE};
        Request {
            types: vec![TYPE.to_owned()],
            reason: self.reason.clone(),
            options: crate::plugins::to_options(&Options {
                zonal_shift: true,
                expires_in: Some(self.expiry.expires_in.clone()),
                extend: false,
            }),
            ..Request::default()
        }
    }
}

/// `azevac shift list`.
#[derive(Debug, Args)]
pub struct ShiftList {
    /// Only shifts away from this AZ ID.
    #[arg(long, value_name = "AZ_ID")]
    pub az_id: Option<String>,
}

/// `azevac shift cancel`.
#[derive(Debug, Args)]
pub struct ShiftCancel {
    /// Only azevac's shifts away from this AZ ID (default: all of them).
    #[arg(long, value_name = "AZ_ID")]
    pub az_id: Option<String>,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub confirm: Confirm,
}

/// `azevac shift extend`.
#[derive(Debug, Args)]
pub struct ShiftExtend {
    /// Only azevac's shifts away from this AZ ID (default: the zone azevac's shifts are away from).
    #[arg(long, value_name = "AZ_ID")]
    pub az_id: Option<String>,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub expiry: crate::plugins::zonal_shift::flags::Expiry,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub confirm: Confirm,
}

impl ShiftExtend {
    /// The evacuation this is: azevac's zonal shifts in force, extended, nothing started.
    pub fn request(&self) -> Request {
        use crate::plugins::zonal_shift::{flags::Options, TYPE};
        Request {
            types: vec![TYPE.to_owned()],
            options: crate::plugins::to_options(&Options {
                zonal_shift: true,
                expires_in: Some(self.expiry.expires_in.clone()),
                extend: true,
            }),
            ..Request::default()
        }
    }
}

impl ShiftCancel {
    /// The recovery this is: zonal shifts only.
    pub fn request(&self) -> Request {
        Request {
            types: vec![crate::plugins::zonal_shift::TYPE.to_owned()],
            ..Request::default()
        }
    }
}

/// `--wait-timeout`, `--drain-timeout`: a duration of at most 7 days (longer is a typo, and would
/// overflow the clock arithmetic of the waits).
fn parse_wait(text: &str) -> Result<std::time::Duration, String> {
    let wait = humantime::parse_duration(text).map_err(|e| format!("{e} (e.g. 15m or 90s)"))?;
    if wait > std::time::Duration::from_secs(7 * 24 * 3600) {
        return Err("at most 7 days (e.g. 15m or 2h)".into());
    }
    Ok(wait)
}

/// `--bake`: as a wait, in whole seconds (a plan keeps it so; and alarms are read every 10 s).
fn parse_bake(text: &str) -> Result<std::time::Duration, String> {
    let bake = parse_wait(text)?;
    if bake.subsec_nanos() != 0 {
        return Err("a bake is whole seconds (e.g. 90s or 5m)".into());
    }
    Ok(bake)
}

/// `--attempt-timeout`, `--operation-timeout`: a duration between 1 second and 1 hour.
fn parse_call_timeout(text: &str) -> Result<std::time::Duration, String> {
    duration_within(text, 1..=3600, "30s or 2m", "a call timeout lies between 1s and 1h")
}

/// A duration of `seconds` (say `example` when it is no duration, `range` when it is out of it).
fn duration_within(
    text: &str,
    seconds: std::ops::RangeInclusive<u64>,
    example: &str,
    range: &str,
) -> Result<std::time::Duration, String> {
    let duration = humantime::parse_duration(text).map_err(|e| format!("{e} (e.g. {example})"))?;
    let (least, most) = seconds.into_inner();
    if !(std::time::Duration::from_secs(least)..=std::time::Duration::from_secs(most)).contains(&duration) {
        return Err(range.into());
    }
    Ok(duration)
}

/// `--max-rate`: SERVICE=N or SERVICE=unlimited.
fn parse_max_rate(text: &str) -> Result<(String, Option<crate::aws::pacing::Rate>), String> {
    crate::aws::pacing::parse_max_rate(text, &crate::plugins::services()).map_err(|e| e.to_string())
}

/// `--lease`: a duration between 2 seconds and 1 hour.
fn parse_lease(text: &str) -> Result<std::time::Duration, String> {
    duration_within(text, 2..=3600, "2m or 90s", "a lease lasts between 2s and 1h")
}

/// `azevac recover`.
#[derive(Debug, Args)]
pub struct Recover {
    /// Only this AZ ID (default: every evacuated AZ).
    #[arg(long, value_name = "AZ_ID")]
    pub az_id: Option<String>,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub types: Types,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub accounts: Accounts,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub confirm: Confirm,
    /// Delete the journal records of resources that no longer exist (default: keep and report them).
    #[arg(long)]
    pub forget_missing: bool,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub wait: Wait,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub notify: Notify,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub kube: KubeAccess,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub waves: Waves,
    /// The kinds' own flags, as given (filled in by [`parse_from`]).
    #[arg(skip)]
    pub options: crate::plugins::Options,
}

/// `recover --waves` and its gates: resources come back a few at a time, each wave behind
/// CloudWatch alarms and a bake time, as a careful deployment goes out.
#[derive(Debug, Clone, Args)]
pub struct Waves {
    /// Put the resources back in waves, counted from the start (e.g. 1,10%,50%,100%; a last wave
    /// of 100% is implied). Every type, account and cluster is in the first wave with room for it.
    #[arg(long, value_name = "STEPS", value_parser = parse_waves)]
    pub waves: Option<crate::app::waves::Waves>,
    /// How long each wave bakes, its alarms watched, before the next one starts (e.g. 5m, 90s).
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_bake, requires = "waves")]
    pub bake: std::time::Duration,
    /// CloudWatch alarm that must be OK before each wave (waited for, up to --wait-timeout), and
    /// that stops the recovery if it goes into ALARM while a wave bakes (repeatable).
    #[arg(long = "alarm", value_name = "NAME", value_parser = parse_alarm_name, requires = "waves")]
    pub alarms: Vec<String>,
    /// Every CloudWatch alarm whose name starts with this gates the waves as --alarm does (repeatable).
    #[arg(long = "alarm-prefix", value_name = "PREFIX", value_parser = parse_alarm_name, requires = "waves")]
    pub alarm_prefixes: Vec<String>,
    /// When an alarm stops the recovery: `stop` keeps the rest journalled; `evacuate` also takes
    /// the last wave back out of the zone (journalled like any evacuation).
    #[arg(long, value_enum, value_name = "ACTION", default_value = "stop", requires = "waves")]
    pub on_alarm: OnAlarm,
    /// Resources with this tag come back in the first waves (repeatable; kinds that read tags).
    #[arg(long = "first-tag", value_name = "KEY=VALUE", value_parser = parse_tag, requires = "waves")]
    pub first_tags: Vec<(String, String)>,
    /// Resources with this tag come back in the last waves (repeatable; kinds that read tags).
    #[arg(long = "last-tag", value_name = "KEY=VALUE", value_parser = parse_tag, requires = "waves")]
    pub last_tags: Vec<(String, String)>,
}

pub use crate::model::OnAlarm;

impl Waves {
    /// The waves as a plan keeps them (`None` without `--waves`).
    pub fn request(&self) -> Option<crate::model::WavesRequest> {
        let pairs = |tags: &[(String, String)]| tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
        self.waves.as_ref().map(|waves| crate::model::WavesRequest {
            steps: waves.to_string(),
            bake_seconds: self.bake.as_secs(),
            alarms: self.alarms.clone(),
            alarm_prefixes: self.alarm_prefixes.clone(),
            on_alarm: self.on_alarm,
            first_tags: pairs(&self.first_tags),
            last_tags: pairs(&self.last_tags),
        })
    }
}

/// `--waves`: see [`crate::app::waves::Waves`].
fn parse_waves(text: &str) -> Result<crate::app::waves::Waves, String> {
    text.parse()
}

/// `azevac apply`.
#[derive(Debug, Args)]
pub struct Apply {
    /// The saved plan: `azevac evacuate|recover ... --dry-run --output json > plan.json` (`-`: stdin).
    #[arg(value_name = "PLAN_FILE")]
    pub plan: std::path::PathBuf,
    /// Do not ask for confirmation (required when stdin is not a terminal).
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// List every skipped line of the plan: a plan with more than 20 counts them by reason.
    #[arg(long)]
    pub show_skipped: bool,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub wait: Wait,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub notify: Notify,
    /// Kubeconfig file for the plan's kube contexts (default: KUBECONFIG, then ~/.kube/config).
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<std::path::PathBuf>,
    // The role the plan must assume in each account: a plan file can be edited, and one that
    // names another role or external ID is refused with --yes and asked about without.
    #[command(flatten)]
    #[allow(missing_docs)]
    pub role: Role,
    /// Assume the plan's role and external ID where they differ from the command line's, once you
    /// have checked that the plan should act under that identity.
    #[arg(long)]
    pub accept_plan_role: bool,
}

/// `azevac status`.
#[derive(Debug, Args)]
pub struct Status {
    /// Only this AZ ID (default: every evacuated AZ).
    #[arg(long, value_name = "AZ_ID")]
    pub az_id: Option<String>,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub types: Types,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub accounts: Accounts,
    /// Exit 3 when a zonal shift azevac started ends within DURATION (minutes or hours, e.g. 1h),
    /// or has already ended while its journal record says evacuated (for a monitor or a cron job).
    #[arg(long, value_name = "DURATION", value_parser = crate::plugins::zonal_shift::expires_in_seconds)]
    pub fail_if_expiring: Option<i64>,
    /// Tell these SNS topics when one of azevac's zonal shifts ends within the hour (or
    /// --fail-if-expiring's DURATION), or has ended while its record says evacuated: for a cron job
    /// or a monitor (repeatable). Nothing is published when all is well.
    #[command(flatten)]
    pub notify: Notify,
}

/// `azevac init`.
#[derive(Debug, Args)]
pub struct Init {
    /// Also turn on ARC's autoshift observer notification in this account and region: every
    /// autoshift of the region is then announced (to EventBridge, so to `azevac watch`), whatever
    /// is enrolled in zonal autoshift.
    #[arg(long)]
    pub autoshift_observer: bool,
}

/// `azevac watch`.
#[derive(Debug, Args)]
pub struct Watch {
    /// The SQS queue an EventBridge rule feeds with ARC zonal shift's events
    /// (fixtures/autoshift-queue.cfn.yaml or .tf creates both).
    #[arg(long, value_name = "SQS_URL")]
    pub queue: String,
    /// The types the watcher evacuates and recovers, comma-separated: each one opted in.
    #[arg(long = "type", value_delimiter = ',', value_name = "TYPE", required = true,
          value_parser = clap::builder::PossibleValuesParser::new(crate::plugins::types()))]
    pub types: Vec<String>,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub accounts: Accounts,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub kube: KubeAccess,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub wait: Wait,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub notify: Notify,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub waves: Waves,
    /// Follow practice runs and FIS experiments too (ignored by default: they are rehearsals).
    #[arg(long)]
    pub follow_practice: bool,
    /// Change nothing: judge each event, print the plan the watcher would carry out and tell the
    /// --notify topics (no lease is taken).
    #[arg(long)]
    pub dry_run: bool,
    /// How often the watcher compares ARC's autoshifts with what it follows, whatever the queue
    /// says (a lost event costs this delay at most), and evacuates the followed zone again (which
    /// extends azevac's zonal shifts that end within the hour).
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_resync)]
    pub resync: std::time::Duration,
    /// How long one receive waits for a message (SQS long polling: 1s to 20s).
    #[arg(long, value_name = "DURATION", default_value = "20s", value_parser = parse_poll_wait)]
    pub poll_wait: std::time::Duration,
    /// Write the watcher's health to this file (JSON, replaced atomically) at start and on every
    /// turn of its loop, for `azevac health` (a container health check) to read.
    #[arg(long, value_name = "PATH", env = "AZEVAC_HEALTH_FILE", hide_env_values = true)]
    pub health_file: Option<std::path::PathBuf>,
    /// The evacuation's kind flags, as given (filled in by [`parse_from`]).
    #[arg(skip)]
    pub evacuate_options: crate::plugins::Options,
    /// The recovery's kind flags, as given (filled in by [`parse_from`]).
    #[arg(skip)]
    pub recover_options: crate::plugins::Options,
}

impl Watch {
    /// The evacuation of `az_id` the watcher runs, for `reason`.
    pub fn evacuate(&self, az_id: &str, reason: String) -> Evacuate {
        Evacuate {
            az_id: az_id.to_owned(),
            types: Types {
                types: self.types.clone(),
            },
            accounts: self.accounts.clone(),
            confirm: self.confirm(),
            tags: Vec::new(),
            name_prefix: None,
            wait: self.wait.clone(),
            notify: self.notify.clone(),
            kube: self.kube.clone(),
            reason: Some(reason),
            force: false,
            options: self.evacuate_options.clone(),
        }
    }

    /// The recovery of `az_id` the watcher runs: in waves when it was given `--waves`.
    pub fn recover(&self, az_id: Option<&str>) -> Recover {
        Recover {
            az_id: az_id.map(str::to_owned),
            types: Types {
                types: self.types.clone(),
            },
            accounts: self.accounts.clone(),
            confirm: self.confirm(),
            forget_missing: false,
            wait: self.wait.clone(),
            notify: self.notify.clone(),
            kube: self.kube.clone(),
            waves: self.waves.clone(),
            options: self.recover_options.clone(),
        }
    }

    fn confirm(&self) -> Confirm {
        Confirm {
            dry_run: self.dry_run,
            yes: true,
            show_skipped: false,
        }
    }
}

/// `azevac health`.
#[derive(Debug, Args)]
pub struct Health {
    /// The file `azevac watch --health-file` writes.
    #[arg(long, value_name = "PATH", env = "AZEVAC_HEALTH_FILE", hide_env_values = true)]
    pub health_file: Option<std::path::PathBuf>,
    /// Unhealthy ("stalled") when the watcher's last beat is older than this (default: the bound
    /// the watcher wrote in the file: its --operation-timeout, a third of its --lease or its
    /// --poll-wait, and 30s; 4m10s with the defaults).
    #[arg(long, value_name = "DURATION", value_parser = parse_stall_after)]
    pub stall_after: Option<std::time::Duration>,
}

/// `--stall-after`: between 1 second and 1 day.
fn parse_stall_after(text: &str) -> Result<std::time::Duration, String> {
    duration_within(
        text,
        1..=86_400,
        "5m",
        "a watcher stalls after 1s to 1 day without a beat (e.g. 5m)",
    )
}

/// `--resync`: between 10 seconds and 1 hour.
fn parse_resync(text: &str) -> Result<std::time::Duration, String> {
    duration_within(text, 10..=3600, "5m", "a resync comes every 10s to 1h (e.g. 5m)")
}

/// `--poll-wait`: SQS long polling waits 1 to 20 seconds.
fn parse_poll_wait(text: &str) -> Result<std::time::Duration, String> {
    duration_within(text, 1..=20, "20s", "SQS waits 1s to 20s for a message (e.g. 20s)")
}

/// `azevac exposure`.
#[derive(Debug, Args)]
pub struct Exposure {
    /// The AZ ID to look at, e.g. use1-az2.
    #[arg(long, value_name = "AZ_ID")]
    pub az_id: String,
    /// Exit 3 when anything azevac can move is still in the zone (for runbooks and CI after an
    /// evacuation). Findings azevac cannot move (standalone instances, VPC endpoints, EBS volumes)
    /// and traffic already shifted away do not count.
    #[arg(long)]
    pub fail_if_exposed: bool,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub kube: KubeAccess,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub accounts: Accounts,
}

/// `azevac doctor`.
#[derive(Debug, Args)]
pub struct Doctor {
    /// Also check that this AZ ID is one of the region's, e.g. use1-az2.
    #[arg(long, value_name = "AZ_ID")]
    pub az_id: Option<String>,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub kube: KubeAccess,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub accounts: Accounts,
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
