//! `azevac recover`: for every journal record (per type, one AZ or all), put back what was taken as
//! a union with the resource's current state, and only then delete the record; with `--waves`, a
//! wave at a time behind alarms ([`crate::app::waves`]).

use super::Context;
use crate::cli;
use crate::model::Command;
use crate::Result;

/// Run `azevac recover`; returns the exit code.
pub async fn run(ctx: &Context, args: &cli::Recover) -> Result<i32> {
    let request = args.request();
    let order = super::order(
        args.az_id.as_deref(),
        &request,
        &args.kube,
        &args.wait,
        &args.notify,
        &args.confirm,
    );
    super::carry_out(ctx, Command::Recover, order, args.confirm.yes).await
}
