//! `azevac recover`: for every journal record (per type, one AZ or all), put back what was taken as
//! a union with the resource's current state, and only then delete the record; with `--waves`, a
//! wave at a time behind alarms ([`crate::app::waves`]).

use super::{Context, Printer};
use crate::cli;
use crate::Result;

/// Run `azevac recover`; returns the exit code.
pub async fn run(ctx: &Context, args: &cli::Recover) -> Result<i32> {
    let outcome = ctx
        .recover(
            &Printer::new(args.confirm.yes),
            super::order(
                args.az_id.as_deref(),
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
