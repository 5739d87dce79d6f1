//! The request's checks that the engine and its kinds own, in one place, whether it came from flags
//! or from a saved plan file.

use crate::model::Request;
use crate::plugins;
use crate::{Error, Result};

/// The longest operator's text azevac stores (`--reason`, in every journal record of the run): far
/// inside DynamoDB's 400 KB an item and 4 MB a transaction of 50 records.
pub const LONGEST_TEXT: usize = 1000;

/// Check a request in one place, whether it came from flags or from a saved plan file (which
/// bypasses every check the flags make): one line that says what is allowed.
/// The checks above the engine (accounts, waves) are the application layer's
/// ([`crate::app::validate`]), which calls this.
pub fn validate(request: &Request) -> Result<()> {
    known_types(request)?;
    for flags in plugins::flags() {
        (flags.validate)(request)?;
    }
    crate::plugins::wait_within("wait_timeout_seconds", request.wait_timeout_seconds)?;
    // The only operator's text the journal stores; the others (tags, prefix, contexts) filter.
    if let Some(length) = request
        .reason
        .as_ref()
        .map(|r| r.chars().count())
        .filter(|&n| n > LONGEST_TEXT)
    {
        return Err(Error::BadInput(format!(
            "--reason is {length} characters; at most {LONGEST_TEXT} (it is stored in every journal record)"
        )));
    }
    if let Some(bad) = request.tags.iter().find(|t| !t.contains('=') || t.starts_with('=')) {
        return Err(Error::BadInput(format!("tag filter {bad:?} is not KEY=VALUE")));
    }
    Ok(())
}

/// Every type the request names is a registered kind.
pub fn known_types(request: &Request) -> Result<()> {
    let known = plugins::types();
    if let Some(unknown) = request.types.iter().find(|t| !known.contains(&t.as_str())) {
        return Err(Error::BadInput(format!(
            "unknown type {unknown:?}; types: {}",
            known.join(", ")
        )));
    }
    Ok(())
}
