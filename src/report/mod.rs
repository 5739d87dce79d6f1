//! What the operator reads on stdout: a table that fits the screen and a summary, the same with
//! every identifier (`-o wide`), or exactly one JSON document. Logs and prompts go to stderr so
//! that stdout stays parseable.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::model::plan::{Plan, Status};
use crate::model::Output;
use crate::model::{Expiry, Finding, Record};

mod checks;
mod exposure;
pub mod layout;
mod phrases;
pub mod plan;
mod shifts;
mod status;

pub use checks::print_checks;
pub use exposure::print_exposure;
pub use shifts::print_shifts;
pub use status::print_status;

/// Whether a plan is printed before (or instead of) execution, or as the result of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// The plan; `dry_run` says nothing will be changed.
    Plan {
        /// Whether this is a dry run.
        dry_run: bool,
    },
    /// The outcome of a real run.
    Result,
}

/// How many lines stand in each status.
#[derive(Serialize, schemars::JsonSchema)]
struct Summary {
    planned: usize,
    done: usize,
    skipped: usize,
    failed: usize,
    already_evacuated: usize,
}

/// `evacuate`, `recover` and `apply` with `--output json`: the plan (`dry_run`: nothing was changed)
/// or the result of a real run, each line with its status.
#[derive(Serialize, schemars::JsonSchema)]
struct Document<'a> {
    dry_run: bool,
    #[serde(flatten)]
    plan: &'a Plan,
    summary: Summary,
}

/// `status --output json`: the journal's records, the live locks, the items that could not be read.
#[derive(Serialize, schemars::JsonSchema)]
struct StatusDocument<'a> {
    records: &'a [Record],
    /// The changes azevac's records name that end by themselves, with when each ends. Its JSON
    /// name is the one it had when zonal shifts were the only such changes.
    #[serde(rename = "zonal_shifts")]
    expiries: &'a [Expiry],
    locks: Vec<LiveLock<'a>>,
    /// The `azevac watch` of this region, as its lease item says (none: no watcher has run).
    watcher: Option<WatcherState<'a>>,
    problems: &'a [String],
}

/// The watcher of a region, for `status` and `doctor`.
#[derive(Serialize, schemars::JsonSchema)]
struct WatcherState<'a> {
    /// Its run ID.
    run_id: &'a str,
    caller: &'a str,
    /// The SQS queue it reads.
    queue: &'a str,
    /// Whether it holds its lease now (acting); false once the lease ran out or was released.
    active: bool,
    /// When its lease runs out unless renewed (RFC 3339; null once released).
    lease_until: Option<String>,
    /// When it last heard from the queue (RFC 3339).
    heard_at: Option<String>,
    /// The AZ ID it follows (evacuated on AWS's autoshift, not yet recovered).
    following: Option<&'a str>,
    /// What keeps it from its queue now ("evacuating use1-az2"), as of its last renewal.
    acting: Option<&'a str>,
}

impl<'a> WatcherState<'a> {
    fn of(watcher: &'a crate::journal::Watcher) -> Self {
        WatcherState {
            run_id: &watcher.holder,
            caller: &watcher.caller,
            queue: &watcher.queue,
            active: watcher.active(),
            lease_until: (!watcher.released()).then(|| rfc3339(watcher.expires_at)),
            heard_at: watcher.heard_at.map(rfc3339),
            following: watcher.following.as_deref(),
            acting: watcher.acting.as_deref(),
        }
    }

    /// One line for people.
    fn line(&self) -> String {
        let lease = match (&self.lease_until, self.active) {
            (Some(until), true) => format!("acting, lease until {until}"),
            (Some(until), false) => format!("not acting: its lease ran out at {until}"),
            (None, _) => "not acting: stopped, lease released".to_owned(),
        };
        let heard = self
            .heard_at
            .as_deref()
            .map(|at| format!("; last heard from the queue at {at}"))
            .unwrap_or_else(|| "; has not heard from the queue".to_owned());
        let following = self
            .following
            .map(|zone| format!("; following {zone}"))
            .unwrap_or_default();
        let acting = self
            .acting
            .filter(|_| self.active)
            .map(|what| format!("; {what}"))
            .unwrap_or_default();
        // Escaped before the line ends: clean() would show the newline itself as `\n`.
        let line = crate::model::text::clean(&format!(
            "watcher: run {} ({}) {lease}{heard}{following}{acting}",
            self.run_id, self.caller
        ));
        line + "\n"
    }
}

fn rfc3339(seconds: u64) -> String {
    humantime::format_rfc3339_seconds(std::time::UNIX_EPOCH + std::time::Duration::from_secs(seconds)).to_string()
}

/// A resource another run is changing now.
#[derive(Serialize, schemars::JsonSchema)]
struct LiveLock<'a> {
    resource: &'a str,
    run_id: &'a str,
    caller: &'a str,
    /// RFC 3339.
    lease_until: String,
}

