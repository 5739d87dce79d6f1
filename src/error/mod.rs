//! The crate's one error type, so every layer can tell "bad input" from "AWS said no" from "a race".

use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_smithy_runtime_api::http::Response as HttpResponse;

pub mod grants;
pub mod sdk;

pub use sdk::SdkFailure;

/// A boxed cause, kept so `{:#}` shows the whole chain down to the SDK's message.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// `Result` with [`Error`] as the default error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong, grouped by what the operator should do about it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The operator asked for something that cannot be done as asked; the message says what to do.
    #[error("{0}")]
    BadInput(String),

    /// An AZ ID that the region does not have (or an AZ name where an ID belongs).
    #[error("{given:?} is not an AZ ID in {region}{hint}; valid AZ IDs: {valid}")]
    UnknownAz {
        /// What the operator typed.
        given: String,
        /// The region it was looked up in.
        region: String,
        /// A pointer to the right ID when the operator typed a zone name.
        hint: String,
        /// The region's IDs with their names, ready to print.
        valid: String,
    },

    /// The journal table is not there, so nothing can be recovered or reported from it.
    #[error(
        "journal table {table:?} does not exist in {region}: create it with `azevac init --table {table}` \
         (under the admin policy, fixtures/iam-admin-policy.json), or pass the --table and --region it was created with"
    )]
    TableMissing {
        /// The table name that was looked for.
        table: String,
        /// The region it was looked for in.
        region: String,
        /// The DynamoDB error that said so.
        #[source]
        source: BoxError,
    },

    /// A resource that the journal or the plan names no longer exists.
    #[error("{operation}: {resource} no longer exists")]
    NotFound {
        /// The call that found it missing.
        operation: &'static str,
        /// The resource ARN or name.
        resource: String,
        /// The service's error.
        #[source]
        source: BoxError,
    },

    /// A conditional journal write lost a race with another azevac run.
    #[error(
        "journal record {az_id}/{resource} was changed by another azevac run at the same time; \
         left as it is (re-run to continue from its state)"
    )]
    JournalConflict {
        /// Partition key of the record.
        az_id: String,
        /// Sort key of the record.
        resource: String,
        /// The ConditionalCheckFailed error.
        #[source]
        source: BoxError,
    },

    /// Another live run holds the resource's lock: it is changing the resource right now.
    #[error(
        "being changed by run {run_id} ({caller}), lease until {until}; left alone: run again once that run has ended \
         (a lock whose lease ran out is taken over)"
    )]
    Locked {
        /// The locked journal key.
        resource: String,
        /// The run holding it.
        run_id: String,
        /// That run's caller ARN.
        caller: String,
        /// When its lease runs out (RFC 3339).
        until: String,
    },

    /// A bug in azevac, not in the input or the environment: reported on its line (exit 1), never
    /// taken for bad input.
    #[error("internal: {0} (a bug in azevac; nothing more is done to this resource)")]
    Internal(String),

    /// This run's lock on the resource can no longer be trusted (its renewals failed): nothing more
    /// is sent under it.
    #[error(
        "the lock of {resource} could not be renewed in time (the journal is not answering), so nothing more is \
         sent under it"
    )]
    LeaseLost {
        /// The locked journal key.
        resource: String,
    },

    /// A change was given up while its call may still be in flight.
    #[error("{resource}: {why}")]
    Abandoned {
        /// The locked journal key.
        resource: String,
        /// Why it was given up.
        why: String,
    },

    /// A call timed out without an answer: AWS carries out a request whose answer its caller never
    /// read, so the change may still land after this.
    #[error("{operation}: no answer within the timeout; the call may still be carried out")]
    TimedOut {
        /// The call.
        operation: &'static str,
        /// The SDK's timeout.
        #[source]
        source: BoxError,
    },

    /// The resource was changed by someone else between planning and the update.
    #[error("{resource} was changed by someone else since the plan was made; re-run to plan again")]
    ChangedSincePlan {
        /// The resource name.
        resource: String,
        /// The service's precondition error.
        #[source]
        source: BoxError,
    },

    /// The service kept throttling after the SDK's retries ran out.
    #[error("{operation} was still throttled after the SDK's retries; try again, or lower --concurrency")]
    Throttled {
        /// The throttled call.
        operation: &'static str,
        /// The last throttling error.
        #[source]
        source: BoxError,
    },

    /// The caller's credentials lack a permission azevac needs.
    #[error("access denied for {operation}: {}", grants::what_grants(operation))]
    AccessDenied {
        /// The denied call.
        operation: &'static str,
        /// The service's error.
        #[source]
        source: BoxError,
    },

    /// No credentials could be found or used by the SDK's provider chain.
    #[error(
        "no usable AWS credentials for {operation}: set AWS_PROFILE (and `aws sso login`), \
         or export AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
    )]
    NoCredentials {
        /// The call that needed them.
        operation: &'static str,
        /// The provider chain's error.
        #[source]
        source: BoxError,
    },

    /// The endpoint could not be reached at all (wrong region, wrong --endpoint-url, no network).
    #[error("cannot reach the AWS endpoint for {operation}: check --region / --endpoint-url and the network")]
    Unreachable {
        /// The call that could not be sent.
        operation: &'static str,
        /// The connector's error.
        #[source]
        source: BoxError,
    },

    /// The endpoint answered with something that is no AWS error at all: it does not serve this API.
    #[error(
        "{operation}: the endpoint answered HTTP {status} with no AWS error, so it does not serve this API \
         (moto and LocalStack have no ARC zonal shift: leave out --zonal-shift there)"
    )]
    Unsupported {
        /// The call.
        operation: &'static str,
        /// The HTTP status it got.
        status: u16,
        /// The SDK's error.
        #[source]
        source: BoxError,
    },

    /// The region's Availability Zones could not be listed: almost always a wrong region or endpoint.
    #[error("cannot list the Availability Zones of region {region:?}: check --region / AWS_REGION and --endpoint-url")]
    WrongRegion {
        /// The region that was asked.
        region: String,
        /// The service's error.
        #[source]
        source: BoxError,
    },

    /// A Kubernetes API call failed.
    #[error("kubernetes: {operation} failed")]
    Kube {
        /// The call.
        operation: &'static str,
        /// kube's error.
        #[source]
        source: BoxError,
    },

    /// The call answered, but said that these resources could not be read (not that they are gone).
    #[error("{operation} could not read {what}")]
    Unreadable {
        /// The call.
        operation: &'static str,
        /// Each resource with the service's reason.
        what: String,
    },

    /// Any other failed AWS call.
    #[error("{operation} failed")]
    Aws {
        /// The failed call.
        operation: &'static str,
        /// The SDK's error.
        #[source]
        source: BoxError,
    },

    /// A change was made, but the resource did not reach the state it should within the time given.
    #[error("{resource}: {why}")]
    NotSettled {
        /// The resource name.
        resource: String,
        /// What it did not reach, and what it looks like now.
        why: String,
    },

    /// One step of a sequence failed, and what the steps before it did was undone (or not: said).
    #[error("{step} failed; {undone}")]
    StepFailed {
        /// The step, in the operator's words.
        step: String,
        /// What was done about the steps before it.
        undone: String,
        /// Why the step failed.
        #[source]
        source: Box<Error>,
    },

    /// A journal item that is missing fields or has the wrong types (written by hand, or damaged).
    #[error("journal item {az_id}/{resource} is malformed ({why}); left untouched, fix or delete it by hand")]
    BadRecord {
        /// Partition key, or `?` when even that is missing.
        az_id: String,
        /// Sort key, or `?` when even that is missing.
        resource: String,
        /// What is wrong with it.
        why: String,
    },
}

