//! Name segments: a tool's name and each segment of a scope path are
//! `[A-Za-z0-9_-]+`.

/// Whether `b` may appear in a name segment (and in a sensitive path's segment).
pub fn is_segment_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// Whether `s` is a valid name segment: one or more of `[A-Za-z0-9_-]`.
///
/// ```
/// use toolmark_syntax::name::is_segment;
/// assert!(is_segment("create-fill_2"));
/// assert!(!is_segment(""));
/// assert!(!is_segment("a.b"));
/// assert!(!is_segment("café"));
/// ```
pub fn is_segment(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(is_segment_byte)
}

/// The first character of `s` that may not appear in a name segment.
///
/// ```
/// assert_eq!(toolmark_syntax::name::first_invalid("a b"), Some(' '));
/// assert_eq!(toolmark_syntax::name::first_invalid("ab"), None);
/// ```
pub fn first_invalid(s: &str) -> Option<char> {
    s.chars()
        .find(|c| !(c.is_ascii() && is_segment_byte(*c as u8)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_are_ascii_letters_digits_underscore_and_dash() {
        for good in ["fill", "a-b_2", "0", "_", "-", "CVC"] {
            assert!(is_segment(good), "{good}");
            assert_eq!(first_invalid(good), None);
        }
        for (bad, c) in [
            ("a b", Some(' ')),
            ("a.b", Some('.')),
            ("café", Some('é')),
            ("$id", Some('$')),
            ("", None),
        ] {
            assert!(!is_segment(bad), "{bad}");
            assert_eq!(first_invalid(bad), c, "{bad}");
        }
    }
}
