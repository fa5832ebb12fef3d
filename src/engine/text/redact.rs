//! Keeping passwords out of messages: the second line of defence. Messages are built
//! from parsed parts (hosts, option names, database names) and never from a string that
//! held a connection string; this removes what might still slip through from a driver
//! ([`redact`], given the secrets of a known connection string), and the credentials of
//! any connection string that user input put into a message, such as a counter name or
//! a command-line argument that is one ([`redact_connection_strings`], applied where
//! every error message leaves for JavaScript and where input is quoted).

/// Whether `c` continues a word (so that a secret found next to it is part of fixed text
/// such as `failed`, not a printed secret).
fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Replaces each occurrence of each non-empty secret in `text` with `****`, except where a
/// secret made only of letters, digits and `_` occurs inside a longer word of the text (a
/// short password `ail` is left alone in `authentication failed`: replacing it there would
/// reveal it).
pub fn redact(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_string();
    // Longest first, so a secret that contains another is removed whole.
    let mut sorted: Vec<&String> = secrets.iter().filter(|s| !s.is_empty()).collect();
    sorted.sort_by_key(|s| std::cmp::Reverse(s.len()));
    for secret in sorted {
        if out.contains(secret.as_str()) {
            out = replace_delimited(&out, secret);
        }
    }
    out
}

fn replace_delimited(text: &str, secret: &str) -> String {
    // Only a secret made of word characters alone can be part of fixed text.
    let wordlike = secret.chars().all(is_word);
    let mut out = String::with_capacity(text.len());
    let mut rest = 0;
    let mut from = 0;
    while let Some(found) = text[from..].find(secret) {
        let start = from + found;
        let end = start + secret.len();
        let before = text[..start].chars().next_back();
        let after = text[end..].chars().next();
        let inside_word = wordlike && (before.is_some_and(is_word) || after.is_some_and(is_word));
        if inside_word {
            // Step one character on, to find overlapping occurrences.
            from = start + text[start..].chars().next().map_or(1, char::len_utf8);
            continue;
        }
        out.push_str(&text[rest..start]);
        out.push_str("****");
        rest = end;
        from = end;
    }
    out.push_str(&text[rest..]);
    out
}

/// Shortest piece of a password kept as a secret of its own.
const MIN_PIECE: usize = 4;

/// Query options whose values are secrets.
const SECRET_OPTIONS: [&str; 2] = ["proxypassword", "tlscertificatekeyfilepassword"];

/// Properties of `authMechanismProperties` (`KEY:value,KEY:value`) whose values are
/// secrets, with the colon as written or percent-encoded.
const SECRET_PROPERTIES: [&str; 2] = ["aws_session_token:", "aws_session_token%3a"];

/// The secrets in a connection string: the whole string; the password of its user
/// information as written, percent-decoded, and cut at the delimiters a parser may cut it
/// at (`user:pa55?abc@host` is read by some parsers as host `user`, port `pa55`); and the
/// values of the password options of its query.
pub fn uri_secrets(uri: &str) -> Vec<String> {
    let mut secrets = vec![uri.to_string()];
    let mut add = |raw: &str| {
        if raw.is_empty() {
            return;
        }
        let decoded = percent_decode(raw);
        // Pieces of fewer than four characters are left out: replacing such a piece where
        // it stands as a word of fixed text ("a", "no") would reveal it, and only a
        // parser's message could print a piece, which parse() never shows.
        for piece in raw.split(['/', '?', '#', '@', ':', '[', ']', '&', '=']) {
            if piece.chars().count() >= MIN_PIECE {
                secrets.push(piece.to_string());
            }
        }
        if decoded != raw {
            secrets.push(decoded);
        }
        secrets.push(raw.to_string());
    };
    if let Some(password) = uri_password(uri) {
        add(&password);
    }
    if let Some((_, query)) = uri.split_once('?') {
        for pair in query.split('&') {
            if let Some((key, value)) = pair.split_once('=') {
                if SECRET_OPTIONS.contains(&key.to_ascii_lowercase().as_str()) {
                    add(value);
                } else if key.eq_ignore_ascii_case("authMechanismProperties") {
                    for property in percent_decode(value).split(',') {
                        if let Some((name, token)) = property.split_once(':') {
                            if name.eq_ignore_ascii_case("AWS_SESSION_TOKEN") {
                                add(token);
                            }
                        }
                    }
                }
            }
        }
    }
    secrets.retain(|s| !s.is_empty());
    secrets.sort();
    secrets.dedup();
    secrets
}