/// `exposure --output json`: what has presence in the zone now, and what moves it.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Exposure {
    /// The region.
    pub region: String,
    /// The AZ ID asked about.
    pub az_id: String,
    /// This account's name for it.
    pub az_name: String,
    /// Every finding, per kind in registry order, then the kinds no plugin moves.
    pub findings: Vec<Finding>,
    /// The kinds that could not be read, one line each (exit 1).
    pub problems: Vec<String>,
    /// With `--accounts`: the accounts read (each finding names its own).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accounts: Vec<String>,
}

/// How the findings stand.
#[derive(Serialize, schemars::JsonSchema)]
struct ExposureSummary {
    findings: usize,
    /// azevac moves them and they are still there (what `--fail-if-exposed` counts).
    movable: usize,
    /// azevac cannot move them (each says what to do).
    not_movable: usize,
    /// Their traffic is already kept away (a zonal shift, azevac's taint).
    away: usize,
}

/// The exposure document as printed.
#[derive(Serialize, schemars::JsonSchema)]
struct ExposureDocument<'a> {
    #[serde(flatten)]
    exposure: &'a Exposure,
    summary: ExposureSummary,
}

/// Every document `--output json` prints (`shift list` aside).
#[derive(Serialize, schemars::JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)] // only its schema is used
enum Published<'a> {
    /// A plan or a run's result.
    Plan(Document<'a>),
    /// `azevac status`.
    Status(StatusDocument<'a>),
    /// `azevac exposure`.
    Exposure(ExposureDocument<'a>),
}

/// The JSON Schema (draft 2020-12) of what `--output json` prints, generated from the types that
/// print it; `fixtures/output.schema.json` is this (`UPDATE_SCHEMA=1 cargo test --test it schema::`
/// rewrites it).
pub fn output_schema() -> serde_json::Value {
    let mut schema = schemars::generate::SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<Published<'static>>();
    schema.insert("title".into(), "azevac --output json".into());
    schema.to_value()
}

/// How the operator asked to see what azevac prints.
#[derive(Debug, Clone, Default)]
pub struct View {
    /// The screen's width to fit tables to (none: every cell whole; see [`layout::screen_width`]).
    pub width: Option<usize>,
    /// `-o wide`: every identifier in full.
    pub wide: bool,
    /// `--show-skipped`: list every skipped line, however many.
    pub show_skipped: bool,
    /// Subnet ID to its Name tag, for `-o wide` (empty: IDs alone).
    pub subnet_names: BTreeMap<String, String>,
    /// What the heading calls the command (`shift extend`); none: the plan's own command.
    pub verb: Option<&'static str>,
}

impl View {
    /// The view for `--output`: fitted to the screen for a table, whole for `wide`.
    pub fn of(output: Output) -> View {
        View {
            width: (output == Output::Table).then(layout::screen_width).flatten(),
            wide: output == Output::Wide,
            ..View::default()
        }
    }

    /// Subnets by ID, each with its Name tag where it has one: `subnet-0a1b (app-use1-az2)`.
    pub fn subnets(&self, ids: &[String]) -> String {
        ids.iter()
            .map(|id| match self.subnet_names.get(id) {
                Some(name) => format!("{id} ({name})"),
                None => id.clone(),
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Print a plan or a run's outcome.
pub fn print(plan: &Plan, output: Output, phase: Phase, view: &View) {
    match output {
        Output::Json => {
            let document = Document {
                dry_run: matches!(phase, Phase::Plan { dry_run: true }),
                plan,
                summary: summary(plan),
            };
            println!("{}", serde_json::to_string_pretty(&document).unwrap_or_default());
        }
        Output::Table | Output::Wide => print!("{}", plan::render(plan, phase, view)),
    }
}

fn summary(plan: &Plan) -> Summary {
    Summary {
        planned: plan.count(Status::Planned),
        done: plan.count(Status::Done),
        skipped: plan.count(Status::Skipped),
        failed: plan.count(Status::Failed),
        already_evacuated: plan
            .items
            .iter()
            .filter(|i| {
                i.reason
                    .as_deref()
                    .is_some_and(|r| r.starts_with(crate::model::plan::ALREADY_EVACUATED))
            })
            .count(),
    }
}

pub use crate::model::text::clean;

/// Failed lines shout in the table, so that they are not missed among many.
fn status_word(status: Status) -> &'static str {
    match status {
        Status::Failed => "FAILED",
        other => other.as_str(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn untrusted_text_cannot_drive_the_terminal() {
        assert_eq!(clean("web\u{1b}[2Jgone"), "web\\u{1b}[2Jgone");
        assert_eq!(clean("a\nb\tc"), "a\\nb\\tc");
        assert_eq!(clean("evil\u{202E}txt.exe"), "evil\\u{202e}txt.exe");
        assert_eq!(clean("plain use1-az2 — ok"), "plain use1-az2 — ok");
    }
}