impl Error {
    /// The process exit code this error calls for: 2 when the operator must change the input or the
    /// environment before anything can happen, 1 otherwise.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::BadInput(_)
            | Error::UnknownAz { .. }
            | Error::TableMissing { .. }
            | Error::AccessDenied { .. }
            | Error::NoCredentials { .. }
            | Error::Unreachable { .. }
            | Error::Unsupported { .. }
            | Error::WrongRegion { .. } => 2,
            _ => 1,
        }
    }

    /// Whether the call that failed so may still land: its lock is then left to run out, never
    /// released at once (another run could read the resource before the call lands).
    pub fn may_still_land(&self) -> bool {
        matches!(self, Error::TimedOut { .. })
    }

    /// Whether this is a lost race on the journal (reported per resource, not fatal).
    pub fn is_conflict(&self) -> bool {
        matches!(self, Error::JournalConflict { .. })
    }

    /// Classify a failed SDK call of any service into our variants, keeping the SDK error as the
    /// source, under the one line that says what the call got ([`SdkFailure`]).
    pub fn from_sdk<E>(operation: &'static str, err: SdkError<E, HttpResponse>) -> Self
    where
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        let code = err.code().unwrap_or_default().to_owned();
        // An answer that is no AWS error at all (a 404, or an HTML error page): the endpoint does not
        // serve this API. Emulators answer so for services they lack (moto: an HTML 500 page). A
        // gateway's page (502, 503, 504: a proxy or load balancer in between, about its upstream)
        // says nothing about the API: that call failed, as any other.
        let raw = err.raw_response();
        let status = raw.map(|r| r.status().as_u16());
        let html = raw
            .and_then(|r| r.headers().get("content-type"))
            .is_some_and(|t| t.starts_with("text/html"));
        if code.is_empty() && (status == Some(404) || (html && !status.is_some_and(|s| (502..=504).contains(&s)))) {
            return Error::Unsupported {
                operation,
                status: status.unwrap_or_default(),
                source: Box::new(SdkFailure::new(err)),
            };
        }
        let chain = DisplayErrorContext(&err).to_string();
        // The SDK gave up waiting (its operation timeout, or a read timeout after the request went
        // out): the service may still carry the request out.
        let timed_out = match &err {
            SdkError::TimeoutError(_) => true,
            SdkError::DispatchFailure(failure) => failure.is_timeout(),
            _ => false,
        };
        if timed_out {
            return Error::TimedOut {
                operation,
                source: Box::new(SdkFailure::new(err)),
            };
        }
        let dispatch = matches!(err, SdkError::DispatchFailure(_));
        let construction = matches!(err, SdkError::ConstructionFailure(_));
        // LocalStack answers this for services its plan lacks: say so in one line.
        if chain.contains("not included in your current license plan") {
            return Error::BadInput(format!(
                "{operation}: the emulator's license plan does not include this service; \
                 use a plan that includes it, or moto server (see the manual's Troubleshooting page)"
            ));
        }
        let source: BoxError = Box::new(SdkFailure::new(err));
        match code.as_str() {
            c if is_throttling_code(c) => Error::Throttled { operation, source },
            c if c.starts_with("AccessDenied") || c == "UnauthorizedOperation" || c == "AuthFailure" => {
                Error::AccessDenied { operation, source }
            }
            "UnrecognizedClientException" | "InvalidClientTokenId" | "ExpiredToken" | "ExpiredTokenException" => {
                Error::NoCredentials { operation, source }
            }
            _ if (dispatch || construction) && mentions_credentials(&chain) => {
                Error::NoCredentials { operation, source }
            }
            _ if dispatch => Error::Unreachable { operation, source },
            _ => Error::Aws { operation, source },
        }
    }
}

