//! `azevac evacuate`: take one AZ ID's subnets (and nodes, and traffic) out of every resource of the
//! chosen types, journalled ahead of every change.

use super::{Context, Printer};
use crate::app::Order;
use crate::cli;
use crate::Result;

/// Run `azevac evacuate`; returns the exit code.
pub async fn run(ctx: &Context, args: &cli::Evacuate) -> Result<i32> {
    let outcome = ctx
        .evacuate(
            &Printer::new(args.confirm.yes),
            Order {
                az_id: Some(&args.az_id),
                request: &args.request(),
                kubeconfig: args.kube.kubeconfig.clone(),
                wait: args.wait.wait,
                wait_timeout: args.wait.wait_timeout,
                notify: &args.notify.topics,
                dry_run: args.confirm.dry_run,
            },
        )
        .await?;
    Ok(outcome.exit_code())
}
