//! `--stats`: how many AWS calls a run made, per operation, with how many retries, and how long
//! each phase took. Counted by an SDK interceptor on every client, so nothing can be missed.

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

pub use crate::model::stats::{Count, Stats};
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::context::{
    BeforeTransmitInterceptorContextRef, FinalizerInterceptorContextRef,
};
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::ConfigBag;

/// Counts every operation and attempt of every client built with [`client!`](crate::client).
#[derive(Debug, Clone, Default)]
pub struct CallCounter {
    counts: Arc<Mutex<BTreeMap<String, (u64, u64)>>>,
}

static COUNTER: LazyLock<CallCounter> = LazyLock::new(CallCounter::default);

/// The process's counter (one run per process).
pub fn counter() -> CallCounter {
    COUNTER.clone()
}

fn key(cfg: &ConfigBag) -> String {
    cfg.load::<Metadata>()
        .map(|m| format!("{}:{}", m.service().to_ascii_lowercase().replace(' ', ""), m.name()))
        .unwrap_or_else(|| "unknown".into())
}

impl Intercept for CallCounter {
    fn name(&self) -> &'static str {
        "azevac-call-counter"
    }

    // The operation's metadata is not in the bag yet before execution: count calls at their end.
    fn read_after_execution(
        &self,
        _context: &FinalizerInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if let Ok(mut counts) = self.counts.lock() {
            counts.entry(key(cfg)).or_default().0 += 1;
        }
        Ok(())
    }

    fn read_before_attempt(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if let Ok(mut counts) = self.counts.lock() {
            counts.entry(key(cfg)).or_default().1 += 1;
        }
        Ok(())
    }
}

impl Stats {
    /// Snapshot the counter, with the phases measured by the command.
    pub fn collect(phases: &[(&str, Duration)]) -> Stats {
        let counts = COUNTER.counts.lock().map(|c| c.clone()).unwrap_or_default();
        let operations: BTreeMap<String, Count> = counts
            .into_iter()
            .map(|(op, (calls, attempts))| {
                (
                    op,
                    Count {
                        calls,
                        retries: attempts.saturating_sub(calls),
                    },
                )
            })
            .collect();
        Stats {
            total_calls: operations.values().map(|c| c.calls).sum(),
            total_retries: operations.values().map(|c| c.retries).sum(),
            operations,
            phases_ms: phases
                .iter()
                .map(|(name, d)| ((*name).to_owned(), d.as_millis()))
                .collect(),
        }
    }

    /// The human-readable form, for stderr.
    pub fn render(&self) -> String {
        let mut out = format!(
            "azevac stats: {} AWS calls, {} retries\n",
            self.total_calls, self.total_retries
        );
        for (op, count) in &self.operations {
            out.push_str(&format!(
                "  {op:<50} {:>6} calls {:>4} retries\n",
                count.calls, count.retries
            ));
        }
        for (phase, ms) in &self.phases_ms {
            out.push_str(&format!("  phase {phase:<44} {ms:>6} ms\n"));
        }
        out
    }
}

/// Build a service client from the shared configuration, with the call counter attached.
#[macro_export]
macro_rules! client {
    ($service:ident, $sdk:expr) => {
        $service::Client::from_conf(
            $service::config::Builder::from($sdk)
                .interceptor($crate::aws::stats::counter())
                .build(),
        )
    };
}

/// Wall-clock phases of one command, for `--stats`.
#[derive(Debug, Clone)]
pub struct Phases {
    last: std::time::Instant,
    done: Vec<(&'static str, Duration)>,
}

impl Phases {
    /// Start timing the first phase.
    pub fn start() -> Self {
        Phases {
            last: std::time::Instant::now(),
            done: Vec::new(),
        }
    }

    /// The phase that just ended.
    pub fn end(&mut self, name: &'static str) {
        let now = std::time::Instant::now();
        self.done.push((name, now - self.last));
        self.last = now;
    }

    /// The counts and times so far.
    pub fn stats(&self) -> Stats {
        Stats::collect(&self.done)
    }
}
