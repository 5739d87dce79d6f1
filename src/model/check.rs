//! The lines of `azevac doctor`'s checklist: what was checked, how it came out, and what to do
//! about it. Plain values, so that every plugin can say how its own reads fare (`Plugin::probe`)
//! and the command only prints them; the one classification of a failed call lives here.

use serde::Serialize;

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_smithy_runtime_api::http::Response as HttpResponse;

use crate::error::{describe, Error};

/// How one check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// As azevac needs it.
    Ok,
    /// Not needed for every run (or not checkable here): azevac works, with less.
    Warn,
    /// Missing or broken: a run would fail there.
    Fail,
    /// Not checked (nothing to check with the flags given).
    Skip,
}

impl Verdict {
    /// The word in the checklist.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Ok => "OK",
            Verdict::Warn => "WARN",
            Verdict::Fail => "FAIL",
            Verdict::Skip => "SKIP",
        }
    }
}

/// One line of the checklist.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// What was checked: `credentials`, `journal table`, `asg`...
    pub name: String,
    /// How it came out.
    pub verdict: Verdict,
    /// What was found (the call made, and what it said).
    pub detail: String,
    /// What to do about a warning or a failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Check {
    /// A check that passed.
    pub fn ok(name: impl Into<String>, detail: impl Into<String>) -> Check {
        Check {
            name: name.into(),
            verdict: Verdict::Ok,
            detail: detail.into(),
            fix: None,
        }
    }

    /// A finding that does not stop a run.
    pub fn warn(name: impl Into<String>, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            name: name.into(),
            verdict: Verdict::Warn,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }

    /// A finding that would make a run fail.
    pub fn fail(name: impl Into<String>, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            name: name.into(),
            verdict: Verdict::Fail,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }

    /// Nothing was checked, and why.
    pub fn skip(name: impl Into<String>, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            name: name.into(),
            verdict: Verdict::Skip,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }

    /// The check of one read call, `action` (`autoscaling:DescribeAutoScalingGroups`): OK with
    /// what it found, or the failure classified. A read that answers proves the read permission
    /// only; the checklist says so, and never tries a change.
    pub fn read(name: &str, action: &str, result: Result<String, Error>) -> Check {
        match result {
            Ok(found) => Check::ok(name, format!("{action}: {found} (read permission only)")),
            Err(err) => Check::failed_call(name, action, &err),
        }
    }

    /// The check of one SDK read call `action` as sent: OK when it answered, else classified.
    pub fn answered<T, E>(name: &str, action: &'static str, sent: Result<T, SdkError<E, HttpResponse>>) -> Check
    where
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        let result = sent
            .map(|_| "answered".to_owned())
            .map_err(|e| Error::from_sdk(action, e));
        Check::read(name, action, result)
    }

    /// The check of a read for an optional feature (`--zonal-shift`): an endpoint that does not
    /// serve the API at all (an emulator without ARC) is a WARN, since runs need it only when asked.
    pub fn answered_optional<T, E>(
        name: &str,
        action: &'static str,
        sent: Result<T, SdkError<E, HttpResponse>>,
    ) -> Check
    where
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        match sent.map_err(|e| Error::from_sdk(action, e)) {
            Err(Error::Unsupported { status, .. }) if !matches!(status, 401 | 403 | 407) => Check::warn(
                name,
                format!("{action}: the endpoint does not serve this API (HTTP {status} with no AWS error)"),
                "nothing to do on an emulator (runs need it only with --zonal-shift); against AWS, check --region / --endpoint-url",
            ),
            other => Check::read(name, action, other.map(|_| "answered".to_owned())),
        }
    }

    /// A failed call, classified: denied or unauthenticated → FAIL naming what to grant; an
    /// answer that is not AWS's (an endpoint without the API, a proxy's page) → FAIL;
    /// throttled → WARN (not proven); unreachable and anything else → FAIL.
    pub fn failed_call(name: &str, action: &str, err: &Error) -> Check {
        // One line: the SDK's messages may span several.
        let said = describe(err).split_whitespace().collect::<Vec<_>>().join(" ");
        match err {
            Error::AccessDenied { .. } => Check::fail(
                name,
                format!("{action}: access denied"),
                format!("allow {action} for the caller (fixtures/iam-policy.json lists every action azevac needs)"),
            ),
            Error::NoCredentials { source, .. } => Check::fail(
                name,
                format!(
                    "{action}: no usable credentials ({})",
                    describe(source.as_ref())
                        .split_whitespace()
                        .collect::<Vec<_>>()
                        .join(" ")
                ),
                "set AWS_PROFILE (and `aws sso login`), or export AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
            ),
            // A corporate proxy or firewall answers a blocked host with its own HTML page: that is
            // no emulator lacking a service, and a real run would fail there too.
            Error::Unsupported { status, .. } if matches!(status, 401 | 403 | 407) => Check::fail(
                name,
                format!(
                    "{action}: answered by something that is not AWS (HTTP {status} with no AWS error): \
                     a proxy or firewall in between?"
                ),
                "check the network path to the endpoint (HTTPS_PROXY / NO_PROXY, firewall, VPC endpoint)",
            ),
            Error::Unsupported { status, .. } => Check::fail(
                name,
                format!(
                    "{action}: the endpoint does not serve this API (HTTP {status} with no AWS error), \
                     so runs through it cannot use this type"
                ),
                "check --region / --endpoint-url; on an emulator without the service, leave the type out with --type",
            ),
            Error::Unreachable { .. } => Check::fail(
                name,
                format!("{action}: {said}"),
                "check --region / --endpoint-url and the network (VPN, proxy, VPC endpoint)",
            ),
            Error::Throttled { .. } => Check::warn(
                name,
                format!("{action}: throttled after retries, so not proven"),
                "run `azevac doctor` again in a minute",
            ),
            _ => Check::fail(
                name,
                format!("{action}: {said}"),
                format!("make {action} work for the caller (see the error above)"),
            ),
        }
    }
}

