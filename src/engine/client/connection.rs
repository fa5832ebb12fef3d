//! Which server a call talks to: a connection string given by the user, or a
//! connection derived from a Node driver client's effective options (see
//! [`crate::engine::client::node_options`]), with the full configuration as the key that decides
//! which calls share a driver client.

use crate::engine::panic_safety::lock;
use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};
use std::time::Duration;

use mongodb::options::{ClientOptions, ConnectionString, Tls};

use crate::engine::client::call_bound::take_socket_timeout;
use crate::engine::client::client_certificate::check_client_certificate;
use crate::engine::client::node_options::{
    derive, file_copy_candidates, DerivedConnection, NodeOptions, NodeValue, TlsFile, FILE_COPIES,
};
use crate::engine::error::{SeqError, SeqResult};
use crate::engine::text::redact::{redact_connection_strings, uri_secrets, without_user_info};

/// Where a target's servers and settings come from.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum TargetSource {
    /// A connection string given by the user (`connect(uri)`, the `uri` option), without
    /// its `socketTimeoutMS` (which the driver refuses: [`ConnectionTarget::from_uri`]),
    /// with the contents of the TLS files it names as they were read ([`uri_tls_files`]):
    /// `tlsCAFile`, then `tlsCertificateKeyFile` (boxed: targets are moved on every call).
    Uri(String, Box<[Option<TlsFile>; 2]>),
    /// The full effective configuration of a Node driver client.
    Derived(Box<DerivedConnection>),
}

/// The connection string with its passwords masked: a target's debug form must not carry
/// them into a panic message or log.
impl std::fmt::Debug for TargetSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TargetSource::Uri(uri, files) => f
                .debug_tuple("Uri")
                .field(&redact_connection_strings(uri))
                .field(files)
                .finish(),
            TargetSource::Derived(derived) => f.debug_tuple("Derived").field(derived).finish(),
        }
    }
}

/// Everything needed to open a driver client; equal targets share one client, so the
/// target holds the whole configuration (servers, credentials, TLS file paths, write
/// concern…): two users never share a client. The contents of the TLS files, as read when
/// the target was made, are carried beside it but are not part of its identity: the
/// driver reads the files itself, by path, when a client opens, and one target has one
/// client at a time, replaced when a later reading of its files finds other contents
/// ([`ConnectionTarget::supersedes`]), so that a certificate rotated in place is presented
/// without a second client (a second state of the same counters) beside the first.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ConnectionTarget {
    /// The servers and settings.
    pub source: TargetSource,
    /// Overrides the string's `serverSelectionTimeoutMS`.
    pub server_selection_timeout_ms: Option<u64>,
    /// Overrides the string's `connectTimeoutMS`.
    pub connect_timeout_ms: Option<u64>,
    /// `socketTimeoutMS` above 0 (0 is none): a call waits at most this long when it is
    /// shorter than the server selection timeout ([`crate::engine::client::call_bound`]).
    /// Part of the target's identity, as the other timeouts are: a client's calls have one
    /// bound.
    pub socket_timeout_ms: Option<u64>,
}

impl ConnectionTarget {
    /// A target for a connection string given by the user. Its `socketTimeoutMS`, which
    /// the Rust driver refuses, is taken out of the string and kept as the target's own
    /// (the bound of its calls); a client certificate the driver could not present
    /// (X.509 version 1) is `UNSUPPORTED_CLIENT`.
    pub fn from_uri(uri: &str) -> SeqResult<Self> {
        let (uri, socket_timeout_ms) = take_socket_timeout(uri)?;
        let parsed = parse(&uri)?;
        let files = uri_tls_files(&parsed);
        let target = ConnectionTarget {
            source: TargetSource::Uri(uri, Box::new(files)),
            server_selection_timeout_ms: None,
            connect_timeout_ms: None,
            socket_timeout_ms,
        };
        if let Some(contents) = target.client_certificate() {
            check_client_certificate(contents, "tlsCertificateKeyFile")?;
        }
        Ok(target)
    }

    /// The strings to keep out of messages about this target.
    pub fn secrets(&self) -> Vec<String> {
        match &self.source {
            TargetSource::Uri(uri, _) => uri_secrets(uri),
            TargetSource::Derived(derived) => derived.secrets(),
        }
    }

    /// The TLS files this target names, with their contents as read when it was made:
    /// the CA file, then the client's certificate and key.
    fn tls_files(&self) -> [Option<&TlsFile>; 2] {
        match &self.source {
            TargetSource::Uri(_, files) => {
                let [ca, cert_key] = &**files;
                [ca.as_ref(), cert_key.as_ref()]
            }
            TargetSource::Derived(derived) => match &derived.tls {
                Some(tls) => [tls.ca_file.as_ref(), tls.cert_key_file.as_ref()],
                None => [None, None],
            },
        }
    }

