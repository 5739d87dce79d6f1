//! `azevac exposure`: what has presence in a zone now, and for each what azevac does about it (the
//! `--type` that moves it) or why it cannot. Read-only: every registered type contributes its
//! findings through [`Plugin::exposure`](crate::plugins::Plugin::exposure), and the kinds no plugin
//! moves come from [`crate::app::exposure`]. A kind that cannot be read is one problem line; the others
//! are still listed.

use std::collections::{BTreeMap, BTreeSet};

use super::{Context, EXIT_EXPOSED, EXIT_FAILED, EXIT_OK};
use crate::app::exposure::{Where, KINDS};
use crate::cli;
use crate::error::describe;
use crate::model::topology::{self, Zones};
use crate::model::{Command, Fleet, Request};
use crate::plugins::{self, Scope, Setup};
use crate::report::{self, Exposure};
use crate::Result;

/// Run `azevac exposure`; returns the exit code: 3 with `--fail-if-exposed` when something movable
/// was found (a definite answer even if another kind or account could not be read), else 1 when a
/// kind or an account could not be read, else 0. With `--accounts`, every account is read through
/// its role, side by side; one that cannot be reached is one problem line.
pub async fn run(ctx: &Context, args: &cli::Exposure) -> Result<i32> {
    let fleet = args.accounts.fleet();
    crate::app::accounts::validate(&fleet, &[])?;
    if !fleet.is_empty() && !args.kube.contexts.is_empty() {
        return Err(crate::Error::BadInput(
            "--kube-context reaches clusters, not AWS accounts: run `azevac exposure --kube-context ...` without \
             --accounts for the Kubernetes findings"
                .into(),
        ));
    }
    let exposure = if fleet.is_empty() {
        in_account(ctx, &ctx.sdk, args, None).await?
    } else {
        across_accounts(ctx, args, &fleet).await?
    };
    report::print_exposure(&exposure, ctx.settings.output);
    let exposed = exposure.findings.iter().any(|f| f.movable());
    Ok(if args.fail_if_exposed && exposed {
        EXIT_EXPOSED
    } else if !exposure.problems.is_empty() {
        EXIT_FAILED
    } else {
        EXIT_OK
    })
}

/// Every account `--accounts` names, each read as the caller's own is; an account that cannot be
/// reached or read is a problem line, and the others are still listed. A zone that exists in no
/// account is the one error (exit 2).
async fn across_accounts(ctx: &Context, args: &cli::Exposure, fleet: &Fleet) -> Result<Exposure> {
    let accounts = crate::app::accounts::resolve(&ctx.sdk, fleet).await?;
    let reached = ctx.assume_each(fleet, accounts).await;
    let read = crate::app::fanout::side_by_side(
        ctx.settings.account_concurrency,
        reached.into_iter().map(|(account, sdk)| async move {
            let exposure = match sdk {
                Ok(sdk) => in_account(ctx, &sdk, args, Some(&account)).await,
                Err(e) => Err(e),
            };
            (account, exposure)
        }),
    )
    .await;
    let mut all = Exposure {
        region: ctx.region.clone(),
        az_id: args.az_id.clone(),
        az_name: String::new(),
        findings: Vec::new(),
        problems: Vec::new(),
        accounts: Vec::new(),
    };
    let (mut unread, mut errors) = (Vec::new(), Vec::new());
    for (account, exposure) in read {
        match exposure {
            Ok(part) => {
                if all.accounts.is_empty() {
                    (all.az_id, all.az_name) = (part.az_id, part.az_name);
                }
                all.findings.extend(part.findings);
                all.problems
                    .extend(part.problems.iter().map(|p| format!("account {account}: {p}")));
                all.accounts.push(account);
            }
            Err(e) => {
                unread.push(format!("account {account}: not read: {}", describe(&e)));
                errors.push(e);
            }
        }
    }
    // A zone that exists in no account is the one error, with its advice (exit 2); otherwise every
    // account's problem is listed (exit 1).
    if all.accounts.is_empty() && errors.iter().all(|e| matches!(e, crate::Error::UnknownAz { .. })) {
        if let Some(e) = errors.into_iter().next() {
            return Err(e);
        }
    }
    all.problems.extend(unread);
    Ok(all)
}

/// What has presence in the zone in one account (`account`: reached through its role; its findings
/// say so), read with `sdk`.
async fn in_account(
    ctx: &Context,
    sdk: &aws_config::SdkConfig,
    args: &cli::Exposure,
    account: Option<&str>,
) -> Result<Exposure> {
    let ec2 = crate::client!(aws_sdk_ec2, sdk);
    let zones = Zones::load(&ec2, &ctx.region).await?;
    let zone = zones.resolve(&args.az_id)?;
    let zone_subnets = topology::subnets_in_zone(&ec2, &zone.id).await?;
    // With --accounts there are no kube contexts (refused above): clusters are not accounts.
    let request = Request {
        kube_contexts: args.kube.contexts.clone(),
        ..Request::default()
    };
    let setup = Setup {
        sdk: sdk.clone(),
        request: request.clone(),
        kubeconfig: args.kube.kubeconfig.clone(),
        account: account.map(str::to_owned),
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
        accounts: Vec::new(),
    };
    for (name, outcome) in names.zip(by_type.into_iter().chain(by_kind)) {
        match outcome {
            Ok(found) => exposure.findings.extend(found),
            Err(e) => exposure
                .problems
                .push(format!("{name}: could not be read: {}", describe(&e))),
        }
    }
    for finding in &mut exposure.findings {
        finding.account = account.map(str::to_owned);
    }
    Ok(exposure)
}
