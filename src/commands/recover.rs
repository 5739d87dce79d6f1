//! `azevac recover`: for every journal record (per type, one AZ or all), put back what was taken as
//! a union with the resource's current state, and only then delete the record; with `--waves`, a
//! wave at a time behind alarms ([`crate::app::waves`]).

use super::{Context, Printer};
use crate::app::Order;
use crate::cli;
use crate::Result;

/// Run `azevac recover`; returns the exit code.
pub async fn run(ctx: &Context, args: &cli::Recover) -> Result<i32> {
    let outcome = ctx
        .recover(
            &Printer::new(args.confirm.yes),
            Order {
                az_id: args.az_id.as_deref(),
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
