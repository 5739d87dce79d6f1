//! What the operator reads on stdout: a table and a summary line, or exactly one JSON document.
//! Logs and prompts go to stderr so that stdout stays parseable.

use std::collections::BTreeSet;

use comfy_table::presets::NOTHING;
use comfy_table::{ContentArrangement, Table};
use serde::Serialize;

use crate::journal::Lock;
use crate::model::Output;
use crate::model::{Finding, Record};
use crate::plan::{Command, Plan, Status};
use crate::plugins::zonal_shift::expiry::ShiftExpiry;

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
    /// The zonal shifts azevac's records name, with when each ends.
    zonal_shifts: &'a [ShiftExpiry],
    locks: Vec<LiveLock<'a>>,
    problems: &'a [String],
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

fn exposure_summary(exposure: &Exposure) -> ExposureSummary {
    let f = &exposure.findings;
    ExposureSummary {
        findings: f.len(),
        movable: f.iter().filter(|x| x.movable()).count(),
        not_movable: f.iter().filter(|x| x.not_movable.is_some()).count(),
        away: f.iter().filter(|x| x.not_movable.is_none() && x.away.is_some()).count(),
    }
}

/// `azevac exposure`: one JSON document, or a table of findings with what moves each.
pub fn print_exposure(exposure: &Exposure, output: Output) {
    let summary = exposure_summary(exposure);
    if output == Output::Json {
        let document = ExposureDocument { exposure, summary };
        println!("{}", serde_json::to_string_pretty(&document).unwrap_or_default());
        return;
    }
    print!("{}", render_exposure(exposure, &summary));
}

/// At most this many units are named per finding in the table (JSON has them all).
const UNITS_SHOWN: usize = 3;

fn render_exposure(exposure: &Exposure, summary: &ExposureSummary) -> String {
    let mut out = format!(
        "azevac exposure {} ({}) in {}\n",
        exposure.az_id, exposure.az_name, exposure.region
    );
    if !exposure.findings.is_empty() {
        let mut table = Table::new();
        table
            .load_style(NOTHING)
            .set_content_arrangement(ContentArrangement::Dynamic)
            .set_header(["KIND", "NAME", "ID", "IN ZONE", "MOVED BY", "WHAT TO KNOW"]);
        for f in &exposure.findings {
            let mut shown: Vec<String> = f.in_zone.iter().take(UNITS_SHOWN).cloned().collect();
            if f.in_zone.len() > UNITS_SHOWN {
                shown.push(format!("+{} more", f.in_zone.len() - UNITS_SHOWN));
            }
            let moved_by = match (&f.moved_by, &f.not_movable) {
                (Some(t), None) => format!("--type {t}"),
                _ => "not movable".to_owned(),
            };
            let know: Vec<String> = f
                .not_movable
                .iter()
                .chain(
                    f.away
                        .iter()
                        .map(|a| format!("already away: {a}"))
                        .collect::<Vec<_>>()
                        .iter(),
                )
                .chain(f.notes.iter())
                .cloned()
                .collect();
            table.add_row(
                [
                    f.kind.clone(),
                    f.name.clone(),
                    f.resource.clone(),
                    format!("{} {}", f.count, shown.join(" ")),
                    moved_by,
                    know.join("; "),
                ]
                .map(|cell| clean(&cell)),
            );
        }
        out.push_str(&table.trim_fmt());
        out.push('\n');
    }
    for problem in &exposure.problems {
        out.push_str(&format!("problem: {}\n", clean(problem)));
    }
    out.push_str(&format!(
        "{} findings: {} movable still in the zone, {} not movable, {} already away\n",
        summary.findings, summary.movable, summary.not_movable, summary.away
    ));
    out
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

/// Print a plan or a run's outcome.
pub fn print(plan: &Plan, output: Output, phase: Phase) {
    match output {
        Output::Json => {
            let document = Document {
                dry_run: matches!(phase, Phase::Plan { dry_run: true }),
                plan,
                summary: summary(plan),
            };
            println!("{}", serde_json::to_string_pretty(&document).unwrap_or_default());
        }
        Output::Table => print!("{}", render(plan, phase)),
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
                    .is_some_and(|r| r.starts_with(crate::plan::ALREADY_EVACUATED))
            })
            .count(),
    }
}

