//! The TLS options of a Node client: certificate and host name checks, the files it
//! names (read here, their contents carried beside the connection), and the copies of
//! those files the Node driver keeps in memory.

use super::refusal::{bad, refused};
use super::{DerivedTls, NodeOptions, NodeValue, TlsFile};
use crate::engine::client::client_certificate::check_client_certificate;
use crate::engine::error::SeqResult;

/// The options into which the Node driver reads a TLS file when it connects (`ca` from
/// `tlsCAFile`, `cert` and `key` from `tlsCertificateKeyFile`, each only when unset), with
/// the option naming that file.
pub const FILE_COPIES: [(&str, &str); 3] = [
    ("ca", "tlsCAFile"),
    ("cert", "tlsCertificateKeyFile"),
    ("key", "tlsCertificateKeyFile"),
];

/// The options of [`FILE_COPIES`] that may hold the Node driver's copy of their file: with
/// TLS on, bytes beside a named file (the driver reads files into a `Buffer`).
pub fn file_copy_candidates(options: &NodeOptions) -> Vec<&'static str> {
    if options.get("tls") != Some(&NodeValue::Bool(true)) {
        return Vec::new();
    }
    FILE_COPIES
        .iter()
        .filter(|(key, file_key)| {
            matches!(options.get(*key), Some(NodeValue::Bytes(_)))
                && matches!(options.get(*file_key), Some(NodeValue::Text(_)))
        })
        .map(|(key, _)| *key)
        .collect()
}

pub(super) fn derive_tls<'a>(
    get: impl Fn(&str) -> &'a NodeValue,
    read_file: &dyn Fn(&str) -> std::io::Result<Vec<u8>>,
) -> SeqResult<DerivedTls> {
    let allow_invalid_certificates = match get("rejectUnauthorized") {
        v if v.is_unset() => false,
        NodeValue::Bool(reject) => !reject,
        _ => return Err(bad("rejectUnauthorized", "not a boolean")),
    };
    // The Node driver keeps tlsInsecure and applies it as rejectUnauthorized = false and
    // checkServerIdentity = no-op; anything else is ambiguous.
    match get("tlsInsecure") {
        NodeValue::Bool(true) if !allow_invalid_certificates => {
            return Err(refused(
                "tlsInsecure",
                "it disagrees with rejectUnauthorized",
            ))
        }
        NodeValue::Bool(_) => {}
        v if v.is_unset() => {}
        _ => return Err(bad("tlsInsecure", "not a boolean")),
    }
    // The Node driver turns tlsAllowInvalidHostnames into a checkServerIdentity that
    // accepts any name. Without certificate checks there is no name check either (in Node
    // and in the Rust driver); with them, the Rust driver cannot skip the name alone.
    if !get("checkServerIdentity").is_unset() && !allow_invalid_certificates {
        return Err(refused(
            "tlsAllowInvalidHostnames",
            "host names unchecked while certificates are checked, which the Rust driver cannot do",
        ));
    }
    let file = |key: &str| -> SeqResult<Option<TlsFile>> {
        match get(key) {
            v if v.is_unset() => Ok(None),
            NodeValue::Text(path) => {
                let contents = read_file(path)
                    .map_err(|e| refused(key, &format!("its file cannot be read: {}", e.kind())))?;
                Ok(Some(TlsFile::new(path.clone(), Some(contents))))
            }
            _ => Err(bad(key, "not a path")),
        }
    };
    let ca_file = file("tlsCAFile")?;
    let cert_key_file = file("tlsCertificateKeyFile")?;
    // The Node client presents a version 1 certificate; the derived client could not, and
    // would fail only when it opens, as calls that time out: refused here, saying why.
    if let Some(contents) = cert_key_file.as_ref().and_then(|f| f.contents.as_deref()) {
        check_client_certificate(contents, "tlsCertificateKeyFile")?;
    }
    // The Node driver reads the files into `ca`, `cert` and `key` when it connects (only
    // where those are unset) and keeps that copy; anything else in them was given in
    // memory and cannot be carried to the Rust driver, which reads files. The reader
    // leaves out the driver's copies it recognises ([`FILE_COPIES`]), so that a connection
    // derived after a file was rotated in place follows the file; what is left must hold
    // what the file holds now.
    for (key, file_key) in FILE_COPIES {
        let value = get(key);
        if value.is_unset() {
            continue;
        }
        let from = if file_key == "tlsCAFile" {
            &ca_file
        } else {
            &cert_key_file
        };
        let now = from.as_ref().and_then(|f| f.contents.as_deref());
        let same = now.is_some_and(|now| match value {
            NodeValue::Bytes(b) => b[..] == now[..],
            NodeValue::Text(s) => s.as_bytes() == now,
            _ => false,
        });
        if same {
            continue;
        }
        let why = if from.is_some() {
            format!(
                "it holds other bytes than its file {file_key} and was never seen equal to \
                 it: a certificate or key given in memory, which only a file can replace, \
                 or the Node driver's copy of a file rewritten before this MongoClient's \
                 first counter call: make the MongoClient again"
            )
        } else {
            "certificates or keys given in memory; name their files with tlsCAFile or \
             tlsCertificateKeyFile"
                .to_string()
        };
        return Err(refused(key, &why));
    }
    Ok(DerivedTls {
        allow_invalid_certificates,
        ca_file,
        cert_key_file,
    })
}
