//! The Node client's options as read from JavaScript, napi-free.

use std::collections::BTreeMap;

/// A JavaScript value as read from the Node client's options (napi-free).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum NodeValue {
    /// `undefined` (or an absent property).
    Undefined,
    /// `null`.
    Null,
    /// A boolean.
    Bool(bool),
    /// A number, kept as its bits so that values can be hashed.
    Number(u64),
    /// A string.
    Text(String),
    /// A `Buffer` or typed array's bytes.
    Bytes(Vec<u8>),
    /// An array.
    List(Vec<NodeValue>),
    /// A plain object or class instance: its own enumerable properties.
    Map(BTreeMap<String, NodeValue>),
    /// A function.
    Function,
    /// Anything else (symbol, bigint, promise, an object nested too deep…).
    Other,
}

impl NodeValue {
    /// A number value.
    pub fn number(n: f64) -> NodeValue {
        NodeValue::Number(n.to_bits())
    }

    /// `undefined` or `null`.
    pub fn is_unset(&self) -> bool {
        matches!(self, NodeValue::Undefined | NodeValue::Null)
    }

    pub(super) fn as_f64(&self) -> Option<f64> {
        match self {
            NodeValue::Number(bits) => Some(f64::from_bits(*bits)),
            _ => None,
        }
    }

    pub(super) fn as_str(&self) -> Option<&str> {
        match self {
            NodeValue::Text(s) => Some(s),
            _ => None,
        }
    }

    pub(super) fn as_bool(&self) -> Option<bool> {
        match self {
            NodeValue::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub(super) fn get(&self, key: &str) -> &NodeValue {
        match self {
            NodeValue::Map(map) => map.get(key).unwrap_or(&NodeValue::Undefined),
            _ => &NodeValue::Undefined,
        }
    }
}

/// A Node client's effective options (`client.options`), key by key.
pub type NodeOptions = BTreeMap<String, NodeValue>;
