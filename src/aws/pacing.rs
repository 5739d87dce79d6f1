//! Client-side pacing: a token bucket per AWS service in front of the HTTP connector, so azevac sends at
//! most what the control plane's quota allows instead of tripping its throttle and backing off.
//!
//! The bucket sits below the SDK's retry loop (every attempt, retries included, takes a token) and
//! below signing, so the service is read from the SigV4 credential scope of the signed request: that
//! names the service whatever the endpoint (AWS, a VPC endpoint, an emulator on one port).

use std::collections::BTreeMap;
use std::fmt;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpClient, SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::HttpRequest;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};

use crate::{Error, Result};

/// A sustained rate and the burst the bucket holds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    pub per_second: f64,
    pub burst: u32,
}

/// The bucket of Lambda's `GetFunction`, which has a quota of its own.
pub const LAMBDA_GET_FUNCTION: &str = "lambda:GetFunction";

/// Published control-plane quotas (per account and region) that azevac paces itself to by default:
/// EC2's non-mutating request bucket (100 tokens, refilled at 20 per second: azevac only reads EC2),
/// Lambda's control-plane rate (15 requests per second for all of them but invoke, GetFunction and
/// GetPolicy) and GetFunction's own (100 per second). Auto Scaling publishes no number and ECS one per
/// action group; neither is paced unless the operator sets a rate with `--max-rate` (the SDK's
/// retries handle their throttles).
pub const DEFAULTS: &[(&str, Rate)] = &[
    (
        "ec2",
        Rate {
            per_second: 20.0,
            burst: 100,
        },
    ),
    (
        "lambda",
        Rate {
            per_second: 15.0,
            burst: 15,
        },
    ),
    (
        LAMBDA_GET_FUNCTION,
        Rate {
            per_second: 100.0,
            burst: 100,
        },
    ),
];

/// The rate per service: the defaults, then the operator's `--max-rate SERVICE=N` (`unlimited` removes
/// a default).
#[derive(Debug, Clone, PartialEq)]
pub struct Limits(BTreeMap<String, Rate>);

impl Default for Limits {
    fn default() -> Self {
        Limits(DEFAULTS.iter().map(|(s, r)| (s.to_string(), *r)).collect())
    }
}

impl Limits {
    /// Apply `--max-rate` values (`SERVICE=N`, N requests per second, or `SERVICE=unlimited`).
    /// `lambda=N` sets the control-plane bucket (GetFunction keeps its own); `lambda=unlimited`
    /// lifts both.
    pub fn with_overrides(mut self, overrides: &[(String, Option<Rate>)]) -> Self {
        for (service, rate) in overrides {
            match rate {
                Some(rate) => self.0.insert(service.clone(), *rate),
                None => self.0.remove(service),
            };
            if service == "lambda" && rate.is_none() {
                self.0.remove(LAMBDA_GET_FUNCTION);
            }
        }
        self
    }

    /// The sustained rate `service` is paced to, if it is.
    pub fn rate(&self, service: &str) -> Option<f64> {
        self.0.get(service).map(|r| r.per_second)
    }

    /// What is paced (for the refusal below and the tests).
    pub fn describe(&self) -> String {
        if self.0.is_empty() {
            return "none".into();
        }
        let rates: Vec<String> = self
            .0
            .iter()
            .map(|(s, r)| format!("{s} {}/s (burst {})", r.per_second, r.burst))
            .collect();
        rates.join(", ")
    }

    /// Refuse rates so low that a call would wait for its token longer than one attempt may take:
    /// the wait counts against `--attempt-timeout`, so with `concurrency` calls in flight the last
    /// would time out and be retried, spending the retry quota meant for real throttles.
    pub fn check(&self, attempt_timeout: Duration, concurrency: usize) -> Result<()> {
        for (service, rate) in &self.0 {
            let served = f64::from(rate.burst) + rate.per_second * attempt_timeout.as_secs_f64();
            if served < concurrency as f64 {
                return Err(Error::BadInput(format!(
                    "pacing {service} at {}/s (--max-rate): with --concurrency {concurrency}, calls would wait \
                     longer than --attempt-timeout {}s for a token; raise the rate or the timeout, or lower --concurrency",
                    rate.per_second,
                    attempt_timeout.as_secs()
                )));
            }
        }
        Ok(())
    }

