//! A command across the accounts it acts in. Each account is planned and carried out by the engine
//! on its own (its own zones, subnets, plugins, credentials and pacing) against the one journal in
//! the caller's account, each record stamped with its account; the operator sees one plan, answers
//! one question, and gets one result. An account that cannot be reached is one problem line and
//! the others go on. A run in the caller's own account is the one-target case of the same path.

use std::collections::BTreeSet;

use aws_config::SdkConfig;
use futures::StreamExt;

use super::Context;
use crate::aws::stats::Phases;
use crate::engine::{self, Prepared, Settings};
use crate::error::describe;
use crate::journal::{Audit, Journal, Owner};
use crate::model::{Command, Fleet, Plan, Request};
use crate::{Error, Result};

/// One account a command acts in.
#[derive(Clone)]
pub struct Target {
    /// The account, on runs across accounts (`None`: a run in the caller's own account only).
    pub account: Option<String>,
    /// Whether it is reached through an assumed role (else with the caller's own credentials).
    pub assumed: bool,
    /// Its SDK configuration.
    pub sdk: SdkConfig,
    /// The journal, reading this account's records.
    pub journal: Journal,
}

/// A command's plan across its accounts, ready to be shown and carried out.
pub struct Fanout {
    /// Every account's lines, in account order, and every account's problems.
    pub plan: Plan,
    /// Wall-clock phases so far, for `--stats`.
    pub phases: Phases,
    /// The accounts that could not be reached or planned, one line each.
    problems: Vec<String>,
    parts: Vec<(Target, Prepared)>,
}

impl Context {
    /// Plan `command` in every account the request names (or, for recover, every account whose
    /// records the journal holds), `account_concurrency` accounts at a time.
    pub async fn prepare(
        &self,
        command: Command,
        az_id: Option<&str>,
        request: &Request,
        kubeconfig: Option<std::path::PathBuf>,
    ) -> Result<Fanout> {
        super::validate(request)?;
        let (targets, mut problems) = self.targets(command, az_id, request).await?;
        let across = targets.iter().any(|t| t.account.is_some()) || !problems.is_empty();
        let planned = plan_each(
            targets,
            self.settings.account_concurrency,
            command,
            az_id,
            request,
            kubeconfig,
        )
        .await;
        let mut parts = Vec::new();
        let mut first_error = None;
        let unreached = problems.len();
        let mut distinct = std::collections::BTreeSet::new();
        for (target, prepared) in planned {
            match prepared {
                Ok(prepared) => parts.push((target, prepared)),
                // In the caller's own account alone, a planning error is the command's error (bad
                // input stays exit 2, with its advice).
                Err(e) if !across => return Err(e),
                Err(e) => {
                    problems.push(format!(
                        "account {}: not planned, nothing changed there: {}",
                        target.account.as_deref().unwrap_or("(own)"),
                        describe(&e)
                    ));
                    distinct.insert(describe(&e));
                    first_error.get_or_insert(e);
                }
            }
        }
        if parts.is_empty() {
            // Every account failed alike (an AZ ID that exists nowhere): the error itself says best
            // what to do. Otherwise every account's problem is shown, and the run exits 1.
            if let Some(e) = first_error.filter(|e| unreached == 0 && distinct.len() == 1 && e.exit_code() == 2) {
                return Err(e);
            }
            let plan = Plan {
                command,
                region: crate::aws::region_of(&self.sdk),
                az_id: az_id.map(str::to_owned),
                az_name: None,
                request: request.clone(),
                items: Vec::new(),
                problems: problems.clone(),
                stats: None,
            };
            return Ok(Fanout {
                plan,
                phases: Phases::start(),
                problems,
                parts,
            });
        }
        // The accounts were planned side by side: the first one's phases stand for all.
        let phases = parts
            .first()
            .map(|(_, p)| p.phases.clone())
            .unwrap_or_else(Phases::start);
        let plan = merge(
            parts.iter().map(|(t, p)| (t.account.as_deref(), p.plan.clone())),
            &problems,
        );
        Ok(Fanout {
            plan,
            phases,
            problems,
            parts,
        })
    }

