//! `azevac exposure`: what has presence in a zone now, and for each what azevac does about it (the
//! `--type` that moves it) or why it cannot. Read-only: every registered type contributes its
//! findings through [`Plugin::exposure`](crate::plugins::Plugin::exposure), and the kinds no plugin
//! moves come from [`crate::exposure`]. A kind that cannot be read is one problem line; the others
//! are still listed.

use std::collections::{BTreeMap, BTreeSet};

use super::{Context, EXIT_EXPOSED, EXIT_FAILED, EXIT_OK};
use crate::cli;
use crate::error::describe;
use crate::exposure::{Where, KINDS};
use crate::model::{Command, Request};
use crate::plugins::{self, Scope, Setup};
use crate::report::{self, Exposure};
use crate::topology::{self, Zones};
use crate::Result;

/// Run `azevac exposure`; returns the exit code: 3 with `--fail-if-exposed` when something movable
/// was found (a definite answer even if another kind could not be read), else 1 when a kind could
/// not be read, else 0.
pub async fn run(ctx: &Context, args: &cli::Exposure) -> Result<i32> {
    let ec2 = crate::client!(aws_sdk_ec2, &ctx.sdk);
    let zones = Zones::load(&ec2, &ctx.region).await?;
    let zone = zones.resolve(&args.az_id)?;
    let zone_subnets = topology::subnets_in_zone(&ec2, &zone.id).await?;
    let request = Request {
        kube_contexts: args.kube.contexts.clone(),
        ..Request::default()
    };
    let setup = Setup {
        sdk: ctx.sdk.clone(),
        request: request.clone(),
        kubeconfig: args.kube.kubeconfig.clone(),
        account: None,
    };
    let plugins = plugins::select(&setup).await?;
    let (none, no_records) = (BTreeSet::new(), BTreeMap::new());
    let scope = Scope {
        command: Command::Evacuate,
        zone: Some(&zone),
        zones: &zones,
        zone_subnets: &zone_subnets,
        records: &no_records,
        request: &request,
        still_evacuated: &none,
    };
    let place = Where {
        ec2: &ec2,
        zone: &zone,
        zone_subnets: &zone_subnets,
    };
    let (by_type, by_kind) = futures::join!(
        futures::future::join_all(plugins.iter().map(|p| p.exposure(&scope))),
        futures::future::join_all(KINDS.iter().map(|k| (k.read)(place)))
    );
    let names = plugins
        .iter()
        .map(|p| p.resource_type())
        .chain(KINDS.iter().map(|k| k.name));
    let mut exposure = Exposure {
        region: ctx.region.clone(),
        az_id: zone.id.clone(),
        az_name: zone.name.clone(),
        findings: Vec::new(),
        problems: Vec::new(),
    };
    for (name, outcome) in names.zip(by_type.into_iter().chain(by_kind)) {
        match outcome {
            Ok(found) => exposure.findings.extend(found),
            Err(e) => exposure
                .problems
                .push(format!("{name}: could not be read: {}", describe(&e))),
        }
    }
    report::print_exposure(&exposure, ctx.output);
    let exposed = exposure.findings.iter().any(|f| f.movable());
    Ok(if args.fail_if_exposed && exposed {
        EXIT_EXPOSED
    } else if !exposure.problems.is_empty() {
        EXIT_FAILED
    } else {
        EXIT_OK
    })
}