    fn tls_files_mut(&mut self) -> [Option<&mut TlsFile>; 2] {
        match &mut self.source {
            TargetSource::Uri(_, files) => {
                let [ca, cert_key] = &mut **files;
                [ca.as_mut(), cert_key.as_mut()]
            }
            TargetSource::Derived(derived) => match &mut derived.tls {
                Some(tls) => [tls.ca_file.as_mut(), tls.cert_key_file.as_mut()],
                None => [None, None],
            },
        }
    }

    /// Whether the client opened for `opened` (an equal target, with its files as read
    /// when the client opened) must be replaced to serve this one: one of this target's
    /// files was read after that and holds other contents (a certificate rotated in
    /// place). A target made before the client opened never replaces it: the client
    /// presents what the files held then, which is at least as recent.
    pub fn supersedes(&self, opened: &ConnectionTarget) -> bool {
        let earlier = opened.tls_files();
        self.tls_files().into_iter().flatten().any(|file| {
            earlier
                .into_iter()
                .flatten()
                .any(|before| before.path == file.path && file.supersedes(before))
        })
    }

    /// Whether this target and `other` (an equal target) were made from the same contents
    /// of their TLS files.
    pub fn same_tls_contents(&self, other: &ConnectionTarget) -> bool {
        self.tls_files()
            .into_iter()
            .zip(other.tls_files())
            .all(|pair| match pair {
                (Some(a), Some(b)) => a.same_contents(b),
                (None, None) => true,
                _ => false,
            })
    }

    /// This target with its TLS files read again, for a client about to open (the driver
    /// reads them then).
    pub fn with_tls_files_read_now(&self) -> ConnectionTarget {
        let mut now = self.clone();
        for file in now.tls_files_mut().into_iter().flatten() {
            let contents = read_tls_file(file.path.as_ref()).ok();
            *file = TlsFile::new(file.path.clone(), contents);
        }
        now
    }

    /// The contents of the client certificate file (`tlsCertificateKeyFile`) as read, if
    /// it names one that could be read.
    pub fn client_certificate(&self) -> Option<&[u8]> {
        self.tls_files()[1].and_then(|file| file.contents.as_deref())
    }

    /// The socket timeout, when set above 0.
    pub fn socket_timeout(&self) -> Option<Duration> {
        self.socket_timeout_ms.map(Duration::from_millis)
    }

    /// The server selection timeout, when overridden.
    pub fn server_selection_timeout(&self) -> Option<Duration> {
        self.server_selection_timeout_ms.map(Duration::from_millis)
    }

    /// The connect timeout, when overridden.
    pub fn connect_timeout(&self) -> Option<Duration> {
        self.connect_timeout_ms.map(Duration::from_millis)
    }

    /// The driver's options for this target (resolving `mongodb+srv` names); the
    /// timeouts are applied by the caller.
    pub async fn client_options(&self) -> mongodb::error::Result<ClientOptions> {
        match &self.source {
            TargetSource::Uri(uri, _) => ClientOptions::parse(uri).await,
            TargetSource::Derived(derived) => derived.client_options().await,
        }
    }
}

/// Longest connection string accepted, in bytes.
pub const MAX_URI_BYTES: usize = 64 * 1024;

/// Shapes the driver's parser does not survive or that are never valid, refused first:
/// an overlong string, and a `%` not followed by two hexadecimal digits (the driver's
/// own check slices the user information by bytes and panics inside a multi-byte
/// character after such a `%`).
fn check_uri_shape(uri: &str) -> SeqResult<()> {
    if uri.len() > MAX_URI_BYTES {
        return Err(SeqError::invalid_argument(format!(
            "connection string is {} bytes long; at most {MAX_URI_BYTES} are accepted",
            uri.len()
        )));
    }
    let bytes = uri.as_bytes();
    let bad_escape = bytes.iter().enumerate().any(|(at, b)| {
        *b == b'%'
            && !(bytes.get(at + 1).is_some_and(u8::is_ascii_hexdigit)
                && bytes.get(at + 2).is_some_and(u8::is_ascii_hexdigit))
    });
    if bad_escape {
        return Err(SeqError::invalid_argument(
            "invalid MongoDB connection string: a '%' must start an escape of two \
             hexadecimal digits (percent-encode a literal '%' in a user name or password)",
        ));
    }
    Ok(())
}

