//! The bank: balances, transfers, escrow moves and module-issued tokens over a [`Kv`].
//!
//! One implementation of the money rules, run by [`crate::MockCtx`] in unit tests and by the
//! runtime on the chain, so a module sees the same balances and the same error texts in both.
//!
//! Keys (see [`crate::keys`]): `bal/<account>/<TOKEN>` holds a canonical decimal string of base
//! units and is deleted when the balance reaches zero (absent = 0, so one state has one
//! encoding); `token/<TOKEN>` holds a JSON [`TokenInfo`].
//!
//! Errors: `insufficient <TOKEN>: need <amount>, have <balance>` when a payer holds too little;
//! `invalid` for a malformed account or token symbol, an amount that would overflow, or a mint
//! past the max supply; `not found: token <TOKEN>` for an unknown token; `not allowed` when an
//! account other than the issuer mints or burns; `conflict: token <TOKEN> exists`.

use serde::{Deserialize, Serialize};

use crate::keys::{balance_key, token_key};
use crate::native::kv::Kv;
use crate::{ActionError, Amount};

/// Longest account name, in bytes (addresses are 34; `module:<id>` at most 7 + 32).
pub const MAX_ACCOUNT_LEN: usize = 64;

/// A token's record at `token/<SYMBOL>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenInfo {
    /// 1–12 of `A-Z0-9`, starting with a letter, e.g. `GOLD`.
    pub symbol: String,
    /// Human-readable name, 1–64 bytes.
    pub name: String,
    /// Decimal places of the display unit (GOLD: 2); at most 18.
    pub decimals: u8,
    /// The only account that may mint or burn it: `module:<id>` for module tokens.
    pub issuer: String,
    /// Cap on `supply`, base units; `None` = unlimited.
    pub max_supply: Option<Amount>,
    /// Base units in existence (minted minus burned).
    pub supply: Amount,
}

/// `invalid` unless `account` is 1–64 bytes with no `/` and no control characters.
pub fn check_account(account: &str) -> Result<(), ActionError> {
    let ok = !account.is_empty()
        && account.len() <= MAX_ACCOUNT_LEN
        && !account
            .chars()
            .any(|c| c == '/' || c.is_control() || c.is_whitespace());
    if ok {
        Ok(())
    } else {
        Err(ActionError::invalid(format!(
            "`{account}` is not an account"
        )))
    }
}

/// `invalid` unless `symbol` is 1–12 of `A-Z0-9` starting with a letter.
pub fn check_symbol(symbol: &str) -> Result<(), ActionError> {
    let b = symbol.as_bytes();
    let ok = (1..=12).contains(&b.len())
        && b[0].is_ascii_uppercase()
        && b.iter()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit());
    if ok {
        Ok(())
    } else {
        Err(ActionError::invalid(format!(
            "`{symbol}` is not a token symbol (1 to 12 of A-Z and 0-9, starting with a letter)"
        )))
    }
}

/// Balance of `account` in `token`, base units; 0 when absent (or when either name is malformed,
/// since such a balance can never have been written).
pub fn balance(kv: &(impl Kv + ?Sized), account: &str, token: &str) -> u128 {
    stored_balance(kv.kv_get(&balance_key(account, token)).as_deref())
}

/// A stored balance value (canonical decimal base units) as the bank reads it: absent or
/// unreadable is 0.
pub fn stored_balance(bytes: Option<&[u8]>) -> u128 {
    bytes
        .and_then(|b| std::str::from_utf8(b).ok()?.parse::<u128>().ok())
        .unwrap_or(0)
}

/// Set a balance outright (genesis, tests). A zero balance deletes the key.
pub fn set_balance(kv: &mut (impl Kv + ?Sized), account: &str, token: &str, amount: u128) {
    let key = balance_key(account, token);
    if amount == 0 {
        kv.kv_delete(&key);
    } else {
        kv.kv_put(&key, amount.to_string().into_bytes());
    }
}