    /// The accounts a command acts in: the caller's own (unless `--accounts` names others), then
    /// each named account through its role; for recover without `--accounts`, also every account
    /// whose records the journal holds. Accounts whose role cannot be assumed are problems.
    async fn targets(
        &self,
        command: Command,
        az_id: Option<&str>,
        request: &Request,
    ) -> Result<(Vec<Target>, Vec<String>)> {
        let fleet = &request.fleet;
        let mut targets = Vec::new();
        let accounts = if !fleet.is_empty() {
            crate::app::accounts::resolve(&self.sdk, fleet).await?
        } else if command == Command::Recover {
            let (stamped, own) = self.accounts_with_records(az_id, request).await?;
            // The caller's own account is one part, with the caller's credentials: its records
            // are those written that way and those stamped with its ID. Never two parts for one
            // account: they would share the run's locks on the same resources.
            targets.push(Target {
                account: own.clone(),
                sdk: self.sdk.clone(),
                journal: match &own {
                    Some(account) => self.journal.for_owner(Owner {
                        account: account.clone(),
                        own: true,
                    }),
                    None => self.journal.clone(),
                },
                assumed: false,
            });
            stamped.into_iter().filter(|a| Some(a) != own.as_ref()).collect()
        } else {
            targets.push(Target {
                account: None,
                sdk: self.sdk.clone(),
                journal: self.journal.clone(),
                assumed: false,
            });
            Vec::new()
        };
        // Side by side: each is a round trip before any account can be planned. A failure of the
        // first two stops the run before the roles are all assumed (try_join drops them), and the
        // operator sees the same one of them every time.
        let named = accounts.clone();
        let caller = async {
            let kept_elsewhere = async {
                match command {
                    Command::Recover if !fleet.is_empty() => self.say_kept_elsewhere(az_id, request, &named).await,
                    _ => Ok(()),
                }
            };
            let own = async {
                if named.is_empty() {
                    Ok(None)
                } else {
                    self.caller_account().await.map(Some)
                }
            };
            let (kept_elsewhere, own) = tokio::join!(kept_elsewhere, own);
            kept_elsewhere?;
            own
        };
        let (own, assumed) = futures::try_join!(caller, async { Ok(self.assume_each(fleet, accounts).await) })?;
        let mut problems = Vec::new();
        for (account, sdk) in assumed {
            match sdk {
                Ok(sdk) => targets.push(Target {
                    journal: self.journal.for_owner(Owner {
                        own: own.as_deref() == Some(account.as_str()),
                        account: account.clone(),
                    }),
                    account: Some(account),
                    sdk,
                    assumed: true,
                }),
                Err(e) => problems.push(format!(
                    "account {account}: not reached, nothing changed there{}: {}",
                    if command == Command::Recover {
                        " and its records are kept"
                    } else {
                        ""
                    },
                    describe(&e)
                )),
            }
        }
        Ok((targets, problems))
    }

    /// The accounts whose stamped records a recover would read (of the request's types, in its
    /// zone), and the caller's own account ID when there are any (`None`: every record was written
    /// with the caller's own credentials, the run stays in its own account).
    async fn accounts_with_records(
        &self,
        az_id: Option<&str>,
        request: &Request,
    ) -> Result<(Vec<String>, Option<String>)> {
        let mut accounts: Vec<String> = self
            .records_to_recover(az_id, request)
            .await?
            .into_iter()
            .filter_map(|r| r.account_id)
            .collect();
        accounts.sort();
        accounts.dedup();
        if accounts.is_empty() {
            return Ok((accounts, None));
        }
        Ok((accounts, Some(self.caller_account().await?)))
    }

    /// Every readable record of the request's types in its zone (none without a journal: the
    /// recover in the caller's own account says so).
    async fn records_to_recover(&self, az_id: Option<&str>, request: &Request) -> Result<Vec<crate::model::Record>> {
        let types: Vec<&str> = crate::plugins::types()
            .into_iter()
            .filter(|t| request.types.is_empty() || request.names(t))
            .collect();
        match self.journal.records_of_every_account(&types, az_id).await {
            Ok((records, _)) => Ok(records.into_values().flatten().collect()),
            Err(Error::TableMissing { .. }) => Ok(Vec::new()),
            Err(e) => Err(e),
        }
    }

    /// `recover --accounts`: say how many records of other accounts this run leaves alone, so
    /// that none is taken for recovered.
    async fn say_kept_elsewhere(&self, az_id: Option<&str>, request: &Request, accounts: &[String]) -> Result<()> {
        // Side by side; the caller's error first when both fail, as when they were asked in turn.
        let (own, records) = tokio::join!(self.caller_account(), self.records_to_recover(az_id, request));
        let (own, records) = (own?, records?);
        let mut elsewhere = std::collections::BTreeMap::<String, usize>::new();
        for record in records {
            let account = record.account_id.clone().unwrap_or_else(|| own.clone());
            if !accounts.contains(&account) {
                *elsewhere.entry(account).or_default() += 1;
            }
        }
        if !elsewhere.is_empty() {
            let list: Vec<String> = elsewhere.iter().map(|(a, n)| format!("{a} ({n})")).collect();
            crate::say!(
                "azevac: {} journal record(s) of accounts not in --accounts are kept: {}",
                elsewhere.values().sum::<usize>(),
                list.join(", ")
            );
        }
        Ok(())
    }

