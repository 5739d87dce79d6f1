//! The plan an operator reads before saying yes, and the result after: one row per resource that
//! fits the screen (what changes in a few words), the long reasons once each under the table, the
//! skipped lines of a large plan counted by reason, and a summary per type and per status.

use std::collections::BTreeMap;

use super::layout::{headline, wrap, Fitted, Notes};
use super::{status_word, Phase, View};
use crate::model::{Command, Item, Plan, Status};

/// A plan with more skipped lines than this counts them by reason instead of listing them
/// (`--show-skipped` lists them all).
pub const SKIPPED_LISTED: usize = 20;

/// The human-readable form: a heading, the table, the notes, problems, and the summaries.
pub fn render(plan: &Plan, phase: Phase, view: &View) -> String {
    let verb = view.verb.unwrap_or(match plan.command {
        Command::Evacuate => "evacuate",
        Command::Recover => "recover",
    });
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
    let mut out = wrap(
        "",
        &format!("azevac {verb} {zone} in {}: {heading}", plan.region),
        view.width,
    );
    // A run across accounts says whose each line is (grouped: the plan is ordered by account).
    let accounts = plan.items.iter().any(|i| i.account.is_some());
    let skipped = plan.count(Status::Skipped);
    let list_skipped = view.show_skipped || skipped <= SKIPPED_LISTED;
    let mut notes = Notes::default();
    if !plan.items.is_empty() {
        // The heading names the zone: a column saying it again on every row is room lost.
        let zones = plan.az_id.is_none() || plan.items.iter().any(|i| Some(&i.az_id) != plan.az_id.as_ref());
        let mut table = Fitted::new(header(plan.command, accounts, view.wide, zones), view.width)
            .keep(&["ACCOUNT", "TYPE", "AZ", "STATUS"]);
        for item in plan
            .items
            .iter()
            .filter(|i| list_skipped || i.status != Status::Skipped)
        {
            let mut row = if view.wide {
                wide_row(item, view)
            } else {
                vec![
                    item.resource_type.clone(),
                    item.name.clone(),
                    change_words(item),
                    status_word(item.status).to_owned(),
                    notes.cell(&reason_words(item)),
                ]
            };
            if zones && !view.wide {
                row.insert(2, item.az_id.clone());
            }
            if accounts {
                row.insert(0, item.account.clone().unwrap_or_else(|| "(own)".into()));
            }
            table.row(row);
        }
        if table.rows() > 0 {
            out.push_str(&table.render());
        }
    }
    if !list_skipped {
        out.push_str(&skipped_by_reason(plan, &mut notes, view));
    }
    out.push_str(&notes.render(view.width));
    let mut seen = Vec::new();
    for item in plan.items.iter().filter(|i| i.status != Status::Skipped) {
        for note in &item.notes {
            let line = (item.resource_type.as_str(), note.as_str());
            if !seen.contains(&line) {
                seen.push(line);
            }
        }
    }
    seen.sort();
    for (kind, note) in seen {
        out.push_str(&wrap(&format!("note ({kind}): "), note, view.width));
    }
    for problem in &plan.problems {
        out.push_str(&wrap("problem: ", problem, view.width));
    }
    if accounts {
        out.push_str(&per_account(plan, phase));
    }
    out.push_str(&per_type(plan, phase, view.width));
    out.push_str(&total(plan, phase));
    out
}

/// The table's columns: compact (kubectl's default), or every identifier (`-o wide`).
fn header(command: Command, accounts: bool, wide: bool, zones: bool) -> Vec<&'static str> {
    let mut header = if wide {
        let changed = match command {
            Command::Evacuate => "REMOVE",
            Command::Recover => "PUT BACK",
        };
        vec![
            "TYPE",
            "RESOURCE",
            "AZ",
            changed,
            "SUBNETS AFTER",
            "ACTIONS",
            "STATUS",
            "REASON",
        ]
    } else {
        let mut compact = vec!["TYPE", "RESOURCE", "CHANGE", "STATUS", "REASON"];
        if zones {
            compact.insert(2, "AZ");
        }
        compact
    };
    if accounts {
        header.insert(0, "ACCOUNT");
    }
    header
}