/// The user information of `scheme://userinfo@hosts/...`: everything before the last `@`
/// (a password may hold an unescaped `/`, `?`, `#` or `@`). Splits on ASCII delimiters
/// only, so it never cuts a multi-byte character.
pub fn uri_user_info(uri: &str) -> Option<&str> {
    let (_, after_scheme) = uri.split_once("://")?;
    let (user_info, _) = after_scheme.rsplit_once('@')?;
    Some(user_info)
}

/// The raw password segment of the user information, if any.
fn uri_password(uri: &str) -> Option<String> {
    let (_, password) = uri_user_info(uri)?.split_once(':')?;
    (!password.is_empty()).then(|| password.to_string())
}

/// `uri` with its user information replaced by `user:password`, for a message about the
/// rest of the string.
pub fn without_user_info(uri: &str) -> Option<String> {
    let (scheme, after_scheme) = uri.split_once("://")?;
    let (_, hosts) = after_scheme.rsplit_once('@')?;
    Some(format!("{scheme}://user:password@{hosts}"))
}

/// What a connection string's credentials are replaced with.
pub const MASK: &str = "****";

/// The schemes of MongoDB connection strings, in lower case.
const SCHEMES: [&str; 2] = ["mongodb://", "mongodb+srv://"];

/// Where the first connection string in `lower` (a text in ASCII lower case) starts its
/// authority: the byte just after its `scheme://`.
fn first_authority(lower: &str) -> Option<usize> {
    SCHEMES
        .iter()
        .filter_map(|scheme| lower.find(scheme).map(|at| at + scheme.len()))
        .min()
}

/// `text` with the credentials of every MongoDB connection string in it masked
/// (`mongodb://app:pw@host/db` → `mongodb://****@host/db`): the user information, up to
/// the last `@` that follows the scheme anywhere in the text (a password may hold `@`,
/// `/`, quotes or spaces, and where the string ends cannot be told; masking too much is
/// the safe side), and the values of the password options of a query. The scheme is
/// matched in any case. Text without a connection string is returned as it is.
pub fn redact_connection_strings(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let Some(first) = first_authority(&lower) else {
        return text.to_string();
    };
    // The first string's user information ends at the last `@` after it: any later
    // string starts inside the masked part, or after the last `@` (without one).
    match text[first..].rfind('@') {
        Some(end) => {
            mask_secret_options(&format!("{}{MASK}{}", &text[..first], &text[first + end..]))
        }
        None => mask_secret_options(text),
    }
}

