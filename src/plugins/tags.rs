//! Tags as every kind keeps them: each AWS service returns its own list type of key/value pairs
//! (or a map); the `--tag` filters and exposure's names read one map.

use std::collections::BTreeMap;

/// A service's tag pairs as one map: a pair without a key is dropped, a missing value is empty.
pub fn fold<'a>(pairs: impl IntoIterator<Item = (Option<&'a str>, Option<&'a str>)>) -> BTreeMap<String, String> {
    pairs
        .into_iter()
        .filter_map(|(key, value)| Some((key?.to_owned(), value.unwrap_or_default().to_owned())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyless_pairs_are_dropped_and_missing_values_are_empty() {
        let folded = fold([(Some("team"), Some("web")), (None, Some("x")), (Some("Name"), None)]);
        assert_eq!(
            folded,
            BTreeMap::from([
                ("Name".to_owned(), String::new()),
                ("team".to_owned(), "web".to_owned())
            ])
        );
    }
}
