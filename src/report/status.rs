//! `azevac status` for people: the journal's records one row each, the changes azevac made that end
//! by themselves (zonal shifts) with when each ends, and what could not be read.

use std::collections::{BTreeMap, BTreeSet};

use super::layout::{headline, wrap, Fitted, Notes};
use super::{LiveLock, StatusDocument, View, WatcherState};
use crate::journal::Lock;
use crate::model::Expiry;
use crate::model::{Output, Record};

/// The status table's columns: every one with `-o wide`; else AZ only when the records span more
/// than one zone (the count under the table names the one), and who wrote them under the table.
fn status_header(accounts: bool, wide: bool, zones: bool) -> Vec<&'static str> {
    let mut header = if wide {
        vec![
            "AZ",
            "TYPE",
            "RESOURCE",
            "REMOVED / DONE",
            "STATE",
            "SINCE",
            "BY",
            "REASON",
        ]
    } else {
        vec!["TYPE", "RESOURCE", "TAKEN", "STATE", "SINCE", "REASON"]
    };
    if zones && !wide {
        header.insert(0, "AZ");
    }
    if accounts {
        header.insert(usize::from(zones || wide), "ACCOUNT");
    }
    header
}

/// Print the journal's records (`azevac status`), marking those another run is changing now.
/// With `--accounts`, `accounts` are the accounts asked about (each gets a summary line, those
/// with nothing evacuated too). With `-o wide`, each removed subnet is named by its Name tag from
/// `subnet_names` too.
#[allow(clippy::too_many_arguments)]
pub fn print_status(
    records: &[Record],
    accounts: &[String],
    expiries: &[Expiry],
    locks: &[Lock],
    watcher: Option<&crate::journal::Watcher>,
    problems: &[String],
    output: Output,
    subnet_names: BTreeMap<String, String>,
) {
    let watcher = watcher.map(WatcherState::of);
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
            expiries,
            locks: live,
            watcher,
            problems,
        };
        println!("{}", serde_json::to_string_pretty(&document).unwrap_or_default());
        return;
    }
    let view = View {
        subnet_names,
        ..View::of(output)
    };
    print!("{}", per_account(records, accounts));
    print!("{}", render_status(records, expiries, locks, problems, &view));
    if let Some(watcher) = watcher {
        print!("{}", watcher.line());
    }
}

fn render_status(records: &[Record], expiries: &[Expiry], locks: &[Lock], problems: &[String], view: &View) -> String {
    let mut out = String::new();
    let mut notes = Notes::default();
    let accounts = records.iter().any(|r| r.account_id.is_some());
    if records.is_empty() {
        out.push_str("nothing is evacuated (the journal has no records)\n");
    } else {
        let zone_ids: BTreeSet<&str> = records.iter().map(|r| r.az_id.as_str()).collect();
        let zones = zone_ids.len() > 1;
        let mut table = Fitted::new(status_header(accounts, view.wide, zones), view.width)
            .keep(&["AZ", "ACCOUNT", "TYPE", "STATE", "SINCE"]);
        for r in records {
            let being_changed = locks
                .iter()
                .find(|l| l.resource == r.resource && l.is_live())
                .map(|l| format!(" (being changed by run {}, lease until {})", l.run_id, l.until()))
                .unwrap_or_default();
            let state = format!("{}{being_changed}", r.state.as_str());
            let reason = r.reason.clone().unwrap_or_default();
            let mut row = if view.wide {
                vec![
                    r.az_id.clone(),
                    r.resource_type.clone(),
                    r.resource.clone(),
                    // Nodes and zonal shifts lose no subnets: what azevac did to them is in `actions`.
                    if r.removed_subnets.is_empty() {
                        r.actions.join(", ")
                    } else {
                        view.subnets(&r.removed_subnets)
                    },
                    state,
                    r.created_at.clone().unwrap_or_default(),
                    r.evacuated_by.clone().unwrap_or_default(),
                    reason,
                ]
            } else {
                let mut row = vec![
                    r.resource_type.clone(),
                    r.resource_name.clone().unwrap_or_else(|| r.resource.clone()),
                    taken(r),
                    notes.cell(&state),
                    minutes(r.created_at.as_deref().unwrap_or_default()),
                    // A reason many records share (one run's `--reason`) is one note, however short.
                    match records.iter().filter(|o| o.reason.as_ref() == Some(&reason)).count() {
                        0 | 1 => notes.cell(&reason),
                        _ => format!("{} [{}]", headline(&reason), notes.number(&reason)),
                    },
                ];
                if zones {
                    row.insert(0, r.az_id.clone());
                }
                row
            };
            if accounts {
                row.insert(
                    usize::from(zones || view.wide),
                    r.account_id.clone().unwrap_or_else(|| "(own)".into()),
                );
            }
            table.row(row);
        }
        out.push_str(&table.render());
        out.push_str(&notes.render(view.width));
        if !view.wide {
            out.push_str(&writers(records, view));
        }
        let zone = match zone_ids.iter().collect::<Vec<_>>().as_slice() {
            [only] => format!(" in {only}"),
            _ => String::new(),
        };
        out.push_str(&super::clean(&format!("{} journal records{zone}", records.len())));
        out.push('\n');
    }
    out.push_str(&expiries_of(expiries, view));
    for problem in problems {
        out.push_str(&wrap("problem: ", problem, view.width));
    }
    out
}

