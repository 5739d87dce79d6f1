//! `azevac recover`: for every journal record (per type, one AZ or all), put back what was taken as
//! a union with the resource's current state, and only then delete the record.

use super::Context;
use crate::cli;
use crate::model::Command;
use crate::Result;

/// Run `azevac recover`; returns the exit code.
pub async fn run(ctx: &Context, args: &cli::Recover) -> Result<i32> {
    let request = args.request();
    let prepared = ctx
        .prepare(
            Command::Recover,
            args.az_id.as_deref(),
            &request,
            args.kube.kubeconfig.clone(),
        )
        .await?;
    if args.confirm.dry_run {
        return Ok(ctx.print_only(prepared, true).await);
    }
    ctx.carry_out_notifying(prepared, args.confirm.yes, &args.wait, &args.notify.topics)
        .await
}