/// Parses a connection string after [`check_uri_shape`]. Errors never hold the user
/// information: when the string has one, the driver's message is taken from the same
/// string with `user:password` in its place, and a string that parses that way is reported
/// as a user name or password that needs escaping.
pub fn parse(uri: &str) -> SeqResult<ConnectionString> {
    check_uri_shape(uri)?;
    let message = |e: mongodb::error::Error| match &*e.kind {
        mongodb::error::ErrorKind::InvalidArgument { message, .. } => message.clone(),
        _ => e.to_string(),
    };
    ConnectionString::parse(uri).map_err(|e| {
        let detail = match without_user_info(uri) {
            None => message(e),
            Some(masked) => match ConnectionString::parse(&masked) {
                Err(e) => message(e),
                Ok(_) => "the user name or password cannot be read: percent-encode the \
                          characters : / ? # [ ] @ and % in them"
                    .to_string(),
            },
        };
        SeqError::invalid_argument(format!("invalid MongoDB connection string: {detail}"))
            .redacted(&uri_secrets(uri))
    })
}

/// The TLS files a parsed connection string names (`tlsCAFile`, `tlsCertificateKeyFile`)
/// with their contents, so that a file rewritten in place (a rotated certificate) replaces
/// the client opened before, as it does for a derived connection. A file that cannot be
/// read has no contents: the driver reports it when the client opens.
fn uri_tls_files(parsed: &ConnectionString) -> [Option<TlsFile>; 2] {
    let Some(Tls::Enabled(options)) = &parsed.tls else {
        return [None, None];
    };
    [&options.ca_file_path, &options.cert_key_file_path].map(|path| {
        path.as_ref().map(|path| {
            TlsFile::new(
                path.to_string_lossy().into_owned(),
                read_tls_file(path).ok(),
            )
        })
    })
}

/// The options of `options` among `ca`, `cert` and `key` ([`file_copy_candidates`]) whose
/// bytes equal what their TLS file holds now: the copy the Node driver reads into them
/// when it connects (or the same bytes given in memory, which present the same
/// certificate). The reader remembers these values as the driver's copies, and leaves
/// them out of the derivation from then on, also after the file is rotated in place.
pub fn tls_file_copies(options: &NodeOptions) -> Vec<&'static str> {
    let candidates = file_copy_candidates(options);
    FILE_COPIES
        .iter()
        .filter(|(key, _)| candidates.contains(key))
        .filter(|(key, file_key)| {
            let (Some(NodeValue::Bytes(bytes)), Some(NodeValue::Text(path))) =
                (options.get(*key), options.get(*file_key))
            else {
                return false;
            };
            read_tls_file(path.as_ref()).is_ok_and(|now| now[..] == bytes[..])
        })
        .map(|(key, _)| *key)
        .collect()
}

/// Derivations already made: a process sees few distinct clients, and reading the
/// options again on every call would cost more than the rest of a cached call.
static DERIVED: LazyLock<Mutex<HashMap<NodeOptions, SeqResult<ConnectionTarget>>>> =
    LazyLock::new(Default::default);
/// Distinct clients remembered at most (a bound against unbounded growth).
const MAX_DERIVED: usize = 256;

/// Whether `options` name a TLS file: their derivation holds the file's contents, which
/// the options (a path) do not determine.
fn names_tls_files(options: &NodeOptions) -> bool {
    ["tlsCAFile", "tlsCertificateKeyFile"]
        .iter()
        .any(|key| options.get(*key).is_some_and(|v| !v.is_unset()))
}

/// [`derive_from_node_client`], remembered per distinct set of options. Options naming a
/// TLS file are derived afresh: the same path may hold another certificate now (a rotated
/// key, another user's file), and the connection must be the one its contents stand for.
pub fn derive_from_node_client_cached(options: &NodeOptions) -> SeqResult<ConnectionTarget> {
    if names_tls_files(options) {
        return derive_from_node_client(options);
    }
    let mut derived = lock(&DERIVED);
    if let Some(known) = derived.get(options) {
        return known.clone();
    }
    let result = derive_from_node_client(options);
    if derived.len() >= MAX_DERIVED {
        derived.clear();
    }
    derived.insert(options.clone(), result.clone());
    result
}