/// `-o wide`: the resource's ARN, its subnets by ID and Name tag, every action and the whole reason.
fn wide_row(item: &Item, view: &View) -> Vec<String> {
    let changed = item.removed_subnets.as_ref().or(item.restored_subnets.as_ref());
    vec![
        item.resource_type.clone(),
        item.resource.clone(),
        item.az_id.clone(),
        changed.map(|s| view.subnets(s)).unwrap_or_default(),
        view.subnets(&item.resulting_subnets),
        item.actions.as_deref().unwrap_or_default().join(", "),
        status_word(item.status).to_owned(),
        reason_cell(item),
    ]
}

/// What changes, in a few words: `-1 subnet, 2 left`, `+1 subnet, 3 after`, the kind's own words
/// (`route -> nat-0d2f (use1-az1)`), or its actions.
pub fn change_words(item: &Item) -> String {
    if let Some(change) = item.change.as_ref().filter(|_| item.status != Status::Skipped) {
        return change.clone();
    }
    let count = |n: usize| format!("{n} subnet{}", if n == 1 { "" } else { "s" });
    let subnets = match (&item.removed_subnets, &item.restored_subnets) {
        (Some(removed), _) if !removed.is_empty() => Some(format!(
            "-{}, {} left",
            count(removed.len()),
            item.resulting_subnets.len()
        )),
        (_, Some(restored)) if !restored.is_empty() => Some(format!(
            "+{}, {} after",
            count(restored.len()),
            item.resulting_subnets.len()
        )),
        _ => None,
    };
    let actions = item.actions.as_ref().filter(|a| !a.is_empty()).map(|a| a.join(", "));
    match (subnets, actions) {
        (Some(s), Some(a)) => format!("{s}; {a}"),
        (Some(s), None) => s,
        (None, Some(a)) => a,
        (None, None) => "-".to_owned(),
    }
}

/// The fitted table's REASON: why a line is skipped or failed; for a line that changes, what it
/// says besides what CHANGE says, and its headroom only when it does not fit (the rest is in `-o
/// wide`).
fn reason_words(item: &Item) -> String {
    let changing = matches!(item.status, Status::Planned | Status::Done);
    let reason = item.reason.clone().filter(|_| !(changing && item.change.is_some()));
    let headroom = item
        .headroom
        .as_ref()
        .filter(|h| changing && !h.fits)
        .map(|h| h.describe());
    [reason, headroom].into_iter().flatten().collect::<Vec<_>>().join("; ")
}

