//! What names a counter: a string (the documented helper's form), or a scope — a plain
//! object of scalar fields such as `{ type: 'invoice', year: 2025 }` — stored as a
//! composite `_id` with its fields in a stable (sorted) order.

use crate::engine::text::quote::quoted;
use std::fmt;
use std::hash::{Hash, Hasher};

use mongodb::bson::{Bson, Document};

use crate::engine::counter::counter_value::compact_integer;
use crate::engine::error::{SeqError, SeqResult};
use crate::engine::text::validate::{check_field_name, check_name, FieldUse, MAX_NAME_BYTES};

/// Most fields in a scoped name.
pub const MAX_SCOPE_FIELDS: usize = 16;

/// One field value of a scoped name.
#[derive(Debug, Clone)]
pub enum Scalar {
    /// A string.
    Text(String),
    /// A whole number.
    Int(i64),
    /// A finite number with a fraction.
    Double(f64),
    /// A boolean.
    Bool(bool),
}

impl PartialEq for Scalar {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Scalar::Text(a), Scalar::Text(b)) => a == b,
            (Scalar::Int(a), Scalar::Int(b)) => a == b,
            (Scalar::Double(a), Scalar::Double(b)) => a.to_bits() == b.to_bits(),
            (Scalar::Bool(a), Scalar::Bool(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for Scalar {}

impl Hash for Scalar {
    fn hash<H: Hasher>(&self, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match self {
            Scalar::Text(s) => s.hash(state),
            Scalar::Int(i) => i.hash(state),
            Scalar::Double(d) => d.to_bits().hash(state),
            Scalar::Bool(b) => b.hash(state),
        }
    }
}

impl Scalar {
    fn to_bson(&self) -> Bson {
        match self {
            Scalar::Text(s) => Bson::String(s.clone()),
            Scalar::Int(i) => compact_integer(*i),
            Scalar::Double(d) => Bson::Double(*d),
            Scalar::Bool(b) => Bson::Boolean(*b),
        }
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Text(s) => write!(f, "{s:?}"),
            Scalar::Int(i) => write!(f, "{i}"),
            Scalar::Double(d) => write!(f, "{d}"),
            Scalar::Bool(b) => write!(f, "{b}"),
        }
    }
}

/// The name of a counter, validated.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CounterName {
    /// `_id` is this string.
    Text(String),
    /// `_id` is a document of these fields, sorted by name.
    Scoped(Vec<(String, Scalar)>),
}

impl CounterName {
    /// A string name: non-empty, at most 1024 bytes, no NUL.
    pub fn text(name: &str) -> SeqResult<CounterName> {
        check_name(name)?;
        Ok(CounterName::Text(name.to_string()))
    }

    /// A scoped name from its fields (any order; sorted here). Field names must be plain
    /// (not empty, no `$` prefix, no `.`, no NUL); string values follow the rules of names.
    pub fn scoped(mut fields: Vec<(String, Scalar)>) -> SeqResult<CounterName> {
        if fields.is_empty() || fields.len() > MAX_SCOPE_FIELDS {
            return Err(SeqError::invalid_argument(format!(
                "a scoped sequence name needs 1 to {MAX_SCOPE_FIELDS} fields; got {}",
                fields.len()
            )));
        }
        for (key, value) in &fields {
            check_field_name("a field of a scoped sequence name", key, FieldUse::ScopeKey)?;
            if let Scalar::Text(text) = value {
                check_name(text).map_err(|e| {
                    SeqError::invalid_argument(format!("field {}: {}", quoted(key), e.message))
                })?;
            }
            if let Scalar::Double(d) = value {
                if !d.is_finite() {
                    return Err(SeqError::invalid_argument(format!(
                        "field {} must be a finite number",
                        quoted(key)
                    )));
                }
            }
        }
        fields.sort_by(|a, b| a.0.cmp(&b.0));
        if fields.windows(2).any(|w| w[0].0 == w[1].0) {
            return Err(SeqError::invalid_argument(
                "scoped sequence name has a repeated field",
            ));
        }
        let name = CounterName::Scoped(fields);
        if name.label().len() > MAX_NAME_BYTES {
            return Err(SeqError::invalid_argument(format!(
                "scoped sequence name is longer than {MAX_NAME_BYTES} bytes"
            )));
        }
        Ok(name)
    }

    /// The `_id` of the counter document.
    pub fn to_id(&self) -> Bson {
        match self {
            CounterName::Text(name) => Bson::String(name.clone()),
            CounterName::Scoped(fields) => {
                let mut doc = Document::new();
                for (key, value) in fields {
                    doc.insert(key.clone(), value.to_bson());
                }
                Bson::Document(doc)
            }
        }
    }

    /// How the name appears in messages: the string itself, or `{"type":"invoice",…}`.
    pub fn label(&self) -> String {
        match self {
            CounterName::Text(name) => name.clone(),
            CounterName::Scoped(fields) => {
                let parts: Vec<String> = fields.iter().map(|(k, v)| format!("{k:?}:{v}")).collect();
                format!("{{{}}}", parts.join(","))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mongodb::bson::doc;

    fn invoice(year: i64) -> Vec<(String, Scalar)> {
        vec![
            ("year".into(), Scalar::Int(year)),
            ("type".into(), Scalar::Text("invoice".into())),
        ]
    }

    #[test]
    fn scoped_names_have_a_stable_field_order() {
        let a = CounterName::scoped(invoice(2025)).unwrap();
        let mut reversed = invoice(2025);
        reversed.reverse();
        let b = CounterName::scoped(reversed).unwrap();
        assert_eq!(a, b);
        assert_eq!(
            a.to_id(),
            Bson::Document(doc! { "type": "invoice", "year": 2025 })
        );
        assert_eq!(a.label(), r#"{"type":"invoice","year":2025}"#);
        assert_ne!(a, CounterName::scoped(invoice(2026)).unwrap());
    }

    #[test]
    fn a_text_name_never_equals_a_scoped_one() {
        let scoped = CounterName::scoped(invoice(2025)).unwrap();
        let text = CounterName::text(&scoped.label()).unwrap();
        assert_ne!(scoped, text);
        assert_eq!(text.to_id(), Bson::String(scoped.label()));
    }

    #[test]
    fn bad_scopes_are_refused() {
        let bad_keys = ["", "$gt", "a.b", "a\0"];
        for key in bad_keys {
            assert!(
                CounterName::scoped(vec![(key.into(), Scalar::Int(1))]).is_err(),
                "{key:?}"
            );
        }
        assert!(CounterName::scoped(vec![]).is_err());
        assert!(CounterName::scoped(vec![("a".into(), Scalar::Double(f64::NAN))]).is_err());
        assert!(CounterName::scoped(vec![("a".into(), Scalar::Text(String::new()))]).is_err());
        let repeated = vec![("a".into(), Scalar::Int(1)), ("a".into(), Scalar::Int(2))];
        assert!(CounterName::scoped(repeated).is_err());
        let many = (0..17).map(|i| (format!("k{i}"), Scalar::Int(i))).collect();
        assert!(CounterName::scoped(many).is_err());
    }
}
