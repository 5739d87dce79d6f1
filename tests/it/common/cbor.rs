//! CloudWatch speaks Smithy RPC v2 CBOR to the SDK, and moto only CloudWatch's JSON and query
//! protocols (getmoto/moto#9195): for calls signed for `monitoring`, the test proxy translates the
//! encoding both ways and nothing else, so the real SDK client reads and moto keeps the alarms.
//! `POST /service/GraniteServiceVersion20100801/operation/OP` with a CBOR map becomes `POST /` with
//! `X-Amz-Target: GraniteServiceVersion20100801.OP` and the same map as JSON; the JSON answer goes
//! back as CBOR, its timestamps (epoch seconds in JSON) as CBOR's epoch tag, as the protocol writes them.

use ciborium::value::Value as Cbor;
use serde_json::Value as Json;

/// The path every CloudWatch call of the RPC v2 protocol starts with.
pub const PREFIX: &str = "/service/GraniteServiceVersion20100801/operation/";
/// The JSON protocol's target prefix.
pub const TARGET: &str = "GraniteServiceVersion20100801";

/// The operation of an RPC v2 CloudWatch path, if it is one.
pub fn operation(path: &str) -> Option<&str> {
    path.strip_prefix(PREFIX).filter(|op| !op.is_empty())
}

/// A CBOR request body as JSON (an empty body is an empty input).
pub fn to_json(body: &[u8]) -> Json {
    if body.is_empty() {
        return Json::Object(Default::default());
    }
    let value: Cbor = ciborium::de::from_reader(body).expect("the SDK sends CBOR");
    json_of(value)
}

fn json_of(value: Cbor) -> Json {
    match value {
        Cbor::Integer(i) => Json::from(i128::from(i) as i64),
        Cbor::Float(f) => serde_json::Number::from_f64(f).map_or(Json::Null, Json::Number),
        Cbor::Text(t) => Json::String(t),
        Cbor::Bool(b) => Json::Bool(b),
        Cbor::Null => Json::Null,
        Cbor::Tag(_, inner) => json_of(*inner),
        Cbor::Array(items) => Json::Array(items.into_iter().map(json_of).collect()),
        Cbor::Map(entries) => Json::Object(
            entries
                .into_iter()
                .filter_map(|(k, v)| k.into_text().ok().map(|k| (k, json_of(v))))
                .collect(),
        ),
        other => panic!("no JSON for the CBOR value {other:?}"),
    }
}

/// A JSON answer as the CBOR body the SDK reads.
pub fn to_cbor(body: &[u8]) -> Vec<u8> {
    let json: Json = if body.is_empty() {
        Json::Object(Default::default())
    } else {
        serde_json::from_slice(body).expect("moto answers JSON")
    };
    let mut out = Vec::new();
    ciborium::ser::into_writer(&cbor_of(json, false), &mut out).expect("encode CBOR");
    out
}

/// `timestamp`: the value is a timestamp member (its name ends in `Timestamp`).
fn cbor_of(value: Json, timestamp: bool) -> Cbor {
    match value {
        Json::Number(n) if timestamp => Cbor::Tag(1, Box::new(Cbor::Float(n.as_f64().unwrap_or_default()))),
        Json::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => Cbor::Integer(i.into()),
            (None, Some(f)) => Cbor::Float(f),
            _ => Cbor::Null,
        },
        Json::String(s) => Cbor::Text(s),
        Json::Bool(b) => Cbor::Bool(b),
        Json::Null => Cbor::Null,
        Json::Array(items) => Cbor::Array(items.into_iter().map(|v| cbor_of(v, false)).collect()),
        Json::Object(entries) => Cbor::Map(
            entries
                .into_iter()
                .map(|(k, v)| {
                    let timestamp = k.ends_with("Timestamp");
                    (Cbor::Text(k), cbor_of(v, timestamp))
                })
                .collect(),
        ),
    }
}

#[test]
fn the_bridge_keeps_every_value_and_tags_timestamps() {
    let answer = br#"{"MetricAlarms":[{"AlarmName":"a","Threshold":1.5,"Period":60,"StateUpdatedTimestamp":1796454833.8}],"NextToken":null}"#;
    let cbor = to_cbor(answer);
    let back: Cbor = ciborium::de::from_reader(cbor.as_slice()).expect("decodes");
    let text = format!("{back:?}");
    assert!(text.contains("Tag(1, Float(1796454833.8))"), "{text}");
    assert!(text.contains("Integer(Integer(60))"), "{text}");
    assert_eq!(to_json(&cbor)["MetricAlarms"][0]["Threshold"], serde_json::json!(1.5));
    assert_eq!(to_json(&[]), serde_json::json!({}));
}
