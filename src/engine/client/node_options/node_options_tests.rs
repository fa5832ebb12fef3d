use std::path::PathBuf;
use std::time::Duration;

use mongodb::options::{
    Acknowledgment, AuthMechanism, ReadConcern, ReadPreference, SelectionCriteria, ServerAddress,
    Tls,
};

use super::*;
use crate::engine::error::ErrorCode;

fn map(pairs: &[(&str, NodeValue)]) -> NodeValue {
    NodeValue::Map(
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
    )
}

fn text(s: &str) -> NodeValue {
    NodeValue::Text(s.into())
}

/// A Node client's options as the driver resolves `mongodb://h:27017`.
fn base() -> NodeOptions {
    let mut o = NodeOptions::new();
    o.insert(
        "hosts".into(),
        NodeValue::List(vec![map(&[
            ("host", text("h")),
            ("port", NodeValue::number(27017.0)),
        ])]),
    );
    o.insert("srvServiceName".into(), text("mongodb"));
    o.insert("srvMaxHosts".into(), NodeValue::number(0.0));
    o.insert("maxPoolSize".into(), NodeValue::number(100.0));
    o.insert("retryWrites".into(), NodeValue::Bool(true));
    o.insert("metadata".into(), NodeValue::Other);
    o
}

fn no_files(_: &str) -> std::io::Result<Vec<u8>> {
    Err(std::io::ErrorKind::NotFound.into())
}

fn refusal(o: &NodeOptions) -> String {
    let e = derive(o, &no_files).unwrap_err();
    assert_eq!(e.code, ErrorCode::UnsupportedClient);
    e.message
}

#[test]
fn every_key_is_classified_once() {
    let mut seen = std::collections::HashSet::new();
    for (key, _) in OPTION_TABLE {
        assert!(seen.insert(*key), "{key} twice");
    }
}

#[test]
fn unknown_keys_holding_the_drivers_default_are_not_settings() {
    let mut defaults = NodeOptions::new();
    defaults.insert("futureHook".into(), NodeValue::Function);
    defaults.insert("futureFlag".into(), NodeValue::Bool(false));
    defaults.insert("futureLimit".into(), NodeValue::number(10.0));
    // Known keys never reach the comparison: their rules decide.
    defaults.insert("proxyHost".into(), text("proxy"));
    let mut o = base();
    o.insert("futureHook".into(), NodeValue::Function);
    o.insert("futureFlag".into(), NodeValue::Bool(false));
    o.insert("futureLimit".into(), NodeValue::number(10.0));
    o.insert("futureUnset".into(), NodeValue::Undefined);
    assert_eq!(
        unknown_keys(&o).collect::<Vec<_>>(),
        ["futureFlag", "futureHook", "futureLimit"]
    );
    let kept = without_driver_defaults(o.clone(), &defaults);
    let mut expected = o.clone();
    for key in ["futureHook", "futureFlag", "futureLimit"] {
        expected.remove(key);
    }
    assert_eq!(kept, expected);
    assert!(derive(&kept, &no_files).is_ok());
    // A value the user set differs from the default: still refused, named.
    for (key, set) in [
        ("futureFlag", NodeValue::Bool(true)),
        ("futureLimit", NodeValue::number(11.0)),
        ("futureHook", NodeValue::Other),
    ] {
        let mut changed = o.clone();
        changed.insert(key.into(), set);
        let kept = without_driver_defaults(changed, &defaults);
        assert!(refusal(&kept).contains(&format!("'{key}'")), "{key}");
    }
    // No client of the driver could be made: every set unknown key is refused.
    assert!(
        refusal(&without_driver_defaults(o.clone(), &NodeOptions::new())).contains("'futureFlag'")
    );
    // Below the top, functions (and values not read) all look alike: never a default.
    let hooks = |f: NodeValue| NodeValue::Map([("onEvent".to_string(), f)].into());
    let mut nested = NodeOptions::new();
    nested.insert("futureHooks".into(), hooks(NodeValue::Function));
    nested.insert("futureBig".into(), NodeValue::Other);
    let mut o2 = base();
    o2.insert("futureHooks".into(), hooks(NodeValue::Function));
    o2.insert("futureBig".into(), NodeValue::Other);
    let kept = without_driver_defaults(o2, &nested);
    assert!(kept.contains_key("futureHooks") && kept.contains_key("futureBig"));
    // A known key equal to some "default" keeps its own rule.
    let mut proxied = base();
    proxied.insert("proxyHost".into(), text("proxy"));
    assert!(refusal(&without_driver_defaults(proxied, &defaults)).contains("'proxyHost'"));
}

