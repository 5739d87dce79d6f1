//! A failed AWS call as one line an operator can read: `operation: HTTP 403: AccessDenied: message`.
//! The SDK's own words for an answer it could not parse are "service error: unhandled error:" over
//! its error metadata printed as a debug structure (`Error { code: .., aws_request_id: .. }`), and
//! its `DisplayErrorContext` adds a debug dump of the whole response (`Response { .. SdkBody .. }`):
//! neither tells an operator what AWS, or the proxy in between, said. Here the code and the message
//! are read from what the SDK parsed, else from the body itself (JSON, XML), else a short escaped
//! excerpt of the body is shown. Text from the answer is untrusted: it is escaped ([`crate::model::text::clean`])
//! and folded onto one line before it goes anywhere.

use std::error::Error as StdError;
use std::fmt;

use aws_smithy_runtime_api::client::result::SdkError;
use aws_smithy_runtime_api::client::waiters::error::WaiterError;
use aws_smithy_runtime_api::http::{Headers, Response as HttpResponse};
use aws_smithy_types::error::metadata::{ErrorMetadata, ProvideErrorMetadata};

use super::BoxError;

/// The longest excerpt of an answer's body shown when no AWS error can be read from it, in
/// characters: enough for a proxy's "502 Bad Gateway" or the start of a stack trace.
const EXCERPT: usize = 100;

/// A failed AWS call in the words of [`detail`], carrying the SDK's error for whoever needs its
/// type. Its error chain ends here: this line says all that the SDK's chain would (its code and
/// message, or the body they were not found in), while the chain's own links print an unparsed
/// answer's metadata as a debug structure.
pub struct SdkFailure {
    detail: String,
    sdk: BoxError,
}

impl SdkFailure {
    /// Keep `err` under the one line that says what the call got.
    pub fn new<E>(err: SdkError<E, HttpResponse>) -> SdkFailure
    where
        E: ProvideErrorMetadata + StdError + Send + Sync + 'static,
    {
        SdkFailure {
            detail: detail(&err),
            sdk: Box::new(err),
        }
    }

    /// Keep a waiter's `err` under one line: a poll that failed as [`detail`] says it, the rest
    /// (the wait ran out, the resource reached a failure state) in the waiter's words.
    pub fn waiting<O, E>(err: WaiterError<O, E>) -> SdkFailure
    where
        O: fmt::Debug + Send + Sync + 'static,
        E: ProvideErrorMetadata + StdError + Send + Sync + 'static,
    {
        let detail = match &err {
            WaiterError::OperationFailed(failed) => detail(failed.error()),
            other => one_line(&chain(other.to_string(), other)),
        };
        SdkFailure {
            detail,
            sdk: Box::new(err),
        }
    }

    /// The SDK's error, as it came.
    pub fn sdk(&self) -> &(dyn StdError + Send + Sync + 'static) {
        self.sdk.as_ref()
    }
}

impl fmt::Display for SdkFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.detail)
    }
}

impl fmt::Debug for SdkFailure {
    // Its line, not the SDK's structures: a `{:?}` of an error that holds one (a test's assertion
    // message, a log line) should not dump a whole response either.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("SdkFailure").field(&self.detail).finish()
    }
}

impl StdError for SdkFailure {}

/// `operation: ` and the [`detail`] of what it got, on one line: for messages that name the call
/// themselves (a role that cannot be assumed, a notification not sent).
pub fn line<E>(operation: &str, err: &SdkError<E, HttpResponse>) -> String
where
    E: ProvideErrorMetadata + StdError + 'static,
{
    format!("{operation}: {}", detail(err))
}

/// What a failed call got, on one line: `HTTP 403: AccessDenied: message` for an answer (the code
/// and message the SDK parsed, else those found in the body, else an excerpt of the body), and for
/// a call that got none, why (not sent, timed out, not built) with its causes.
pub fn detail<E>(err: &SdkError<E, HttpResponse>) -> String
where
    E: ProvideErrorMetadata + StdError + 'static,
{
    let text = match err {
        SdkError::ServiceError(context) => {
            let parsed = said(err.meta().code(), err.meta().message()).or_else(|| modeled(context.err()));
            answered(context.raw(), parsed)
        }
        // An answer the SDK could not read at all (a body in no format it knows).
        SdkError::ResponseError(context) => answered(context.raw(), None),
        SdkError::DispatchFailure(_) => format!("not sent: {}", causes(err)),
        SdkError::TimeoutError(_) => format!("timed out: {}", causes(err)),
        SdkError::ConstructionFailure(_) => format!("request not built: {}", causes(err)),
        // `SdkError` is non-exhaustive: a kind added later is still said in words.
        _ => causes(err),
    };
    one_line(&text)
}

