//! `azevac evacuate`: take one AZ ID's subnets (and nodes, and traffic) out of every resource of the
//! chosen types, journalled ahead of every change.

use super::Context;
use crate::cli;
use crate::model::Command;
use crate::Result;

/// Run `azevac evacuate`; returns the exit code.
pub async fn run(ctx: &Context, args: &cli::Evacuate) -> Result<i32> {
    let request = args.request();
    let order = super::order(
        Some(&args.az_id),
        &request,
        &args.kube,
        &args.wait,
        &args.notify,
        &args.confirm,
    );
    super::carry_out(ctx, Command::Evacuate, order, args.confirm.yes).await
}
