//! The `Host` header as the HTTP surfaces (`mcp`, `webmcp`) read it: one strict
//! parser, so a value one of them refuses is refused by every one.

/// `"host:port"` → (`host`, `Some(port)`); `"[::1]:80"` → (`[::1]`, `Some("80")`).
pub(crate) fn split_host(s: &str) -> (&str, Option<&str>) {
    if s.starts_with('[') {
        return match s.find(']') {
            Some(i) => (&s[..=i], s[i + 1..].strip_prefix(':')),
            None => (s, None),
        };
    }
    match s.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') => (h, Some(p)),
        _ => (s, None),
    }
}

/// A `Host` value as RFC 9110 allows it (`uri-host [ ":" port ]`, where the
/// host is a bracketed IPv6 address, or a name or IPv4 address of letters,
/// digits, `-`, `.` and `_`; the port 1–5 digits up to 65535), split; `None`
/// for anything else (`[::1]evil`, `host@evil`, `a b`, `host:`, `%41`).
pub(crate) fn parse_host(s: &str) -> Option<(&str, Option<&str>)> {
    let (name, port) = if let Some(rest) = s.strip_prefix('[') {
        let close = rest.find(']')?;
        rest[..close].parse::<std::net::Ipv6Addr>().ok()?;
        let after = &rest[close + 1..];
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':')?),
        };
        (&s[..close + 2], port)
    } else {
        let (name, port) = match s.split_once(':') {
            Some((n, p)) => (n, Some(p)),
            None => (s, None),
        };
        let name_ok = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-._".contains(&b));
        if !name_ok {
            return None;
        }
        (name, port)
    };
    if let Some(p) = port {
        let digits = !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit());
        if !digits || p.parse::<u32>().ok()? > 65535 {
            return None;
        }
    }
    Some((name, port))
}
