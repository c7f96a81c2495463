//! [`parse_query`]: a URL's query string as the map (`gamechain_sdk::Query`) a module's view
//! reads, the same for every endpoint that takes one (`GET /v1/games/<module>`, the game feed,
//! the transcript).

/// The query string `raw` as the map a view gets: `&`-separated `key=value` pairs (a key
/// without `=` has the value `""`, a later key replaces an earlier one), `+` a space and
/// `%XX` a byte; Errors: a decoded key or value that is not UTF-8 (the message names it; the API answers
/// it with `400 invalid`).
pub fn parse_query(raw: Option<&str>) -> Result<gamechain_sdk::Query, String> {
    let mut query = gamechain_sdk::Query::new();
    for pair in raw.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        query.insert(percent_decode(key)?, percent_decode(value)?);
    }
    Ok(query)
}

/// `+` → space and `%XX` → the byte (a `%` not followed by two hex digits stays as it is);
/// an error when the bytes are not UTF-8.
fn percent_decode(s: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let hex = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push(h << 4 | l);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).map_err(|_| format!("the query `{s}` is not UTF-8 once percent-decoded"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_decode_to_utf8_or_are_refused() {
        let q = parse_query(Some("open&id=a%20b+c&id=2&x=%zz&=&")).unwrap();
        assert_eq!(q.get("open").map(String::as_str), Some(""));
        assert_eq!(q.get("id").map(String::as_str), Some("2"));
        assert_eq!(q.get("x").map(String::as_str), Some("%zz"));
        assert_eq!(parse_query(Some("id=a%20b+c")).unwrap()["id"], "a b c");
        assert_eq!(parse_query(Some("k=%C3%A9")).unwrap()["k"], "é");
        assert!(parse_query(None).unwrap().is_empty());
        let e = parse_query(Some("id=%ff")).unwrap_err();
        assert!(e.contains("is not UTF-8 once percent-decoded"), "{e}");
        assert!(parse_query(Some("%fe=1")).is_err());
    }
}