/// Largest TLS file read (a CA bundle is a few hundred kilobytes at most).
const MAX_TLS_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// A TLS file's contents, refused past [`MAX_TLS_FILE_BYTES`] (a device or a wrong path)
/// and unless it is a regular file: opening a named pipe or a terminal (`/dev/stdin`)
/// would block the JavaScript thread until someone writes to it.
fn read_tls_file(path: &std::path::Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    if !std::fs::metadata(path)?.is_file() {
        return Err(std::io::ErrorKind::InvalidInput.into());
    }
    let file = std::fs::File::open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::ErrorKind::InvalidInput.into());
    }
    let mut contents = Vec::new();
    file.take(MAX_TLS_FILE_BYTES + 1)
        .read_to_end(&mut contents)?;
    if contents.len() as u64 > MAX_TLS_FILE_BYTES {
        return Err(std::io::ErrorKind::InvalidData.into());
    }
    Ok(contents)
}

/// The connection a Node driver client's effective options stand for, or
/// `UNSUPPORTED_CLIENT` naming an option that cannot be carried over.
pub fn derive_from_node_client(options: &NodeOptions) -> SeqResult<ConnectionTarget> {
    let derived = derive(options, &|path| read_tls_file(path.as_ref()))?;
    let millis = |key: &str| {
        options
            .get(key)
            .and_then(|v| match v {
                crate::engine::client::node_options::NodeValue::Number(bits) => {
                    Some(f64::from_bits(*bits))
                }
                _ => None,
            })
            .filter(|n| n.is_finite() && *n >= 0.0)
            .map(|n| n as u64)
    };
    let server_selection_timeout_ms = millis("serverSelectionTimeoutMS");
    let selection = server_selection_timeout_ms
        .unwrap_or(crate::engine::client::call_bound::DEFAULT_CALL_TIMEOUT.as_millis() as u64);
    Ok(ConnectionTarget {
        server_selection_timeout_ms,
        connect_timeout_ms: millis("connectTimeoutMS"),
        // Kept only where it bounds calls (the Node driver's default, 0, is no socket
        // timeout; one of at least the server selection timeout changes nothing): two
        // clients that differ in a setting without effect still share one client, and
        // with it the state that fences management writes against cached blocks.
        socket_timeout_ms: millis("socketTimeoutMS").filter(|ms| *ms > 0 && *ms < selection),
        source: TargetSource::Derived(Box::new(derived)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::engine::client::node_options::NodeValue;
    use crate::engine::error::ErrorCode;

    fn options(host: &str) -> NodeOptions {
        let mut h = std::collections::BTreeMap::new();
        h.insert("host".to_string(), NodeValue::Text(host.into()));
        h.insert("port".to_string(), NodeValue::number(27017.0));
        let mut o = NodeOptions::new();
        o.insert("hosts".into(), NodeValue::List(vec![NodeValue::Map(h)]));
        o.insert("serverSelectionTimeoutMS".into(), NodeValue::number(1500.0));
        o
    }

    #[test]
    fn tls_files_are_read_whole_up_to_the_bound_and_refused_past_it() {
        let dir = std::env::temp_dir().join(format!("mongodb-sequence-{}-tls", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bound = MAX_TLS_FILE_BYTES as usize;
        for (name, size, whole) in [
            ("small.pem", 100 * 1024, true),
            ("large.pem", 3 << 20, true),
            ("bound.pem", bound, true),
            ("past.pem", bound + 1, false),
        ] {
            let path = dir.join(name);
            std::fs::write(&path, vec![b'x'; size]).unwrap();
            match read_tls_file(&path) {
                Ok(contents) => assert!(
                    whole && contents.len() == size,
                    "{name}: {}",
                    contents.len()
                ),
                Err(e) => assert!(
                    !whole && e.kind() == std::io::ErrorKind::InvalidData,
                    "{name}: {e}"
                ),
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_string_of_exactly_the_bound_is_not_refused_for_its_length() {
        let prefix = "mongodb://h/?replicaSet=";
        let exact = format!("{prefix}{}", "r".repeat(MAX_URI_BYTES - prefix.len()));
        assert_eq!(exact.len(), MAX_URI_BYTES);
        assert!(ConnectionTarget::from_uri(&exact).is_ok());
    }

    #[test]
    fn the_driver_s_own_words_for_an_invalid_option() {
        let e = ConnectionTarget::from_uri("mongodb://h/?maxPoolSize=lots").unwrap_err();
        assert!(
            e.message.starts_with("invalid MongoDB connection string: "),
            "{}",
            e.message
        );
        assert!(
            !e.message.contains("An invalid argument was provided"),
            "{}",
            e.message
        );
    }

    #[test]
    fn a_target_keeps_its_password_out_of_messages_whichever_way_it_was_made() {
        let uri = "mongodb://app:hunter2@h1:27017/shop";
        let secrets = ConnectionTarget::from_uri(uri).unwrap().secrets();
        assert!(secrets.iter().any(|s| s == "hunter2"), "{secrets:?}");
        assert!(secrets.iter().any(|s| s == uri), "the string itself");
        let mut o = options("h1");
        let mut credentials = std::collections::BTreeMap::new();
        credentials.insert("username".to_string(), NodeValue::Text("app".into()));
        credentials.insert("password".to_string(), NodeValue::Text("s3cr3t-pw".into()));
        credentials.insert("mechanism".to_string(), NodeValue::Text("DEFAULT".into()));
        o.insert("credentials".into(), NodeValue::Map(credentials));
        let derived = derive_from_node_client(&o).unwrap().secrets();
        assert_eq!(derived, vec!["s3cr3t-pw".to_string()]);
        assert!(derive_from_node_client(&options("h1"))
            .unwrap()
            .secrets()
            .is_empty());
    }

    #[test]
    fn derived_targets_carry_timeouts_and_differ_by_configuration() {
        let a = derive_from_node_client(&options("h1")).unwrap();
        assert_eq!(a.server_selection_timeout_ms, Some(1500));
        assert_eq!(
            a.server_selection_timeout(),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(a.connect_timeout(), None);
        let mut connect = options("h1");
        connect.insert("connectTimeoutMS".into(), NodeValue::number(2500.0));
        let c = derive_from_node_client(&connect).unwrap();
        assert_eq!(c.connect_timeout(), Some(Duration::from_millis(2500)));
        // A timeout that is not a finite number of milliseconds is not carried over.
        for odd in [f64::INFINITY, -1.0] {
            let mut o = options("h1");
            o.insert("connectTimeoutMS".into(), NodeValue::number(odd));
            assert_eq!(
                derive_from_node_client(&o).unwrap().connect_timeout(),
                None,
                "{odd}"
            );
        }
        assert_eq!(a, derive_from_node_client(&options("h1")).unwrap());
        assert_ne!(a, derive_from_node_client(&options("h2")).unwrap());
        let mut w = options("h1");
        let mut wc = std::collections::BTreeMap::new();
        wc.insert("w".to_string(), NodeValue::Text("majority".into()));
        w.insert("writeConcern".into(), NodeValue::Map(wc));
        assert_ne!(a, derive_from_node_client(&w).unwrap());
    }

    #[test]
    fn socket_timeouts_are_carried_from_either_source_and_tell_targets_apart() {
        let mut o = options("h1");
        // (The fixture's serverSelectionTimeoutMS is 1500.)
        o.insert("socketTimeoutMS".into(), NodeValue::number(1000.0));
        let short = derive_from_node_client(&o).unwrap();
        assert_eq!(short.socket_timeout(), Some(Duration::from_millis(1000)));
        // 0, the Node driver's default, is no socket timeout: the same target as unset.
        o.insert("socketTimeoutMS".into(), NodeValue::number(0.0));
        let none = derive_from_node_client(&o).unwrap();
        assert_eq!(none.socket_timeout(), None);
        assert_eq!(none, derive_from_node_client(&options("h1")).unwrap());
        assert_ne!(short, none, "two bounds, two clients");
        // One at or above the server selection timeout bounds nothing: no second client
        // (such as a usual 45 s beside the default 30 s).
        for ms in [1500.0, 45_000.0] {
            o.insert("socketTimeoutMS".into(), NodeValue::number(ms));
            assert_eq!(derive_from_node_client(&o).unwrap(), none, "{ms}");
        }
        o.insert(
            "serverSelectionTimeoutMS".into(),
            NodeValue::number(60_000.0),
        );
        o.insert("socketTimeoutMS".into(), NodeValue::number(45_000.0));
        assert_eq!(
            derive_from_node_client(&o).unwrap().socket_timeout(),
            Some(Duration::from_millis(45_000))
        );
        // A connection string: taken out before the driver (which refuses it) parses it.
        let uri = ConnectionTarget::from_uri("mongodb://h1/?socketTimeoutMS=1500&w=1").unwrap();
        assert_eq!(uri.socket_timeout_ms, Some(1500));
        let TargetSource::Uri(left, _) = &uri.source else {
            panic!("a uri target")
        };
        assert_eq!(left, "mongodb://h1/?w=1");
        let plain = ConnectionTarget::from_uri("mongodb://h1/?w=1").unwrap();
        assert_eq!(plain.socket_timeout_ms, None);
        assert_ne!(uri, plain, "two bounds, two clients");
        let zero = ConnectionTarget::from_uri("mongodb://h1/?socketTimeoutMS=0&w=1").unwrap();
        assert_eq!(zero, plain);
        let e = ConnectionTarget::from_uri("mongodb://u:pw9@h1/?socketTimeoutMS=x").unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        assert!(!e.message.contains("pw9"), "{}", e.message);
    }

    /// A PEM file holding one certificate of the given X.509 version (a DER skeleton: the
    /// check reads no more than its version).
    fn certificate_pem(version: u8) -> Vec<u8> {
        // SEQUENCE { SEQUENCE { [0] { INTEGER version-1 }?, INTEGER 1 } }
        let der: Vec<u8> = if version == 1 {
            vec![0x30, 0x05, 0x30, 0x03, 0x02, 0x01, 0x01]
        } else {
            vec![
                0x30,
                0x0a,
                0x30,
                0x08,
                0xa0,
                0x03,
                0x02,
                0x01,
                version - 1,
                0x02,
                0x01,
                0x01,
            ]
        };
        const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut b64 = String::new();
        for chunk in der.chunks(3) {
            let n = chunk.iter().fold(0u32, |n, &b| (n << 8) | b as u32) << (8 * (3 - chunk.len()));
            for i in 0..4 {
                b64.push(if i <= chunk.len() {
                    A[(n >> (18 - 6 * i)) as usize & 63] as char
                } else {
                    '='
                });
            }
        }
        format!(
            "-----BEGIN CERTIFICATE-----\n{b64}\n-----END CERTIFICATE-----\n\
             -----BEGIN PRIVATE KEY-----\nS3CR3TKEY\n-----END PRIVATE KEY-----\n"
        )
        .into_bytes()
    }

    #[test]
    fn a_version_1_client_certificate_is_refused_from_either_source() {
        let dir = scratch("x509v1");
        let v1 = dir.join("v1.pem");
        let v3 = dir.join("v3.pem");
        std::fs::write(&v1, certificate_pem(1)).unwrap();
        std::fs::write(&v3, certificate_pem(3)).unwrap();
        let uri = |path: &std::path::Path| {
            format!(
                "mongodb://h/?tls=true&tlsCertificateKeyFile={}",
                path.to_str().unwrap()
            )
        };
        let derived = |path: &std::path::Path| {
            derive_from_node_client(&with_tls_file("tlsCertificateKeyFile", path))
        };
        for e in [
            ConnectionTarget::from_uri(&uri(&v1)).unwrap_err(),
            derived(&v1).unwrap_err(),
            derive_from_node_client_cached(&with_tls_file("tlsCertificateKeyFile", &v1))
                .unwrap_err(),
        ] {
            assert_eq!(e.code, ErrorCode::UnsupportedClient);
            assert!(e.message.contains("X.509 version 1"), "{}", e.message);
            assert!(!e.message.contains("S3CR3TKEY"), "{}", e.message);
        }
        assert!(ConnectionTarget::from_uri(&uri(&v3)).is_ok());
        assert!(derived(&v3).is_ok());
        // A CA file of version 1 is a trust anchor, which the driver accepts.
        assert!(derive_from_node_client(&with_tls_file("tlsCAFile", &v1)).is_ok());
        // Rotated to a version 1 certificate after the target was made: the reading for
        // the client about to open finds it.
        let target = ConnectionTarget::from_uri(&uri(&v3)).unwrap();
        std::fs::copy(&v1, &v3).unwrap();
        let now = target.with_tls_files_read_now();
        assert!(now
            .client_certificate()
            .is_some_and(|c| c == certificate_pem(1)));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn remembered_derivations_match_fresh_ones() {
        let ok = options("h");
        assert_eq!(
            derive_from_node_client_cached(&ok),
            derive_from_node_client(&ok)
        );
        assert_eq!(
            derive_from_node_client_cached(&ok),
            derive_from_node_client(&ok)
        );
        let mut bad = options("h");
        bad.insert("proxyHost".into(), NodeValue::Text("p".into()));
        let e = derive_from_node_client_cached(&bad).unwrap_err();
        assert_eq!(e.code, ErrorCode::UnsupportedClient);
        assert!(e.message.contains("'proxyHost'"), "{}", e.message);
        assert!(derive_from_node_client_cached(&bad).is_err());
    }

    /// A scratch directory of this test process.
    fn scratch(name: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("mongodb-sequence-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn with_tls_file(key: &str, path: &std::path::Path) -> NodeOptions {
        let mut o = options("h");
        o.insert("tls".into(), NodeValue::Bool(true));
        o.insert(key.into(), NodeValue::Text(path.to_str().unwrap().into()));
        o
    }

    #[test]
    fn remembered_derivations_follow_the_tls_files_contents() {
        let dir = scratch("rotated");
        for key in ["tlsCertificateKeyFile", "tlsCAFile"] {
            let path = dir.join(format!("{key}.pem"));
            std::fs::write(&path, b"alice's certificate and key").unwrap();
            let o = with_tls_file(key, &path);
            let alice = derive_from_node_client_cached(&o).unwrap();
            // The same path rewritten (a rotated file): read again, never remembered; the
            // later reading replaces a client opened with the earlier one.
            std::fs::write(&path, b"bob's certificate and key").unwrap();
            let bob = derive_from_node_client_cached(&o).unwrap();
            assert!(bob.supersedes(&alice) && !alice.supersedes(&bob), "{key}");
            assert!(!bob.same_tls_contents(&alice), "{key}");
            assert!(
                bob.same_tls_contents(&derive_from_node_client(&o).unwrap()),
                "{key}"
            );
            // A file that is gone is refused, not served from memory.
            std::fs::remove_file(&path).unwrap();
            let e = derive_from_node_client_cached(&o).unwrap_err();
            assert_eq!(e.code, ErrorCode::UnsupportedClient, "{key}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn uri_targets_follow_the_tls_files_contents() {
        let dir = scratch("uri-rotated");
        for key in ["tlsCertificateKeyFile", "tlsCAFile"] {
            let path = dir.join(format!("{key}.pem"));
            std::fs::write(&path, b"alice's certificate and key").unwrap();
            let uri = format!(
                "mongodb://h:27017/?tls=true&{key}={}",
                path.to_str().unwrap()
            );
            let alice = ConnectionTarget::from_uri(&uri).unwrap();
            let again = ConnectionTarget::from_uri(&uri).unwrap();
            assert_eq!(alice, again, "{key}");
            assert!(
                again.same_tls_contents(&alice) && !again.supersedes(&alice),
                "{key}"
            );
            // Rewritten in place: the same connection (one client), whose reading of the
            // new contents replaces a client opened with the old ones, never the reverse.
            std::fs::write(&path, b"bob's certificate and key").unwrap();
            let bob = ConnectionTarget::from_uri(&uri).unwrap();
            assert_eq!(alice, bob, "{key}");
            assert!(bob.supersedes(&alice) && !alice.supersedes(&bob), "{key}");
            assert!(!bob.same_tls_contents(&alice), "{key}");
            // Read again for a client about to open: later than both.
            let now = alice.with_tls_files_read_now();
            assert!(
                now.same_tls_contents(&bob) && now.supersedes(&alice),
                "{key}"
            );
            assert!(!bob.supersedes(&now), "{key}");
            // The contents are carried, never in its Debug output.
            let shown = format!("{bob:?}");
            assert!(!shown.contains("bob's"), "{shown}");
            // A file that cannot be read is left to the driver, which reports it on
            // opening; it replaces nothing (a rotation may remove the file first).
            std::fs::remove_file(&path).unwrap();
            let gone = ConnectionTarget::from_uri(&uri).unwrap();
            assert_eq!(gone, alice, "{key}");
            assert!(
                !gone.supersedes(&bob) && !gone.same_tls_contents(&bob),
                "{key}"
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn tls_file_copies_are_the_bytes_equal_to_their_file_now() {
        let dir = scratch("copies");
        let ca = dir.join("ca.pem");
        let me = dir.join("me.pem");
        std::fs::write(&ca, b"the CA").unwrap();
        std::fs::write(&me, b"my certificate and key").unwrap();
        let mut o = with_tls_file("tlsCAFile", &ca);
        o.insert(
            "tlsCertificateKeyFile".into(),
            NodeValue::Text(me.to_str().unwrap().into()),
        );
        o.insert("ca".into(), NodeValue::Bytes(b"the CA".to_vec()));
        o.insert(
            "cert".into(),
            NodeValue::Bytes(b"my certificate and key".to_vec()),
        );
        o.insert("key".into(), NodeValue::Bytes(b"bob's key".to_vec()));
        assert_eq!(tls_file_copies(&o), vec!["ca", "cert"]);
        // Rotated: the bytes the driver read before no longer equal the file.
        std::fs::write(&ca, b"the renewed CA").unwrap();
        assert_eq!(tls_file_copies(&o), vec!["cert"]);
        std::fs::remove_file(&me).unwrap();
        assert!(tls_file_copies(&o).is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn tls_paths_that_are_not_regular_files_are_refused_without_blocking() {
        let dir = scratch("fifo");
        let fifo = dir.join("ca.pem");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        for path in [fifo.clone(), dir.clone()] {
            let o = with_tls_file("tlsCAFile", &path);
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || tx.send(derive_from_node_client(&o).map(|_| ())));
            let result = rx
                .recv_timeout(Duration::from_secs(5))
                .unwrap_or_else(|_| panic!("reading {} blocked", path.display()));
            let e = result.unwrap_err();
            assert_eq!(e.code, ErrorCode::UnsupportedClient);
            assert!(e.message.contains("'tlsCAFile'"), "{}", e.message);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bad_uri_is_invalid_argument_without_password() {
        let e = ConnectionTarget::from_uri("mongodb://u:topsecret@").unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        assert!(!e.message.contains("topsecret"), "{}", e.message);
        assert!(ConnectionTarget::from_uri("http://x").is_err());
    }

    #[test]
    fn unescaped_passwords_are_never_echoed() {
        for (uri, secret) in [
            ("mongodb://user:pa55?abc@127.0.0.1:27017/", "pa55"),
            ("mongodb://user:pa55/abc@h/", "pa55"),
            ("mongodb://us?er:Qa55abc@h/", "Qa55abc"),
            ("mongodb://user:Qa55[abc@h/?appName=x", "Qa55"),
        ] {
            let e = ConnectionTarget::from_uri(uri).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidArgument, "{uri}");
            assert!(!e.message.contains(secret), "{uri}: {}", e.message);
        }
        // Problems elsewhere in the string are still explained.
        let e = ConnectionTarget::from_uri("mongodb://u:pw@h:99999/").unwrap_err();
        assert!(e.message.contains("99999"), "{}", e.message);
    }

    const SPECIALS: &str = " !\"#$&'()*+,/:;<=>?@[\\]^`{|}~\u{e9}\u{1F600}";

    fn specials(
        range: std::ops::Range<usize>,
    ) -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::strategy::Strategy;
        let chars: Vec<char> = SPECIALS.chars().collect();
        proptest::collection::vec(proptest::sample::select(chars), range)
            .prop_map(|v| v.into_iter().collect())
    }

    proptest::proptest! {
        /// Passwords of random special characters around two marker words, written into
        /// the string unescaped: no parse error holds either marker.
        #[test]
        fn parse_errors_never_hold_password_pieces(
            a in "[A-Z][A-Z0-9]{3,7}",
            b in "[A-Z][A-Z0-9]{3,7}",
            middle in specials(1..3),
            tail in specials(0..4),
            host in proptest::sample::select(vec!["h", "127.0.0.1:27017", "h:99999", "h1,h2"]),
            query in proptest::sample::select(vec![
                "", "?appName=x", "?w=majority", "?bogus", "?socketTimeoutMS=100", "?socketTimeoutMS=x",
            ]),
        ) {
            let password = format!("{a}{middle}{b}{tail}");
            let uri = format!("mongodb://app:{password}@{host}/db{query}");
            if let Err(e) = ConnectionTarget::from_uri(&uri) {
                proptest::prop_assert!(!e.message.contains(&a), "{uri}: {}", e.message);
                proptest::prop_assert!(!e.message.contains(&b), "{uri}: {}", e.message);
            }
        }
    }

    #[test]
    fn bad_escapes_are_refused_before_the_driver_sees_them() {
        for uri in [
            "mongodb://u:%a\u{e9}@h/",
            "mongodb://u%\u{e9}:p@h/",
            "mongodb://u:p%@h/",
            "mongodb://u:p%4@h/",
            "mongodb://h/?appName=%zz",
        ] {
            let e = ConnectionTarget::from_uri(uri).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidArgument, "{uri}");
            assert!(!e.message.contains('\u{e9}'), "{}", e.message);
        }
        assert!(ConnectionTarget::from_uri("mongodb://u:p%25%C3%A9@h/").is_ok());
        let long = format!("mongodb://h/?appName={}", "a".repeat(MAX_URI_BYTES));
        let e = ConnectionTarget::from_uri(&long).unwrap_err();
        assert!(e.message.contains("bytes long"), "{}", e.message);
        // Long strings short of the bound are the driver's to judge, not refused for length.
        let name = "r".repeat(60_000);
        let under = format!("mongodb://h/?replicaSet={name}");
        assert!(ConnectionTarget::from_uri(&under).is_ok());
    }

    #[test]
    fn a_target_s_debug_form_masks_the_password() {
        let target = ConnectionTarget::from_uri("mongodb://app:s3cr3t-pw@h:27017/shop").unwrap();
        let shown = format!("{target:?}");
        assert!(!shown.contains("s3cr3t-pw"), "{shown}");
        assert!(shown.contains("h:27017"), "{shown}");
    }
}
