//! Sealing a stored confirmation's real input: AES-256-GCM (RustCrypto `aes-gcm`)
//! under the app's 32-byte key, a fresh 96-bit random nonce per record, and the
//! confirm id as associated data (a record moved to another id does not open).
//!
//! The sealed plaintext is `{"tool","caller","input"}`: opening also checks that
//! the record's tool and caller are the ones the input was sealed for.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Caller;

/// The sealed part of a record.
#[derive(Serialize, Deserialize)]
pub(crate) struct Sealed {
    pub(crate) tool: String,
    pub(crate) caller: Caller,
    pub(crate) input: Value,
}

/// The app's key, ready to seal and open. Without the `durable` feature there is
/// no way to make one.
#[derive(Clone)]
pub(crate) struct Sealer {
    #[cfg(feature = "durable")]
    cipher: std::sync::Arc<aes_gcm::Aes256Gcm>,
    #[cfg(not(feature = "durable"))]
    _never: std::convert::Infallible,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sealer(..)")
    }
}

#[cfg(feature = "durable")]
const HEX: &[u8; 16] = b"0123456789abcdef";

#[cfg(feature = "durable")]
fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(HEX[usize::from(b >> 4)]));
        s.push(char::from(HEX[usize::from(b & 0x0f)]));
    }
    s
}

#[cfg(feature = "durable")]
fn unhex(s: &str) -> Option<Vec<u8>> {
    fn digit(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            _ => None,
        }
    }
    let b = s.as_bytes();
    if !b.len().is_multiple_of(2) {
        return None;
    }
    b.chunks(2)
        .map(|p| Some(digit(p[0])? << 4 | digit(p[1])?))
        .collect()
}

#[cfg(feature = "durable")]
impl Sealer {
    pub(crate) fn new(key: &[u8; 32]) -> Self {
        use aes_gcm::KeyInit;
        Sealer {
            cipher: std::sync::Arc::new(aes_gcm::Aes256Gcm::new(key.into())),
        }
    }

    /// A sealer under a fresh random key (for handles that only this process
    /// opens). `None` only when the OS random source fails.
    pub(crate) fn random() -> Option<Self> {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).ok()?;
        Some(Sealer::new(&key))
    }

    /// `plain` sealed whole, bound to `aad` (which is not stored): `nonce:ciphertext`,
    /// hex. `None` only when the OS random source fails.
    pub(crate) fn seal_bytes(&self, aad: &[u8], plain: &[u8]) -> Option<String> {
        use aes_gcm::aead::{Aead, Payload};
        let mut nonce = [0u8; 12];
        getrandom::fill(&mut nonce).ok()?;
        let ct = self
            .cipher
            .encrypt((&nonce).into(), Payload { msg: plain, aad })
            .ok()?;
        Some(format!("{}:{}", hex(&nonce), hex(&ct)))
    }

    /// What [`seal_bytes`](Self::seal_bytes) sealed, when `text` is unchanged,
    /// was sealed under this key, and `aad` is the same.
    pub(crate) fn open_bytes(&self, aad: &[u8], text: &str) -> Option<Vec<u8>> {
        use aes_gcm::aead::{Aead, Payload};
        let (nonce, ct) = text.split_once(':')?;
        let nonce: [u8; 12] = unhex(nonce)?.try_into().ok()?;
        let ct = unhex(ct)?;
        self.cipher
            .decrypt((&nonce).into(), Payload { msg: &ct, aad })
            .ok()
    }

    /// `nonce:ciphertext`, hex. `None` only when the OS random source fails.
    pub(crate) fn seal(&self, id: &str, sealed: &Sealed) -> Option<String> {
        use aes_gcm::aead::{Aead, Payload};
        let plain = serde_json::to_vec(sealed).ok()?;
        let mut nonce = [0u8; 12];
        getrandom::fill(&mut nonce).ok()?;
        let ct = self
            .cipher
            .encrypt(
                (&nonce).into(),
                Payload {
                    msg: &plain,
                    aad: id.as_bytes(),
                },
            )
            .ok()?;
        Some(format!("{}:{}", hex(&nonce), hex(&ct)))
    }

    /// The sealed input of record `id`; `None` when it was changed, moved to
    /// another id, or sealed under another key.
    pub(crate) fn open(&self, id: &str, text: &str) -> Option<Sealed> {
        use aes_gcm::aead::{Aead, Payload};
        let (nonce, ct) = text.split_once(':')?;
        let nonce: [u8; 12] = unhex(nonce)?.try_into().ok()?;
        let ct = unhex(ct)?;
        let plain = self
            .cipher
            .decrypt(
                (&nonce).into(),
                Payload {
                    msg: &ct,
                    aad: id.as_bytes(),
                },
            )
            .ok()?;
        serde_json::from_slice(&plain).ok()
    }
}

#[cfg(not(feature = "durable"))]
impl Sealer {
    pub(crate) fn seal(&self, _id: &str, _sealed: &Sealed) -> Option<String> {
        match self._never {}
    }

    pub(crate) fn open(&self, _id: &str, _text: &str) -> Option<Sealed> {
        match self._never {}
    }
}

#[cfg(all(test, feature = "durable"))]
mod tests {
    use serde_json::json;

    use super::*;

    fn sealed() -> Sealed {
        Sealed {
            tool: "pay".into(),
            caller: Caller::InApp,
            input: json!({"cvc": "123"}),
        }
    }

    #[test]
    fn a_sealed_input_opens_under_its_id_only() {
        let s = Sealer::new(&[7; 32]);
        let text = s.seal("a", &sealed()).unwrap();
        assert!(!text.contains("123"));
        assert_eq!(s.open("a", &text).unwrap().input, json!({"cvc": "123"}));
        assert!(s.open("b", &text).is_none(), "moved to another id");
        assert!(
            Sealer::new(&[8; 32]).open("a", &text).is_none(),
            "another key"
        );
        let mut flipped = text.into_bytes();
        let last = flipped.len() - 1;
        flipped[last] = if flipped[last] == b'0' { b'1' } else { b'0' };
        assert!(s
            .open("a", std::str::from_utf8(&flipped).unwrap())
            .is_none());
    }

    #[test]
    fn two_seals_of_one_input_differ() {
        let s = Sealer::new(&[7; 32]);
        assert_ne!(s.seal("a", &sealed()), s.seal("a", &sealed()));
    }
}