/// Move `amount` of `token` from `from` to `to`. Zero moves nothing. `insufficient` when `from`
/// holds less; `invalid` for malformed names or an overflowing credit. Nothing is written on error.
pub fn transfer(
    kv: &mut (impl Kv + ?Sized),
    from: &str,
    to: &str,
    token: &str,
    amount: u128,
) -> Result<(), ActionError> {
    check_account(from)?;
    check_account(to)?;
    check_symbol(token)?;
    let have = balance(kv, from, token);
    if have < amount {
        return Err(ActionError::Insufficient {
            token: token.to_string(),
            need: amount,
            have,
        });
    }
    if amount == 0 || from == to {
        return Ok(());
    }
    let credited = balance(kv, to, token).checked_add(amount).ok_or_else(|| {
        ActionError::invalid(format!("balance of {to} in {token} would overflow"))
    })?;
    set_balance(kv, from, token, have - amount);
    set_balance(kv, to, token, credited);
    Ok(())
}

/// The record of `token`, if it exists. `internal` if the stored record is corrupt.
pub fn token(kv: &(impl Kv + ?Sized), symbol: &str) -> Result<Option<TokenInfo>, ActionError> {
    match kv.kv_get(&token_key(symbol)) {
        None => Ok(None),
        Some(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|_| ActionError::internal(format!("token record of {symbol} is corrupt"))),
    }
}

fn save_token(kv: &mut (impl Kv + ?Sized), info: &TokenInfo) {
    let bytes = serde_json::to_vec(info).expect("a TokenInfo always serialises");
    kv.kv_put(&token_key(&info.symbol), bytes);
}

/// Create `symbol` with supply 0, issued by `issuer`. `invalid` for a bad symbol, an empty or
/// over-64-byte name, or more than 18 decimals; `conflict` when the symbol exists.
pub fn create_token(
    kv: &mut (impl Kv + ?Sized),
    issuer: &str,
    symbol: &str,
    name: &str,
    decimals: u8,
    max_supply: Option<u128>,
) -> Result<(), ActionError> {
    check_account(issuer)?;
    check_symbol(symbol)?;
    if name.is_empty() || name.len() > 64 {
        return Err(ActionError::invalid("token name must be 1 to 64 bytes"));
    }
    if decimals > 18 {
        return Err(ActionError::invalid("decimals are at most 18"));
    }
    if token(kv, symbol)?.is_some() {
        return Err(ActionError::conflict(format!("token {symbol} exists")));
    }
    let info = TokenInfo {
        symbol: symbol.to_string(),
        name: name.to_string(),
        decimals,
        issuer: issuer.to_string(),
        max_supply: max_supply.map(Amount),
        supply: Amount(0),
    };
    save_token(kv, &info);
    Ok(())
}

fn issued_by(
    kv: &(impl Kv + ?Sized),
    issuer: &str,
    symbol: &str,
    verb: &str,
) -> Result<TokenInfo, ActionError> {
    check_symbol(symbol)?;
    let info =
        token(kv, symbol)?.ok_or_else(|| ActionError::not_found(format!("token {symbol}")))?;
    if info.issuer != issuer {
        return Err(ActionError::unauthorized(format!(
            "only {} can {verb} {symbol}",
            info.issuer
        )));
    }
    Ok(info)
}

/// Mint `amount` of `symbol` to `to`; `issuer` must be the token's issuer. Errors: `not found`,
/// `not allowed`, `invalid` past the max supply or on overflow.
pub fn mint(
    kv: &mut (impl Kv + ?Sized),
    issuer: &str,
    to: &str,
    symbol: &str,
    amount: u128,
) -> Result<(), ActionError> {
    let mut info = issued_by(kv, issuer, symbol, "mint")?;
    check_account(to)?;
    let supply = info.supply.0.checked_add(amount);
    let cap = info.max_supply.map_or(u128::MAX, |m| m.0);
    let supply = supply.filter(|&s| s <= cap).ok_or_else(|| {
        ActionError::invalid(format!(
            "minting {amount} would exceed the max supply of {symbol}"
        ))
    })?;
    let credited = balance(kv, to, symbol).checked_add(amount).ok_or_else(|| {
        ActionError::invalid(format!("balance of {to} in {symbol} would overflow"))
    })?;
    info.supply = Amount(supply);
    save_token(kv, &info);
    set_balance(kv, to, symbol, credited);
    Ok(())
}