    /// Wrap an HTTP client so that every attempt waits for its service's bucket.
    pub fn wrap(&self, inner: SharedHttpClient) -> SharedHttpClient {
        let buckets = self
            .0
            .iter()
            .map(|(service, rate)| {
                let bucket = Bucket {
                    limiter: RateLimiter::direct(quota(*rate)),
                    turn: tokio::sync::Mutex::new(()),
                };
                (service.clone(), Arc::new(bucket))
            })
            .collect();
        SharedHttpClient::new(PacedClient {
            inner,
            buckets: Arc::new(buckets),
        })
    }
}

fn quota(rate: Rate) -> Quota {
    // A rate the parser would refuse (zero, negative, not a number) falls back to one per second.
    let period = Duration::try_from_secs_f64(1.0 / rate.per_second).unwrap_or(Duration::from_secs(1));
    let burst = NonZeroU32::new(rate.burst.max(1)).unwrap_or(NonZeroU32::MIN);
    Quota::with_period(period)
        .unwrap_or_else(|| Quota::per_second(NonZeroU32::MIN))
        .allow_burst(burst)
}

/// Parse one `--max-rate` value: `SERVICE=N` (N requests per second, 0.1 to 10000; the burst is N
/// rounded up) or `SERVICE=unlimited`; SERVICE one of `known` (the signing names azevac calls).
pub fn parse_max_rate(value: &str, known: &[&str]) -> Result<(String, Option<Rate>)> {
    let bad = |why: &str| {
        Error::BadInput(format!(
            "--max-rate {value:?}: {why}; give SERVICE=N (requests per second) or SERVICE=unlimited, SERVICE one of {}",
            known.join(", ")
        ))
    };
    let (service, rate) = value.split_once('=').ok_or_else(|| bad("no '='"))?;
    let service = service.trim().to_ascii_lowercase();
    if !known.contains(&service.as_str()) {
        return Err(bad("unknown service"));
    }
    let rate = rate.trim();
    if rate.eq_ignore_ascii_case("unlimited") {
        return Ok((service, None));
    }
    let per_second: f64 = rate.parse().map_err(|_| bad("the rate is not a number"))?;
    if !(0.1..=10_000.0).contains(&per_second) {
        return Err(bad("the rate must be between 0.1 and 10000 per second"));
    }
    // In range, so the cast cannot overflow.
    let burst = per_second.ceil() as u32;
    Ok((service, Some(Rate { per_second, burst })))
}

/// The service a signed request is for: the signing name in its SigV4 credential scope
/// (`Credential=KEY/DATE/REGION/SERVICE/aws4_request`; SigV4a has no region). Unsigned requests
/// (instance metadata, anonymous calls) have none and are not paced.
pub fn signing_service(authorization: &str) -> Option<&str> {
    let scope = authorization.split("Credential=").nth(1)?.split([',', ' ']).next()?;
    let parts: Vec<&str> = scope.split('/').collect();
    let end = parts.iter().rposition(|p| *p == "aws4_request")?;
    end.checked_sub(1)
        .and_then(|i| parts.get(i))
        .copied()
        .filter(|s| !s.is_empty())
}

/// The IAM prefix `--max-rate` names a service by, for its signing name: the same but for
/// CloudWatch, which signs as `monitoring`.
fn iam_prefix(signing_name: &str) -> &str {
    match signing_name {
        "monitoring" => "cloudwatch",
        other => other,
    }
}

