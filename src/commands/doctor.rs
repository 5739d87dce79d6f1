//! `azevac doctor`: before an incident, one read-only pass over what a run needs — the region, the
//! credentials and caller, the zones, the journal table (there, a journal, protected), and each
//! type's read permissions through the plugin registry — printed as a checklist with the fix for
//! each failure. Nothing is created or changed: a read proves read permission only.

use aws_config::retry::RetryConfig;

use super::{Context, EXIT_FAILED, EXIT_OK};
use crate::cli;
use crate::error::describe;
use crate::journal::Journal;
use crate::model::check::{self, Check};
use crate::model::topology::Zones;
use crate::model::Request;
use crate::plugins::{Setup, REGISTRY};
use crate::{Error, Result};

/// Attempts per call: a check that fails says so within seconds, instead of after a run's patient
/// retries (an emulator answers a service it lacks with a 500, which a run would retry 8 times).
const ATTEMPTS: u32 = 2;

/// Run `azevac doctor`; returns the exit code (1 when any check failed).
pub async fn run(ctx: &Context, args: &cli::Doctor) -> Result<i32> {
    crate::app::accounts::validate(&args.accounts.fleet(), &[])?;
    let sdk = ctx
        .sdk
        .to_builder()
        .retry_config(RetryConfig::standard().with_max_attempts(ATTEMPTS))
        .build();
    let ctx = &Context {
        journal: Journal::new(&sdk, ctx.journal.table()),
        ..ctx.with_sdk(sdk)
    };
    let mut checks = vec![Check::ok(
        "region",
        match ctx.sdk.endpoint_url() {
            Some(url) => format!("{} (endpoint {url})", ctx.region),
            None => ctx.region.clone(),
        },
    )];
    let (caller, no_credentials) = caller(ctx).await;
    checks.push(caller);
    if no_credentials {
        // Every other call would fail the same way: one line says it, the rest are not tried.
        checks.push(Check::skip(
            "everything else",
            "not checked: no usable credentials",
            "fix the credentials, then run `azevac doctor` again",
        ));
    } else {
        checks.extend(zones(ctx, args.az_id.as_deref()).await);
        checks.push(subnets(ctx).await);
        checks.extend(journal(ctx).await);
        checks.extend(expiries(ctx, &args.accounts.fleet()).await);
        checks.extend(watcher(ctx).await);
        checks.extend(types(ctx, args, None).await);
        checks.extend(accounts(ctx, args).await);
    }
    crate::report::print_checks(&checks, ctx.settings.output);
    Ok(if check::any_failed(&checks) {
        EXIT_FAILED
    } else {
        EXIT_OK
    })
}

/// Who azevac runs as: the caller the journal will record; true when there are no usable credentials.
async fn caller(ctx: &Context) -> (Check, bool) {
    const ACTION: &str = "sts:GetCallerIdentity";
    match crate::client!(aws_sdk_sts, &ctx.sdk).get_caller_identity().send().await {
        Ok(out) => (
            Check::ok(
                "credentials",
                format!(
                    "caller {} (account {})",
                    out.arn().unwrap_or("unknown"),
                    out.account().unwrap_or("unknown")
                ),
            ),
            false,
        ),
        Err(e) => {
            let err = Error::from_sdk(ACTION, e);
            match err {
                Error::NoCredentials { .. } => (Check::failed_call("credentials", ACTION, &err), true),
                _ => (Check::failed_call("credentials", ACTION, &err), false),
            }
        }
    }
}

/// The region's zones (every command's first call), and `--az-id` among them.
async fn zones(ctx: &Context, az_id: Option<&str>) -> Vec<Check> {
    const ACTION: &str = "ec2:DescribeAvailabilityZones";
    let zones = match Zones::load(&crate::client!(aws_sdk_ec2, &ctx.sdk), &ctx.region).await {
        Ok(zones) => zones,
        Err(e @ Error::WrongRegion { .. }) => {
            return vec![Check::fail(
                "zones",
                format!("{ACTION}: {}", describe(&e)),
                "check --region / AWS_REGION and --endpoint-url",
            )]
        }
        Err(e @ Error::BadInput(_)) => return vec![Check::fail("zones", describe(&e), "check --region / AWS_REGION")],
        Err(e) => return vec![Check::failed_call("zones", ACTION, &e)],
    };
    let listed: Vec<String> = zones.all().iter().map(|z| format!("{} ({})", z.id, z.name)).collect();
    let mut checks = vec![Check::ok(
        "zones",
        format!("{ACTION}: {} zones: {}", listed.len(), listed.join(", ")),
    )];
    if let Some(az_id) = az_id {
        checks.push(match zones.resolve(az_id) {
            Ok(zone) => Check::ok("az-id", format!("{} is {} in {}", zone.id, zone.name, ctx.region)),
            Err(e) => Check::fail(
                "az-id",
                describe(&e),
                "pass an AZ ID of this region (the zones line lists them), or the --region it is in",
            ),
        });
    }
    checks
}

