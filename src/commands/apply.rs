//! `azevac apply plan.json`: run a plan reviewed in advance, exactly. The plan is made again from the
//! same inputs and the live state; if any line would differ, nothing is changed and the differences
//! are listed, so what runs is what was reviewed. A plan file can be edited, and its inputs decide
//! what is done and under which identity: each is shown before the question, and a role or external
//! ID other than the command line's is refused unless the operator accepts it explicitly.

use std::io::{IsTerminal, Read};
use std::path::Path;

use serde::Deserialize;

use super::{Context, Printer, EXIT_OK};
use crate::app::waves::{Cut, Gates};
use crate::app::{Run, Schedule};
use crate::cli;
use crate::model::plan::{self, Command, Plan};
use crate::{Error, Result};

/// The document `--dry-run --output json` prints: the plan, and whether it was a dry run.
#[derive(Deserialize)]
struct Saved {
    dry_run: bool,
    #[serde(flatten)]
    plan: Plan,
}

/// Run `azevac apply`; returns the exit code.
pub async fn run(ctx: &Context, args: &cli::Apply) -> Result<i32> {
    let shown = args.plan.display().to_string();
    // The plan may come on stdin, and then the prompt cannot: say so before reading anything.
    let from_stdin = args.plan == Path::new("-");
    if !args.yes && (from_stdin || !std::io::stdin().is_terminal()) {
        return Err(Error::BadInput(
            "refusing to apply a plan without confirmation: stdin is not a terminal (or holds the plan); \
             pass --yes once the plan is reviewed"
                .into(),
        ));
    }
    let saved = read(&args.plan)?;
    if saved.plan.region != ctx.region {
        let region = crate::model::text::clean(&saved.plan.region);
        return Err(Error::BadInput(format!(
            "{shown} is a plan for region {region}, but this run is in {}: pass --region {region}",
            ctx.region
        )));
    }
    let request = &saved.plan.request;
    let az_id = saved.plan.az_id.as_deref();
    if saved.plan.command == Command::Evacuate && az_id.is_none() {
        return Err(Error::BadInput(format!(
            "{shown}: an evacuation plan without az_id; make it again"
        )));
    }
    // Every check the flags would have made, before the file's settings drive anything.
    crate::app::validate(request)?;
    if saved.plan.command == Command::Evacuate && request.waves.is_some() {
        return Err(Error::BadInput(format!(
            "{shown}: an evacuation plan with waves (waves are recover's); make it again"
        )));
    }
    // A plan saved with --waves goes in the same waves, behind the same alarms, each wave waiting
    // for them as long as the recover that made it would have.
    let wait_timeout = request
        .wait_timeout_seconds
        .map_or(args.wait.wait_timeout, std::time::Duration::from_secs);
    let gates = Gates::of(ctx, request, wait_timeout, args.kubeconfig.clone())?;
    let given = args.role.fleet();
    crate::app::accounts::validate_role(&given)?;
    let other_role = if assumes_roles(&saved.plan) {
        crate::app::accounts::role_difference(&request.fleet, &given, &ctx.region)
    } else {
        None
    };
    if let Some(difference) = other_role.as_ref().filter(|_| args.yes && !args.accept_plan_role) {
        let flags = crate::app::accounts::role_flags(&request.fleet);
        let same = if flags.is_empty() {
            "apply it without role flags".to_owned()
        } else {
            format!("pass {flags} to apply")
        };
        return Err(Error::BadInput(format!(
            "{shown}: {difference}; nothing changed: to assume the plan's, {same}, or add --accept-plan-role \
             once you have checked that the plan should act under that identity"
        )));
    }
    crate::say!("azevac: {shown} was made with these settings (a plan file can be edited: check them):");
    for (setting, value) in settings(&saved.plan, &ctx.region) {
        // A kind's option is named by the plan file's own key: both sides are the file's text.
        crate::say!(
            "  {}: {}",
            crate::model::text::clean(&setting),
            crate::model::text::clean(&value)
        );
    }
    if let Some(difference) = other_role.filter(|_| !args.accept_plan_role) {
        let question = format!("{difference}. Act under the plan's identity?");
        if !super::confirm(&question, false)? {
            crate::say!("azevac: nothing changed");
            return Ok(EXIT_OK);
        }
    }
    if let Some(gates) = &gates {
        gates
            .check("the plan's waves.alarms", "the plan's waves.alarm_prefixes")
            .await?;
    }
    let live = ctx
        .prepare(saved.plan.command, az_id, request, args.kubeconfig.clone())
        .await?;
    matches_live(&saved.plan, &live.plan, &shown)?;
    if let Some(gates) = &gates {
        Cut::of(&live, gates).say(gates);
    }
    // A wave bakes once its capacity is in service (as recover --waves implies --wait), settling
    // as long as the recover that made the plan would have.
    let wait = match gates {
        Some(_) => Some(wait_timeout),
        None => args.wait.wait.then_some(args.wait.wait_timeout),
    };
    let run = Run {
        schedule: gates.as_ref().map_or(Schedule::AtOnce, Schedule::Waves),
        wait,
        notify: &args.notify.topics,
        dry_run: false,
    };
    let outcome = ctx.carry_out(&Printer::new(args.yes), live, run).await?;
    Ok(outcome.exit_code())
}