/// Whether a Lambda request is `GetFunction`: `GET /2015-03-31/functions/NAME` (a query may
/// follow), nothing after the name (`/configuration` is GetFunctionConfiguration; no name at all is
/// ListFunctions).
pub fn is_get_function(method: &str, uri: &str) -> bool {
    let path = uri.split('?').next().unwrap_or_default();
    let Some((_, name)) = path.split_once("/2015-03-31/functions/") else {
        return false;
    };
    method.eq_ignore_ascii_case("GET") && !name.is_empty() && !name.contains('/')
}

/// One service's token bucket, and a queue for it: governor lets whichever waiter polls first take
/// a freed token, so without the (FIFO) turn one call could wait behind later ones for ever.
struct Bucket {
    limiter: DefaultDirectRateLimiter,
    turn: tokio::sync::Mutex<()>,
}

type Buckets = BTreeMap<String, Arc<Bucket>>;

struct PacedClient {
    inner: SharedHttpClient,
    buckets: Arc<Buckets>,
}

impl fmt::Debug for PacedClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PacedClient")
            .field("services", &self.buckets.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl HttpClient for PacedClient {
    fn http_connector(&self, settings: &HttpConnectorSettings, components: &RuntimeComponents) -> SharedHttpConnector {
        SharedHttpConnector::new(PacedConnector {
            inner: self.inner.http_connector(settings, components),
            buckets: self.buckets.clone(),
        })
    }

    fn validate_base_client_config(
        &self,
        components: &aws_smithy_runtime_api::client::runtime_components::RuntimeComponentsBuilder,
        cfg: &aws_smithy_types::config_bag::ConfigBag,
    ) -> std::result::Result<(), aws_smithy_runtime_api::box_error::BoxError> {
        self.inner.validate_base_client_config(components, cfg)
    }

    fn validate_final_config(
        &self,
        components: &RuntimeComponents,
        cfg: &aws_smithy_types::config_bag::ConfigBag,
    ) -> std::result::Result<(), aws_smithy_runtime_api::box_error::BoxError> {
        self.inner.validate_final_config(components, cfg)
    }

    fn connector_metadata(&self) -> Option<aws_smithy_runtime_api::client::connector_metadata::ConnectorMetadata> {
        self.inner.connector_metadata()
    }
}

struct PacedConnector {
    inner: SharedHttpConnector,
    buckets: Arc<Buckets>,
}

impl fmt::Debug for PacedConnector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PacedConnector")
            .field("services", &self.buckets.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl HttpConnector for PacedConnector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let bucket = request
            .headers()
            .get("authorization")
            .and_then(signing_service)
            .and_then(|service| {
                let own = (service == "lambda" && is_get_function(request.method(), request.uri()))
                    .then(|| self.buckets.get(LAMBDA_GET_FUNCTION))
                    .flatten();
                own.or_else(|| self.buckets.get(iam_prefix(service)))
            })
            .cloned();
        let inner = self.inner.clone();
        HttpConnectorFuture::new(async move {
            if let Some(bucket) = bucket {
                let _turn = bucket.turn.lock().await;
                bucket.limiter.until_ready().await;
            }
            inner.call(request).await
        })
    }
}

