//! Who signs: keys and addresses ([`address`]: the [`Network`](address::Network), the
//! [`SecretKey`](address::SecretKey), base58check P2PKH addresses and WIF) and the Divi signed
//! message every signature of the chain is ([`signed_message`]: hash, sign, recover, verify), and
//! the randomness beacon's BLS keys and signatures ([`beacon`]).

pub mod address;
pub mod beacon;
pub mod key_file;
pub mod seal;
pub mod signed_message;
