//! `azevac doctor` for people: a checklist, one line per check, the fix under what it fixes.

use unicode_width::UnicodeWidthStr;

use super::clean;
use super::layout::wrap;
use super::View;
use crate::model::check::{Check, Verdict};
use crate::model::Output;

/// `azevac doctor`'s checklist: one line per check with the fix for each warning and failure, and
/// a summary; or one JSON document (`checks`, `summary`).
pub fn print_checks(checks: &[Check], output: Output) {
    if output == Output::Json {
        let [ok, warn, fail, skip] = counts(checks);
        let document = serde_json::json!({
            "checks": checks,
            "summary": { "ok": ok, "warn": warn, "fail": fail, "skip": skip },
        });
        println!("{}", serde_json::to_string_pretty(&document).unwrap_or_default());
        return;
    }
    print!("{}", render_checks(checks, &View::of(output)));
}

/// How many checks are ok, warn, fail and not checked.
fn counts(checks: &[Check]) -> [usize; 4] {
    let count = |v: Verdict| checks.iter().filter(|c| c.verdict == v).count();
    [
        count(Verdict::Ok),
        count(Verdict::Warn),
        count(Verdict::Fail),
        count(Verdict::Skip),
    ]
}

/// A checklist, not a table: the detail and the fix wrap under the check's name, so that no line
/// grows wider than the screen.
fn render_checks(checks: &[Check], view: &View) -> String {
    let [ok, warn, fail, skip] = counts(checks);
    // Names longer than a third of the screen do not push every detail to the right.
    let longest = checks.iter().map(|c| clean(&c.name).width()).max().unwrap_or_default();
    let width = view.width.map_or(longest, |w| longest.min(w / 3));
    let mut out = String::new();
    for c in checks {
        let name = clean(&c.name);
        // Padded by display width: a name in wide characters keeps the details in one column.
        let pad = " ".repeat(width.saturating_sub(name.width()));
        let head = format!("{:<4}  {name}{pad}  ", c.verdict.word());
        if name.width() > width {
            // Its own line, so that the detail still starts in the detail column.
            out.push_str(&format!("{:<4}  {name}\n", c.verdict.word()));
            out.push_str(&wrap(&" ".repeat(width + 8), &c.detail, view.width));
        } else {
            out.push_str(&wrap(&head, &c.detail, view.width));
        }
        if let Some(fix) = c.fix.as_deref().filter(|_| c.verdict != Verdict::Ok) {
            out.push_str(&wrap(&format!("{:<4}  {:<width$}  fix: ", "", ""), fix, view.width));
        }
    }
    let warnings = if warn == 1 { "warning" } else { "warnings" };
    out.push_str(&format!(
        "{ok} ok, {warn} {warnings}, {fail} failed, {skip} not checked\n"
    ));
    if fail > 0 {
        out.push_str("fix the FAIL lines before an incident: azevac would fail there\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::layout::fitted;

    fn checks() -> Vec<Check> {
        let check = |verdict, name: &str, detail: &str, fix: Option<&str>| Check {
            verdict,
            name: name.into(),
            detail: detail.into(),
            fix: fix.map(str::to_owned),
        };
        vec![
            check(Verdict::Ok, "credentials", "arn:aws:sts::123456789012:assumed-role/oncall-admin/alice@example.com in account 123456789012", None),
            check(Verdict::Ok, "region", "us-east-1: use1-az2 is us-east-1c here", None),
            check(
                Verdict::Fail,
                "journal",
                "table azevac-journal: ResourceNotFoundException: Requested resource not found: Table: azevac-journal not found",
                Some("run `azevac init` in the account and region that will hold the journal (or pass --table NAME to use another)"),
            ),
            check(
                Verdict::Warn,
                "ecs: read permissions",
                "ecs:ListClusters, ecs:ListServices and ecs:DescribeServices allowed; ecs:ListTasks denied by an explicit deny in a service control policy",
                Some("grant the actions of fixtures/iam-policy.json to the role you run azevac with"),
            ),
            check(Verdict::Skip, "kubernetes", "no --kube-context given: the eks and karpenter types are left out", None),
        ]
    }

    #[test]
    fn doctor_fits_80_and_200_columns() {
        insta::assert_snapshot!("doctor_80", fitted(80, |view| render_checks(&checks(), view)));
        insta::assert_snapshot!("doctor_200", fitted(200, |view| render_checks(&checks(), view)));
    }

    /// A name in wide characters (two columns each) keeps every detail in one column.
    #[test]
    fn wide_characters_keep_the_details_aligned() {
        let checks = vec![Check::ok("ecs", "answered"), Check::ok("アカウント", "answered")];
        let text = fitted(80, |view| render_checks(&checks, view));
        let columns: Vec<usize> = text
            .lines()
            .take(2)
            .map(|l| l[..l.find("answered").expect("detail")].width())
            .collect();
        assert_eq!(columns[0], columns[1], "{text}");
    }
}
