//! `azevac recover`: for every journal record (per type, one AZ or all), put back what was taken as
//! a union with the resource's current state, and only then delete the record; with `--waves`, a
//! wave at a time behind alarms ([`super::waves`]).

use super::waves::{Cut, Gates};
use super::Context;
use crate::cli;
use crate::model::Command;
use crate::Result;

/// Run `azevac recover`; returns the exit code.
pub async fn run(ctx: &Context, args: &cli::Recover) -> Result<i32> {
    let request = args.request();
    let gates = Gates::of(ctx, &request, args.wait.wait_timeout, args.kube.kubeconfig.clone())?;
    // Alarms that are not there are bad input: said before anything is planned.
    if let Some(gates) = &gates {
        gates.check("--alarm", "--alarm-prefix").await?;
    }
    let prepared = ctx
        .prepare(
            Command::Recover,
            args.az_id.as_deref(),
            &request,
            args.kube.kubeconfig.clone(),
        )
        .await?;
    if let Some(gates) = &gates {
        Cut::of(&prepared, gates).say(gates);
    }
    if args.confirm.dry_run {
        return Ok(ctx.print_only(prepared, true).await);
    }
    // A wave bakes once its capacity is in service: a bake that starts while the instances and
    // tasks are still launching would watch alarms that cannot have seen them yet.
    let wait = cli::Wait {
        wait: args.wait.wait || gates.is_some(),
        wait_timeout: args.wait.wait_timeout,
    };
    ctx.carry_out_gated(prepared, args.confirm.yes, &wait, &args.notify.topics, gates.as_ref())
        .await
}