    /// The role of `fleet` assumed in each of `accounts`, `account_concurrency` at a time: each
    /// account's SDK configuration, or why it could not be reached.
    pub async fn assume_each(&self, fleet: &Fleet, accounts: Vec<String>) -> Vec<(String, Result<SdkConfig>)> {
        let region = crate::aws::region_of(&self.sdk);
        side_by_side(
            self.settings.account_concurrency,
            accounts.into_iter().map(|account| {
                let role = crate::app::accounts::role_arn(fleet, &account, &region);
                let session = format!("azevac-{}", self.run_id);
                // Each account's control plane has its own quotas: its own pacing buckets.
                let http = crate::aws::pacing::default_http_client().map(|h| self.settings.pacing.wrap(h));
                async move {
                    let sdk =
                        crate::app::accounts::assume(&self.sdk, &role, &session, fleet.external_id.as_deref(), http)
                            .await;
                    (account, sdk)
                }
            }),
        )
        .await
    }

    /// The caller's own account ID (STS), to tell its records from other accounts'.
    pub async fn caller_account(&self) -> Result<String> {
        match self.identity().await {
            Ok((_, account)) if !account.is_empty() => Ok(account.clone()),
            Ok(_) => Err(Error::BadInput("sts:GetCallerIdentity named no account".into())),
            Err(e) => Err(Error::BadInput(format!(
                "sts:GetCallerIdentity failed, so the caller's own records cannot be told from other accounts': {e}"
            ))),
        }
    }
}

impl Fanout {
    /// Carry every account's plan out, `at_once` accounts at a time, each with its own journal
    /// scope and audit; returns the merged outcome.
    pub async fn carry_out(
        self,
        journal: &Journal,
        audit: &Audit,
        settings: &Settings,
        at_once: usize,
    ) -> (Plan, Phases) {
        let everyone_reached = self.problems.is_empty();
        let (plan, phases) = self.carry_out_part(audit, settings, at_once).await;
        if everyone_reached {
            engine::sweep_dead_locks(journal, &plan).await;
        }
        (plan, phases)
    }

    /// The lines at `picked` (indices into [`Fanout::plan`]) as a fanout of their own, each in its
    /// account's part, and where each of its lines is in this plan (its result comes back in that
    /// order): one wave of a recovery in waves.
    pub fn part(&self, picked: &[usize]) -> (Fanout, Vec<usize>) {
        let mut parts = Vec::new();
        let mut order = Vec::new();
        let mut offset = 0;
        for (target, prepared) in &self.parts {
            let size = prepared.plan.items.len();
            let mut local: Vec<usize> = picked
                .iter()
                .filter(|&&i| (offset..offset + size).contains(&i))
                .map(|&i| i - offset)
                .collect();
            local.sort_unstable();
            if !local.is_empty() {
                order.extend(local.iter().map(|i| i + offset));
                parts.push((target.clone(), prepared.part(&local)));
            }
            offset += size;
        }
        let plan = merge(
            parts.iter().map(|(t, p)| (t.account.as_deref(), p.plan.clone())),
            &self.problems,
        );
        let fanout = Fanout {
            plan,
            phases: self.phases.clone(),
            problems: self.problems.clone(),
            parts,
        };
        (fanout, order)
    }

    /// The lines of `stage`, by index in [`Fanout::plan`].
    pub fn in_stage(&self, stage: crate::plugins::Stage) -> BTreeSet<usize> {
        let mut offset = 0;
        let mut lines = BTreeSet::new();
        for (_, prepared) in &self.parts {
            lines.extend(prepared.in_stage(stage).into_iter().map(|i| i + offset));
            offset += prepared.plan.items.len();
        }
        lines
    }

    /// `command` planned again in this fanout's accounts among `accounts`, each through the target
    /// it already has (its credentials, its journal scope, the caller's own account with the
    /// caller's own credentials): how a recovery in waves that an alarm stopped takes its last
    /// wave back out of the zone. An account that cannot be planned is a problem line.
    pub async fn replan(
        &self,
        command: Command,
        az_id: &str,
        request: &Request,
        kubeconfig: Option<std::path::PathBuf>,
        accounts: &BTreeSet<Option<String>>,
        at_once: usize,
    ) -> Fanout {
        let targets = self
            .parts
            .iter()
            .map(|(target, _)| target)
            .filter(|t| accounts.contains(&t.account))
            .cloned()
            .collect();
        let planned = plan_each(targets, at_once, command, Some(az_id), request, kubeconfig).await;
        let mut parts = Vec::new();
        let mut problems = Vec::new();
        for (target, prepared) in planned {
            match prepared {
                Ok(prepared) => parts.push((target, prepared)),
                Err(e) => problems.push(format!(
                    "account {}: not planned: {}",
                    target.account.as_deref().unwrap_or("(own)"),
                    describe(&e)
                )),
            }
        }
        let plan = merge(
            parts.iter().map(|(t, p)| (t.account.as_deref(), p.plan.clone())),
            &problems,
        );
        Fanout {
            plan,
            phases: Phases::start(),
            problems,
            parts,
        }
    }

