//! `azevac apply plan.json`: run a plan reviewed in advance, exactly. The plan is made again from the
//! same inputs and the live state; if any line would differ, nothing is changed and the differences
//! are listed, so what runs is what was reviewed.

use std::io::{IsTerminal, Read};
use std::path::Path;

use serde::Deserialize;

use super::Context;
use crate::cli;
use crate::plan::{self, Command, Plan};
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
        return Err(Error::BadInput(format!(
            "{shown} is a plan for region {}, but this run is in {}: pass --region {}",
            saved.plan.region, ctx.region, saved.plan.region
        )));
    }
    let request = &saved.plan.request;
    let az_id = saved.plan.az_id.as_deref();
    if saved.plan.command == Command::Evacuate && az_id.is_none() {
        return Err(Error::BadInput(format!(
            "{shown}: an evacuation plan without az_id; make it again"
        )));
    }
    let live = ctx
        .prepare(saved.plan.command, az_id, request, args.kubeconfig.clone())
        .await?;
    matches_live(&saved.plan, &live.plan, &shown)?;
    ctx.carry_out_notifying(live, args.yes, &args.wait, &args.notify.topics)
        .await
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
            "{shown} is not a saved azevac plan ({e}): save one with \
             `azevac evacuate --az-id AZ_ID --dry-run --output json > plan.json`"
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
        crate::say!("  {}", crate::text::clean(line));
    }
    Err(Error::BadInput(format!(
        "{shown} no longer matches the live state ({} line(s) differ, listed above); nothing changed: \
         make a new plan with --dry-run --output json and review it",
        differences.len()
    )))
}