#[test]
fn unknown_and_refused_keys_are_named() {
    let mut o = base();
    o.insert("someFutureOption".into(), NodeValue::Bool(true));
    assert!(refusal(&o).contains("'someFutureOption'"));
    let mut o = base();
    o.insert("someFutureOption".into(), NodeValue::Undefined);
    assert!(derive(&o, &no_files).is_ok());
    for key in [
        "proxyHost",
        "lookup",
        "family",
        "localAddress",
        "servername",
        "autoEncryption",
        "crl",
        "passphrase",
    ] {
        let mut o = base();
        o.insert(key.into(), NodeValue::Function);
        assert!(refusal(&o).contains(&format!("'{key}'")), "{key}");
        o.insert(key.into(), NodeValue::Undefined);
        assert!(derive(&o, &no_files).is_ok(), "{key}");
    }
}

#[test]
fn tls_insecure_agrees_with_reject_unauthorized_or_is_refused() {
    let mut o = base();
    o.insert("tls".into(), NodeValue::Bool(true));
    // As the Node driver keeps it: tlsInsecure true with rejectUnauthorized false.
    o.insert("tlsInsecure".into(), NodeValue::Bool(true));
    o.insert("rejectUnauthorized".into(), NodeValue::Bool(false));
    let d = derive(&o, &no_files).unwrap();
    assert!(d.tls.unwrap().allow_invalid_certificates);
    // tlsInsecure false says nothing against either.
    o.insert("tlsInsecure".into(), NodeValue::Bool(false));
    assert!(derive(&o, &no_files).is_ok());
    o.insert("rejectUnauthorized".into(), NodeValue::Bool(true));
    assert!(derive(&o, &no_files).is_ok());
    // tlsInsecure true while certificates are checked: ambiguous, refused.
    o.insert("tlsInsecure".into(), NodeValue::Bool(true));
    assert!(refusal(&o).contains("tlsInsecure"));
    o.insert("tlsInsecure".into(), NodeValue::Undefined);
    assert!(derive(&o, &no_files).is_ok());
    o.insert("tlsInsecure".into(), text("yes"));
    assert!(derive(&o, &no_files)
        .unwrap_err()
        .message
        .contains("tlsInsecure"));
}

#[test]
fn a_file_copy_held_as_text_is_compared_as_the_file_s_bytes() {
    let mut o = base();
    o.insert("tls".into(), NodeValue::Bool(true));
    o.insert("tlsCAFile".into(), text("/ca.pem"));
    let read = |_: &str| Ok(b"-----BEGIN CERTIFICATE-----".to_vec());
    o.insert("ca".into(), text("-----BEGIN CERTIFICATE-----"));
    assert!(derive(&o, &read).is_ok(), "the driver's copy, as a string");
    o.insert("ca".into(), text("-----BEGIN OTHER-----"));
    assert!(derive(&o, &read).unwrap_err().message.contains("'ca'"));
}

