//! One `SdkConfig` for every client, built by the SDK's own configuration chain so that profiles,
//! SSO, environment variables and `AWS_ENDPOINT_URL` work exactly as they do for the AWS CLI.

pub mod alarms;
pub mod pacing;
pub mod stats;

use std::time::Duration;

use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::{AppName, BehaviorVersion, Region, SdkConfig};

use crate::{Error, Result};

/// Retry attempts per call when the operator has not chosen any: AWS control planes throttle hard
/// during a regional event, and each resource's call is worth more than a few seconds of backoff.
const DEFAULT_MAX_ATTEMPTS: u32 = 8;

/// What the command line says about where and as whom to call AWS; `None` leaves it to the chain.
#[derive(Debug, Clone, Default)]
pub struct Connection {
    /// `--region`, overriding `AWS_REGION` and the profile's region.
    pub region: Option<String>,
    /// `--profile`, overriding `AWS_PROFILE`.
    pub profile: Option<String>,
    /// `--endpoint-url`, overriding `AWS_ENDPOINT_URL` (an emulator, a VPC endpoint).
    pub endpoint_url: Option<String>,
    /// The AZ ID the command is about: its prefix names its region (`use1` is us-east-1), used when
    /// no region is configured and checked against the one that is.
    pub az_id: Option<String>,
    /// `--attempt-timeout`: the longest one attempt of a call may take.
    pub attempt_timeout: Option<Duration>,
    /// `--operation-timeout`: the longest one call may take, retries included.
    pub operation_timeout: Option<Duration>,
    /// Requests per second per service (the published quotas, then `--max-rate`).
    pub pacing: crate::aws::pacing::Limits,
}

/// Load the shared SDK configuration. Fails with a clear message when no region can be found, or
/// when the configured region is not the AZ ID's.
pub async fn load(conn: &Connection) -> Result<SdkConfig> {
    let implied = conn.az_id.as_deref().and_then(crate::model::topology::region_of_az_id);
    let config = load_with(conn, conn.region.clone()).await;
    let Some(region) = config.region().map(|r| r.to_string()) else {
        let Some(implied) = implied else {
            return Err(Error::BadInput(
                "no AWS region configured: pass --region, set AWS_REGION, or set region in the profile".into(),
            ));
        };
        crate::say!(
            "azevac: no AWS region configured; {} is in {implied}, so using {implied} (pass --region to choose)",
            conn.az_id.as_deref().unwrap_or_default()
        );
        return Ok(load_with(conn, Some(implied)).await);
    };
    if let Some(implied) = implied.filter(|implied| *implied != region) {
        return Err(Error::BadInput(format!(
            "{} is in {implied}, not {region}: check --region / AWS_REGION (use {implied}), or give an AZ ID of {region}",
            conn.az_id.as_deref().unwrap_or_default()
        )));
    }
    Ok(config)
}

async fn load_with(conn: &Connection, region: Option<String>) -> SdkConfig {
    let mut loader = aws_config::defaults(BehaviorVersion::latest());
    if let Some(profile) = &conn.profile {
        loader = loader.profile_name(profile);
    }
    if let Some(region) = region {
        loader = loader.region(Region::new(region));
    }
    if let Some(url) = &conn.endpoint_url {
        loader = loader.endpoint_url(url);
    }
    // Respect AWS_RETRY_MODE / AWS_MAX_ATTEMPTS (or the profile's) when the operator set them;
    // otherwise standard retries, below the client's own pacing (crate::aws::pacing). Under
    // bench/ratelimit.py's model (one run per variant), adaptive was 2-3x slower than standard
    // whenever a throttle arrived (its own limiter holds a lightly used client back for seconds),
    // and no faster once the pacing matched the quotas.
    if std::env::var_os("AWS_RETRY_MODE").is_none() && std::env::var_os("AWS_MAX_ATTEMPTS").is_none() {
        loader = loader.retry_config(RetryConfig::standard().with_max_attempts(DEFAULT_MAX_ATTEMPTS));
    }
    // The SDK sets no operation or attempt timeout of its own: without these, an endpoint that
    // accepts the connection and never answers would hang azevac (and its locks) for ever.
    let mut timeouts = TimeoutConfig::builder();
    if let Some(attempt) = conn.attempt_timeout {
        timeouts = timeouts.operation_attempt_timeout(attempt);
    }
    if let Some(operation) = conn.operation_timeout {
        timeouts = timeouts.operation_timeout(operation);
    }
    loader = loader.timeout_config(timeouts.build());
    // Pace each service below its quota: sending at the limit beats tripping the throttle and backing
    // off (one throttle on a lightly used adaptive client costs seconds).
    if let Some(http) = crate::aws::pacing::default_http_client() {
        loader = loader.http_client(conn.pacing.wrap(http));
    }
    // CloudTrail shows the user agent of every call: "app/azevac-<version>" says which calls were
    // azevac's during an incident review. An app ID the operator set (AWS_SDK_UA_APP_ID) wins.
    if std::env::var_os("AWS_SDK_UA_APP_ID").is_none() {
        if let Ok(app) = AppName::new(concat!("azevac-", env!("CARGO_PKG_VERSION"))) {
            loader = loader.app_name(app);
        }
    }
    loader.load().await
}

/// The region a loaded configuration points at (always present after [`load`]).
pub fn region_of(config: &SdkConfig) -> String {
    config.region().map(|r| r.to_string()).unwrap_or_default()
}