/// An error with every cause, on one line; an SDK error among them as one line of operation, HTTP
/// status, code and message ([`sdk::detail`]), never the SDK's debug structures.
pub fn describe(err: &(dyn std::error::Error + 'static)) -> String {
    match sdk::known(err) {
        Some(said) => said,
        None => sdk::chain(err.to_string(), err),
    }
}

/// Error codes that AWS services use for throttling (they differ per service).
fn is_throttling_code(code: &str) -> bool {
    matches!(
        code,
        "Throttling"
            | "ThrottlingException"
            | "ThrottledException"
            | "RequestLimitExceeded"
            | "TooManyRequestsException"
            | "ProvisionedThroughputExceededException"
            | "RequestThrottled"
            | "RequestThrottledException"
            | "SlowDown"
    )
}

fn mentions_credentials(chain: &str) -> bool {
    let chain = chain.to_ascii_lowercase();
    chain.contains("credentials") || chain.contains("identity")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bug in azevac fails its line (exit 1); it is never mistaken for bad input (exit 2), and a
    /// lock that could not be kept is no bad input either.
    #[test]
    fn internal_errors_and_lost_leases_exit_1_and_bad_input_2() {
        assert_eq!(Error::Internal("no planned state".into()).exit_code(), 1);
        assert_eq!(Error::LeaseLost { resource: "r".into() }.exit_code(), 1);
        assert_eq!(Error::BadInput("--reason is 1001 characters".into()).exit_code(), 2);
        let internal = Error::Internal("no cluster for prod/n1".into()).to_string();
        assert!(
            internal.starts_with("internal: no cluster") && internal.contains("a bug in azevac"),
            "{internal}"
        );
    }
}
