//! `azevac evacuate`: take one AZ ID's subnets (and nodes, and traffic) out of every resource of the
//! chosen types, journalled ahead of every change.

use super::Context;
use crate::cli;
use crate::model::{Command, Request};
use crate::Result;

/// Run `azevac evacuate`; returns the exit code.
pub async fn run(ctx: &Context, args: &cli::Evacuate) -> Result<i32> {
    let prepared = ctx
        .prepare(
            Command::Evacuate,
            Some(&args.az_id),
            &request(args),
            args.kube.kubeconfig.clone(),
        )
        .await?;
    if args.confirm.dry_run {
        return Ok(ctx.print_only(prepared, true));
    }
    ctx.carry_out(prepared, args.confirm.yes, &args.wait).await
}

/// The plan's inputs as given on the command line.
fn request(args: &cli::Evacuate) -> Request {
    Request {
        types: args.types.types.clone(),
        ecs_clusters: args.clusters.clone(),
        tags: args.tags.iter().map(|(k, v)| format!("{k}={v}")).collect(),
        name_prefix: args.name_prefix.clone(),
        kube_contexts: args.kube.contexts.clone(),
        k8s_mode: Some(args.k8s_mode),
        drain_timeout_seconds: Some(args.drain_timeout.as_secs()),
        reason: args.reason.clone(),
        forget_missing: false,
        zonal_shift: args.zonal_shift,
        expires_in: Some(args.expiry.expires_in.clone()),
        force: args.force,
        pace: args.pace,
        pace_timeout_seconds: args.pace.map(|_| args.wait.wait_timeout.as_secs()),
    }
}