/// An error's causes (not its own words), on one line, with the SDK errors among them said by
/// [`detail`] and error metadata by its code and message, never as the debug structure its
/// `Display` prints.
fn causes(err: &(dyn StdError + 'static)) -> String {
    one_line(&chain(String::new(), err))
}

/// `text` followed by each cause of `err` that it does not say already (see [`causes`]).
pub(super) fn chain(mut text: String, err: &(dyn StdError + 'static)) -> String {
    let mut next = err.source();
    while let Some(cause) = next {
        let (said, last) = match known(cause) {
            Some(said) => (said, true),
            None => (cause.to_string(), false),
        };
        if !said.is_empty() && !text.contains(&said) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&said);
        }
        // A known error's line says all that its own causes would.
        if last {
            break;
        }
        next = cause.source();
    }
    text
}

/// What `err` says in one line when it is one of the errors whose own chain would print debug
/// structures: ours, error metadata, or an SDK error of the STS calls azevac makes through the
/// SDK (the assume-role provider's, wrapped in a `CredentialsError`). Other providers' errors (web
/// identity, SSO) reach the chain walk as their error metadata: code and message, no status.
pub(super) fn known(err: &(dyn StdError + 'static)) -> Option<String> {
    use aws_sdk_sts::operation::assume_role::AssumeRoleError;
    use aws_sdk_sts::operation::get_caller_identity::GetCallerIdentityError;
    if let Some(ours) = err.downcast_ref::<SdkFailure>() {
        return Some(ours.detail.clone());
    }
    if let Some(meta) = err.downcast_ref::<ErrorMetadata>() {
        return Some(said(meta.code(), meta.message()).unwrap_or_else(|| "no error code or message".into()));
    }
    if let Some(e) = err.downcast_ref::<SdkError<AssumeRoleError, HttpResponse>>() {
        return Some(line("sts:AssumeRole", e));
    }
    if let Some(e) = err.downcast_ref::<SdkError<GetCallerIdentityError, HttpResponse>>() {
        return Some(line("sts:GetCallerIdentity", e));
    }
    None
}

/// `HTTP status: ` and what the answer said: `parsed` (what the SDK read from it), else the code
/// and message in the body, else what the body is.
fn answered(raw: &HttpResponse, parsed: Option<String>) -> String {
    let status = raw.status().as_u16();
    let body = raw.body().bytes().unwrap_or_default();
    let what = parsed.unwrap_or_else(|| from_body(raw.headers(), body));
    format!("HTTP {status}: {what}")
}

/// A modeled error's own words (`ResourceConflictException: update in progress`), for one whose
/// metadata is empty (made by hand, as mocks do); `None` for the SDK's unhandled error, whose
/// words say only that.
fn modeled(err: &(dyn StdError + 'static)) -> Option<String> {
    let text = err.to_string();
    (!text.is_empty() && !text.starts_with("unhandled error")).then(|| crate::model::text::clean(&text))
}

/// `code: message`, either alone, or `None` when there is neither; escaped.
fn said(code: Option<&str>, message: Option<&str>) -> Option<String> {
    let code = code.map(str::trim).filter(|c| !c.is_empty());
    let message = message.map(str::trim).filter(|m| !m.is_empty());
    match (code, message) {
        (Some(code), Some(message)) => Some(format!(
            "{}: {}",
            crate::model::text::clean(code),
            crate::model::text::clean(message)
        )),
        (Some(one), None) | (None, Some(one)) => Some(crate::model::text::clean(one)),
        (None, None) => None,
    }
}

/// What a body the SDK did not parse says: an AWS error's code and message in JSON (`__type` or
/// `code`, `message`; the awsJson and restJson protocols) or XML (`<Code>`, `<Message>`; the
/// query and restXml ones), the title of an HTML page (a proxy's or a load balancer's), or an
/// excerpt.
fn from_body(headers: &Headers, body: &[u8]) -> String {
    let header_code = headers.get("x-amzn-errortype").map(error_type);
    if let Ok(serde_json::Value::Object(json)) = serde_json::from_slice::<serde_json::Value>(body) {
        let inner = json.get("Error").and_then(|e| e.as_object());
        let field = |names: &[&str]| {
            names
                .iter()
                .find_map(|n| json.get(*n).or_else(|| inner.and_then(|i| i.get(*n))))
                .and_then(|v| v.as_str())
        };
        let code = field(&["__type", "code", "Code"]).map(error_type).or(header_code);
        if let Some(said) = said(code, field(&["message", "Message", "errorMessage"])) {
            return said;
        }
    }
    let text = String::from_utf8_lossy(body);
    let trimmed = text.trim_start();
    let html = headers.get("content-type").is_some_and(|t| t.starts_with("text/html"))
        || trimmed.get(..5).is_some_and(|s| s.eq_ignore_ascii_case("<html"))
        || trimmed.get(..9).is_some_and(|s| s.eq_ignore_ascii_case("<!doctype"));
    if !html && trimmed.starts_with('<') {
        let code = element(&text, "Code");
        if let Some(said) = said(code.as_deref().or(header_code), element(&text, "Message").as_deref()) {
            return said;
        }
    }
    if let Some(said) = header_code.and_then(|c| said(Some(c), None)) {
        return said;
    }
    if trimmed.is_empty() {
        return "no AWS error, and an empty body".into();
    }
    if html {
        let title = element(&text, "title").filter(|t| !t.trim().is_empty());
        let shown = title.unwrap_or_else(|| without_tags(&text));
        return format!("no AWS error but an HTML page: {}", excerpt(&shown));
    }
    format!("no AWS error but: {}", excerpt(&text))
}

/// An error type as a code: `com.amazonaws.ecs#AccessDeniedException` (awsJson's `__type`) and
/// `AccessDeniedException:http://internal.amazon.com/..` (restJson's `x-amzn-errortype`) are both
/// `AccessDeniedException`.
fn error_type(raw: &str) -> &str {
    let raw = raw.rsplit('#').next().unwrap_or(raw);
    raw.split(':').next().unwrap_or(raw)
}

/// The text of the first `<name>` element of an XML or HTML document, its entities read; `None`
/// when there is none.
fn element(text: &str, name: &str) -> Option<String> {
    let lower = text.to_ascii_lowercase();
    let open = format!("<{}", name.to_ascii_lowercase());
    let mut from = 0;
    // `<Code>` or `<title lang="en">`, not `<CodeSomething>`.
    let start = loop {
        let at = from + lower[from..].find(&open)?;
        let after = at + open.len();
        match lower[after..].chars().next() {
            Some(c) if c == '>' || c.is_ascii_whitespace() => break after + lower[after..].find('>')? + 1,
            _ => from = after,
        }
    };
    let end = start + lower[start..].find(&format!("</{}", name.to_ascii_lowercase()))?;
    let inner = text.get(start..end)?;
    Some(
        inner
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&apos;", "'")
            .replace("&amp;", "&"),
    )
}

/// An HTML page's text without its tags (a script's or a style's text is kept: good enough for a
/// proxy's error page, which has none worth hiding).
fn without_tags(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                out.push(' ');
            }
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}

/// At most [`EXCERPT`] characters of `text`, on one line, escaped, in quotes (where the body
/// starts and ends).
fn excerpt(text: &str) -> String {
    let folded = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut shown: String = folded.chars().take(EXCERPT).collect();
    if folded.chars().count() > EXCERPT {
        shown.push('…');
    }
    format!("\"{}\"", crate::model::text::clean(&shown))
}

/// Whitespace (line breaks among it) folded to single spaces, control characters escaped: one line.
fn one_line(text: &str) -> String {
    crate::model::text::clean(&text.split_whitespace().collect::<Vec<_>>().join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;
    use aws_credential_types::provider::error::CredentialsError;
    use aws_sdk_sts::operation::assume_role::AssumeRoleError;
    use aws_smithy_mocks::{mock, mock_client, RuleMode};
    use aws_smithy_runtime_api::client::result::ConnectorError;
    use aws_smithy_runtime_api::http::StatusCode;
    use aws_smithy_types::body::SdkBody;
    use aws_smithy_types::retry::RetryConfig;
    use proptest::prelude::*;

    /// What AWS (or something in between) answered: `status`, `body`, and a content type.
    fn answer(status: u16, content_type: Option<&str>, body: &str) -> HttpResponse {
        let mut response = HttpResponse::new(
            StatusCode::try_from(status).expect("a status"),
            SdkBody::from(body.to_owned()),
        );
        if let Some(kind) = content_type {
            response.headers_mut().insert("content-type", kind.to_owned());
        }
        response
    }

    /// The operator's line for ECS `UpdateService` answered so, through the SDK's own parsing
    /// (awsJson 1.1), classified as a run classifies it.
    async fn ecs_says(status: u16, content_type: Option<&'static str>, body: &'static str) -> (Error, String) {
        let rule =
            mock!(aws_sdk_ecs::Client::update_service).then_http_response(move || answer(status, content_type, body));
        let client = mock_client!(aws_sdk_ecs, RuleMode::MatchAny, [&rule], |c| c
            .retry_config(RetryConfig::disabled()));
        let err = client
            .update_service()
            .service("web")
            .send()
            .await
            .expect_err("the answer is an error");
        let err = Error::from_sdk("ecs:UpdateService", err);
        let said = crate::error::describe(&err);
        (err, said)
    }

    /// What no operator should see: the SDK's structures (its debug output), or a line break.
    fn assert_readable(said: &str) {
        for structure in [
            "Error {",
            "SdkBody",
            "Response {",
            "ServiceError",
            "Unhandled",
            "unhandled error",
        ] {
            assert!(!said.contains(structure), "{structure} in {said}");
        }
        assert!(!said.contains(['\n', '\r']), "{said}");
    }

    #[tokio::test]
    async fn issue_50_a_json_error_is_its_status_code_and_message() {
        let (err, said) = ecs_says(
            400,
            Some("application/x-amz-json-1.1"),
            r#"{"__type":"com.amazonaws.ecs#InvalidParameterException","message":"subnets: too many"}"#,
        )
        .await;
        assert!(matches!(err, Error::Aws { .. }), "{err:?}");
        assert_eq!(
            said,
            "ecs:UpdateService failed: HTTP 400: InvalidParameterException: subnets: too many"
        );
        // A code the SDK does not model (unhandled) reads the same.
        let (_, said) = ecs_says(
            400,
            Some("application/x-amz-json-1.1"),
            r#"{"__type":"NewKindOfException","message":"something new"}"#,
        )
        .await;
        assert_eq!(
            said,
            "ecs:UpdateService failed: HTTP 400: NewKindOfException: something new"
        );
        assert_readable(&said);
    }

    #[tokio::test]
    async fn issue_50_an_xml_error_is_its_status_code_and_message() {
        let body = "<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code>\
                    <Message>User: arn:aws:iam::1:user/x is not authorized to perform: \
                    autoscaling:UpdateAutoScalingGroup &amp; more</Message></Error>\
                    <RequestId>r-1</RequestId></ErrorResponse>";
        let rule = mock!(aws_sdk_autoscaling::Client::update_auto_scaling_group)
            .then_http_response(move || answer(403, Some("text/xml"), body));
        let client = mock_client!(aws_sdk_autoscaling, RuleMode::MatchAny, [&rule], |c| c
            .retry_config(RetryConfig::disabled()));
        let err = client
            .update_auto_scaling_group()
            .auto_scaling_group_name("web")
            .send()
            .await
            .expect_err("denied");
        assert_eq!(
            detail(&err),
            "HTTP 403: AccessDenied: User: arn:aws:iam::1:user/x is not authorized to perform: \
             autoscaling:UpdateAutoScalingGroup & more"
        );
        let err = Error::from_sdk("autoscaling:UpdateAutoScalingGroup", err);
        assert!(matches!(err, Error::AccessDenied { .. }), "{err:?}");
        let said = crate::error::describe(&err);
        assert!(
            said.starts_with("access denied for autoscaling:UpdateAutoScalingGroup"),
            "{said}"
        );
        assert!(said.ends_with("HTTP 403: AccessDenied: User: arn:aws:iam::1:user/x is not authorized to perform: autoscaling:UpdateAutoScalingGroup & more"), "{said}");
        assert_readable(&said);
    }

    #[tokio::test]
    async fn issue_50_a_body_that_is_no_aws_error_is_shown_as_an_escaped_excerpt() {
        // A stack trace with a terminal escape in it, from something that is not AWS.
        let (err, said) = ecs_says(
            500,
            Some("text/plain"),
            "Traceback (most recent call last):\n  \x1b[31mboom\x1b[0m",
        )
        .await;
        assert!(matches!(err, Error::Aws { .. }), "{err:?}");
        assert_eq!(
            said,
            r#"ecs:UpdateService failed: HTTP 500: no AWS error but: "Traceback (most recent call last): \u{1b}[31mboom\u{1b}[0m""#
        );
        assert_readable(&said);
        // A long one is cut.
        let long: &'static str = Box::leak("x".repeat(5000).into_boxed_str());
        let (_, said) = ecs_says(500, None, long).await;
        assert!(said.ends_with("…\""), "{said}");
        assert!(said.len() < 200, "{said}");
    }

    #[tokio::test]
    async fn issue_50_a_proxys_html_page_is_its_title_and_no_missing_api() {
        let page = "<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head>\n<body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>";
        let (err, said) = ecs_says(502, Some("text/html"), page).await;
        // A gateway failing says nothing about the API: no "does not serve this API".
        assert!(matches!(err, Error::Aws { .. }), "{err:?}");
        assert_eq!(
            said,
            "ecs:UpdateService failed: HTTP 502: no AWS error but an HTML page: \"502 Bad Gateway\""
        );
        // Without a title: its text.
        let (_, said) = ecs_says(
            503,
            Some("text/html"),
            "<html><body><p>Service\nUnavailable</p></body></html>",
        )
        .await;
        assert!(
            said.ends_with("HTTP 503: no AWS error but an HTML page: \"Service Unavailable\""),
            "{said}"
        );
        // A 404 page is still an endpoint without the API (an emulator that lacks the service).
        let (err, said) = ecs_says(404, Some("text/html"), "<html><title>Not Found</title></html>").await;
        assert!(matches!(err, Error::Unsupported { status: 404, .. }), "{err:?}");
        assert!(
            said.ends_with("HTTP 404: no AWS error but an HTML page: \"Not Found\""),
            "{said}"
        );
        assert_readable(&said);
    }

    #[tokio::test]
    async fn issue_50_an_empty_answer_says_so() {
        let (_, said) = ecs_says(502, None, "").await;
        assert_eq!(
            said,
            "ecs:UpdateService failed: HTTP 502: no AWS error, and an empty body"
        );
    }

    #[test]
    fn issue_50_a_role_that_cannot_be_assumed_is_one_line() {
        // What the SDK's assume-role provider returns for a 502 page from a proxy: STS's error,
        // unparsed (no code), inside a credentials error.
        let sts = SdkError::service_error(
            AssumeRoleError::generic(ErrorMetadata::builder().build()),
            answer(502, Some("text/html"), "<html><title>Bad Gateway</title></html>"),
        );
        let credentials = CredentialsError::provider_error(sts);
        let said = crate::error::describe(&credentials);
        assert_eq!(
            said,
            "an error occurred while loading credentials: sts:AssumeRole: HTTP 502: no AWS error but an HTML page: \"Bad Gateway\""
        );
        // STS's own refusal, parsed by the SDK: its code and message.
        let meta = ErrorMetadata::builder()
            .code("AccessDenied")
            .message("not authorized to perform: sts:AssumeRole")
            .build();
        let sts = SdkError::service_error(AssumeRoleError::generic(meta), answer(403, Some("text/xml"), "<x/>"));
        let said = crate::error::describe(&CredentialsError::provider_error(sts));
        assert!(
            said.ends_with("sts:AssumeRole: HTTP 403: AccessDenied: not authorized to perform: sts:AssumeRole"),
            "{said}"
        );
        // The metadata of an answer the SDK could not parse, wherever it turns up in a chain: its
        // code and message, never the structure its own Display prints.
        let unhandled = AssumeRoleError::generic(ErrorMetadata::builder().code("Odd").build());
        assert_eq!(crate::error::describe(&unhandled), "unhandled error (Odd)");
        let bare = AssumeRoleError::generic(ErrorMetadata::builder().message("what went wrong").build());
        assert_eq!(crate::error::describe(&bare), "unhandled error: what went wrong");
    }

    #[test]
    fn issue_50_a_call_that_got_no_answer_says_why() {
        let refused: SdkError<AssumeRoleError, HttpResponse> =
            SdkError::dispatch_failure(ConnectorError::io("connection refused (os error 111)".into()));
        assert_eq!(
            detail(&refused),
            "not sent: io error: connection refused (os error 111)"
        );
        let slow: SdkError<AssumeRoleError, HttpResponse> = SdkError::timeout_error("operation timeout after 5s");
        assert_eq!(detail(&slow), "timed out: operation timeout after 5s");
        assert_eq!(
            line("sts:AssumeRole", &slow),
            "sts:AssumeRole: timed out: operation timeout after 5s"
        );
    }

    #[test]
    fn issue_50_codes_and_messages_are_read_from_each_protocols_body() {
        let none = Headers::new();
        let said = |body: &str| from_body(&none, body.as_bytes());
        assert_eq!(said(r#"{"__type":"a#Denied","Message":"no"}"#), "Denied: no");
        assert_eq!(said(r#"{"code":"Bad","message":"nope"}"#), "Bad: nope");
        assert_eq!(said(r#"{"Error":{"Code":"X","Message":"y"}}"#), "X: y");
        assert_eq!(said(r#"{"message":"only a message"}"#), "only a message");
        assert_eq!(
            said("<Response><Errors><Error><Code>UnauthorizedOperation</Code><Message>You are not authorized</Message></Error></Errors></Response>"),
            "UnauthorizedOperation: You are not authorized"
        );
        // `<CodeX>` is no `<Code>`.
        assert_eq!(said("<E><CodeX>1</CodeX><Code>Real</Code></E>"), "Real");
        let mut typed = Headers::new();
        typed.insert(
            "x-amzn-errortype",
            "ResourceNotFoundException:http://internal.amazon.com/coral/x/",
        );
        assert_eq!(from_body(&typed, b"{}"), "ResourceNotFoundException");
        assert_eq!(said(r#"{"unrelated":1}"#), r#"no AWS error but: "{"unrelated":1}""#);
        assert_eq!(said("\u{202e}evil"), "no AWS error but: \"\\u{202e}evil\"");
    }

    proptest! {
        /// Whatever the body (text, bytes, control characters, something that looks like the
        /// SDK's structures), the line is one line, and every "Error {", "SdkBody" or "Response {"
        /// in it came from the body itself, never from the SDK.
        #[test]
        fn issue_50_any_answer_is_one_line_without_the_sdks_structures(
            status in 400u16..600,
            kind in prop::sample::select(vec![None, Some("application/json"), Some("text/xml"), Some("text/html")]),
            body in prop::collection::vec(any::<u8>(), 0..300),
            text in ".{0,200}",
            use_text in any::<bool>(),
            code in prop::option::of(".{0,20}"),
            message in prop::option::of(".{0,40}"),
        ) {
            let bytes = if use_text { text.into_bytes() } else { body };
            let mut raw = HttpResponse::new(StatusCode::try_from(status).expect("status"), SdkBody::from(bytes.clone()));
            if let Some(kind) = kind {
                raw.headers_mut().insert("content-type", kind);
            }
            let mut meta = ErrorMetadata::builder();
            if let Some(code) = &code {
                meta = meta.code(code);
            }
            if let Some(message) = &message {
                meta = meta.message(message);
            }
            let err = SdkError::service_error(AssumeRoleError::generic(meta.build()), raw);
            let fold = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
            let body_text = String::from_utf8_lossy(&bytes).into_owned();
            // The body as shown: folded, and an HTML page's text without its tags.
            let given = format!(
                "{} {} {} {}",
                fold(&body_text),
                fold(&without_tags(&body_text)),
                code.unwrap_or_default(),
                message.unwrap_or_default()
            );
            for said in [
                line("sts:AssumeRole", &err),
                crate::error::describe(&Error::from_sdk("sts:AssumeRole", err)),
            ] {
                prop_assert!(!said.contains(['\n', '\r']), "{}", said);
                prop_assert!(!said.chars().any(char::is_control), "{}", said);
                prop_assert!(said.contains(&format!("HTTP {status}")), "{}", said);
                for structure in ["Error {", "SdkBody", "Response {"] {
                    prop_assert!(!said.contains(structure) || given.contains(structure), "{} in {}", structure, said);
                }
            }
        }
    }
}
