//! `azevac shift start|list|cancel|extend`: the zonal-shift part of an evacuation on its own, for
//! when the data plane has to move before anyone decides about capacity. Start and extend are
//! evacuate narrowed to that type, cancel is recover narrowed to it (the request comes from the
//! flags), so they journal and order exactly the same way (the watcher's renewal of shifts too).

use super::{Context, Printer, EXIT_OK};
use crate::app::Order;
use crate::cli;
use crate::model::topology::Zones;
use crate::model::Command;
use crate::plugins::zonal_shift::TYPE;
use crate::{Error, Result};

/// Run `azevac shift ...`; returns the exit code.
pub async fn run(ctx: &Context, command: &cli::Shift) -> Result<i32> {
    let (command, az_id, request, confirm) = match command {
        cli::Shift::Start(args) => (
            Command::Evacuate,
            Some(args.az_id.clone()),
            args.request(),
            &args.confirm,
        ),
        cli::Shift::Cancel(args) => (Command::Recover, args.az_id.clone(), args.request(), &args.confirm),
        cli::Shift::Extend(args) => match extended_zone(ctx, args.az_id.as_deref()).await? {
            Some(az_id) => (Command::Evacuate, Some(az_id), args.request(), &args.confirm),
            None => {
                println!("nothing to do: the journal holds no zonal shift of azevac's");
                return Ok(EXIT_OK);
            }
        },
        cli::Shift::List(args) => return list(ctx, args.az_id.as_deref()).await,
    };
    let order = Order {
        az_id: az_id.as_deref(),
        request: &request,
        kubeconfig: None,
        wait: false,
        wait_timeout: std::time::Duration::ZERO,
        notify: &[],
        dry_run: confirm.dry_run,
    };
    let printer = Printer::new(confirm.yes);
    let outcome = match command {
        Command::Evacuate => ctx.evacuate(&printer, order).await?,
        Command::Recover => ctx.recover(&printer, order).await?,
    };
    Ok(outcome.exit_code())
}

/// The zone whose shifts `shift extend` extends: `--az-id`, or the one zone the journal's shift
/// records are in (`None`: there are none). Records in several zones need `--az-id`: extending
/// two zones' shifts at once is not something to do on a guess.
async fn extended_zone(ctx: &Context, az_id: Option<&str>) -> Result<Option<String>> {
    if let Some(az_id) = az_id {
        return Ok(Some(az_id.to_owned()));
    }
    let zones: std::collections::BTreeSet<String> = match ctx.journal.of_type(TYPE, None).await {
        Ok(entries) => entries.into_iter().flatten().map(|r| r.az_id).collect(),
        Err(Error::TableMissing { .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    match zones.len() {
        0 => Ok(None),
        1 => Ok(zones.into_iter().next()),
        _ => Err(Error::BadInput(format!(
            "azevac's zonal shifts are away from several zones ({}): name one with --az-id",
            crate::model::text::clean(&zones.into_iter().collect::<Vec<_>>().join(", "))
        ))),
    }
}

/// Every active shift (optionally away from one zone), marking the ones azevac's journal holds.
async fn list(ctx: &Context, az_id: Option<&str>) -> Result<i32> {
    if let Some(az_id) = az_id {
        Zones::load(&crate::client!(aws_sdk_ec2, &ctx.sdk), &ctx.region)
            .await?
            .resolve(az_id)?;
    }
    let shifts = crate::plugins::zonal_shift::listing(&ctx.sdk, &ctx.journal, az_id).await?;
    crate::report::print_shifts(&shifts, ctx.settings.output);
    Ok(EXIT_OK)
}