/// The human-readable form: a heading, a table grouped by type, notes, problems, a summary line.
pub fn render(plan: &Plan, phase: Phase) -> String {
    let (verb, changed) = match plan.command {
        Command::Evacuate => ("evacuate", "REMOVE"),
        Command::Recover => ("recover", "PUT BACK"),
    };
    let zone = match (&plan.az_id, &plan.az_name) {
        (Some(id), Some(name)) => format!("{id} ({name})"),
        (Some(id), None) => id.clone(),
        _ => "every evacuated AZ".to_owned(),
    };
    let heading = match phase {
        Phase::Plan { dry_run: true } => "plan (dry run: nothing will be changed)",
        Phase::Plan { dry_run: false } => "plan",
        Phase::Result => "result",
    };
    let mut out = format!("azevac {verb} {zone} in {}: {heading}\n", plan.region);
    // A run across accounts says whose each line is (grouped: the plan is ordered by account).
    let accounts = plan.items.iter().any(|i| i.account.is_some());
    if !plan.items.is_empty() {
        let mut table = Table::new();
        let mut header = vec!["TYPE", "RESOURCE", "AZ", changed, "SUBNETS AFTER", "STATUS", "REASON"];
        if accounts {
            header.insert(0, "ACCOUNT");
        }
        table
            .load_style(NOTHING)
            .set_content_arrangement(ContentArrangement::Dynamic)
            .set_header(header);
        for item in &plan.items {
            let subnets = item.removed_subnets.as_ref().or(item.restored_subnets.as_ref());
            let mut change = subnets.map(|s| s.join(" ")).unwrap_or_default();
            if let Some(steps) = item.actions.as_ref().filter(|a| !a.is_empty()) {
                change = if change.is_empty() {
                    steps.join(" ")
                } else {
                    format!("{change} (+ {})", steps.join(", "))
                };
            }
            let mut row = vec![
                item.resource_type.clone(),
                item.name.clone(),
                item.az_id.clone(),
                change,
                item.resulting_subnets.join(" "),
                status_word(item.status).to_owned(),
                reason_cell(item),
            ];
            if accounts {
                row.insert(0, item.account.clone().unwrap_or_else(|| "(own)".into()));
            }
            table.add_row(row.iter().map(|cell| clean(cell)).collect::<Vec<_>>());
        }
        out.push_str(&table.trim_fmt());
        out.push('\n');
    }
    let notes: BTreeSet<String> = plan
        .items
        .iter()
        .filter(|i| i.status != Status::Skipped)
        .flat_map(|i| i.notes.iter().map(move |n| format!("note ({}): {n}", i.resource_type)))
        .collect();
    for note in notes {
        out.push_str(&clean(&note));
        out.push('\n');
    }
    for problem in &plan.problems {
        out.push_str(&format!("problem: {}\n", clean(problem)));
    }
    if accounts {
        out.push_str(&per_account(plan, phase));
    }
    let s = summary(plan);
    let already = match s.already_evacuated {
        0 => String::new(),
        k => format!(", {k} of them already evacuated"),
    };
    out.push_str(&match phase {
        Phase::Plan { .. } if s.planned == 0 => format!("nothing to do ({} skipped{already})\n", s.skipped),
        Phase::Plan { .. } => format!("{} to change, {} skipped{already}\n", s.planned, s.skipped),
        Phase::Result => format!("{} done, {} skipped, {} failed\n", s.done, s.skipped, s.failed),
    });
    out
}

pub use crate::text::clean;

/// The status table's columns (with ACCOUNT when some record was written across accounts).
fn status_header(accounts: bool) -> Vec<&'static str> {
    let mut header = vec![
        "AZ",
        "TYPE",
        "RESOURCE",
        "REMOVED / DONE",
        "STATE",
        "SINCE",
        "BY",
        "REASON",
    ];
    if accounts {
        header.insert(1, "ACCOUNT");
    }
    header
}

/// One summary line per account of a run across accounts.
fn per_account(plan: &Plan, phase: Phase) -> String {
    let mut by_account: std::collections::BTreeMap<&str, [usize; 4]> = std::collections::BTreeMap::new();
    for item in &plan.items {
        let counts = by_account
            .entry(item.account.as_deref().unwrap_or("(own)"))
            .or_default();
        let slot = match item.status {
            Status::Planned => 0,
            Status::Done => 1,
            Status::Skipped => 2,
            Status::Failed => 3,
        };
        counts[slot] += 1;
    }
    let mut out = String::new();
    for (account, [planned, done, skipped, failed]) in by_account {
        let line = match phase {
            Phase::Plan { .. } => format!("account {account}: {planned} to change, {skipped} skipped"),
            Phase::Result => format!("account {account}: {done} done, {skipped} skipped, {failed} failed"),
        };
        out.push_str(&clean(&line));
        out.push('\n');
    }
    out
}

/// The REASON cell: why a line is skipped or failed, and the headroom of a line that changes.
fn reason_cell(item: &crate::model::Item) -> String {
    let headroom = item
        .headroom
        .as_ref()
        .filter(|_| item.status != Status::Skipped)
        .map(|h| format!("headroom: {}", h.describe()));
    [item.reason.clone(), headroom]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join("; ")
}

