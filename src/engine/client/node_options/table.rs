//! What each key of a Node client's options means to a derived connection.

use std::collections::HashMap;

use super::*;

/// What a key of a Node client's options means to a derived connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Read and carried to the same Rust driver setting.
    Mapped,
    /// A spelling in `MongoClientOptions` that the Node driver folds into the effective
    /// option named here (which is mapped or refused); never present in `client.options`
    /// itself, and refused if a driver ever leaves it there set.
    FoldedInto(&'static str),
    /// Cannot change which server, which identity, what is written or how durably: the
    /// reason says why.
    Irrelevant(&'static str),
    /// Not carried to the Rust driver: refused unless it has the driver's default.
    Refused(Unless, &'static str),
}

/// The driver default of a refused option (the only value accepted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unless {
    /// `undefined` or `null`.
    Unset,
    /// Unset or `false`.
    False,
}

impl Unless {
    pub(super) fn holds(self, value: &NodeValue) -> bool {
        match self {
            Unless::Unset => value.is_unset(),
            Unless::False => value.is_unset() || *value == NodeValue::Bool(false),
        }
    }
}

const MONITORING: &str = "how often and how the topology is monitored; server selection still \
                          follows the mapped read preference and replica set";
const TIMING: &str = "a time limit on the Node client's own sockets or operations; it changes \
                      no server, identity or write (serverSelectionTimeoutMS, \
                      connectTimeoutMS and socketTimeoutMS are mapped)";
const BSON_JS: &str = "how the Node driver encodes and decodes documents in JavaScript; this \
                       package encodes its own commands and returns its own values";
const LOGGING: &str = "the Node client's own logging and command monitoring";
const METADATA: &str = "the Node driver's handshake metadata and internal state";
const COMPRESSION: &str = "compression of the bytes on the wire, negotiated with the server; \
                           commands and results are the same (this build sends uncompressed)";
const CREDENTIALS: &str = "credentials";
const SOCKET_PATH: &str = "the address the Node client reaches is its own choice of route; \
                           the derived client cannot follow it";
const TLS_NODE: &str = "a Node TLS setting the Rust driver has no equivalent for";

/// Every option key the Node driver's `MongoClientOptions` (driver 6 and 7) and its
/// effective `MongoOptions` can carry, with how a derived connection treats it.
pub const OPTION_TABLE: &[(&str, Rule)] = &[
    // Where: the servers and how they are found.
    ("hosts", Rule::Mapped),
    ("srvHost", Rule::Mapped),
    ("srvServiceName", Rule::Mapped),
    ("srvMaxHosts", Rule::Mapped),
    ("replicaSet", Rule::Mapped),
    ("directConnection", Rule::Mapped),
    ("loadBalanced", Rule::Mapped),
    ("srvAllowedHostsSuffix", Rule::Refused(Unless::Unset, "SRV results checked by a rule the Rust driver cannot apply")),
    ("srvHostValidator", Rule::Refused(Unless::Unset, "SRV results checked by a rule the Rust driver cannot apply")),
    ("proxyHost", Rule::Refused(Unless::Unset, "a SOCKS5 proxy (this build connects directly)")),
    ("proxyPort", Rule::Refused(Unless::Unset, "a SOCKS5 proxy (this build connects directly)")),
    ("proxyUsername", Rule::Refused(Unless::Unset, "a SOCKS5 proxy (this build connects directly)")),
    ("proxyPassword", Rule::Refused(Unless::Unset, "a SOCKS5 proxy (this build connects directly)")),
    ("lookup", Rule::Refused(Unless::Unset, SOCKET_PATH)),
    ("family", Rule::Refused(Unless::Unset, SOCKET_PATH)),
    ("hints", Rule::Refused(Unless::Unset, SOCKET_PATH)),
    ("localAddress", Rule::Refused(Unless::Unset, SOCKET_PATH)),
    ("localPort", Rule::Refused(Unless::Unset, SOCKET_PATH)),
    ("runtimeAdapters", Rule::Refused(Unless::Unset, "replaces the Node driver's networking or DNS")),
    ("autoSelectFamily", Rule::Irrelevant("tries the same host's IPv4 and IPv6 addresses in parallel; same server")),
    ("autoSelectFamilyAttemptTimeout", Rule::Irrelevant("see autoSelectFamily")),
    // Who: credentials, read from the resolved `credentials`.
    ("credentials", Rule::Mapped),
    ("auth", Rule::FoldedInto(CREDENTIALS)),
    ("authMechanism", Rule::FoldedInto(CREDENTIALS)),
    ("authMechanismProperties", Rule::FoldedInto(CREDENTIALS)),
    ("authSource", Rule::FoldedInto(CREDENTIALS)),
    ("userSpecifiedAuthSource", Rule::Mapped),
    ("userSpecifiedReplicaSet", Rule::Irrelevant("bookkeeping of whether replicaSet came from the user (replicaSet itself is mapped)")),
    ("dbName", Rule::Irrelevant("each call names its database (the Db's); the default authentication database is already in credentials")),
    // TLS.
    ("tls", Rule::Mapped),
    ("ssl", Rule::FoldedInto("tls")),
    ("rejectUnauthorized", Rule::Mapped),
    ("tlsAllowInvalidCertificates", Rule::FoldedInto("rejectUnauthorized")),
    ("checkServerIdentity", Rule::Mapped),
    ("tlsAllowInvalidHostnames", Rule::FoldedInto("checkServerIdentity")),
    ("tlsInsecure", Rule::Mapped),
    ("tlsCAFile", Rule::Mapped),
    ("ca", Rule::Mapped),
    ("tlsCertificateKeyFile", Rule::Mapped),
    ("cert", Rule::Mapped),
    ("key", Rule::Mapped),
    ("tlsCertificateKeyFilePassword", Rule::FoldedInto("passphrase")),
    ("passphrase", Rule::Refused(Unless::Unset, "an encrypted client key (this build reads unencrypted keys only)")),
    ("tlsCRLFile", Rule::Refused(Unless::Unset, "certificate revocation lists (the Rust driver checks none)")),
    ("crl", Rule::Refused(Unless::Unset, "certificate revocation lists (the Rust driver checks none)")),
    ("pfx", Rule::Refused(Unless::Unset, "a PKCS#12 bundle in memory (use tlsCertificateKeyFile)")),
    ("secureContext", Rule::Refused(Unless::Unset, TLS_NODE)),
    ("ALPNProtocols", Rule::Refused(Unless::Unset, TLS_NODE)),
    ("allowPartialTrustChain", Rule::Refused(Unless::False, TLS_NODE)),
    ("ciphers", Rule::Refused(Unless::Unset, TLS_NODE)),
    ("ecdhCurve", Rule::Refused(Unless::Unset, TLS_NODE)),
    ("minDHSize", Rule::Refused(Unless::Unset, TLS_NODE)),
    ("secureProtocol", Rule::Refused(Unless::Unset, TLS_NODE)),
    ("servername", Rule::Refused(Unless::Unset, TLS_NODE)),
    ("session", Rule::Refused(Unless::Unset, TLS_NODE)),
    // What is written and read, and how durably.
    ("writeConcern", Rule::Mapped),
    ("w", Rule::FoldedInto("writeConcern")),
    ("wtimeoutMS", Rule::FoldedInto("writeConcern")),
    ("journal", Rule::FoldedInto("writeConcern")),
    ("readConcern", Rule::Mapped),
    ("readConcernLevel", Rule::FoldedInto("readConcern")),
    ("readPreference", Rule::Mapped),
    ("readPreferenceTags", Rule::FoldedInto("readPreference")),
    ("maxStalenessSeconds", Rule::FoldedInto("readPreference")),
    ("retryWrites", Rule::Mapped),
    ("retryReads", Rule::Mapped),
    ("serverApi", Rule::Mapped),
    ("appName", Rule::Mapped),
    ("autoEncryption", Rule::Refused(Unless::Unset, "client-side field level encryption (the derived client would write unencrypted)")),
    ("autoEncrypter", Rule::Refused(Unless::Unset, "client-side field level encryption (the derived client would write unencrypted)")),
    ("encrypter", Rule::Refused(Unless::Unset, "client-side field level encryption (the derived client would write unencrypted)")),
    ("timeoutMS", Rule::Refused(Unless::Unset, "a client-wide operation time limit the derived client does not apply")),
    // Timing.
    ("serverSelectionTimeoutMS", Rule::Mapped),
    ("connectTimeoutMS", Rule::Mapped),
    ("socketTimeoutMS", Rule::Mapped),
    ("waitQueueTimeoutMS", Rule::Irrelevant(TIMING)),
    ("noDelay", Rule::Irrelevant("Nagle's algorithm on the Node client's sockets: latency only")),
    ("keepAlive", Rule::Irrelevant("TCP keep-alive of the Node client's sockets: liveness only")),
    ("keepAliveInitialDelay", Rule::Irrelevant("TCP keep-alive of the Node client's sockets: liveness only")),
    // Pool and monitoring.
    ("maxPoolSize", Rule::Mapped),
    ("minPoolSize", Rule::Mapped),
    ("maxConnecting", Rule::Mapped),
    ("maxIdleTimeMS", Rule::Mapped),
    ("heartbeatFrequencyMS", Rule::Irrelevant(MONITORING)),
    ("minHeartbeatFrequencyMS", Rule::Irrelevant(MONITORING)),
    ("serverMonitoringMode", Rule::Irrelevant(MONITORING)),
    ("localThresholdMS", Rule::Irrelevant("the latency window among servers the read preference already allows")),
    ("maxAdaptiveRetries", Rule::Irrelevant("pacing of retries when the server reports overload; a retried command is the same command")),
    ("enableOverloadRetargeting", Rule::Irrelevant("pacing of retries when the server reports overload; a retried command is the same command")),
    // Compression.
    ("compressors", Rule::Irrelevant(COMPRESSION)),
    ("zlibCompressionLevel", Rule::Irrelevant(COMPRESSION)),
    // BSON in JavaScript.
    ("raw", Rule::Irrelevant(BSON_JS)),
    ("promoteLongs", Rule::Irrelevant(BSON_JS)),
    ("promoteValues", Rule::Irrelevant(BSON_JS)),
    ("promoteBuffers", Rule::Irrelevant(BSON_JS)),
    ("bsonRegExp", Rule::Irrelevant(BSON_JS)),
    ("useBigInt64", Rule::Irrelevant(BSON_JS)),
    ("fieldsAsRaw", Rule::Irrelevant(BSON_JS)),
    ("serializeFunctions", Rule::Irrelevant("how the Node driver writes functions; a gapless insert reads it from the `Db` itself and refuses a function it would store")),
    ("ignoreUndefined", Rule::Irrelevant("how the Node driver writes `undefined`; a gapless insert reads it from the `Db` itself, as the driver's insert does")),
    ("checkKeys", Rule::Irrelevant(BSON_JS)),
    ("enableUtf8Validation", Rule::Irrelevant(BSON_JS)),
    ("pkFactory", Rule::Irrelevant("ids of new documents, not the connection; a gapless insert asks the `Db` for them, as the driver's insert does")),
    ("forceServerObjectId", Rule::Irrelevant("ids of new documents, not the connection; a gapless insert asks the `Db` for them, as the driver's insert does")),
    // Logging and metadata.
    ("monitorCommands", Rule::Irrelevant(LOGGING)),
    ("mongodbLogPath", Rule::Irrelevant(LOGGING)),
    ("mongodbLogComponentSeverities", Rule::Irrelevant(LOGGING)),
    ("mongodbLogMaxDocumentLength", Rule::Irrelevant(LOGGING)),
    ("mongoLoggerOptions", Rule::Irrelevant(LOGGING)),
    ("driverInfo", Rule::Irrelevant(METADATA)),
    ("additionalDriverInfo", Rule::Irrelevant(METADATA)),
    ("metadata", Rule::Irrelevant(METADATA)),
    ("extendedMetadata", Rule::Irrelevant(METADATA)),
    ("runtime", Rule::Irrelevant(METADATA)),
    ("toJSON", Rule::Irrelevant("how JSON.stringify shows the options object (driver 7.9.1 on: credentials redacted)")),
];

/// How `key` is treated, or `None` for a key the table does not know.
pub fn rule(key: &str) -> Option<Rule> {
    static BY_KEY: std::sync::LazyLock<HashMap<&'static str, Rule>> =
        std::sync::LazyLock::new(|| OPTION_TABLE.iter().copied().collect());
    BY_KEY.get(key).copied()
}
