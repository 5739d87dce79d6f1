//! What every run works with: one SDK configuration, the journal, the run's settings and its
//! identity. The command line builds it from its flags; the application layer reads values here,
//! never a flag (the output choices are only handed on to the command's [`super::Screen`]).

use aws_config::SdkConfig;

use crate::journal::{Audit, Journal};
use crate::model::Output;

/// What every run works with: one SDK configuration, the journal, the settings, the run's identity.
pub struct Context {
    /// The shared SDK configuration.
    pub sdk: SdkConfig,
    /// The region everything is in.
    pub region: String,
    /// The journal table.
    pub journal: Journal,
    /// What the command line chose for every run: output, concurrency, leases, pacing.
    pub settings: Settings,
    /// This run's ID: in every record it writes, and the session name of every role it assumes.
    pub run_id: String,
    /// `--show-skipped`: list every skipped line of a plan.
    pub show_skipped: bool,
    /// What the plan's heading calls the command, when it is not evacuate or recover itself.
    pub heading: Option<&'static str>,
    /// Who the caller is (STS: ARN and account), asked once per run and only when needed.
    pub(crate) caller: tokio::sync::OnceCell<(String, String)>,
    /// What stops this run's changes: its own signal listener when `None`; a watcher's run is
    /// stopped by the watcher's signals and by the loss of its lease.
    pub interrupt: Option<crate::process::interrupt::Interrupt>,
}

/// How a context is set up, apart from its SDK configuration: the values the command line read.
#[derive(Clone)]
pub struct Settings {
    /// The journal table's name.
    pub table: String,
    /// Table or JSON: the command shows the outcome this way (the application layer only hands it on).
    pub output: Output,
    /// How many resources change at once.
    pub concurrency: usize,
    /// `--stats`.
    pub stats: bool,
    /// Progress bars on a terminal (not with `--no-progress`).
    pub progress: bool,
    /// How long a resource's lock is held between renewals.
    pub lease: std::time::Duration,
    /// `--operation-timeout`: the longest one call may take, so how long after its lease a call of
    /// this run may still land.
    pub operation_timeout: std::time::Duration,
    /// With `--accounts`: how many accounts are planned and changed at once.
    pub account_concurrency: usize,
    /// Requests per second per service, for the clients of each account a run reaches.
    pub pacing: crate::aws::pacing::Limits,
}

impl Context {
    /// A context for a new run over `sdk`, with a fresh run ID.
    pub fn new(sdk: SdkConfig, settings: Settings) -> Context {
        Context {
            region: crate::aws::region_of(&sdk),
            journal: Journal::new(&sdk, &settings.table),
            settings,
            run_id: uuid::Uuid::now_v7().to_string(),
            show_skipped: false,
            heading: None,
            caller: tokio::sync::OnceCell::new(),
            interrupt: None,
            sdk,
        }
    }

    /// Who is running this, for the journal: the STS caller ARN, a fresh run ID, the reason.
    pub async fn audit(&self, reason: Option<String>) -> Audit {
        let caller = match self.identity().await {
            Ok((arn, _)) => arn.clone(),
            // Not worth stopping an evacuation for: the journal still records what changed.
            Err(error) => {
                tracing::warn!(%error, "sts:GetCallerIdentity failed; recording the caller as unknown");
                "unknown".to_owned()
            }
        };
        let run_id = self.run_id.clone();
        crate::say!("azevac: run {run_id} as {}", crate::model::text::clean(&caller));
        Audit {
            run_id,
            caller,
            reason,
            account_id: None,
        }
    }

    /// The caller's ARN and account (STS `GetCallerIdentity`), asked once per run: the run's
    /// accounts, its audit and its recover all need it, and each ask was a round trip before the
    /// first change. A failure is not kept: the next ask tries again.
    pub async fn identity(&self) -> std::result::Result<&(String, String), String> {
        self.caller
            .get_or_try_init(|| async {
                let out = crate::client!(aws_sdk_sts, &self.sdk)
                    .get_caller_identity()
                    .send()
                    .await
                    .map_err(|e| crate::error::sdk::detail(&e))?;
                Ok((
                    out.arn().unwrap_or("unknown").to_owned(),
                    out.account().unwrap_or_default().to_owned(),
                ))
            })
            .await
    }

    /// This context with `sdk` in place of its own (another account's, or other retries): the
    /// same journal, output and run.
    pub fn with_sdk(&self, sdk: SdkConfig) -> Context {
        Context {
            sdk,
            region: self.region.clone(),
            journal: self.journal.clone(),
            settings: self.settings.clone(),
            run_id: self.run_id.clone(),
            show_skipped: self.show_skipped,
            heading: self.heading,
            // Another SDK configuration may be another identity.
            caller: tokio::sync::OnceCell::new(),
            interrupt: self.interrupt.clone(),
        }
    }

    /// This context for another run, stopped by `interrupt`: the same connection, table and
    /// settings, a new run ID (each evacuation or recovery a watcher carries out is a run of its own
    /// in the journal), and the journal read afresh (what an earlier run read is stale by now).
    pub fn for_another_run(&self, interrupt: crate::process::interrupt::Interrupt) -> Context {
        Context {
            run_id: uuid::Uuid::now_v7().to_string(),
            journal: self.journal.fresh(),
            interrupt: Some(interrupt),
            ..self.with_sdk(self.sdk.clone())
        }
    }
}
