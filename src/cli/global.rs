//! The options every command takes: connection, output, pacing, leases.

use clap::Args;

use super::shared::duration_within;
use crate::journal::DEFAULT_TABLE;
use crate::process::events::LogFormat;

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
    #[arg(long, global = true, env = "AZEVAC_LOG_FORMAT", hide_env_values = true,
          default_value = "text", value_parser = log_format_parser())]
    pub log_format: LogFormat,
}

pub use crate::model::Output;

/// `--log-format`: the plain `LogFormat` of the process's stderr, with the words and help clap
/// shows for it.
pub(super) fn log_format_parser() -> impl clap::builder::TypedValueParser<Value = LogFormat> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    PossibleValuesParser::new([
        PossibleValue::new("text").help("Lines for people"),
        PossibleValue::new("json")
            .help("One JSON object per line: `timestamp` (RFC 3339, UTC), `level`, `event`, and the event's fields"),
    ])
    .map(|word| match word.as_str() {
        "json" => LogFormat::Json,
        _ => LogFormat::Text,
    })
}

/// `--output`: the model's plain `Output`, with the words and help clap shows for it.
pub(super) fn output_parser() -> impl clap::builder::TypedValueParser<Value = Output> {
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

/// `--attempt-timeout`, `--operation-timeout`: a duration between 1 second and 1 hour.
pub(super) fn parse_call_timeout(text: &str) -> Result<std::time::Duration, String> {
    duration_within(text, 1..=3600, "30s or 2m", "a call timeout lies between 1s and 1h")
}

/// `--max-rate`: SERVICE=N or SERVICE=unlimited.
pub(super) fn parse_max_rate(text: &str) -> Result<(String, Option<crate::aws::pacing::Rate>), String> {
    crate::aws::pacing::parse_max_rate(text, &crate::plugins::services()).map_err(|e| e.to_string())
}

/// `--lease`: a duration between 2 seconds and 1 hour.
pub(super) fn parse_lease(text: &str) -> Result<std::time::Duration, String> {
    duration_within(text, 2..=3600, "2m or 90s", "a lease lasts between 2s and 1h")
}
