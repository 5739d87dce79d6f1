//! `azevac evacuate`: take one AZ ID's subnets (and nodes, and traffic) out of every resource of the
//! chosen types, journalled ahead of every change.

use super::Context;
use crate::cli;
use crate::model::Command;
use crate::Result;

/// Run `azevac evacuate`; returns the exit code.
pub async fn run(ctx: &Context, args: &cli::Evacuate) -> Result<i32> {
    let prepared = ctx
        .prepare(
            Command::Evacuate,
            Some(&args.az_id),
            &args.request(),
            args.kube.kubeconfig.clone(),
        )
        .await?;
    if args.confirm.dry_run {
        return Ok(ctx.print_only(prepared, true).await);
    }
    ctx.carry_out_notifying(prepared, args.confirm.yes, &args.wait, &args.notify.topics)
        .await
}
