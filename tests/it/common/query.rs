//! Reading and answering query-protocol (form body, XML answer) calls, for the proxy's fakes.

/// An answer in the query protocol's error shape: `(status, code, message)`.
pub type Refusal = (u16, &'static str, String);

/// A form parameter of a query-protocol request body.
pub fn param(body: &str, name: &str) -> Option<String> {
    form_urlencoded::parse(body.as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// The text between the first `open` and the next `close`.
pub fn between<'a>(text: &'a str, open: &str, close: &str) -> Option<&'a str> {
    let start = text.find(open)? + open.len();
    let end = text[start..].find(close)? + start;
    Some(&text[start..end])
}

/// The query protocol's XML error body.
pub fn error_xml(code: &str, message: &str) -> String {
    format!(
        "<ErrorResponse><Error><Type>Sender</Type><Code>{code}</Code><Message>{message}</Message></Error><RequestId>proxy</RequestId></ErrorResponse>"
    )
}