#[test]
fn tls_checks_are_carried_or_refused() {
    let mut o = base();
    o.insert("tls".into(), NodeValue::Bool(true));
    let d = derive(&o, &no_files).unwrap();
    assert!(!d.tls.as_ref().unwrap().allow_invalid_certificates);
    o.insert("rejectUnauthorized".into(), NodeValue::Bool(false));
    assert!(
        derive(&o, &no_files)
            .unwrap()
            .tls
            .unwrap()
            .allow_invalid_certificates
    );
    // Host names unchecked while certificates are checked: refused.
    o.insert("rejectUnauthorized".into(), NodeValue::Undefined);
    o.insert("checkServerIdentity".into(), NodeValue::Function);
    assert!(refusal(&o).contains("tlsAllowInvalidHostnames"));
    // Files: their contents are carried beside the connection; in-memory
    // certificates refused.
    let mut o = base();
    o.insert("tls".into(), NodeValue::Bool(true));
    o.insert("tlsCAFile".into(), text("/ca.pem"));
    let read = |p: &str| Ok(p.as_bytes().to_vec());
    let d = derive(&o, &read).unwrap();
    let ca = |d: &DerivedConnection| d.tls.as_ref().unwrap().ca_file.clone().unwrap();
    assert_eq!(ca(&d).contents.as_deref(), Some(&b"/ca.pem"[..]));
    // The same path with other contents (the file rotated in place) is the same
    // connection, whose later reading replaces the earlier one; equal contents never do.
    let other = |_: &str| Ok(b"other".to_vec());
    let rotated = derive(&o, &other).unwrap();
    assert_eq!(d, rotated);
    assert!(ca(&rotated).supersedes(&ca(&d)) && !ca(&d).supersedes(&ca(&rotated)));
    let again = derive(&o, &read).unwrap();
    assert!(ca(&again).same_contents(&ca(&d)) && !ca(&again).supersedes(&ca(&d)));
    o.insert("ca".into(), NodeValue::Bytes(b"/ca.pem".to_vec()));
    assert!(derive(&o, &read).is_ok());
    o.insert("ca".into(), NodeValue::Bytes(b"other".to_vec()));
    let e = derive(&o, &read).unwrap_err().message;
    assert!(e.contains("'ca'") && e.contains("tlsCAFile"), "{e}");
    assert!(e.contains("make the MongoClient again"), "{e}");
    assert!(refusal(&o).contains("'tlsCAFile'"));
    o.remove("tlsCAFile");
    let e = refusal(&o);
    assert!(e.contains("'ca'") && e.contains("given in memory"), "{e}");
    // Key and certificate: compared with tlsCertificateKeyFile, `cert` first.
    let mut o = base();
    o.insert("tls".into(), NodeValue::Bool(true));
    o.insert("tlsCertificateKeyFile".into(), text("/me.pem"));
    o.insert("key".into(), NodeValue::Bytes(b"/me.pem".to_vec()));
    o.insert("cert".into(), NodeValue::Bytes(b"/me.pem".to_vec()));
    assert!(derive(&o, &read).is_ok());
    o.insert("key".into(), NodeValue::Bytes(b"bob".to_vec()));
    assert!(derive(&o, &read).unwrap_err().message.contains("'key'"));
    o.insert("cert".into(), NodeValue::Bytes(b"bob".to_vec()));
    assert!(derive(&o, &read).unwrap_err().message.contains("'cert'"));
}

#[test]
fn file_copy_candidates_are_bytes_beside_a_named_file_with_tls_on() {
    let mut o = base();
    o.insert("ca".into(), NodeValue::Bytes(b"x".to_vec()));
    o.insert("tlsCAFile".into(), text("/ca.pem"));
    o.insert("key".into(), NodeValue::Bytes(b"x".to_vec()));
    o.insert("cert".into(), text("x"));
    o.insert("tlsCertificateKeyFile".into(), text("/me.pem"));
    assert!(
        file_copy_candidates(&o).is_empty(),
        "TLS off: nothing is read"
    );
    o.insert("tls".into(), NodeValue::Bool(true));
    // A string is never the driver's copy (it reads files into Buffers).
    assert_eq!(file_copy_candidates(&o), vec!["ca", "key"]);
    o.remove("tlsCAFile");
    assert_eq!(file_copy_candidates(&o), vec!["key"]);
}

#[test]
fn mechanisms_follow_the_node_client() {
    let cred = |m: &str| {
        let mut o = base();
        o.insert(
            "credentials".into(),
            map(&[
                ("username", text("u")),
                ("password", text("p")),
                ("source", text("admin")),
                ("mechanism", text(m)),
                ("mechanismProperties", map(&[])),
            ]),
        );
        o
    };
    assert_eq!(
        derive(&cred("DEFAULT"), &no_files)
            .unwrap()
            .credential
            .unwrap()
            .mechanism,
        None
    );
    assert_eq!(
        derive(&cred("PLAIN"), &no_files)
            .unwrap()
            .credential
            .unwrap()
            .mechanism
            .as_deref(),
        Some("PLAIN")
    );
    assert!(refusal(&cred("MONGODB-AWS")).contains("authMechanism"));
    assert_ne!(
        derive(&cred("PLAIN"), &no_files).unwrap(),
        derive(&cred("DEFAULT"), &no_files).unwrap()
    );
}

