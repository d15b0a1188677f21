//! JWT access tokens already verified, so that a caller sending the same token again costs a
//! hash and a lookup instead of a signature check and a claims parse.
//!
//! Entries are keyed by the token's SHA-256 (the token itself is never kept): any change to
//! the token, a tampered payload or signature, is another key, which holds nothing. An entry
//! is used until the token's `exp`, and only while the issuer's key set still holds the very
//! key it was verified with, in an algorithm the issuer still announces, fetched within the
//! hour ([`KeyCache::trusts`]): a key rotation that drops or replaces the key drops its tokens
//! too, and keys held an hour are fetched again as if no token had been kept.
//!
//! The cache is bounded by `quick_cache` (a maintained concurrent cache) whose eviction keeps
//! entries used more than once ahead of those seen once: a flood of new tokens evicts the
//! other new ones, not the tokens of callers that keep coming back.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use jsonwebtoken::Algorithm;
use quick_cache::sync::Cache;
use sha2::{Digest as _, Sha256};

use super::keys::{Key, KeyCache};
use crate::caller::Caller;

/// The most verified tokens kept at once.
pub(super) const MAX_VERIFIED: usize = 10_000;

/// What verifying a token proved, and what it rests on.
pub(super) struct Verified {
    /// Who the token stands for.
    pub caller: Arc<Caller>,
    /// The token's `exp`, in seconds since the epoch.
    pub exp: u64,
    /// The key id of its header.
    pub kid: Option<String>,
    /// The key its signature verified with.
    pub key: Arc<Key>,
    /// The algorithm it was signed with.
    pub alg: Algorithm,
}

/// The SHA-256 of a token, what the cache keeps in its place.
pub(super) type Digest = [u8; 32];

/// The verified tokens, by digest.
pub(super) struct VerifiedTokens {
    cache: Cache<Digest, Arc<Verified>>,
}

impl VerifiedTokens {
    /// A cache of at most `capacity` tokens.
    pub(super) fn new(capacity: usize) -> Self {
        Self {
            cache: Cache::new(capacity),
        }
    }

    /// The digest `token` is kept under.
    pub(super) fn digest(token: &str) -> Digest {
        Sha256::digest(token.as_bytes()).into()
    }

    /// The caller of the token whose digest is `digest`, if it was verified, has not expired
    /// by `now` (seconds since the epoch), and `keys` still trusts the key it rests on. An
    /// entry that fails either test is dropped.
    pub(super) fn get(&self, digest: &Digest, now: u64, keys: &KeyCache) -> Option<Arc<Caller>> {
        self.get_with(digest, now, |verified| {
            keys.trusts(verified.kid.as_deref(), &verified.key, verified.alg)
        })
    }

    /// As [`get`](Self::get), with `trusted` telling whether an entry's key still stands.
    fn get_with(
        &self,
        digest: &Digest,
        now: u64,
        trusted: impl Fn(&Verified) -> bool,
    ) -> Option<Arc<Caller>> {
        let verified = self.cache.get(digest)?;
        if now < verified.exp && trusted(&verified) {
            return Some(verified.caller.clone());
        }
        self.cache.remove(digest);
        None
    }

    /// Remembers that the token whose digest is `digest` verified as `verified`.
    pub(super) fn insert(&self, digest: Digest, verified: Verified) {
        self.cache.insert(digest, Arc::new(verified));
    }

    /// How many tokens are held.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.cache.len()
    }
}

/// Seconds since the epoch, as `exp` counts them.
pub(super) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::server::auth::keys::tests::key_set;

    fn verified(subject: &str, exp: u64, key: &Arc<Key>) -> Verified {
        Verified {
            caller: Arc::new(Caller {
                subject: subject.to_owned(),
                ..Caller::default()
            }),
            exp,
            kid: Some("k1".to_owned()),
            key: key.clone(),
            alg: Algorithm::ES256,
        }
    }

    fn some_key() -> Arc<Key> {
        key_set(&["k1"]).find(Some("k1")).expect("k1")
    }

    const TOKEN: &str = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl";

    #[test]
    fn a_verified_token_is_found_until_its_exp() {
        let (tokens, key) = (VerifiedTokens::new(8), some_key());
        let digest = VerifiedTokens::digest(TOKEN);
        tokens.insert(digest, verified("alice", 1_000, &key));
        let found = tokens.get_with(&digest, 999, |_| true);
        assert_eq!(found.map(|c| c.subject.clone()).as_deref(), Some("alice"));
        assert!(tokens.get_with(&digest, 1_000, |_| true).is_none());
        // Once found expired it is gone, whatever the clock says next.
        assert!(tokens.get_with(&digest, 0, |_| true).is_none());
        assert_eq!(tokens.len(), 0);
    }

    #[test]
    fn a_tampered_token_never_finds_the_verified_one() {
        let (tokens, key) = (VerifiedTokens::new(8), some_key());
        tokens.insert(
            VerifiedTokens::digest(TOKEN),
            verified("alice", u64::MAX, &key),
        );
        let (header, rest) = TOKEN.split_once('.').expect("three parts");
        let (_, signature) = rest.split_once('.').expect("three parts");
        let tampered = [
            // Another subject, the signature kept.
            format!("{header}.eyJzdWIiOiJhZG1pbiJ9.{signature}"),
            // One character of the signature changed, or cut off.
            TOKEN.replace("bmF0", "bmF1"),
            TOKEN[..TOKEN.len() - 1].to_owned(),
            format!("{TOKEN}A"),
            format!(" {TOKEN}"),
        ];
        for token in &tampered {
            let digest = VerifiedTokens::digest(token);
            assert!(tokens.get_with(&digest, 0, |_| true).is_none(), "{token}");
        }
        assert!(
            (tokens.get_with(&VerifiedTokens::digest(TOKEN), 0, |_| true)).is_some(),
            "the verified token is still found"
        );
    }

    #[test]
    fn an_entry_whose_key_is_no_longer_trusted_is_dropped() {
        let (tokens, key) = (VerifiedTokens::new(8), some_key());
        let digest = VerifiedTokens::digest(TOKEN);
        tokens.insert(digest, verified("alice", u64::MAX, &key));
        assert!(tokens.get_with(&digest, 0, |_| false).is_none());
        assert!(tokens.get_with(&digest, 0, |_| true).is_none());
    }

    #[test]
    fn the_cache_is_bounded_and_keeps_the_tokens_used_again() {
        let (tokens, key) = (VerifiedTokens::new(100), some_key());
        let regular = VerifiedTokens::digest("regular");
        tokens.insert(regular, verified("regular", u64::MAX, &key));
        for n in 0..10_000 {
            tokens.insert(
                VerifiedTokens::digest(&format!("flood-{n}")),
                verified("flooder", u64::MAX, &key),
            );
            assert!(
                tokens.get_with(&regular, 0, |_| true).is_some(),
                "after {n}"
            );
        }
        assert!(tokens.len() <= 100, "{} held", tokens.len());
    }
}