/// Burn `amount` of `symbol` from `from`; `issuer` must be the token's issuer. Errors: `not
/// found`, `not allowed`, `insufficient`.
pub fn burn(
    kv: &mut (impl Kv + ?Sized),
    issuer: &str,
    from: &str,
    symbol: &str,
    amount: u128,
) -> Result<(), ActionError> {
    let mut info = issued_by(kv, issuer, symbol, "burn")?;
    check_account(from)?;
    let have = balance(kv, from, symbol);
    if have < amount {
        return Err(ActionError::Insufficient {
            token: symbol.to_string(),
            need: amount,
            have,
        });
    }
    info.supply = Amount(info.supply.0.saturating_sub(amount));
    save_token(kv, &info);
    set_balance(kv, from, symbol, have - amount);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MockKv;

    #[test]
    fn transfer_moves_and_refuses_overdrafts() {
        let mut kv = MockKv::default();
        set_balance(&mut kv, "alice", "GOLD", 100);
        transfer(&mut kv, "alice", "bob", "GOLD", 40).unwrap();
        assert_eq!(
            (balance(&kv, "alice", "GOLD"), balance(&kv, "bob", "GOLD")),
            (60, 40)
        );
        let err = transfer(&mut kv, "alice", "bob", "GOLD", 61).unwrap_err();
        assert_eq!(err.to_string(), "insufficient GOLD: need 61, have 60");
        transfer(&mut kv, "bob", "carol", "GOLD", 40).unwrap();
        assert_eq!(
            kv.state.get("bal/bob/GOLD"),
            None,
            "a zero balance is deleted"
        );
        assert_eq!(
            kv.state.get("bal/carol/GOLD").map(Vec::as_slice),
            Some(&b"40"[..])
        );
        assert!(transfer(&mut kv, "a/b", "bob", "GOLD", 0).is_err());
        assert!(transfer(&mut kv, "alice", "bob", "gold", 0).is_err());
    }

    #[test]
    fn only_the_issuer_mints_and_burns_within_the_cap() {
        let mut kv = MockKv::default();
        create_token(&mut kv, "module:a", "GEM", "Gems", 0, Some(10)).unwrap();
        assert_eq!(
            create_token(&mut kv, "module:b", "GEM", "Gems", 0, None)
                .unwrap_err()
                .to_string(),
            "conflict: token GEM exists"
        );
        assert_eq!(
            mint(&mut kv, "module:b", "bob", "GEM", 1)
                .unwrap_err()
                .to_string(),
            "not allowed: only module:a can mint GEM"
        );
        assert_eq!(
            mint(&mut kv, "module:a", "bob", "NOPE", 1)
                .unwrap_err()
                .code(),
            "not_found"
        );
        mint(&mut kv, "module:a", "bob", "GEM", 10).unwrap();
        assert_eq!(
            mint(&mut kv, "module:a", "bob", "GEM", 1)
                .unwrap_err()
                .code(),
            "invalid"
        );
        assert_eq!(
            burn(&mut kv, "module:a", "bob", "GEM", 11)
                .unwrap_err()
                .to_string(),
            "insufficient GEM: need 11, have 10"
        );
        burn(&mut kv, "module:a", "bob", "GEM", 4).unwrap();
        let info = token(&kv, "GEM").unwrap().unwrap();
        assert_eq!((info.supply, balance(&kv, "bob", "GEM")), (Amount(6), 6));
    }
}