#[test]
fn write_concern_and_read_preference_are_mapped() {
    let mut o = base();
    o.insert(
        "writeConcern".into(),
        map(&[("w", text("majority")), ("journal", NodeValue::Bool(true))]),
    );
    o.insert(
        "readPreference".into(),
        map(&[("mode", text("secondaryPreferred"))]),
    );
    let d = derive(&o, &no_files).unwrap();
    let w = d.write_concern.unwrap();
    assert_eq!(
        w.w,
        Some(crate::engine::client::write_concern::WriteAck::Majority)
    );
    assert_eq!(w.journal, Some(true));
    assert_eq!(d.read_preference.unwrap().mode, "secondaryPreferred");
    o.insert("writeConcern".into(), map(&[("w", NodeValue::number(0.0))]));
    assert!(refusal(&o).contains("writeConcern"));
}

#[test]
fn client_options_carry_every_mapped_setting() {
    let mut o = base();
    o.insert("tls".into(), NodeValue::Bool(true));
    o.insert("rejectUnauthorized".into(), NodeValue::Bool(false));
    o.insert("tlsCAFile".into(), text("/ca.pem"));
    o.insert("tlsCertificateKeyFile".into(), text("/me.pem"));
    o.insert(
        "credentials".into(),
        map(&[
            ("username", text("u")),
            ("password", text("p")),
            ("source", text("admin")),
            ("mechanism", text("SCRAM-SHA-256")),
        ]),
    );
    o.insert(
        "writeConcern".into(),
        map(&[
            ("w", NodeValue::number(2.0)),
            ("wtimeoutMS", NodeValue::number(50.0)),
        ]),
    );
    o.insert("readConcern".into(), map(&[("level", text("majority"))]));
    o.insert(
        "readPreference".into(),
        map(&[
            ("mode", text("nearest")),
            ("tags", NodeValue::List(vec![map(&[("dc", text("ny"))])])),
            ("maxStalenessSeconds", NodeValue::number(120.0)),
        ]),
    );
    o.insert("retryWrites".into(), NodeValue::Bool(false));
    o.insert("retryReads".into(), NodeValue::Bool(false));
    o.insert(
        "serverApi".into(),
        map(&[("version", text("1")), ("strict", NodeValue::Bool(true))]),
    );
    o.insert("appName".into(), text("shop"));
    o.insert("replicaSet".into(), text("rs0"));
    o.insert("maxPoolSize".into(), NodeValue::number(3.0));
    o.insert("minPoolSize".into(), NodeValue::number(2.0));
    o.insert("maxConnecting".into(), NodeValue::number(1.0));
    o.insert("maxIdleTimeMS".into(), NodeValue::number(45_000.0));
    let read = |_: &str| Ok(b"pem".to_vec());
    let d = derive(&o, &read).unwrap();
    let options = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(d.client_options())
        .unwrap();
    assert_eq!(
        options.hosts,
        vec![ServerAddress::Tcp {
            host: "h".into(),
            port: Some(27017)
        }]
    );
    let Some(Tls::Enabled(tls)) = &options.tls else {
        panic!("tls off")
    };
    assert_eq!(tls.allow_invalid_certificates, Some(true));
    assert_eq!(tls.ca_file_path, Some(PathBuf::from("/ca.pem")));
    assert_eq!(tls.cert_key_file_path, Some(PathBuf::from("/me.pem")));
    let credential = options.credential.as_ref().unwrap();
    assert_eq!(credential.username.as_deref(), Some("u"));
    assert_eq!(credential.source.as_deref(), Some("admin"));
    assert_eq!(credential.mechanism, Some(AuthMechanism::ScramSha256));
    let wc = options.write_concern.as_ref().unwrap();
    assert_eq!(wc.w, Some(Acknowledgment::Nodes(2)));
    assert_eq!(wc.w_timeout, Some(Duration::from_millis(50)));
    assert_eq!(options.read_concern, Some(ReadConcern::majority()));
    let Some(SelectionCriteria::ReadPreference(ReadPreference::Nearest { options: Some(rp) })) =
        &options.selection_criteria
    else {
        panic!("{:?}", options.selection_criteria)
    };
    assert_eq!(rp.max_staleness, Some(Duration::from_secs(120)));
    assert_eq!(
        rp.tag_sets.as_ref().unwrap()[0]
            .get("dc")
            .map(String::as_str),
        Some("ny")
    );
    assert_eq!(options.retry_writes, Some(false));
    assert_eq!(options.retry_reads, Some(false));
    assert_eq!(options.server_api.as_ref().unwrap().strict, Some(true));
    assert_eq!(options.app_name.as_deref(), Some("shop"));
    assert_eq!(options.repl_set_name.as_deref(), Some("rs0"));
    assert_eq!(options.max_pool_size, Some(3));
    assert_eq!(options.min_pool_size, Some(2));
    assert_eq!(options.max_connecting, Some(1));
    assert_eq!(options.max_idle_time, Some(Duration::from_millis(45_000)));
    // The Node driver's DEFAULT mechanism negotiates, as the Rust driver does without one.
    let mut o = base();
    o.insert(
        "credentials".into(),
        map(&[
            ("username", text("u")),
            ("password", text("p")),
            ("mechanism", text("DEFAULT")),
        ]),
    );
    let d = derive(&o, &no_files).unwrap();
    let options = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(d.client_options())
        .unwrap();
    assert_eq!(options.credential.unwrap().mechanism, None);
    assert_eq!(options.tls, Some(Tls::Disabled));
}