/// The SDK's own default HTTPS client (rustls), the one every client would get without azevac.
pub fn default_http_client() -> Option<SharedHttpClient> {
    let plugin =
        aws_smithy_runtime::client::defaults::default_http_client_plugin_v2(aws_config::BehaviorVersion::latest())?;
    let builder = aws_smithy_runtime_api::client::runtime_components::RuntimeComponentsBuilder::new("azevac");
    use aws_smithy_runtime_api::client::runtime_plugin::RuntimePlugin;
    plugin.runtime_components(&builder).http_client()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_service_comes_from_the_credential_scope() {
        let v4 = "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261201/us-east-1/autoscaling/aws4_request, SignedHeaders=host;x-amz-date, Signature=abc";
        assert_eq!(signing_service(v4), Some("autoscaling"));
        let v4a = "AWS4-ECDSA-P256-SHA256 Credential=AKIDEXAMPLE/20261201/lambda/aws4_request, SignedHeaders=host, Signature=abc";
        assert_eq!(signing_service(v4a), Some("lambda"));
        assert_eq!(signing_service("Bearer token"), None);
        assert_eq!(signing_service("AWS4-HMAC-SHA256 Credential=/aws4_request"), None);
    }

    const KNOWN: &[&str] = &["ec2", "ecs", "lambda"];

    #[test]
    fn rates_too_low_for_the_attempt_timeout_are_refused() {
        let slow = Limits::default().with_overrides(&[(
            "ecs".into(),
            Some(Rate {
                per_second: 0.2,
                burst: 1,
            }),
        )]);
        let err = slow
            .check(Duration::from_secs(30), 16)
            .expect_err("16 calls need 75 s at 0.2/s");
        assert!(err.to_string().contains("pacing ecs at 0.2/s"), "{err}");
        assert!(slow.check(Duration::from_secs(30), 4).is_ok());
        assert!(Limits::default().check(Duration::from_secs(30), 256).is_ok());
    }

    #[test]
    fn max_rate_values() {
        assert_eq!(
            parse_max_rate("ecs=5", KNOWN).expect("valid"),
            (
                "ecs".into(),
                Some(Rate {
                    per_second: 5.0,
                    burst: 5
                })
            )
        );
        assert_eq!(
            parse_max_rate("EC2=2.5", KNOWN).expect("valid"),
            (
                "ec2".into(),
                Some(Rate {
                    per_second: 2.5,
                    burst: 3
                })
            )
        );
        assert_eq!(
            parse_max_rate("lambda=unlimited", KNOWN).expect("valid"),
            ("lambda".into(), None)
        );
        for bad in ["ecs", "s3=5", "ecs=0", "ecs=-1", "ecs=fast", "ecs=NaN", "ecs=inf", "=5"] {
            let err = parse_max_rate(bad, KNOWN).expect_err("invalid").to_string();
            assert!(err.contains("SERVICE=N") && !err.contains('\n'), "{bad}: {err}");
        }
        let limits = Limits::default().with_overrides(&[
            ("lambda".into(), None),
            (
                "ecs".into(),
                Some(Rate {
                    per_second: 5.0,
                    burst: 5,
                }),
            ),
        ]);
        assert_eq!(limits.describe(), "ec2 20/s (burst 100), ecs 5/s (burst 5)");
    }

    #[test]
    fn get_function_is_told_from_the_other_lambda_reads() {
        let base = "https://lambda.us-east-1.amazonaws.com/2015-03-31/functions";
        assert!(is_get_function("GET", &format!("{base}/fn-1")));
        assert!(is_get_function(
            "GET",
            &format!("{base}/arn%3Aaws%3Alambda%3Aus-east-1%3A1%3Afunction%3Af?Qualifier=1")
        ));
        assert!(
            !is_get_function("GET", &format!("{base}/fn-1/configuration")),
            "GetFunctionConfiguration"
        );
        assert!(
            !is_get_function("PUT", &format!("{base}/fn-1/configuration")),
            "an update"
        );
        assert!(!is_get_function("GET", &format!("{base}/")), "ListFunctions");
        assert!(!is_get_function("GET", &format!("{base}/fn-1/aliases")), "ListAliases");
        assert!(!is_get_function("DELETE", &format!("{base}/fn-1")));
        let lifted = Limits::default().with_overrides(&[("lambda".into(), None)]);
        assert_eq!(
            lifted.describe(),
            "ec2 20/s (burst 100)",
            "lambda=unlimited lifts GetFunction's bucket too"
        );
    }

    #[test]
    fn the_sdk_default_client_is_there_to_wrap() {
        assert!(default_http_client().is_some());
    }
}
