//! `azevac exposure` for people: what has presence in the zone, what moves each, what to know.

use super::layout::{wrap, Fitted, Notes};
use super::{Exposure, ExposureDocument, ExposureSummary, View};
use crate::model::Output;

pub(super) fn exposure_summary(exposure: &Exposure) -> ExposureSummary {
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
    print!("{}", render_exposure(exposure, &summary, &View::of(output)));
}

/// At most this many units are named per finding in a wide table (JSON has them all); the
/// fitted table counts them.
const UNITS_SHOWN: usize = 3;

fn render_exposure(exposure: &Exposure, summary: &ExposureSummary, view: &View) -> String {
    // Zone names differ between accounts: across accounts the heading names the zone by its ID.
    let zone = match exposure.accounts.is_empty() {
        true => format!("{} ({})", exposure.az_id, exposure.az_name),
        false => exposure.az_id.clone(),
    };
    let mut out = wrap(
        "",
        &format!("azevac exposure {zone} in {}", exposure.region),
        view.width,
    );
    let mut notes = Notes::default();
    // Across accounts: each account's count first, and whose each row is.
    let accounts = !exposure.accounts.is_empty() || exposure.findings.iter().any(|f| f.account.is_some());
    if accounts {
        out.push_str(&per_account(exposure));
    }
    if !exposure.findings.is_empty() {
        let mut header = if view.wide {
            vec!["KIND", "NAME", "ID", "IN ZONE", "MOVED BY", "WHAT TO KNOW"]
        } else {
            vec!["KIND", "NAME", "IN ZONE", "MOVED BY", "WHAT TO KNOW"]
        };
        if accounts {
            header.insert(0, "ACCOUNT");
        }
        let mut table = Fitted::new(header, view.width).keep(&["ACCOUNT", "KIND", "IN ZONE", "MOVED BY"]);
        for f in &exposure.findings {
            // The fitted table counts; the wide one names the first few.
            let mut units: Vec<String> = f.in_zone.iter().take(UNITS_SHOWN).cloned().collect();
            if f.in_zone.len() > UNITS_SHOWN {
                units.push(format!("+{} more", f.in_zone.len() - UNITS_SHOWN));
            }
            let in_zone = match view.wide {
                true => format!("{} {}", f.count, units.join(" ")),
                false => f.count.to_string(),
            };
            let moved_by = match (&f.moved_by, &f.not_movable, view.wide) {
                (Some(t), None, true) => format!("--type {t}"),
                (Some(t), None, false) => t.clone(),
                (_, _, true) => "not movable".to_owned(),
                (_, _, false) => "nothing".to_owned(),
            };
            let away = f.away.as_ref().map(|a| format!("already away: {a}"));
            let know: Vec<&str> = f
                .not_movable
                .iter()
                .chain(away.iter())
                .chain(f.notes.iter())
                .map(String::as_str)
                .collect();
            let know = know.join("; ");
            let mut row = vec![
                f.kind.clone(),
                f.name.clone(),
                in_zone,
                moved_by,
                if view.wide { know } else { notes.cell(&know) },
            ];
            if view.wide {
                row.insert(2, f.resource.clone());
            }
            if accounts {
                row.insert(0, f.account.clone().unwrap_or_else(|| "(own)".into()));
            }
            table.row(row);
        }
        out.push_str(&table.render());
    }
    out.push_str(&notes.render(view.width));
    for problem in &exposure.problems {
        out.push_str(&wrap("problem: ", problem, view.width));
    }
    out.push_str(&format!(
        "{} findings: {} movable still in the zone, {} not movable, {} already away\n",
        summary.findings, summary.movable, summary.not_movable, summary.away
    ));
    out
}

/// One line per account: `account 111111111111: 5 findings, 4 movable still in the zone`.
fn per_account(exposure: &Exposure) -> String {
    let mut by: std::collections::BTreeMap<&str, (usize, usize)> =
        exposure.accounts.iter().map(|a| (a.as_str(), (0, 0))).collect();
    for f in &exposure.findings {
        let counts = by.entry(f.account.as_deref().unwrap_or("(own)")).or_default();
        counts.0 += 1;
        counts.1 += usize::from(f.movable());
    }
    let mut out = String::new();
    for (account, (findings, movable)) in by {
        out.push_str(&super::clean(&format!(
            "account {account}: {findings} findings, {movable} movable still in the zone"
        )));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Finding;
    use crate::report::layout::fitted;

    fn exposure(findings: Vec<Finding>, problems: Vec<String>) -> Exposure {
        Exposure {
            region: "us-east-1".into(),
            az_id: "use1-az2".into(),
            az_name: "us-east-1c".into(),
            findings,
            problems,
            accounts: Vec::new(),
        }
    }

    /// Names in the exposure table come from other people: escaped, like every table.
    #[test]
    fn the_exposure_table_escapes_names() {
        let mut evil = Finding::new("ec2-instance", "i-1", "web\u{1b}[2J", vec!["i-1".into()]).not_movable("no group");
        evil.notes.push("line\nbreak".into());
        let exposure = exposure(vec![evil], vec!["ecs: could not be read: \u{1b}]0;x".into()]);
        let view = View {
            wide: true,
            ..View::default()
        };
        let text = render_exposure(&exposure, &exposure_summary(&exposure), &view);
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

    /// What the sample estate's zone holds, as `exposure` finds it.
    fn estate() -> Exposure {
        let instances = (1..=6).map(|n| format!("i-0{n}a2b3c4d5e6f7a8b9")).collect();
        exposure(
            vec![
                Finding::new(
                    "asg",
                    "arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:6d3e:autoScalingGroupName/web-frontend",
                    "web-frontend",
                    instances,
                )
                .moved_by("asg"),
                Finding::new("ec2-instance", "i-0ffee1234abcd5678", "bastion", vec!["i-0ffee1234abcd5678".into()])
                    .not_movable("a stand-alone instance: no group replaces it elsewhere; stop it, or launch one in another zone"),
            ],
            vec!["ecs: could not be read: AccessDeniedException: User: arn:aws:sts::123456789012:assumed-role/oncall/alice is not authorized to perform: ecs:ListClusters on resource: * because no identity-based policy allows the ecs:ListClusters action".into()],
        )
    }

    #[test]
    fn exposure_fits_80_and_200_columns() {
        let e = estate();
        let render = |view: &View| render_exposure(&e, &exposure_summary(&e), view);
        insta::assert_snapshot!("exposure_80", fitted(80, render));
        insta::assert_snapshot!("exposure_200", fitted(200, render));
    }
}