#[test]
fn pool_sizes_are_carried_as_the_node_driver_applies_them() {
    let pool = |pairs: &[(&str, NodeValue)]| {
        let mut o = base();
        for (k, v) in pairs {
            o.insert(k.to_string(), v.clone());
        }
        derive(&o, &no_files).map(|d| d.pool)
    };
    let n = NodeValue::number;
    // The Node driver's defaults: 100, 0, 2 (carried as they are, not the Rust
    // driver's 10).
    assert_eq!(
        pool(&[("minPoolSize", n(0.0)), ("maxConnecting", n(2.0))]).unwrap(),
        DerivedPool {
            max_size: Some(100),
            min_size: Some(0),
            max_connecting: Some(2),
            max_idle_ms: None,
        }
    );
    // maxIdleTimeMS: 0 (the Node driver's default) is no limit; another limit is another client.
    assert_eq!(
        pool(&[("maxIdleTimeMS", n(0.0))]).unwrap().max_idle_ms,
        None
    );
    assert_eq!(
        pool(&[("maxIdleTimeMS", n(30_000.0))]).unwrap().max_idle_ms,
        Some(30_000)
    );
    for bad in [n(-1.0), n(1.5), text("30000")] {
        let mut o = base();
        o.insert("maxIdleTimeMS".into(), bad);
        assert!(refusal(&o).contains("'maxIdleTimeMS'"));
    }
    assert_eq!(
        pool(&[("maxPoolSize", n(0.0))]).unwrap().max_size,
        Some(u32::MAX),
        "0 is no limit in the Node driver"
    );
    assert_ne!(
        derive(&base(), &no_files).unwrap(),
        derive(
            &{
                let mut o = base();
                o.insert("maxPoolSize".into(), n(1.0));
                o
            },
            &no_files
        )
        .unwrap(),
        "another pool size is another client"
    );
    for (key, value) in [
        ("maxPoolSize", n(1.5)),
        ("minPoolSize", n(-1.0)),
        ("maxConnecting", n(0.0)),
        ("maxConnecting", text("2")),
    ] {
        let mut o = base();
        o.insert(key.into(), value);
        assert!(refusal(&o).contains(&format!("'{key}'")), "{key}");
    }
    for (max, min) in [(2.0, 3.0), (0.0, 1.0)] {
        let mut o = base();
        o.insert("maxPoolSize".into(), n(max));
        o.insert("minPoolSize".into(), n(min));
        assert!(refusal(&o).contains("'minPoolSize'"), "{max} {min}");
    }
    // Equal sizes, and no limit with no minimum, are the Node driver's too.
    for (max, min) in [(2.0, 2.0), (0.0, 0.0)] {
        let mut o = base();
        o.insert("maxPoolSize".into(), n(max));
        o.insert("minPoolSize".into(), n(min));
        assert!(derive(&o, &no_files).is_ok(), "{max} {min}");
    }
}