    /// Whether every account the command names was reached and planned.
    pub fn everyone_reached(&self) -> bool {
        self.problems.is_empty()
    }

    /// [`Fanout::carry_out`] without the sweep of dead runs' locks, which only a run that knows
    /// every record can do.
    pub async fn carry_out_part(self, audit: &Audit, settings: &Settings, at_once: usize) -> (Plan, Phases) {
        let Fanout {
            phases,
            problems,
            parts,
            ..
        } = self;
        // One progress bar per account would interleave on the terminal: lines only.
        let settings = Settings {
            progress: settings.progress && parts.len() == 1,
            ..settings.clone()
        };
        let settings = &settings;
        let results: Vec<(Option<String>, (Plan, Phases))> = side_by_side(
            at_once,
            parts.into_iter().map(|(target, prepared)| {
                let audit = Audit {
                    account_id: target.account.clone(),
                    ..audit.clone()
                };
                async move {
                    let (mut plan, phases) = prepared.carry_out(&target.journal, &audit, settings).await;
                    for item in &mut plan.items {
                        item.account.clone_from(&target.account);
                    }
                    (target.account, (plan, phases))
                }
            }),
        )
        .await;
        let phases = results.first().map(|(_, (_, p))| p.clone()).unwrap_or(phases);
        let plan = merge(results.into_iter().map(|(a, (plan, _))| (a, plan)), &problems);
        (plan, phases)
    }
}

/// `command` planned in each of `targets`, `at_once` accounts at a time, each line stamped with its
/// target's account.
async fn plan_each(
    targets: Vec<Target>,
    at_once: usize,
    command: Command,
    az_id: Option<&str>,
    request: &Request,
    kubeconfig: Option<std::path::PathBuf>,
) -> Vec<(Target, Result<Prepared>)> {
    side_by_side(
        at_once,
        targets.into_iter().map(|target| {
            let kubeconfig = kubeconfig.clone();
            async move {
                let prepared = engine::prepare(
                    &target.sdk,
                    &target.journal,
                    command,
                    az_id,
                    request,
                    kubeconfig,
                    target.account.as_deref().filter(|_| target.assumed),
                )
                .await
                .map(|mut prepared| {
                    for item in &mut prepared.plan.items {
                        item.account.clone_from(&target.account);
                    }
                    prepared
                });
                (target, prepared)
            }
        }),
    )
    .await
}

/// `work` side by side, at most `at_once` at a time, its outcomes in `work`'s order. Not
/// `buffered`: that starts the next only as the oldest in flight is handed on, so one slow account
/// held back every account behind it, and a run of many accounts took as long as its slowest of
/// each `at_once`, one after another.
pub async fn side_by_side<T>(
    at_once: usize,
    work: impl Iterator<Item = impl std::future::Future<Output = T>>,
) -> Vec<T> {
    let mut done: Vec<(usize, T)> =
        futures::stream::iter(work.enumerate().map(|(i, job)| async move { (i, job.await) }))
            .buffer_unordered(at_once.max(1))
            .collect()
            .await;
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, outcome)| outcome).collect()
}

/// One plan from every account's: lines in account order, each account's problems named with it,
/// then the accounts that could not be reached.
fn merge<A: AsRef<str>>(plans: impl Iterator<Item = (Option<A>, Plan)>, unreached: &[String]) -> Plan {
    let mut merged: Option<Plan> = None;
    for (account, plan) in plans {
        let account = account.as_ref().map(|a| a.as_ref().to_owned());
        let problems: Vec<String> = plan
            .problems
            .iter()
            .map(|p| match &account {
                Some(a) => format!("account {a}: {p}"),
                None => p.clone(),
            })
            .collect();
        match &mut merged {
            None => {
                merged = Some(Plan { problems, ..plan });
            }
            Some(all) => {
                // Zone names differ between accounts; the AZ ID is the one name they share.
                if all.az_name != plan.az_name {
                    all.az_name = None;
                }
                all.items.extend(plan.items);
                all.problems.extend(problems);
            }
        }
    }
    let mut plan = merged.unwrap_or_else(|| Plan::empty(Command::Evacuate));
    plan.problems.extend(unreached.iter().cloned());
    plan
}