/// `text` with the value of each password option (`proxyPassword=…`,
/// `tlsCertificateKeyFilePassword=…`, any case) masked, up to the next `&`, `#` or
/// white space, and each secret property of `authMechanismProperties` up to the next `,`
/// as well.
fn mask_secret_options(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let starts = |key: String, ends: &'static [char]| {
        lower
            .match_indices(&key)
            .map(|(at, _)| (at + key.len(), ends))
            .collect::<Vec<_>>()
    };
    let mut values: Vec<(usize, usize)> = SECRET_OPTIONS
        .iter()
        .flat_map(|option| starts(format!("{option}="), &['&', '#']))
        .chain(
            SECRET_PROPERTIES
                .iter()
                .flat_map(|property| starts(property.to_string(), &['&', '#', ','])),
        )
        .map(|(start, ends)| {
            let end = text[start..]
                .find(|c: char| ends.contains(&c) || c.is_whitespace())
                .map_or(text.len(), |i| start + i);
            (start, end)
        })
        .collect();
    if values.is_empty() {
        return text.to_string();
    }
    values.sort_unstable();
    let mut out = String::with_capacity(text.len());
    let mut from = 0;
    for (start, end) in values {
        // A key written inside a value already masked (even one that ends where that
        // value ends) is part of that secret, not a secret of its own.
        if start <= from {
            continue;
        }
        out.push_str(&text[from..start]);
        out.push_str(MASK);
        from = end;
    }
    out.push_str(&text[from..]);
    out
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
    fn a_secret_key_inside_a_masked_value_is_masked_with_it() {
        assert_eq!(
            mask_secret_options("mongodb://h/?proxyPassword=x,aws_session_token:pw&ssl=true"),
            format!("mongodb://h/?proxyPassword={MASK}&ssl=true")
        );
        assert_eq!(
            mask_secret_options("mongodb://h/?proxyPassword=aws_session_token:&ssl=true"),
            format!("mongodb://h/?proxyPassword={MASK}&ssl=true")
        );
        assert_eq!(
            mask_secret_options("?authMechanismProperties=AWS_SESSION_TOKEN:t,X:1&proxyPassword=p"),
            format!("?authMechanismProperties=AWS_SESSION_TOKEN:{MASK},X:1&proxyPassword={MASK}")
        );
    }

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
        assert_eq!(
            uri_secrets("mongodb://h:1/db?appName=x"),
            vec!["mongodb://h:1/db?appName=x".to_string()]
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
    fn unescaped_delimiters_in_the_password_are_secrets_too() {
        let secrets = uri_secrets("mongodb://user:pa55?abc@host/db");
        for s in ["pa55?abc", "pa55"] {
            assert!(secrets.contains(&s.to_string()), "{s}: {secrets:?}");
        }
        let clean = redact("the port must be an integer, got pa55", &secrets);
        assert!(!clean.contains("pa55"), "{clean}");
        assert!(!secrets.contains(&"abc".to_string()), "{secrets:?}");
        let secrets = uri_secrets("mongodb://h/?proxyPassword=Zx9%21k&appName=a");
        assert!(secrets.contains(&"Zx9!k".to_string()), "{secrets:?}");
        let secrets = uri_secrets(
            "mongodb://h/?authMechanismProperties=SERVICE_NAME:svc,AWS_SESSION_TOKEN:T0k%2Bn",
        );
        assert!(secrets.contains(&"T0k+n".to_string()), "{secrets:?}");
        assert!(!secrets.contains(&"svc".to_string()), "{secrets:?}");
    }

    #[test]
    fn a_short_password_inside_fixed_text_is_left_alone() {
        let secrets = uri_secrets("mongodb://app:ail@h/");
        assert_eq!(
            redact("authentication failed for app", &secrets),
            "authentication failed for app"
        );
        assert_eq!(
            redact("got ail, then ail.", &secrets),
            "got ****, then ****."
        );
        assert_eq!(redact("ail", &secrets), "****");
        // A secret with any other character is removed wherever it is.
        assert_eq!(redact("xx?ailxx", &["?ail".to_string()]), "xx****xx");
        assert_eq!(
            redact("\u{e9}ail\u{e9}", &["ail".to_string()]),
            "\u{e9}ail\u{e9}"
        );
    }

    #[test]
    fn user_info_is_masked_up_to_the_last_at() {
        assert_eq!(
            without_user_info("mongodb://u:p@q?r@h:1/db?x=1").as_deref(),
            Some("mongodb://user:password@h:1/db?x=1")
        );
        assert_eq!(without_user_info("mongodb://h:1/db"), None);
    }

    #[test]
    fn connection_strings_in_any_text_lose_their_credentials() {
        let cases = [
            (
                "Sequence 'mongodb://app:PW@host/shop' not found.",
                "Sequence 'mongodb://****@host/shop' not found.",
            ),
            (
                "unknown command \"MongoDB+SRV://app:p@ss w'rd@h1,h2/db\"",
                "unknown command \"MongoDB+SRV://****@h1,h2/db\"",
            ),
            (
                "a mongodb://u:x@y/ and mongodb+srv://v:z@w/ two",
                "a mongodb://****@w/ two",
            ),
            (
                "mongodb://host:27017/db has no user",
                "mongodb://host:27017/db has no user",
            ),
            (
                "mongodb://h/?proxyPassword=s3cr%21t&appName=x TLSCertificateKeyFilePassword=k#f",
                "mongodb://h/?proxyPassword=****&appName=x TLSCertificateKeyFilePassword=****#f",
            ),
            (
                "mongodb://h/?authMechanism=MONGODB-AWS&authMechanismProperties=AWS_SESSION_TOKEN:tok3n,SERVICE_NAME:s&x=1",
                "mongodb://h/?authMechanism=MONGODB-AWS&authMechanismProperties=AWS_SESSION_TOKEN:****,SERVICE_NAME:s&x=1",
            ),
            (
                "mongodb://h/?authMechanismProperties=aws_session_token%3Atok3n%2Cb",
                "mongodb://h/?authMechanismProperties=aws_session_token%3A****",
            ),
            ("mongodb://u:p@", "mongodb://****@"),
            ("mongodb://", "mongodb://"),
            ("no connection string @ all", "no connection string @ all"),
            (
                "\u{e9}mongodb://\u{e9}:\u{e9}@\u{e9}",
                "\u{e9}mongodb://****@\u{e9}",
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(redact_connection_strings(text), expected, "{text}");
        }
    }

    #[test]
    fn a_password_holding_a_scheme_is_masked_whole() {
        let text = "x mongodb://app:amongodb://b@c@host/db y";
        assert_eq!(
            redact_connection_strings(text),
            "x mongodb://****@host/db y"
        );
    }

    #[test]
    fn empty_secrets_are_ignored() {
        assert_eq!(redact("abc", &[String::new()]), "abc");
    }
}
