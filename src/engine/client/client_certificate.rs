//! The X.509 version of a client certificate, read from its PEM file.
//!
//! The Rust driver's TLS stack (rustls, which checks the certificate with webpki) accepts
//! only version 3 certificates as the client's own: handed a version 1 certificate (no
//! extensions, which `openssl x509 -req` makes by default), it fails when the client opens
//! and every call then ends in a timeout that names no certificate. The Node driver
//! (OpenSSL) presents such a certificate, so a Node client with one derives a connection
//! that could never connect. It is refused up front instead, with a message that says why.
//!
//! Only what decides that is read: the first `CERTIFICATE` block of the file (the one the
//! driver presents as the client's), its DER header, and the version field of the
//! `tbsCertificate`. A file this reader cannot understand is left to the driver, which
//! reports it when the client opens. Messages name the option and the version, never the
//! file's contents (the same file holds the private key).

use crate::engine::error::{ErrorCode, SeqError, SeqResult};

/// `UNSUPPORTED_CLIENT` when the first certificate of `pem` (the contents of the file
/// named by `option`) is an X.509 certificate of another version than 3; `Ok` otherwise,
/// also when no certificate can be read from it (the driver's error then says so).
pub fn check_client_certificate(pem: &[u8], option: &str) -> SeqResult<()> {
    match first_certificate(pem).as_deref().and_then(x509_version) {
        Some(version) if version != 3 => Err(SeqError::new(
            ErrorCode::UnsupportedClient,
            format!(
                "the client certificate in '{option}' is an X.509 version {version} \
                 certificate, which the Rust TLS stack used here (rustls) cannot present \
                 (it accepts version 3 only, while the Node driver's OpenSSL also accepts \
                 older ones): issue a version 3 certificate (one with extensions, such as \
                 extendedKeyUsage=clientAuth) and name that file instead"
            ),
        )),
        _ => Ok(()),
    }
}

/// The DER bytes of the first `CERTIFICATE` block of a PEM text, or `None`.
fn first_certificate(pem: &[u8]) -> Option<Vec<u8>> {
    const BEGIN: &[u8] = b"-----BEGIN CERTIFICATE-----";
    const END: &[u8] = b"-----END CERTIFICATE-----";
    let start = find(pem, BEGIN)? + BEGIN.len();
    let length = find(&pem[start..], END)?;
    base64_decode(&pem[start..start + length])
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Standard base64 (RFC 4648) with white space ignored and `=` padding ending it; `None`
/// on any other character.
fn base64_decode(text: &[u8]) -> Option<Vec<u8>> {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut bits, mut held) = (0u32, 0u32);
    for &c in text {
        if c.is_ascii_whitespace() {
            continue;
        }
        if c == b'=' {
            break;
        }
        bits = (bits << 6) | value(c)?;
        held += 6;
        if held >= 8 {
            held -= 8;
            out.push((bits >> held) as u8);
            bits &= (1 << held) - 1;
        }
    }
    Some(out)
}

/// One DER element at the start of `data`: its tag, its contents and what follows it.
/// Definite lengths only (DER has no other), of at most four length bytes.
fn element(data: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = data.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (length, rest) = if first < 0x80 {
        (first as usize, rest)
    } else {
        let count = (first & 0x7f) as usize;
        if count == 0 || count > 4 || rest.len() < count {
            return None;
        }
        let length = rest[..count]
            .iter()
            .fold(0usize, |n, &b| (n << 8) | b as usize);
        (length, &rest[count..])
    };
    if rest.len() < length {
        return None;
    }
    Some((tag, &rest[..length], &rest[length..]))
}

const SEQUENCE: u8 = 0x30;
const INTEGER: u8 = 0x02;
/// `[0] EXPLICIT`, constructed, context-specific: the version in a `tbsCertificate`.
const VERSION_TAG: u8 = 0xa0;