/// Across accounts, one line per account first: `account 111111111111: 4 records (asg 2, ecs 1,
/// lambda 1)`, or `nothing evacuated` for an account asked about that has none.
fn per_account(records: &[Record], asked: &[String]) -> String {
    let mut by: BTreeMap<&str, BTreeMap<&str, usize>> = asked.iter().map(|a| (a.as_str(), BTreeMap::new())).collect();
    if asked.is_empty() && records.iter().all(|r| r.account_id.is_none()) {
        return String::new();
    }
    for r in records {
        let account = r.account_id.as_deref().unwrap_or("(own)");
        *by.entry(account)
            .or_default()
            .entry(r.resource_type.as_str())
            .or_default() += 1;
    }
    let mut out = String::new();
    for (account, types) in by {
        let line = match types.values().sum::<usize>() {
            0 => format!("account {account}: nothing evacuated"),
            n => {
                let types: Vec<String> = types.iter().map(|(t, n)| format!("{t} {n}")).collect();
                format!("account {account}: {n} records ({})", types.join(", "))
            }
        };
        out.push_str(&super::clean(&line));
        out.push('\n');
    }
    out
}

/// What azevac took, in a few words: `1 subnet`, or the kind's actions by their first word
/// (`taint, cordon`); `-o wide` has them whole.
fn taken(record: &Record) -> String {
    match record.removed_subnets.len() {
        0 => record
            .actions
            .iter()
            .map(|a| a.split(':').next().unwrap_or(a).trim())
            .collect::<Vec<_>>()
            .join(", "),
        1 => "1 subnet".to_owned(),
        n => format!("{n} subnets"),
    }
}

/// Who wrote the records, once each under the table: `written by oncall/alice (3)`.
fn writers(records: &[Record], view: &View) -> String {
    let mut by: Vec<(String, usize)> = Vec::new();
    for r in records {
        let name = who(r.evacuated_by.as_deref().unwrap_or("unknown"));
        match by.iter_mut().find(|(n, _)| *n == name) {
            Some((_, count)) => *count += 1,
            None => by.push((name, 1)),
        }
    }
    let by: Vec<String> = by.iter().map(|(name, n)| format!("{name} ({n})")).collect();
    wrap("written by ", &by.join(", "), view.width)
}

/// An RFC 3339 time in UTC to the minute (`12-04 14:30Z`): the year, the seconds and the fraction
/// matter to no one reading the table in an incident; a time in another form is shown as it is.
fn minutes(time: &str) -> String {
    let utc = time.ends_with('Z') && time.as_bytes().get(10) == Some(&b'T') && time.as_bytes().get(16) == Some(&b':');
    match (time.get(5..10), time.get(11..16)) {
        (Some(day), Some(minute)) if utc => format!("{day} {minute}Z"),
        _ => time.to_owned(),
    }
}

/// Who wrote a record, as people say it: the role and session (`oncall/alice`) or the user of a
/// caller ARN, the ARN's last part otherwise.
fn who(caller: &str) -> String {
    let resource = caller.rsplit(':').next().unwrap_or(caller);
    match resource.split_once('/') {
        Some(("assumed-role" | "user" | "role" | "federated-user", rest)) => rest.to_owned(),
        _ => resource.to_owned(),
    }
}

