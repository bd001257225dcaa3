//! Lowercase hex, written and read a word at a time: confirmation ids and sealed
//! store records are hex, and on a store's round trip the record's hex was most of
//! what the seal cost beside the cipher.

/// The digits, in order.
const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// The 8 hex digits of `word`, most significant first, as the bytes of a `u64`
/// (big-endian).
#[inline]
pub(crate) fn hex8(word: u32) -> u64 {
    // Each nibble into a byte of its own, in order.
    let x = u64::from(word);
    let x = (x | (x << 16)) & 0x0000_ffff_0000_ffff;
    let x = (x | (x << 8)) & 0x00ff_00ff_00ff_00ff;
    let x = (x | (x << 4)) & 0x0f0f_0f0f_0f0f_0f0f;
    // Per byte (no carry crosses one: at most 15 + 6, then 15 + 48 + 39): a nibble
    // of 10 or more gets the 39 that takes it from past `9` to `a`.
    let letters = ((x + 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101;
    x + 0x3030_3030_3030_3030 + letters * 39
}

/// `bytes` as lowercase hex, appended to `out`: four bytes (eight digits) at a
/// time (a table lookup per digit cost about three times the instructions).
pub(crate) fn encode_into(out: &mut Vec<u8>, bytes: &[u8]) {
    out.reserve(2 * bytes.len());
    let mut words = bytes.chunks_exact(4);
    for quad in &mut words {
        let word = u32::from_be_bytes([quad[0], quad[1], quad[2], quad[3]]);
        out.extend_from_slice(&hex8(word).to_be_bytes());
    }
    for &b in words.remainder() {
        out.extend_from_slice(&[DIGITS[usize::from(b >> 4)], DIGITS[usize::from(b & 0x0f)]]);
    }
}

/// The value of each lowercase hex digit; `INVALID` (high bits set) for every
/// other byte.
const INVALID: u8 = 0xff;
const VALUES: [u8; 256] = {
    let mut t = [INVALID; 256];
    let mut i = 0;
    while i < 16 {
        t[DIGITS[i] as usize] = i as u8;
        i += 1;
    }
    t
};

/// The bytes of lowercase hex `s` written into `out`; `false` (and `out` partly
/// written) when `s` is not lowercase hex of exactly `out.len()` bytes. One check
/// at the end, not a branch per digit: a non-digit's value has its high bits set,
/// and they are gathered as the digits are read.
pub(crate) fn decode_into(s: &[u8], out: &mut [u8]) -> bool {
    if s.len() != 2 * out.len() {
        return false;
    }
    let mut seen = 0u8;
    for (o, pair) in out.iter_mut().zip(s.chunks_exact(2)) {
        let (hi, lo) = (VALUES[usize::from(pair[0])], VALUES[usize::from(pair[1])]);
        seen |= hi | lo;
        *o = (hi << 4) | (lo & 0x0f);
    }
    seen & 0xf0 == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference: one table lookup per digit.
    fn by_table(bytes: &[u8]) -> Vec<u8> {
        bytes
            .iter()
            .flat_map(|b| [DIGITS[usize::from(b >> 4)], DIGITS[usize::from(b & 0x0f)]])
            .collect()
    }

    #[test]
    fn every_byte_at_every_position_of_every_short_length_reads_back() {
        for len in 0..=13 {
            for b in 0..=255u8 {
                for at in 0..len {
                    let mut bytes = vec![0xa5; len];
                    bytes[at] = b;
                    let mut text = b"x:".to_vec();
                    encode_into(&mut text, &bytes);
                    assert_eq!(&text[2..], &by_table(&bytes)[..], "{bytes:?}");
                    let mut back = vec![0; len];
                    assert!(decode_into(&text[2..], &mut back));
                    assert_eq!(back, bytes);
                }
            }
        }
    }

    #[test]
    fn anything_but_lowercase_hex_of_the_exact_length_is_refused() {
        let mut two = [0u8; 2];
        assert!(decode_into(b"abcd", &mut two));
        assert_eq!(two, [0xab, 0xcd]);
        assert!(!decode_into(b"abcdef", &mut two), "too long");
        assert!(!decode_into(b"ab", &mut two), "too short");
        // Every byte that is not a lowercase digit, in either place of a pair and
        // in a later pair than the first.
        for bad in 0..=255u8 {
            if DIGITS.contains(&bad) {
                continue;
            }
            for text in [
                [bad, b'0', b'0', b'0'],
                [b'0', bad, b'0', b'0'],
                [b'0', b'0', b'0', bad],
            ] {
                assert!(!decode_into(&text, &mut two), "{text:?}");
            }
        }
    }
}
