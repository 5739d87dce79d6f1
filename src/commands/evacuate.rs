//! `azevac evacuate`: take one AZ ID's subnets (and nodes, and traffic) out of every resource of the
//! chosen types, journalled ahead of every change.

use super::{Context, Printer};
use crate::cli;
use crate::Result;

/// Run `azevac evacuate`; returns the exit code.
pub async fn run(ctx: &Context, args: &cli::Evacuate) -> Result<i32> {
    let outcome = ctx
        .evacuate(
            &Printer::new(args.confirm.yes),
            super::order(
                Some(&args.az_id),
                &args.request(),
                &args.kube,
                &args.wait,
                &args.notify,
                &args.confirm,
            ),
        )
        .await?;
    Ok(outcome.exit_code())
}