/// The changes azevac's records name that end by themselves, a table per kind (its column named
/// for what it calls one, `ZONAL SHIFT`): when each ends, and a warning for each that ends soon or
/// is already over.
fn expiries_of(expiries: &[Expiry], view: &View) -> String {
    let mut out = String::new();
    for (kind, expiring) in crate::plugins::expiring::kinds() {
        let theirs: Vec<&Expiry> = expiries.iter().filter(|e| e.kind == kind).collect();
        if theirs.is_empty() {
            continue;
        }
        let mut table = Fitted::new(
            [
                expiring.noun.to_uppercase().as_str(),
                "NAME",
                "AWAY FROM",
                "STANDING",
                "ENDS",
            ],
            view.width,
        );
        for e in &theirs {
            let standing = serde_json::to_value(e.standing)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            table.row([
                e.id.clone().unwrap_or_else(|| "-".into()),
                e.name.clone(),
                e.az_id.clone(),
                standing.replace('_', " "),
                e.expires_at.clone().unwrap_or_else(|| "-".into()),
            ]);
        }
        out.push_str(&format!("\n{}", table.render()));
        for warning in theirs.iter().filter_map(|e| e.warning.as_deref()) {
            out.push_str(&wrap("warning: ", warning, view.width));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::State;
    use crate::report::layout::fitted;

    fn record(n: usize, kind: &str, name: &str, removed: &[&str], actions: &[&str]) -> Record {
        Record {
            az_id: "use1-az2".into(),
            resource: format!(
                "arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:{n}:autoScalingGroupName/{name}"
            ),
            resource_type: kind.into(),
            removed_subnets: removed.iter().map(|s| s.to_string()).collect(),
            state: State::Done,
            version: 2,
            resource_name: Some(name.into()),
            original_subnets: vec![],
            actions: actions.iter().map(|s| s.to_string()).collect(),
            run_id: Some("5f0c2a9e-4c1b-4f7e-9a2d-0b6e8c3d1a47".into()),
            evacuated_by: Some("arn:aws:sts::123456789012:assumed-role/oncall-admin/alice@example.com".into()),
            reason: Some("INC-4721: use1-az2 impaired, packet loss on the zone's NAT gateways since 02:14 UTC".into()),
            azevac_version: Some("0.1.0".into()),
            created_at: Some("2026-12-04T02:31:07.481Z".into()),
            updated_at: None,
            account_id: None,
            identity: None,
        }
    }

    fn records() -> Vec<Record> {
        vec![
            record(
                1,
                "asg",
                "web-frontend-production-blue",
                &["subnet-0a1b2c3d4e5f60718"],
                &[],
            ),
            record(
                2,
                "ecs",
                "orders-api",
                &["subnet-0a1b2c3d4e5f60718", "subnet-0f1e2d3c4b5a69788"],
                &[],
            ),
            record(
                3,
                "eks",
                "ip-10-0-2-17.ec2.internal",
                &[],
                &["taint:azevac.io/evacuated=use1-az2:NoSchedule", "cordon"],
            ),
        ]
    }

    #[test]
    fn status_fits_80_and_200_columns() {
        let text = fitted(80, |view| render_status(&records(), &[], &[], &[], view));
        // One row per record, and the reason they share once under the table.
        assert_eq!(text.matches("[1]").count(), 4, "{text}");
        assert!(text.contains("written by oncall-admin/alice@example.com (3)"), "{text}");
        insta::assert_snapshot!("status_80", text);
        insta::assert_snapshot!(
            "status_200",
            fitted(200, |view| render_status(&records(), &[], &[], &[], view))
        );
    }

    #[test]
    fn who_and_when_in_few_words() {
        assert_eq!(
            who("arn:aws:sts::123456789012:assumed-role/oncall/alice"),
            "oncall/alice"
        );
        assert_eq!(who("arn:aws:iam::123456789012:user/bob"), "bob");
        assert_eq!(who("unknown"), "unknown");
        assert_eq!(minutes("2026-12-04T02:31:07.481Z"), "12-04 02:31Z");
        assert_eq!(minutes("yesterday"), "yesterday");
    }
}