/// Failed lines shout in the table, so that they are not missed among many.
fn status_word(status: Status) -> &'static str {
    match status {
        Status::Failed => "FAILED",
        other => other.as_str(),
    }
}

/// Print the journal's records (`azevac status`), marking those another run is changing now.
pub fn print_status(records: &[Record], shifts: &[ShiftExpiry], locks: &[Lock], problems: &[String], output: Output) {
    if output == Output::Json {
        let live: Vec<LiveLock<'_>> = locks
            .iter()
            .filter(|l| l.is_live())
            .map(|l| LiveLock {
                resource: &l.resource,
                run_id: &l.run_id,
                caller: &l.caller,
                lease_until: l.until(),
            })
            .collect();
        let document = StatusDocument {
            records,
            zonal_shifts: shifts,
            locks: live,
            problems,
        };
        println!("{}", serde_json::to_string_pretty(&document).unwrap_or_default());
        return;
    }
    let accounts = records.iter().any(|r| r.account_id.is_some());
    if records.is_empty() {
        println!("nothing is evacuated (the journal has no records)");
    } else {
        let mut table = Table::new();
        table
            .load_style(NOTHING)
            .set_content_arrangement(ContentArrangement::Dynamic)
            .set_header(status_header(accounts));
        for r in records {
            let being_changed = locks
                .iter()
                .find(|l| l.resource == r.resource && l.is_live())
                .map(|l| format!(" (being changed by run {}, lease until {})", l.run_id, l.until()))
                .unwrap_or_default();
            let mut row = vec![
                r.az_id.clone(),
                r.resource_type.clone(),
                r.resource_name.clone().unwrap_or_else(|| r.resource.clone()),
                // Nodes and zonal shifts lose no subnets: what azevac did to them is in `actions`.
                if r.removed_subnets.is_empty() {
                    r.actions.join(" ")
                } else {
                    r.removed_subnets.join(" ")
                },
                format!("{}{being_changed}", r.state.as_str()),
                r.created_at.clone().unwrap_or_default(),
                r.evacuated_by.clone().unwrap_or_default(),
                r.reason.clone().unwrap_or_default(),
            ];
            if accounts {
                row.insert(1, r.account_id.clone().unwrap_or_else(|| "(own)".into()));
            }
            table.add_row(row.iter().map(|cell| clean(cell)).collect::<Vec<_>>());
        }
        println!("{}", table.trim_fmt());
        println!("{} journal records", records.len());
    }
    print_shift_expiries(shifts);
    for problem in problems {
        println!("problem: {}", clean(problem));
    }
}

/// The zonal shifts azevac's records name: when each ends, and a warning for each that ends soon
/// or is already over.
fn print_shift_expiries(shifts: &[ShiftExpiry]) {
    if shifts.is_empty() {
        return;
    }
    let mut table = Table::new();
    table
        .load_style(NOTHING)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_header(["ZONAL SHIFT", "NAME", "AWAY FROM", "STANDING", "ENDS"]);
    for s in shifts {
        let standing = serde_json::to_value(s.standing)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        table.add_row(
            [
                s.zonal_shift_id.clone().unwrap_or_else(|| "-".into()),
                s.name.clone(),
                s.az_id.clone(),
                standing.replace('_', " "),
                s.expires_at.clone().unwrap_or_else(|| "-".into()),
            ]
            .map(|cell| clean(&cell)),
        );
    }
    println!();
    println!("{}", table.trim_fmt());
    for warning in shifts.iter().filter_map(|s| s.warning.as_deref()) {
        println!("warning: {}", clean(warning));
    }
}

/// `azevac shift list`: the active shifts and autoshifts, and which of them azevac started.
pub fn print_shifts(shifts: &[(String, crate::plugins::shifted::Active, bool)], output: Output) {
    if output == Output::Json {
        let rows: Vec<serde_json::Value> = shifts
            .iter()
            .map(|(resource, a, ours)| {
                serde_json::json!({
                    "resource": resource, "zonal_shift_id": a.id, "away_from": a.away_from,
                    "shift_type": a.shift_type, "comment": a.comment, "started_by_azevac": ours,
                })
            })
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({ "shifts": rows })).unwrap_or_default()
        );
        return;
    }
    if shifts.is_empty() {
        println!("no zonal shift is active");
        return;
    }
    let mut table = Table::new();
    table
        .load_style(NOTHING)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_header(["RESOURCE", "AWAY FROM", "TYPE", "SHIFT", "AZEVAC", "COMMENT"]);
    for (resource, a, ours) in shifts {
        table.add_row(
            [
                resource.clone(),
                a.away_from.clone(),
                a.shift_type.clone(),
                a.id.clone().unwrap_or_default(),
                if *ours { "yes" } else { "no" }.to_owned(),
                a.comment.clone(),
            ]
            .map(|cell| clean(&cell)),
        );
    }
    println!("{}", table.trim_fmt());
    println!("{} active", shifts.len());
}

