//! `azevac watch`: follow AWS's zonal autoshift onto the control plane ([`crate::app::watch`] is
//! the watcher). Here: the watcher's flags turned into its orders, its health beacon started, and
//! each run it carries out shown as an operator's would be.

use std::sync::Arc;

use super::{describe, Context, Printer};
use crate::app::health::Beacon;
use crate::app::watch::{stall_bound, watch, Orders};
use crate::{cli, Error, Result};

/// Run `azevac watch` until SIGTERM or Ctrl-C; returns the exit code.
pub async fn run(ctx: &Context, args: &cli::Watch) -> Result<i32> {
    let bound = stall_bound(ctx.settings.lease, ctx.settings.operation_timeout, args.poll_wait);
    let beacon =
        Arc::new(Beacon::start(args.health_file.clone(), &ctx.run_id, &ctx.region, bound).map_err(Error::BadInput)?);
    if let Some(watchdog) = crate::app::health::watchdog() {
        if watchdog <= bound {
            crate::say!(
                "azevac: warning: watch: systemd's WatchdogSec ({}) is not above the longest a healthy watcher goes \
                 between beats ({}: --operation-timeout, a third of --lease or --poll-wait, and 30s): a slow call \
                 may have a healthy watcher restarted; set WatchdogSec above it",
                humantime::format_duration(watchdog),
                humantime::format_duration(bound)
            );
        }
    }
    let ran = watch(ctx, &orders(args), &beacon, &Printer::new(true)).await;
    match &ran {
        Ok(_) => beacon.stopped("stopped on a signal"),
        Err(e) => beacon.stopped(&format!("stopped at start: {}", describe(e))),
    }
    ran
}

/// What `args` ask the watcher to do.
fn orders(args: &cli::Watch) -> Orders {
    Orders {
        queue: args.queue.clone(),
        types: args.types.clone(),
        evacuation: args.evacuation(),
        recovery: args.recovery(),
        kubeconfig: args.kube.kubeconfig.clone(),
        wait: args.wait.wait,
        wait_timeout: args.wait.wait_timeout,
        notify: args.notify.topics.clone(),
        follow_practice: args.follow_practice,
        dry_run: args.dry_run,
        resync: args.resync,
        poll_wait: args.poll_wait,
    }
}
