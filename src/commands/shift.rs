//! `azevac shift start|list|cancel`: the zonal-shift part of an evacuation on its own, for when the
//! data plane has to move before anyone decides about capacity. Start and cancel are evacuate and
//! recover narrowed to that type (the request comes from the flags), so they journal and order
//! exactly the same way.

use super::{Context, EXIT_OK};
use crate::cli;
use crate::model::Command;
use crate::topology::Zones;
use crate::Result;

/// Run `azevac shift ...`; returns the exit code.
pub async fn run(ctx: &Context, command: &cli::Shift) -> Result<i32> {
    let no_wait = cli::Wait {
        wait: false,
        wait_timeout: std::time::Duration::ZERO,
    };
    let (command, az_id, request, confirm) = match command {
        cli::Shift::Start(args) => (
            Command::Evacuate,
            Some(args.az_id.as_str()),
            args.request(),
            &args.confirm,
        ),
        cli::Shift::Cancel(args) => (Command::Recover, args.az_id.as_deref(), args.request(), &args.confirm),
        cli::Shift::List(args) => return list(ctx, args.az_id.as_deref()).await,
    };
    let prepared = ctx.prepare(command, az_id, &request, None).await?;
    if confirm.dry_run {
        return Ok(ctx.print_only(prepared, true));
    }
    ctx.carry_out(prepared, confirm.yes, &no_wait).await
}

/// Every active shift (optionally away from one zone), marking the ones azevac's journal holds.
async fn list(ctx: &Context, az_id: Option<&str>) -> Result<i32> {
    if let Some(az_id) = az_id {
        Zones::load(&crate::client!(aws_sdk_ec2, &ctx.sdk), &ctx.region)
            .await?
            .resolve(az_id)?;
    }
    let shifts = crate::plugins::zonal_shift::listing(&ctx.sdk, &ctx.journal, az_id).await?;
    crate::report::print_shifts(&shifts, ctx.output);
    Ok(EXIT_OK)
}