/// `azevac doctor`'s checklist: one line per check with the fix for each warning and failure, and
/// a summary; or one JSON document (`checks`, `summary`).
pub fn print_checks(checks: &[crate::check::Check], output: Output) {
    use crate::check::Verdict;
    let count = |v: Verdict| checks.iter().filter(|c| c.verdict == v).count();
    let (ok, warn, fail, skip) = (
        count(Verdict::Ok),
        count(Verdict::Warn),
        count(Verdict::Fail),
        count(Verdict::Skip),
    );
    if output == Output::Json {
        let document = serde_json::json!({
            "checks": checks,
            "summary": { "ok": ok, "warn": warn, "fail": fail, "skip": skip },
        });
        println!("{}", serde_json::to_string_pretty(&document).unwrap_or_default());
        return;
    }
    // A checklist, not a table: the fix goes under what it fixes, so no column grows wide.
    let width = checks.iter().map(|c| c.name.chars().count()).max().unwrap_or_default();
    for c in checks {
        let name = clean(&c.name);
        println!("{:<4}  {name:<width$}  {}", c.verdict.word(), clean(&c.detail));
        if let Some(fix) = c.fix.as_deref().filter(|_| c.verdict != Verdict::Ok) {
            println!("{:<4}  {:<width$}  fix: {}", "", "", clean(fix));
        }
    }
    let warnings = if warn == 1 { "warning" } else { "warnings" };
    println!("{ok} ok, {warn} {warnings}, {fail} failed, {skip} not checked");
    if fail > 0 {
        println!("fix the FAIL lines before an incident: azevac would fail there");
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
    use crate::plan::{Command, Item};

    fn item(name: &str, removed: &[&str], after: &[&str], status: Status, reason: Option<&str>) -> Item {
        let list = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        Item {
            current_subnets: list(after).into_iter().chain(list(removed)).collect(),
            removed_subnets: Some(list(removed)),
            resulting_subnets: list(after),
            status,
            reason: reason.map(str::to_owned),
            notes: vec!["Auto Scaling replaces the instances in the removed subnets".into()],
            ..Item::new(
                "asg",
                &format!("arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:x:autoScalingGroupName/{name}"),
                name,
                "use1-az2",
            )
        }
    }

    /// Names in the exposure table come from other people: escaped, like every table.
    #[test]
    fn the_exposure_table_escapes_names() {
        let mut evil = Finding::new("ec2-instance", "i-1", "web\u{1b}[2J", vec!["i-1".into()]).not_movable("no group");
        evil.notes.push("line\nbreak".into());
        let exposure = Exposure {
            region: "us-east-1".into(),
            az_id: "use1-az2".into(),
            az_name: "us-east-1c".into(),
            findings: vec![evil],
            problems: vec!["ecs: could not be read: \u{1b}]0;x".into()],
        };
        let text = render_exposure(&exposure, &exposure_summary(&exposure));
        assert!(!text.contains('\u{1b}'), "{text}");
        assert!(
            text.contains("web\\u{1b}[2J") && text.contains("line\\nbreak"),
            "{text}"
        );
        assert!(
            text.ends_with("1 findings: 0 movable still in the zone, 1 not movable, 0 already away\n"),
            "{text}"
        );
    }

    /// The plan table an operator reads before saying yes (issue 7).
    #[test]
    fn the_plan_table() {
        let plan = Plan {
            command: Command::Evacuate,
            region: "us-east-1".into(),
            az_id: Some("use1-az2".into()),
            az_name: Some("us-east-1c".into()),
            request: Default::default(),
            items: vec![
                item(
                    "web",
                    &["subnet-az2"],
                    &["subnet-az1", "subnet-az4"],
                    Status::Planned,
                    None,
                ),
                item(
                    "cache",
                    &[],
                    &["subnet-az2"],
                    Status::Skipped,
                    Some(crate::plan::WOULD_LEAVE_NO_SUBNETS),
                ),
                item(
                    "api",
                    &[],
                    &["subnet-az4"],
                    Status::Skipped,
                    Some("already evacuated: subnet-az2 journalled"),
                ),
            ],
            problems: vec![],
            stats: None,
        };
        insta::assert_snapshot!(render(&plan, Phase::Plan { dry_run: true }));
    }
}