/// Whether carrying the plan out can assume roles: it names accounts, or it is a recover (which
/// reaches every account its records name).
fn assumes_roles(plan: &Plan) -> bool {
    !plan.request.fleet.accounts.is_empty() || plan.command == Command::Recover
}

/// Every input of the saved plan that changes what is done or under which identity, as
/// (setting, value), defaults included: the plan file is not the operator's own words.
fn settings(plan: &Plan, region: &str) -> Vec<(String, String)> {
    let request = &plan.request;
    let fleet = &request.fleet;
    let list = |values: &[String], none: &str| {
        if values.is_empty() {
            none.to_owned()
        } else {
            values.join(", ")
        }
    };
    let yes_no = |on: bool| if on { "yes" } else { "no" }.to_owned();
    let mut out: Vec<(&str, String)> = vec![
        (
            "command",
            format!(
                "{} {} in {}",
                match plan.command {
                    Command::Evacuate => "evacuate",
                    Command::Recover => "recover",
                },
                plan.az_id.as_deref().unwrap_or("every evacuated AZ"),
                plan.region
            ),
        ),
        ("types", list(&request.types, "every type")),
        ("tags", list(&request.tags, "none")),
        (
            "name prefix",
            request.name_prefix.clone().unwrap_or_else(|| "none".into()),
        ),
        ("kube contexts", list(&request.kube_contexts, "none")),
        ("reason", request.reason.clone().unwrap_or_else(|| "none".into())),
        ("force (past the cross-zone and headroom checks)", yes_no(request.force)),
        ("forget missing (delete their records)", yes_no(request.forget_missing)),
        (
            "wait timeout",
            request.wait_timeout_seconds.map_or_else(
                || "the default".into(),
                |s| humantime::format_duration(std::time::Duration::from_secs(s)).to_string(),
            ),
        ),
        ("accounts", list(&fleet.accounts, "the caller's own")),
    ];
    if !fleet.ous.is_empty() {
        out.push(("organizational units", list(&fleet.ous, "")));
    }
    if !fleet.exclude.is_empty() {
        out.push(("excluded accounts", list(&fleet.exclude, "")));
    }
    if assumes_roles(plan) {
        out.push((
            "role assumed in each account",
            crate::app::accounts::role_template(fleet, region),
        ));
        out.push((
            "external ID",
            fleet.external_id.clone().unwrap_or_else(|| "none".into()),
        ));
    }
    if let Some(waves) = &request.waves {
        let gated = waves
            .alarms
            .iter()
            .cloned()
            .chain(waves.alarm_prefixes.iter().map(|p| format!("{p}*")))
            .collect::<Vec<_>>();
        out.push((
            "waves",
            format!(
                "{}, each baking {}, gated on {}, on alarm {}{}{}",
                waves.steps,
                humantime::format_duration(std::time::Duration::from_secs(waves.bake_seconds)),
                list(&gated, "no alarm"),
                match waves.on_alarm {
                    crate::model::OnAlarm::Stop => "stop",
                    crate::model::OnAlarm::Evacuate => "evacuate the last wave again",
                },
                if waves.first_tags.is_empty() {
                    String::new()
                } else {
                    format!(", first {}", waves.first_tags.join(", "))
                },
                if waves.last_tags.is_empty() {
                    String::new()
                } else {
                    format!(", last {}", waves.last_tags.join(", "))
                },
            ),
        ));
    }
    let mut out: Vec<(String, String)> = out.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
    // Each kind's own options (`--pace`, `--expires-in`...), by the key the plan stores them under.
    for (key, value) in &request.options {
        out.push((format!("option {key}"), value.to_string()));
    }
    out
}

