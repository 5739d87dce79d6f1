//! What the `nat` kind journals about one route: the NAT gateway it targeted before the
//! evacuation, and the one azevac pointed it at (which `recover` checks the live route against).

use serde::{Deserialize, Serialize};

/// A route's destination, as `ReplaceRoute` names it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Destination {
    /// `DestinationCidrBlock`.
    Ipv4(String),
    /// `DestinationIpv6CidrBlock`.
    Ipv6(String),
    /// `DestinationPrefixListId`.
    PrefixList(String),
}

impl Destination {
    /// From its text: `pl-…` is a prefix list, text with a `:` an IPv6 CIDR, anything else IPv4.
    pub fn parse(text: &str) -> Option<Destination> {
        if text.is_empty() {
            None
        } else if text.starts_with("pl-") {
            Some(Destination::PrefixList(text.to_owned()))
        } else if text.contains(':') {
            Some(Destination::Ipv6(text.to_owned()))
        } else {
            Some(Destination::Ipv4(text.to_owned()))
        }
    }

    /// The text EC2 shows.
    pub fn as_str(&self) -> &str {
        match self {
            Destination::Ipv4(s) | Destination::Ipv6(s) | Destination::PrefixList(s) => s,
        }
    }
}

impl std::fmt::Display for Destination {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One journalled fact about a route of the table the record names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// The NAT gateway the route targeted before the evacuation (where `recover` points it back).
    Original {
        /// The route.
        destination: Destination,
        /// `nat-…`.
        nat: String,
    },
    /// The NAT gateway azevac pointed the route at: `recover` puts back only a route still on it.
    Set {
        /// The route.
        destination: Destination,
        /// `nat-…`.
        nat: String,
    },
}

/// The journal's prefix of an [`Action::Original`] before journal format 2: `route:<destination>:<nat-id>`.
const LEGACY_ORIGINAL: &str = "route:";
/// The journal's prefix of an [`Action::Set`] before journal format 2: `set:<destination>:<nat-id>`.
const LEGACY_SET: &str = "set:";

impl crate::model::action::Action for Action {
    fn describe(&self) -> String {
        match self {
            Action::Original { destination, nat } => format!("{destination} was on {nat}"),
            Action::Set { destination, nat } => format!("point {destination} at {nat}"),
        }
    }

    /// Reads the records written before journal format 2: `route:<destination>:<nat-id>` and
    /// `set:<destination>:<nat-id>`. The NAT ID follows the last `:`, so that IPv6 destinations
    /// read unambiguously.
    fn legacy(text: &str) -> Option<Self> {
        let (make, rest): (fn(Destination, String) -> Action, &str) =
            if let Some(rest) = text.strip_prefix(LEGACY_ORIGINAL) {
                (|destination, nat| Action::Original { destination, nat }, rest)
            } else {
                (
                    |destination, nat| Action::Set { destination, nat },
                    text.strip_prefix(LEGACY_SET)?,
                )
            };
        let (destination, nat) = rest.rsplit_once(':')?;
        nat.starts_with("nat-").then_some(())?;
        Some(make(Destination::parse(destination)?, nat.to_owned()))
    }
}

impl Action {
    /// `(destination, nat-id)` of an [`Action::Original`].
    pub fn original(&self) -> Option<(&Destination, &str)> {
        match self {
            Action::Original { destination, nat } => Some((destination, nat)),
            Action::Set { .. } => None,
        }
    }

    /// `(destination, nat-id)` of an [`Action::Set`].
    pub fn set(&self) -> Option<(&Destination, &str)> {
        match self {
            Action::Set { destination, nat } => Some((destination, nat)),
            Action::Original { .. } => None,
        }
    }
}