#[test]
fn srv_names_carry_their_service_name_and_host_limit() {
    let srv = |service: &str, max: f64| {
        let mut o = base();
        o.insert("hosts".into(), NodeValue::List(vec![]));
        o.insert("srvHost".into(), text("cluster0.example.net"));
        o.insert("srvServiceName".into(), text(service));
        o.insert("srvMaxHosts".into(), NodeValue::number(max));
        derive(&o, &no_files).unwrap()
    };
    assert_eq!(
        srv("custom", 2.0).hosts,
        DerivedHosts::Srv {
            host: "cluster0.example.net".into(),
            service_name: "custom".into(),
            max_hosts: 2
        }
    );
    assert_ne!(srv("custom", 0.0), srv("mongodb", 0.0));
    assert_ne!(srv("mongodb", 1.0), srv("mongodb", 0.0));
}

#[test]
fn srv_txt_auth_source_applies_to_the_same_mechanisms_as_in_node() {
    let srv = |mechanism: &str, source: &str, user_specified: bool| {
        let mut o = base();
        o.insert("hosts".into(), NodeValue::List(vec![]));
        o.insert("srvHost".into(), text("cluster0.example.net"));
        o.insert("tls".into(), NodeValue::Bool(true));
        o.insert(
            "userSpecifiedAuthSource".into(),
            NodeValue::Bool(user_specified),
        );
        o.insert(
            "credentials".into(),
            map(&[
                ("username", text("u")),
                ("password", text("p")),
                ("source", text(source)),
                ("mechanism", text(mechanism)),
                ("mechanismProperties", map(&[])),
            ]),
        );
        let c = derive(&o, &no_files).unwrap().credential.unwrap();
        (c.source, c.source_default)
    };
    // The Node driver replaces the source with the TXT record's for SCRAM and PLAIN
    // (named or negotiated): the Rust driver must be left free to do the same.
    for mechanism in ["DEFAULT", "SCRAM-SHA-1", "SCRAM-SHA-256", "PLAIN"] {
        assert_eq!(
            srv(mechanism, "shop", false),
            (None, Some("shop".to_string())),
            "{mechanism}"
        );
        assert_eq!(
            srv(mechanism, "shop", true),
            (Some("shop".to_string()), None),
            "{mechanism}"
        );
    }
    // Not for X.509, whose source stays $external in the Node driver.
    assert_eq!(
        srv("MONGODB-X509", "$external", false),
        (Some("$external".to_string()), None)
    );
}

#[test]
fn unreadable_concerns_are_refused_not_dropped() {
    for key in ["writeConcern", "readConcern"] {
        for value in [NodeValue::Other, NodeValue::Function, text("majority")] {
            let mut o = base();
            o.insert(key.into(), value.clone());
            assert!(refusal(&o).contains(&format!("'{key}'")), "{key} {value:?}");
        }
    }
}

#[test]
fn secrets_never_reach_debug_output() {
    let mut o = base();
    o.insert(
        "credentials".into(),
        map(&[
            ("username", text("u")),
            ("password", text("hunter2")),
            ("mechanism", text("DEFAULT")),
        ]),
    );
    let d = derive(&o, &no_files).unwrap();
    assert!(!format!("{d:?}").contains("hunter2"));
    assert_eq!(d.secrets(), vec!["hunter2".to_string()]);
    // Nor the private key of a TLS file (its contents are in the key, not the output).
    o.insert("tls".into(), NodeValue::Bool(true));
    o.insert("tlsCertificateKeyFile".into(), text("/me.pem"));
    let read = |_: &str| Ok(b"-----BEGIN PRIVATE KEY-----\nMIIsecret".to_vec());
    let d = derive(&o, &read).unwrap();
    let shown = format!("{d:?}");
    assert!(
        !shown.contains("MIIsecret") && !shown.contains("77, 73, 73"),
        "{shown}"
    );
    assert!(shown.contains("/me.pem"), "{shown}");
}

#[test]
fn two_readings_that_found_no_file_agree() {
    let path = "/gone.pem".to_string();
    let none = || TlsFile::new(path.clone(), None);
    assert!(none().same_contents(&none()));
    let some = TlsFile::new(path.clone(), Some(b"x".to_vec()));
    assert!(!none().same_contents(&some) && !some.same_contents(&none()));
    assert!(
        !none().supersedes(&some),
        "an unreadable file replaces nothing"
    );
}