/// Subnets: how the subnet-placed types find a zone's subnets.
async fn subnets(ctx: &Context) -> Check {
    const ACTION: &str = "ec2:DescribeSubnets";
    let sent = crate::client!(aws_sdk_ec2, &ctx.sdk)
        .describe_subnets()
        .max_results(5)
        .send()
        .await;
    Check::answered("subnets", ACTION, sent)
}

/// The journal: there, a journal (not someone else's table), protected, and readable.
async fn journal(ctx: &Context) -> Vec<Check> {
    const NAME: &str = "journal table";
    let table = ctx.journal.table();
    let init = format!(
        "run `azevac init --table {table}` (in {}, under the admin policy: fixtures/iam-admin-policy.json)",
        ctx.region
    );
    match ctx.journal.check_schema().await {
        Ok(()) => {}
        Err(Error::TableMissing { .. }) => {
            return vec![Check::fail(
                NAME,
                format!("journal table {table} does not exist in {}", ctx.region),
                format!("{init}, or pass the --table and --region it was created with"),
            )]
        }
        Err(e @ Error::BadInput(_)) => {
            return vec![Check::fail(
                NAME,
                describe(&e),
                "pass --table with the journal's name (or a new one, then `azevac init`)",
            )]
        }
        Err(e) => return vec![Check::failed_call(NAME, "dynamodb:DescribeTable", &e)],
    }
    let mut checks = vec![match ctx.journal.protection().await {
        Ok(protection) => match protection.warning(table) {
            Some(warning) => Check::warn(NAME, warning, init.clone()),
            None if protection.point_in_time_recovery.is_none() => Check::warn(
                NAME,
                format!("{table} is a journal with deletion protection; point-in-time recovery could not be read"),
                "allow dynamodb:DescribeContinuousBackups for the caller (fixtures/iam-policy.json)",
            ),
            None => Check::ok(
                NAME,
                format!("{table} is a journal, with deletion protection and point-in-time recovery"),
            ),
        },
        Err(e) => Check::failed_call(NAME, "dynamodb:DescribeTable", &e),
    }];
    // Reading the locks is a Query like every command's first journal read; writes cannot be
    // proven without writing, and doctor writes nothing.
    let read = ctx
        .journal
        .locks()
        .await
        .map(|locks| format!("answered ({} locks)", locks.len()));
    checks.push(Check::read("journal read", "dynamodb:Query", read));
    checks
}

/// The `azevac watch` of this region, when one has run: acting and hearing from its queue (ok); not
/// heard from the queue for a while (a warning: its receives fail); not acting while it follows a
/// zone (a fail: nothing recovers that zone when the autoshift ends). No lease item: no line.
async fn watcher(ctx: &Context) -> Option<Check> {
    const NAME: &str = "watcher";
    // A journal that cannot be read is the journal check's line, not this one's.
    let watcher = ctx.journal.watcher(&ctx.region).await.ok()??;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    let who = format!("run {} ({})", watcher.holder, watcher.caller);
    let following = watcher
        .following
        .as_deref()
        .map(|zone| format!(", following {zone}"))
        .unwrap_or_default();
    // A receive answers within 20 seconds, empty or not, and the item says so at the next renewal
    // (every third of a lease): a lease and half a minute without one is not an empty queue. A
    // watcher evacuating or recovering does not read its queue meanwhile.
    let lease = match watcher.lease {
        0 => ctx.settings.lease.as_secs(),
        seconds => seconds,
    };
    let silent = watcher
        .heard_at
        .map_or(now.saturating_sub(watcher.since), |at| now.saturating_sub(at));
    Some(match (watcher.active(), &watcher.following) {
        (true, _) if watcher.acting.is_some() => Check::ok(
            NAME,
            format!(
                "{who} acts{following}: {}",
                watcher.acting.as_deref().unwrap_or_default()
            ),
        ),
        (true, _) if silent > lease + 30 => Check::warn(
            NAME,
            format!("{who} acts{following}, but has not heard from its queue for {silent}s"),
            "it cannot read its queue (azevac health where it runs: queue-unreadable): check that the queue exists \
             and that the watcher's role may sqs:ReceiveMessage (its policy, the queue's, the key's)",
        ),
        (true, _) => Check::ok(NAME, format!("{who} acts{following}, and hears from its queue")),
        (false, Some(zone)) => Check::fail(
            NAME,
            format!("no watcher acts, and the last one ({who}) was following {zone}"),
            format!("start `azevac watch` again (it inherits {zone}), or run `azevac recover --az-id {zone}` once the zone is healthy"),
        ),
        (false, None) => Check::ok(NAME, format!("no watcher acts (the last one, {who}, stopped)")),
    })
}

