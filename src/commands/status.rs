//! `azevac status`: what the journal says is evacuated now, and by whom; and, for the changes azevac
//! made that end by themselves (zonal shifts: ARC lets a shift expire while the journal still says
//! evacuated), when each ends, as their kinds declare it ([`crate::plugins::expiring`]).

use std::collections::BTreeMap;

use super::{Context, EXIT_EXPOSED, EXIT_OK};
use crate::cli;
use crate::error::describe;
use crate::model::topology::Zones;
use crate::model::{Expiry, Fleet, Record};
use crate::plugins::expiring::{self, Expiring};
use crate::report;
use crate::Result;

/// Run `azevac status`; returns the exit code.
pub async fn run(ctx: &Context, args: &cli::Status) -> Result<i32> {
    if let Some(az_id) = &args.az_id {
        Zones::load(&crate::client!(aws_sdk_ec2, &ctx.sdk), &ctx.region)
            .await?
            .resolve(az_id)?;
    }
    let protection = ctx.journal.require().await?;
    if let Some(warning) = protection.warning(ctx.journal.table()) {
        crate::say!("azevac: warning: {warning}");
    }
    let mut records = Vec::new();
    let mut problems = Vec::new();
    let selected = crate::plugins::types()
        .into_iter()
        .filter(|t| args.types.types.is_empty() || args.types.types.iter().any(|w| w == t));
    // One query per type through the index, side by side.
    let reads = selected.map(|resource_type| ctx.journal.of_type(resource_type, args.az_id.as_deref()));
    // join_all, not try_join_all: the first type's error, not whichever came first.
    let read: Result<Vec<_>> = futures::future::join_all(reads).await.into_iter().collect();
    for entry in read?.into_iter().flatten() {
        match entry {
            Ok(record) => records.push(record),
            Err(e) => problems.push(e.to_string()),
        }
    }
    // `--accounts`: only those accounts' records (default: every account's).
    let fleet = args.accounts.fleet();
    crate::app::accounts::validate(&fleet, &[])?;
    let mut accounts = Vec::new();
    let mut own = None;
    if !fleet.is_empty() {
        accounts = crate::app::accounts::resolve(&ctx.sdk, &fleet).await?;
        // Records written with the caller's own credentials are its own account's.
        let caller = ctx.caller_account().await?;
        records.retain(|r| accounts.contains(r.account_id.as_ref().unwrap_or(&caller)));
        own = Some(caller);
    }
    // When the changes of kinds that end by themselves end, read from the records' typed actions
    // before they are put in words. One ending within its kind's window (an hour for a zonal
    // shift) is warned of; with --fail-if-expiring, within that long.
    let within = |expiring: &Expiring| args.fail_if_expiring.unwrap_or(expiring.renew_within);
    let mut expiries: Vec<Expiry> = Vec::new();
    for (kind, expiring) in expiring::kinds() {
        let (read, unreached) = expiries_of(ctx, kind, expiring, &records, within(expiring), &fleet).await;
        problems.extend(unreached);
        let (read, unread): (Vec<_>, Vec<_>) = read.into_iter().partition(Result::is_ok);
        // A table reports a record it cannot read below, with every kind's.
        if ctx.settings.output == crate::model::Output::Json {
            problems.extend(unread.into_iter().filter_map(Result::err).map(|e| e.to_string()));
        }
        expiries.extend(read.into_iter().flatten());
    }
    // What each record says was done, in the operator's words, as its kind reads it: a record
    // whose actions this version cannot read is a problem, never shown as a guess.
    if ctx.settings.output != crate::model::Output::Json {
        for record in &mut records {
            let describe = crate::plugins::REGISTRY
                .iter()
                .find(|r| r.name == record.resource_type)
                .map(|r| r.describe);
            match describe.map(|words| words(record)) {
                Some(Ok(words)) => record.actions = words,
                Some(Err(e)) => problems.push(e.to_string()),
                None => {}
            }
        }
    }
    let locks = ctx.journal.locks().await?;
    let watcher = ctx.journal.watcher(&ctx.region).await?;
    // A table names the caller's own account by its ID too, as it names the others (JSON keeps
    // the records as stored).
    if let (Some(own), false) = (&own, ctx.settings.output == crate::model::Output::Json) {
        for record in &mut records {
            record.account_id.get_or_insert_with(|| own.clone());
        }
    }
    let names = ctx
        .subnet_names(
            &ctx.sdk,
            records
                .iter()
                .filter(|r| r.account_id.is_none() || r.account_id == own)
                .flat_map(|r| &r.removed_subnets),
        )
        .await;
    report::print_status(
        &records,
        &accounts,
        &expiries,
        &locks,
        watcher.as_ref(),
        &problems,
        ctx.settings.output,
        names,
    );
    // --notify: the channel hears of the changes that end within the window, or ended; of nothing
    // else. One message per kind.
    let mut expiring_any = false;
    for (kind, expiring) in expiring::kinds() {
        let ending: Vec<&Expiry> = expiries
            .iter()
            .filter(|e| e.kind == kind && e.expiring(within(expiring)))
            .collect();
        expiring_any |= !ending.is_empty();
        if !ending.is_empty() && !args.notify.topics.is_empty() {
            let caller = ctx.audit(None).await.caller;
            let message = crate::app::notify::ending(&ctx.region, &caller, expiring.noun, &ending);
            crate::app::notify::Notifier::new(&ctx.sdk, &args.notify.topics)
                .publish(&message)
                .await;
        }
    }
    // An item that cannot be read is a failure to report, as in every other command.
    let expiring = args.fail_if_expiring.is_some() && expiring_any;
    Ok(if !problems.is_empty() {
        super::EXIT_FAILED
    } else if expiring {
        EXIT_EXPOSED
    } else {
        EXIT_OK
    })
}