/// The REASON cell of `-o wide`: why a line is skipped or failed, and for a line that changes what
/// moves and the free addresses it moves into (`headroom: 240 free IPs for 4 instances`).
pub fn reason_cell(item: &Item) -> String {
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

/// The skipped lines a large plan does not list: how many for each reason, and of which types.
fn skipped_by_reason(plan: &Plan, notes: &mut Notes, view: &View) -> String {
    // (headline, the whole reason while every line of the group gives the same one, count per type)
    let mut groups: Vec<(String, Option<String>, BTreeMap<&str, usize>)> = Vec::new();
    for item in plan.items.iter().filter(|i| i.status == Status::Skipped) {
        let reason = reason_words(item);
        let head = headline(&reason);
        let at = groups.iter().position(|(h, _, _)| *h == head).unwrap_or_else(|| {
            groups.push((head, Some(reason.clone()), BTreeMap::new()));
            groups.len() - 1
        });
        let group = &mut groups[at];
        if group.1.as_ref().is_some_and(|whole| *whole != reason) {
            group.1 = None;
        }
        *group.2.entry(item.resource_type.as_str()).or_default() += 1;
    }
    let mut out = format!(
        "{} skipped lines not listed (--show-skipped lists them):\n",
        plan.count(Status::Skipped)
    );
    for (head, whole, types) in groups {
        // One reason for all: its note, as a row would have it; many: the rows hold the details.
        let cell = match whole {
            Some(whole) => notes.cell(&whole),
            None => head,
        };
        let n: usize = types.values().sum();
        let types: Vec<String> = types.iter().map(|(t, n)| format!("{t} {n}")).collect();
        out.push_str(&wrap("  ", &format!("{n} {cell} ({})", types.join(", ")), view.width));
    }
    out
}

/// One summary line per type, in plan order: `asg: 4 to change, 1 skipped (would leave no subnets)`.
fn per_type(plan: &Plan, phase: Phase, width: Option<usize>) -> String {
    let mut types: Vec<&str> = Vec::new();
    for item in &plan.items {
        if !types.contains(&item.resource_type.as_str()) {
            types.push(&item.resource_type);
        }
    }
    // One type's summary says no more than the total line under it.
    if types.len() < 2 {
        return String::new();
    }
    let mut out = String::new();
    for kind in types {
        let items: Vec<&Item> = plan.items.iter().filter(|i| i.resource_type == kind).collect();
        let n = |status: Status| items.iter().filter(|i| i.status == status).count();
        let mut parts = match phase {
            Phase::Plan { .. } => vec![format!("{} to change", n(Status::Planned))],
            Phase::Result => vec![format!("{} done", n(Status::Done))],
        };
        if n(Status::Failed) > 0 {
            parts.push(format!("{} failed", n(Status::Failed)));
        }
        let mut reasons: Vec<(String, usize)> = Vec::new();
        for item in items.iter().filter(|i| i.status == Status::Skipped) {
            let why = headline(item.reason.as_deref().unwrap_or("no reason given"));
            match reasons.iter_mut().find(|(r, _)| *r == why) {
                Some((_, count)) => *count += 1,
                None => reasons.push((why, 1)),
            }
        }
        if !reasons.is_empty() {
            let why: Vec<String> = match reasons.as_slice() {
                [(only, _)] => vec![only.clone()],
                many => many.iter().map(|(r, count)| format!("{count} {r}")).collect(),
            };
            parts.push(format!("{} skipped ({})", n(Status::Skipped), why.join(", ")));
        }
        out.push_str(&wrap(&format!("{kind}: "), &parts.join(", "), width));
    }
    out
}

/// One summary line per account of a run across accounts.
fn per_account(plan: &Plan, phase: Phase) -> String {
    let mut by_account: BTreeMap<&str, [usize; 4]> = BTreeMap::new();
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
            // A line that failed at planning is counted, so that the accounts add up to the total.
            Phase::Plan { .. } if failed > 0 => {
                format!("account {account}: {planned} to change, {skipped} skipped, {failed} failed")
            }
            Phase::Plan { .. } => format!("account {account}: {planned} to change, {skipped} skipped"),
            Phase::Result => format!("account {account}: {done} done, {skipped} skipped, {failed} failed"),
        };
        out.push_str(&super::clean(&line));
        out.push('\n');
    }
    out
}

