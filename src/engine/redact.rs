//! Keeping passwords out of messages.

/// Replaces every occurrence of each non-empty secret in `text` with `****`.
pub fn redact(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_string();
    // Longest first, so a secret that contains another is removed whole.
    let mut sorted: Vec<&String> = secrets.iter().filter(|s| !s.is_empty()).collect();
    sorted.sort_by_key(|s| std::cmp::Reverse(s.len()));
    for secret in sorted {
        if out.contains(secret.as_str()) {
            out = out.replace(secret.as_str(), "****");
        }
    }
    out
}

/// The secrets in a connection string: the whole string, and the password of its user
/// information both as written and percent-decoded.
pub fn uri_secrets(uri: &str) -> Vec<String> {
    let mut secrets = vec![uri.to_string()];
    if let Some(password) = uri_password(uri) {
        let decoded = percent_decode(&password);
        if decoded != password {
            secrets.push(decoded);
        }
        secrets.push(password);
    }
    secrets
}

/// The raw password segment of `scheme://user:password@hosts/...`, if any. Splits on
/// ASCII delimiters only, so it never cuts a multi-byte character.
fn uri_password(uri: &str) -> Option<String> {
    let (_, after_scheme) = uri.split_once("://")?;
    let authority = after_scheme
        .split(['/', '?'])
        .next()
        .unwrap_or(after_scheme);
    let (user_info, _) = authority.rsplit_once('@')?;
    let (_, password) = user_info.split_once(':')?;
    (!password.is_empty()).then(|| password.to_string())
}

/// `%XX` escapes decoded (invalid escapes kept as written, invalid UTF-8 replaced).
fn percent_decode(text: &str) -> String {
    percent_encoding::percent_decode_str(text)
        .decode_utf8_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_and_removes_passwords() {
        let uri = "mongodb://app:s3cr%40t@db1:27017,db2/x?authSource=admin";
        let secrets = uri_secrets(uri);
        assert!(secrets.contains(&"s3cr%40t".to_string()));
        assert!(secrets.contains(&"s3cr@t".to_string()));
        let msg = format!("failed for {uri}; password s3cr@t rejected");
        let clean = redact(&msg, &secrets);
        assert!(!clean.contains("s3cr"), "{clean}");
    }

    #[test]
    fn no_password_no_secret_but_the_uri() {
        assert_eq!(
            uri_secrets("mongodb://h:1/db"),
            vec!["mongodb://h:1/db".to_string()]
        );
        assert_eq!(uri_secrets("mongodb://user@h:1/db").len(), 1);
        assert_eq!(uri_secrets("not a uri").len(), 1);
    }

    #[test]
    fn multi_byte_characters_and_bad_escapes_are_kept_whole() {
        let uri = "mongodb://u:%a\u{e9}@h/";
        let secrets = uri_secrets(uri);
        assert!(secrets.contains(&"%a\u{e9}".to_string()), "{secrets:?}");
        let clean = redact(&format!("auth failed: %a\u{e9} for {uri}"), &secrets);
        assert!(!clean.contains('\u{e9}'), "{clean}");
        for uri in [
            "mongodb://\u{e9}:\u{e9}%\u{e9}@h",
            "mongodb://:%@",
            "mongodb://a:%%%@/",
            "://",
        ] {
            let _ = uri_secrets(uri);
        }
    }

    #[test]
    fn empty_secrets_are_ignored() {
        assert_eq!(redact("abc", &[String::new()]), "abc");
    }
}