/// When `kind`'s changes among `records` end, as `expiring` reads them, each from its service in
/// the account its record was journalled in: the caller's own with the caller's credentials,
/// another through `fleet`'s role there (ARC answers for its own account's shifts only). Returns
/// each record's expiry (or why its actions cannot be read), and a problem line per account whose
/// changes the service did not tell: their records are [`crate::model::expiry::Standing::NotChecked`],
/// never judged against another account's list.
pub(super) async fn expiries_of(
    ctx: &Context,
    kind: &str,
    expiring: &Expiring,
    records: &[Record],
    within: i64,
    fleet: &Fleet,
) -> (Vec<Result<Expiry>>, Vec<String>) {
    let theirs: Vec<&Record> = records.iter().filter(|r| r.resource_type == kind).collect();
    if theirs.is_empty() {
        return Default::default();
    }
    let (source, short) = (expiring.source, expiring.short);
    let mut problems = Vec::new();
    // Records stamped with the caller's own account are its own, however they were written.
    let own = match theirs.iter().any(|r| r.account_id.is_some()) {
        true => match ctx.caller_account().await {
            Ok(own) => Some(own),
            Err(e) => {
                problems.push(format!(
                    "{kind}: the caller's own account is not known, so its stamped {short} are read through its role: {}",
                    describe(&e)
                ));
                None
            }
        },
        false => None,
    };
    let mut by_account: BTreeMap<Option<String>, Vec<Record>> = BTreeMap::new();
    for record in theirs {
        let account = record.account_id.clone().filter(|a| Some(a) != own.as_ref());
        by_account.entry(account).or_default().push(record.clone());
    }
    let cannot_read = |account: Option<&str>, e: &crate::Error| {
        format!(
            "{}{kind}: could not read from {source} when azevac's {short} end: {}",
            account.map(|a| format!("account {a}: ")).unwrap_or_default(),
            describe(e)
        )
    };
    let unread = format!("{source} could not be read");
    let mut expiries = Vec::new();
    if let Some(mine) = by_account.remove(&None) {
        match (expiring.read)(&ctx.sdk, &mine, within).await {
            Ok(read) => expiries.extend(read),
            Err(e) => {
                problems.push(cannot_read(None, &e));
                let why = format!("{unread}: {}", crate::model::text::clean(&describe(&e)));
                expiries.extend(mine.iter().map(|r| (expiring.not_checked)(r, &why)));
            }
        }
    }
    let accounts: Vec<String> = by_account.keys().flatten().cloned().collect();
    let reads = ctx
        .assume_each(fleet, accounts)
        .await
        .into_iter()
        .map(|(account, sdk)| {
            let theirs = by_account.get(&Some(account.clone())).cloned().unwrap_or_default();
            let unread = unread.as_str();
            async move {
                let read = match sdk {
                    Ok(sdk) => (expiring.read)(&sdk, &theirs, within).await.map_err(|e| (e, unread)),
                    Err(e) => Err((e, "its role could not be assumed")),
                };
                (account, theirs, read)
            }
        });
    for (account, theirs, read) in futures::future::join_all(reads).await {
        match read {
            Ok(read) => expiries.extend(read),
            Err((e, what)) => {
                problems.push(cannot_read(Some(&account), &e));
                let why = format!("{what}: {}", crate::model::text::clean(&describe(&e)));
                expiries.extend(theirs.iter().map(|r| (expiring.not_checked)(r, &why)));
            }
        }
    }
    (expiries, problems)
}