/// Read and check the saved plan document (a file, or stdin for `-`).
fn read(path: &Path) -> Result<Saved> {
    let shown = path.display();
    let mut text = String::new();
    let read = if path == Path::new("-") {
        std::io::stdin().read_to_string(&mut text).map(|_| ())
    } else {
        std::fs::read_to_string(path).map(|t| text = t)
    };
    read.map_err(|e| Error::BadInput(format!("cannot read the plan {shown}: {e}")))?;
    let saved: Saved = serde_json::from_str(&text).map_err(|e| {
        Error::BadInput(format!(
            "{shown} is not a saved azevac plan ({}): save one with \
             `azevac evacuate --az-id AZ_ID --dry-run --output json > plan.json`",
            // serde quotes the file's text (an unknown value), line breaks and escapes included.
            crate::model::text::clean(&e.to_string())
        ))
    })?;
    if !saved.dry_run {
        return Err(Error::BadInput(format!(
            "{shown} is the result of a run, not a plan: save one with --dry-run --output json"
        )));
    }
    Ok(saved)
}

/// Refuse, listing every difference on stderr, unless the live plan is the saved one.
fn matches_live(saved: &Plan, live: &Plan, shown: &str) -> Result<()> {
    let differences = plan::differences(saved, live);
    if differences.is_empty() {
        crate::say!("azevac: {shown} matches the live state ({} lines)", saved.items.len());
        return Ok(());
    }
    crate::say!("azevac: the live state no longer gives the plan in {shown}:");
    for line in &differences {
        crate::say!("  {}", crate::model::text::clean(line));
    }
    Err(Error::BadInput(format!(
        "{shown} no longer matches the live state ({} line(s) differ, listed above); nothing changed: \
         make a new plan with --dry-run --output json and review it",
        differences.len()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Fleet, Request};

    /// Issue 36: every input that changes what is done or under which identity is listed, the
    /// role as the template it stands for.
    #[test]
    fn issue_36_the_settings_shown_cover_the_request() {
        let plan = Plan {
            az_id: Some("use1-az2".into()),
            region: "us-east-1".into(),
            request: Request {
                reason: Some("INC-36".into()),
                force: true,
                fleet: Fleet {
                    accounts: vec!["111111111111".into()],
                    role_name: Some("ops".into()),
                    external_id: Some("ext-1".into()),
                    ..Fleet::default()
                },
                options: serde_json::json!({"expires_in": "3h", "zonal_shift": true})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
                ..Request::default()
            },
            ..Plan::empty(Command::Evacuate)
        };
        let shown: Vec<String> = settings(&plan, "us-east-1")
            .into_iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        for expected in [
            "command: evacuate use1-az2 in us-east-1",
            "types: every type",
            "reason: INC-36",
            "force (past the cross-zone and headroom checks): yes",
            "forget missing (delete their records): no",
            "accounts: 111111111111",
            "role assumed in each account: arn:aws:iam::{account}:role/ops",
            "external ID: ext-1",
            r#"option expires_in: "3h""#,
            "option zonal_shift: true",
        ] {
            assert!(shown.iter().any(|l| l == expected), "{expected:?} not in {shown:#?}");
        }
        // An evacuation in the caller's own account assumes no role: none is shown.
        let own = Plan {
            request: Request::default(),
            ..plan.clone()
        };
        assert!(!settings(&own, "us-east-1").iter().any(|(k, _)| k.starts_with("role")));
        let recover = Plan {
            command: Command::Recover,
            ..own
        };
        assert!(settings(&recover, "us-east-1")
            .iter()
            .any(|(k, v)| k.starts_with("role") && v == "arn:aws:iam::{account}:role/azevac"));
    }
}
