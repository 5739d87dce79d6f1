//! What `--stats` reports, as plain values: the counter that fills them is the SDK interceptor in
//! [`crate::aws::stats`]; a plan carries them.

use std::collections::BTreeMap;

use serde::Serialize;

/// Calls and attempts of one operation.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq, schemars::JsonSchema)]
pub struct Count {
    /// Operations started.
    pub calls: u64,
    /// Attempts beyond the first (the SDK's retries).
    pub retries: u64,
}

/// What `--stats` reports.
#[derive(Debug, Clone, Default, Serialize, schemars::JsonSchema)]
pub struct Stats {
    /// Per `service:Operation`.
    pub operations: BTreeMap<String, Count>,
    /// All operations.
    pub total_calls: u64,
    /// All retries.
    pub total_retries: u64,
    /// Wall time per phase in milliseconds, in the order the phases ran.
    pub phases_ms: Vec<(String, u128)>,
}
