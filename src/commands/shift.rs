//! `azevac shift start|list|cancel`: the zonal-shift part of an evacuation on its own, for when the
//! data plane has to move before anyone decides about capacity. Start and cancel are evacuate and
//! recover narrowed to the `zonal-shift` type, so they journal and order exactly the same way.

use super::{evacuate, recover, Context, EXIT_OK};
use crate::cli;
use crate::plan::Request;
use crate::plugins::zonal_shift::{self, Shifts};
use crate::topology::Zones;
use crate::{Error, Result};

/// Run `azevac shift ...`; returns the exit code.
pub async fn run(ctx: &Context, command: &cli::Shift) -> Result<i32> {
    let no_wait = cli::Wait {
        wait: false,
        wait_timeout: std::time::Duration::ZERO,
    };
    match command {
        cli::Shift::Start(args) => {
            let request = Request {
                types: vec![zonal_shift::TYPE.to_owned()],
                zonal_shift: true,
                expires_in: Some(args.expiry.expires_in.clone()),
                reason: args.reason.clone(),
                ..Request::default()
            };
            let prepared = evacuate::prepare(ctx, &args.az_id, &request, None).await?;
            if args.confirm.dry_run {
                return Ok(prepared.print_only(ctx, true));
            }
            evacuate::carry_out(ctx, prepared, args.confirm.yes, &no_wait).await
        }
        cli::Shift::Cancel(args) => {
            let request = Request {
                types: vec![zonal_shift::TYPE.to_owned()],
                ..Request::default()
            };
            let prepared = recover::prepare(ctx, args.az_id.as_deref(), &request, None).await?;
            if args.confirm.dry_run {
                return Ok(prepared.print_only(ctx, true));
            }
            recover::carry_out(ctx, prepared, args.confirm.yes, &no_wait).await
        }
        cli::Shift::List(args) => list(ctx, args.az_id.as_deref()).await,
    }
}

/// Every active shift (optionally away from one zone), marking the ones azevac's journal holds.
async fn list(ctx: &Context, az_id: Option<&str>) -> Result<i32> {
    if let Some(az_id) = az_id {
        Zones::load(&crate::client!(aws_sdk_ec2, &ctx.sdk), &ctx.region)
            .await?
            .resolve(az_id)?;
    }
    let ours: Vec<String> = match ctx.journal.of_type(zonal_shift::TYPE, az_id).await {
        Ok(entries) => entries
            .into_iter()
            .flatten()
            .filter_map(|r| zonal_shift::started_id(&r).map(str::to_owned))
            .collect(),
        Err(Error::TableMissing { .. }) => Vec::new(),
        Err(e) => return Err(e),
    };
    let shifts: Vec<_> = Shifts::new(&ctx.sdk)
        .active(None)
        .await?
        .into_iter()
        .filter(|(_, a)| az_id.is_none_or(|z| a.away_from == z))
        .map(|(resource, a)| {
            let mine = a.id.as_ref().is_some_and(|id| ours.contains(id));
            (resource, a, mine)
        })
        .collect();
    crate::report::print_shifts(&shifts, ctx.output);
    Ok(EXIT_OK)
}