/// Whether any check of the checklist failed (the command then exits 1).
pub fn any_failed(checks: &[Check]) -> bool {
    checks.iter().any(|c| c.verdict == Verdict::Fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn boxed() -> crate::error::BoxError {
        "the service said so".into()
    }

    #[test]
    fn classifies_each_kind_of_failed_read() {
        let denied = Error::AccessDenied {
            operation: "ecs:ListClusters",
            source: boxed(),
        };
        let check = Check::failed_call("ecs", "ecs:ListClusters", &denied);
        assert_eq!(check.verdict, Verdict::Fail);
        assert!(check
            .fix
            .as_deref()
            .unwrap_or_default()
            .contains("allow ecs:ListClusters"));
        let absent = Error::Unsupported {
            operation: "arc-zonal-shift:ListManagedResources",
            status: 404,
            source: boxed(),
        };
        // A required type on an endpoint without its API fails (a run would); only the optional
        // ARC read downgrades it (answered_optional, tested end to end in tests/it/doctor.rs).
        assert_eq!(Check::failed_call("db", "x", &absent).verdict, Verdict::Fail);
        let intercepted = Error::Unsupported {
            operation: "sts:GetCallerIdentity",
            status: 403,
            source: boxed(),
        };
        let check = Check::failed_call("credentials", "sts:GetCallerIdentity", &intercepted);
        assert_eq!(check.verdict, Verdict::Fail);
        assert!(check.detail.contains("not AWS"), "{check:?}");
        let unreachable = Error::Unreachable {
            operation: "rds:DescribeDBClusters",
            source: boxed(),
        };
        assert_eq!(Check::failed_call("db", "x", &unreachable).verdict, Verdict::Fail);
        let ok = Check::read("asg", "autoscaling:DescribeAutoScalingGroups", Ok("2 groups".into()));
        assert_eq!(ok.verdict, Verdict::Ok);
        assert!(ok.detail.contains("read permission only"), "{}", ok.detail);
    }

    #[test]
    fn fails_only_on_a_failure() {
        let warn = Check::warn("a", "b", "c");
        let skip = Check::skip("a", "b", "c");
        assert!(!any_failed(&[Check::ok("a", "b"), warn.clone(), skip]));
        assert!(any_failed(&[warn, Check::fail("a", "b", "c")]));
    }
}