/// The X.509 version (1, 2, 3…) of a DER certificate, or `None` when it is not one.
///
/// `Certificate ::= SEQUENCE { tbsCertificate SEQUENCE { version [0] EXPLICIT INTEGER
/// DEFAULT v1, serialNumber INTEGER, ... }, ... }`: a `tbsCertificate` that starts with
/// its serial number (an INTEGER) has the default, version 1 (encoded as 0).
fn x509_version(der: &[u8]) -> Option<u64> {
    let (SEQUENCE, certificate, _) = element(der)? else {
        return None;
    };
    let (SEQUENCE, tbs, _) = element(certificate)? else {
        return None;
    };
    match element(tbs)? {
        (VERSION_TAG, explicit, _) => {
            let (INTEGER, number, _) = element(explicit)? else {
                return None;
            };
            if number.is_empty() || number.len() > 8 || number[0] & 0x80 != 0 {
                return None;
            }
            let encoded = number.iter().fold(0u64, |n, &b| (n << 8) | b as u64);
            encoded.checked_add(1)
        }
        (INTEGER, _, _) => Some(1),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A DER element of `tag` around `contents` (short or long length form).
    fn der(tag: u8, contents: &[u8]) -> Vec<u8> {
        let mut out = vec![tag];
        match contents.len() {
            n if n < 0x80 => out.push(n as u8),
            n if n < 0x100 => out.extend([0x81, n as u8]),
            n => out.extend([0x82, (n >> 8) as u8, n as u8]),
        }
        out.extend(contents);
        out
    }

    /// A certificate shaped as X.509 with an optional explicit version field, a serial
    /// number, and filler for the rest of the `tbsCertificate` (long enough for the long
    /// length form), then a signature algorithm and value.
    fn certificate(version: Option<&[u8]>) -> Vec<u8> {
        let mut tbs = Vec::new();
        if let Some(v) = version {
            tbs.extend(der(VERSION_TAG, &der(INTEGER, v)));
        }
        tbs.extend(der(INTEGER, &[0x5e, 0x1a, 0x08]));
        tbs.extend(der(SEQUENCE, &[0x05; 200]));
        let mut body = der(SEQUENCE, &tbs);
        body.extend(der(SEQUENCE, &[0x06, 0x01, 0x2a]));
        body.extend(der(0x03, &[0x00, 0x01, 0x02]));
        der(SEQUENCE, &body)
    }

    fn base64(bytes: &[u8]) -> String {
        const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let n = chunk.iter().fold(0u32, |n, &b| (n << 8) | b as u32) << (8 * (3 - chunk.len()));
            for i in 0..4 {
                if i <= chunk.len() {
                    out.push(A[(n >> (18 - 6 * i)) as usize & 63] as char);
                } else {
                    out.push('=');
                }
            }
        }
        out
    }

    /// A PEM file as `tlsCertificateKeyFile` holds it: the certificate in lines of 64,
    /// then a private key.
    fn pem(der: &[u8]) -> Vec<u8> {
        let encoded = base64(der);
        let lines: Vec<&str> = encoded
            .as_bytes()
            .chunks(64)
            .map(|l| std::str::from_utf8(l).unwrap())
            .collect();
        format!(
            "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n\
             -----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\n\
             -----END PRIVATE KEY-----\n",
            lines.join("\n")
        )
        .into_bytes()
    }

    #[test]
    fn every_base64_character_is_read() {
        // `+` and `/`, the two that are not letters or digits, and padding.
        assert_eq!(base64_decode(b"+/8="), Some(vec![0xfb, 0xff]));
        assert_eq!(base64_decode(b"/+A="), Some(vec![0xff, 0xe0]));
        assert_eq!(base64_decode(b"Zm9v\r\nYg=="), Some(b"foob".to_vec()));
        assert_eq!(base64_decode(b"Zm9v-"), None);
    }

    #[test]
    fn der_lengths_are_read_in_every_form_der_allows_and_no_other() {
        // Short form, and long forms of one to four bytes, big-endian.
        assert_eq!(
            element(&[0x04, 0x01, 0xaa, 0xbb]),
            Some((0x04, &[0xaa][..], &[0xbb][..]))
        );
        let long = [&[0x04, 0x82, 0x01, 0x00][..], &[0x11; 256]].concat();
        assert_eq!(
            element(&long).map(|(_, c, r)| (c.len(), r.len())),
            Some((256, 0))
        );
        let four = [
            &[0x04, 0x84, 0x00, 0x00, 0x00, 0x02][..],
            &[0x11, 0x22, 0x33],
        ]
        .concat();
        assert_eq!(element(&four), Some((0x04, &[0x11, 0x22][..], &[0x33][..])));
        // Exactly the length bytes and empty contents.
        assert_eq!(element(&[0x04, 0x81, 0x00]), Some((0x04, &[][..], &[][..])));
        // 0x80 is BER's indefinite length, which DER has not; five length bytes are more
        // than any certificate needs.
        let indefinite = [&[0x30, 0x80][..], &[0x04; 130], &[0x00, 0x00]].concat();
        assert_eq!(element(&indefinite), None);
        assert_eq!(element(&[0x04, 0x85, 0, 0, 0, 0, 1, 0xaa]), None);
        // Fewer length bytes, or fewer contents, than announced.
        assert_eq!(element(&[0x04, 0x82, 0x01]), None);
        assert_eq!(element(&[0x04, 0x02, 0xaa]), None);
    }

    #[test]
    fn a_version_number_of_several_bytes_is_read_big_endian() {
        assert_eq!(x509_version(&certificate(Some(&[0x01, 0x00]))), Some(257));
        assert_eq!(
            x509_version(&certificate(Some(&[0, 0, 0, 0, 0, 0, 0, 2]))),
            Some(3),
            "eight bytes still fit"
        );
        assert_eq!(
            x509_version(&certificate(Some(&[0, 0, 0, 0, 0, 0, 0, 0, 2]))),
            None
        );
    }

    #[test]
    fn versions_are_read_from_the_tbs_certificate() {
        assert_eq!(x509_version(&certificate(None)), Some(1), "no [0]: v1");
        assert_eq!(
            x509_version(&certificate(Some(&[0]))),
            Some(1),
            "explicit 0"
        );
        assert_eq!(x509_version(&certificate(Some(&[1]))), Some(2));
        assert_eq!(x509_version(&certificate(Some(&[2]))), Some(3));
    }

    #[test]
    fn base64_round_trips_whatever_the_padding() {
        for n in 0..7 {
            let bytes: Vec<u8> = (0..n).map(|i| (i * 37 + 200) as u8).collect();
            assert_eq!(base64_decode(base64(&bytes).as_bytes()), Some(bytes));
        }
        assert_eq!(base64_decode(b"QUJD\r\n REVG"), Some(b"ABCDEF".to_vec()));
        assert_eq!(base64_decode(b"QU*D"), None);
    }

    #[test]
    fn a_version_1_certificate_is_refused_naming_the_version_never_the_key() {
        for version in [None, Some(&[0u8][..])] {
            let e = check_client_certificate(&pem(&certificate(version)), "tlsCertificateKeyFile")
                .unwrap_err();
            assert_eq!(e.code, ErrorCode::UnsupportedClient);
            assert!(
                e.message.contains("'tlsCertificateKeyFile'"),
                "{}",
                e.message
            );
            assert!(e.message.contains("X.509 version 1"), "{}", e.message);
            assert!(e.message.contains("version 3"), "{}", e.message);
            assert!(!e.message.contains("MIGH"), "{}", e.message);
        }
        let e = check_client_certificate(&pem(&certificate(Some(&[1]))), "k").unwrap_err();
        assert!(e.message.contains("X.509 version 2"), "{}", e.message);
    }

    #[test]
    fn a_version_3_certificate_passes() {
        assert!(check_client_certificate(&pem(&certificate(Some(&[2]))), "k").is_ok());
    }

    #[test]
    fn only_the_first_certificate_is_the_client_s() {
        // A v3 leaf followed by a v1 CA (a chain): the leaf is what the driver presents.
        let mut chain = pem(&certificate(Some(&[2])));
        chain.extend(pem(&certificate(None)));
        assert!(check_client_certificate(&chain, "k").is_ok());
        let mut chain = pem(&certificate(None));
        chain.extend(pem(&certificate(Some(&[2]))));
        assert!(check_client_certificate(&chain, "k").is_err());
    }

    #[test]
    fn what_cannot_be_read_is_left_to_the_driver() {
        let v1 = certificate(None);
        let garbage: [&[u8]; 6] = [
            b"",
            b"not a certificate at all",
            b"-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n",
            b"-----BEGIN CERTIFICATE-----\nQUJD\n",
            b"-----BEGIN PRIVATE KEY-----\nQUJD\n-----END PRIVATE KEY-----\n",
            b"-----BEGIN CERTIFICATE-----\nMAA=\n-----END CERTIFICATE-----\n",
        ];
        for contents in garbage {
            assert!(check_client_certificate(contents, "k").is_ok());
        }
        // Truncated anywhere: no version is read, so nothing is claimed about it.
        for cut in 0..v1.len() {
            assert_eq!(x509_version(&v1[..cut]), None, "cut at {cut}");
        }
        // Not a SEQUENCE, or a first element that is neither a version nor a serial.
        assert_eq!(
            x509_version(&der(0x31, &der(SEQUENCE, &[0x02, 0x01, 0x01]))),
            None
        );
        assert_eq!(
            x509_version(&der(SEQUENCE, &der(SEQUENCE, &[0x04, 0x00]))),
            None
        );
        // A negative, empty or oversized version is no version.
        for bad in [&[0x80u8][..], &[], &[1; 9]] {
            assert_eq!(x509_version(&certificate(Some(bad))), None, "{bad:?}");
        }
        // Lengths of more than four bytes, or none, are refused before any slicing.
        assert_eq!(element(&[0x30, 0x85, 1, 1, 1, 1, 1]), None);
        assert_eq!(element(&[0x30, 0x80]), None);
    }
}