/// The changes azevac's journal holds that end by themselves (zonal shifts), a line per kind that
/// declares them, in its own words: none over while the journal says evacuated, none ending soon.
/// A kind with no records: no line.
async fn expiries(ctx: &Context, fleet: &crate::model::Fleet) -> Vec<Check> {
    let mut checks = Vec::new();
    for (kind, expiring) in crate::plugins::expiring::kinds() {
        // A journal that cannot be read is the journal check's line, not this one's.
        let Ok(entries) = ctx.journal.of_type(kind, None).await else {
            continue;
        };
        let records: Vec<_> = entries.into_iter().flatten().collect();
        if records.is_empty() {
            continue;
        }
        let (read, unreached) =
            super::status::expiries_of(ctx, kind, expiring, &records, expiring.renew_within, fleet).await;
        let read: Vec<_> = read.into_iter().flatten().collect();
        checks.push((expiring.check)(&read, &unreached));
    }
    checks
}

/// `--accounts`: each account's role assumed, then in each what a run reads there (the zones, the
/// subnets, each type's read permissions), every check named by its account. The journal stays
/// in the caller's account, checked above. An account whose role cannot be assumed is one FAIL.
async fn accounts(ctx: &Context, args: &cli::Doctor) -> Vec<Check> {
    let fleet = args.accounts.fleet();
    if fleet.is_empty() {
        return Vec::new();
    }
    let accounts = match crate::app::accounts::resolve(&ctx.sdk, &fleet).await {
        Ok(accounts) => accounts,
        Err(e) => {
            return vec![Check::fail(
                "accounts",
                describe(&e),
                "check --accounts, --ou and --exclude-account (and organizations:ListAccounts for `org`)",
            )]
        }
    };
    let mut checks = Vec::new();
    for (account, sdk) in ctx.assume_each(&fleet, accounts).await {
        let name = format!("account {account}");
        let sdk = match sdk {
            Ok(sdk) => sdk,
            Err(e) => {
                checks.push(Check::fail(
                    &name,
                    describe(&e),
                    "deploy fixtures/member-role.cfn.yaml in that account (trusting this caller), or pass the \
                     --role-name / --role-arn-template and --external-id it has",
                ));
                continue;
            }
        };
        checks.push(Check::ok(
            &name,
            format!(
                "sts:AssumeRole: {}",
                crate::app::accounts::role_arn(&fleet, &account, &ctx.region)
            ),
        ));
        let member = ctx.with_sdk(sdk);
        let mut read = zones(&member, args.az_id.as_deref()).await;
        read.push(subnets(&member).await);
        read.extend(types(&member, args, Some(&account)).await);
        checks.extend(read.into_iter().map(|mut check| {
            check.name = format!("{name}: {}", check.name);
            check
        }));
    }
    checks
}

/// Each registered type's own read checks (its plugin built as a run would build it), in the
/// caller's account or, through its role, in `account` (Kubernetes is reached through kube
/// contexts, so only from the caller's).
async fn types(ctx: &Context, args: &cli::Doctor, account: Option<&str>) -> Vec<Check> {
    let kube_contexts = match account {
        None => args.kube.contexts.clone(),
        Some(_) => Vec::new(),
    };
    let setup = Setup {
        sdk: ctx.sdk.clone(),
        request: Request {
            kube_contexts,
            ..Request::default()
        },
        kubeconfig: args.kube.kubeconfig.clone(),
        account: account.map(str::to_owned),
    };
    let mut checks = Vec::new();
    for registration in REGISTRY.iter().filter(|r| account.is_none() || !r.is_kubernetes()) {
        match (registration.build)(&setup).await {
            Ok(Some(plugin)) => checks.extend(plugin.probe().await),
            Ok(None) => checks.push(Check::skip(
                registration.name,
                "does not apply with these flags",
                "nothing to do",
            )),
            Err(e) => checks.push(Check::fail(
                registration.name,
                describe(&e),
                "check --kube-context and --kubeconfig (`kubectl config get-contexts`)",
            )),
        }
    }
    checks
}
