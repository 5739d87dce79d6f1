//! `azevac recover`'s flags (with `--waves` and its gates), and the request they make.

use clap::Args;

use super::shared::parse_wait;
use super::*;
use crate::model::{OnAlarm, Request};

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
    #[arg(long, value_name = "ACTION", default_value = "stop", value_parser = on_alarm_parser(), requires = "waves")]
    pub on_alarm: OnAlarm,
    /// Resources with this tag come back in the first waves (repeatable; kinds that read tags).
    #[arg(long = "first-tag", value_name = "KEY=VALUE", value_parser = parse_tag, requires = "waves")]
    pub first_tags: Vec<(String, String)>,
    /// Resources with this tag come back in the last waves (repeatable; kinds that read tags).
    #[arg(long = "last-tag", value_name = "KEY=VALUE", value_parser = parse_tag, requires = "waves")]
    pub last_tags: Vec<(String, String)>,
}

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
pub(super) fn parse_waves(text: &str) -> Result<crate::app::waves::Waves, String> {
    text.parse()
}

/// `--bake`: as a wait, in whole seconds (a plan keeps it so; and alarms are read every 10 s).
pub(super) fn parse_bake(text: &str) -> Result<std::time::Duration, String> {
    let bake = parse_wait(text)?;
    if bake.subsec_nanos() != 0 {
        return Err("a bake is whole seconds (e.g. 90s or 5m)".into());
    }
    Ok(bake)
}

/// `--on-alarm`: the model's plain `OnAlarm`, with the words and help clap shows for it.
fn on_alarm_parser() -> impl clap::builder::TypedValueParser<Value = OnAlarm> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    PossibleValuesParser::new([
        PossibleValue::new("stop").help("Stop: the waves not started stay journalled, for a later recover"),
        PossibleValue::new("evacuate").help("Stop, and take the last wave back out of the zone"),
    ])
    .map(|word| match word.as_str() {
        "evacuate" => OnAlarm::Evacuate,
        _ => OnAlarm::Stop,
    })
}
