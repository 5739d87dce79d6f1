//! The flag groups several commands take (`--type`, `--yes`/`--dry-run`, `--wait`, kube access,
//! `--notify`, `--accounts`), declared once and flattened into each.

use clap::Args;

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

pub(super) fn parse_account_list(value: &str) -> Result<AccountList, String> {
    crate::app::accounts::parse_accounts(value).map(AccountList)
}

/// `--wait-timeout`, `--drain-timeout`: a duration of at most 7 days (longer is a typo, and would
/// overflow the clock arithmetic of the waits).
pub(super) fn parse_wait(text: &str) -> Result<std::time::Duration, String> {
    let wait = humantime::parse_duration(text).map_err(|e| format!("{e} (e.g. 15m or 90s)"))?;
    if wait > std::time::Duration::from_secs(7 * 24 * 3600) {
        return Err("at most 7 days (e.g. 15m or 2h)".into());
    }
    Ok(wait)
}

/// A duration of `seconds` (say `example` when it is no duration, `range` when it is out of it).
pub(super) fn duration_within(
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