/// The last line: the whole plan's count per status.
fn total(plan: &Plan, phase: Phase) -> String {
    let s = super::summary(plan);
    let already = match s.already_evacuated {
        0 => String::new(),
        k => format!(", {k} of them already evacuated"),
    };
    match phase {
        Phase::Plan { .. } if s.planned == 0 => format!("nothing to do ({} skipped{already})\n", s.skipped),
        Phase::Plan { .. } => format!("{} to change, {} skipped{already}\n", s.planned, s.skipped),
        Phase::Result => format!("{} done, {} skipped, {} failed\n", s.done, s.skipped, s.failed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Headroom;
    use crate::report::layout::fitted;

    fn item(kind: &str, name: &str, removed: &[&str], after: &[&str], status: Status, reason: Option<&str>) -> Item {
        let list = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        Item {
            current_subnets: list(after).into_iter().chain(list(removed)).collect(),
            removed_subnets: Some(list(removed)),
            resulting_subnets: list(after),
            status,
            reason: reason.map(str::to_owned),
            notes: vec!["Auto Scaling replaces the instances in the removed subnets".into()],
            ..Item::new(
                kind,
                &format!("arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:x:autoScalingGroupName/{name}"),
                name,
                "use1-az2",
            )
        }
    }

    fn plan(items: Vec<Item>) -> Plan {
        Plan {
            region: "us-east-1".into(),
            az_id: Some("use1-az2".into()),
            az_name: Some("us-east-1c".into()),
            items,
            ..Plan::empty(Command::Evacuate)
        }
    }

    /// The lines of the sample estate's kinds, as the plan of an evacuation shows them.
    fn estate() -> Plan {
        let mut web = item(
            "asg",
            "web-frontend-production-blue",
            &["subnet-0a1b2c3d4e5f60718"],
            &["subnet-0b1c2d3e4f5061728", "subnet-0c1d2e3f405162738"],
            Status::Planned,
            None,
        );
        web.headroom = Some(Headroom {
            units: "instances".into(),
            moving: 4,
            free_ips: 240,
            ahead: 0,
            shared_with: vec![],
            sharing: 0,
            fits: true,
        });
        let mut route = item("nat", "rtb-0123456789abcdef0", &[], &[], Status::Planned, None);
        route.removed_subnets = None;
        route.notes = vec![];
        route.actions = Some(vec![
            "0.0.0.0/0 was on nat-0b93a916a2186935c".into(),
            "point 0.0.0.0/0 at nat-0d2f6b1c9e8a7f654".into(),
        ]);
        route.reason = Some("0.0.0.0/0: nat-0b93a916a2186935c (use1-az2) -> nat-0d2f6b1c9e8a7f654 (use1-az1)".into());
        route.change = Some("route -> nat-0d2f6b1c9e8a7f654 (use1-az1)".into());
        plan(vec![
            web,
            item(
                "asg",
                "batch-workers",
                &[],
                &["subnet-0a1b2c3d4e5f60718"],
                Status::Skipped,
                Some(crate::model::plan::WOULD_LEAVE_NO_SUBNETS),
            ),
            item(
                "ecs",
                "api",
                &[],
                &["subnet-0c1d2e3f405162738"],
                Status::Skipped,
                Some("already evacuated: subnet-0a1b2c3d4e5f60718 journalled by run 1b2c3d4e"),
            ),
            route,
        ])
    }

    fn view(width: Option<usize>) -> View {
        View {
            width,
            ..View::default()
        }
    }

    /// The plan table an operator reads before saying yes, at 80 columns and on a wide screen, where
    /// nothing is cut.
    #[test]
    fn the_plan_fits_80_and_200_columns() {
        let plan = estate();
        insta::assert_snapshot!(
            "plan_80",
            fitted(80, |view| render(&plan, Phase::Plan { dry_run: true }, view))
        );
        let wide = fitted(200, |view| render(&plan, Phase::Plan { dry_run: true }, view));
        assert!(!wide.contains('…'), "{wide}");
        insta::assert_snapshot!("plan_200", wide);
    }

    /// Across accounts and zones at 80 columns: the account IDs, zones, types and statuses stay
    /// whole; the names, changes and reasons give way.
    #[test]
    fn account_ids_and_zones_are_never_cut() {
        let mut plan = estate();
        plan.az_id = None;
        plan.command = Command::Recover;
        for (n, item) in plan.items.iter_mut().enumerate() {
            item.account = Some(["111111111111", "222222222222"][n % 2].to_owned());
            item.az_id = ["use1-az2", "use1-az4"][n % 2].to_owned();
        }
        let text = fitted(80, |view| render(&plan, Phase::Plan { dry_run: true }, view));
        for whole in ["111111111111", "222222222222", "use1-az4", "skipped", "planned"] {
            assert!(text.contains(whole), "{whole}:\n{text}");
        }
        insta::assert_snapshot!(text);
    }

    /// `-o wide`: every identifier, with the subnets' Name tags.
    #[test]
    fn the_wide_plan_names_every_subnet() {
        let mut wide = view(None);
        wide.wide = true;
        wide.subnet_names = [
            ("subnet-0a1b2c3d4e5f60718", "app-use1-az2"),
            ("subnet-0b1c2d3e4f5061728", "app-use1-az1"),
        ]
        .into_iter()
        .map(|(id, name)| (id.to_owned(), name.to_owned()))
        .collect();
        let text = render(&estate(), Phase::Plan { dry_run: true }, &wide);
        assert!(text.contains("subnet-0a1b2c3d4e5f60718 (app-use1-az2)"), "{text}");
        assert!(
            text.contains("arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:x:autoScalingGroupName/web-frontend-production-blue"),
            "{text}"
        );
        insta::assert_snapshot!(text);
    }

    /// 1,000 resources: one row each at 80 columns; 1,000 skipped ones are counted by reason, and
    /// listed one row each with --show-skipped.
    #[test]
    fn a_plan_of_a_thousand_resources_keeps_one_row_each() {
        let planned: Vec<Item> = (0..1000)
            .map(|n| {
                item(
                    "asg",
                    &format!("group-{n:04}"),
                    &["subnet-az2"],
                    &["subnet-az1", "subnet-az4"],
                    Status::Planned,
                    None,
                )
            })
            .collect();
        let text = render(&plan(planned), Phase::Plan { dry_run: false }, &view(Some(80)));
        let rows = text.lines().filter(|l| l.starts_with(" asg ")).count();
        assert_eq!(rows, 1000, "{text}");
        assert!(text.lines().all(|l| l.chars().count() <= 80));

        let skipped: Vec<Item> = (0..1000)
            .map(|n| {
                let reason = if n % 4 == 0 {
                    crate::model::plan::WOULD_LEAVE_NO_SUBNETS.to_owned()
                } else {
                    format!("already evacuated: subnet-az2 journalled by run {n}")
                };
                let kind = if n % 2 == 0 { "asg" } else { "ecs" };
                item(
                    kind,
                    &format!("r-{n:04}"),
                    &[],
                    &["subnet-az4"],
                    Status::Skipped,
                    Some(&reason),
                )
            })
            .collect();
        let skipped = plan(skipped);
        let text = render(&skipped, Phase::Plan { dry_run: false }, &view(Some(80)));
        assert!(text.lines().count() < 20, "{text}");
        assert!(text.contains("1000 skipped lines not listed"), "{text}");
        assert!(text.contains("  250 would leave no subnets [1] (asg 250)"), "{text}");
        assert!(text.contains("  750 already evacuated (asg 250, ecs 500)"), "{text}");
        assert!(
            text.contains("asg: 0 to change, 500 skipped (250 would leave no subnets, 250 already\n     evacuated)"),
            "{text}"
        );
        let all = View {
            show_skipped: true,
            ..view(Some(80))
        };
        let text = render(&skipped, Phase::Plan { dry_run: false }, &all);
        let rows = text
            .lines()
            .filter(|l| l.starts_with(" asg ") || l.starts_with(" ecs "))
            .count();
        assert_eq!(rows, 1000);
    }

    #[test]
    fn what_changes_in_a_few_words() {
        let evacuated = item(
            "asg",
            "web",
            &["subnet-a"],
            &["subnet-b", "subnet-c"],
            Status::Planned,
            None,
        );
        assert_eq!(change_words(&evacuated), "-1 subnet, 2 left");
        let mut recovered = item(
            "asg",
            "web",
            &[],
            &["subnet-a", "subnet-b", "subnet-c"],
            Status::Planned,
            None,
        );
        recovered.removed_subnets = None;
        recovered.restored_subnets = Some(vec!["subnet-a".into(), "subnet-d".into()]);
        assert_eq!(change_words(&recovered), "+2 subnets, 3 after");
        let skipped = item("asg", "web", &[], &["subnet-a"], Status::Skipped, Some("x"));
        assert_eq!(change_words(&skipped), "-");
    }
}
