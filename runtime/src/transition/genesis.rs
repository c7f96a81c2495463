//! Genesis: the state, state hash and header a [`Genesis`] file creates, and the runtime
//! configuration it fixes.

use super::*;

/// What genesis creates: the full state, its running hash and the (unsigned) genesis header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenesisState {
    /// Every entry of the genesis state, sorted by key.
    pub entries: Vec<(String, Vec<u8>)>,
    /// The running state hash of `entries`.
    pub state_hash: StateHash,
    /// Block 0, for the sequencer to sign ([`genesis_header`]).
    pub header: Header,
}

/// The genesis state: [`genesis_writes`] (GOLD and the initial balances), per genesis module a
/// [`ModuleRecord`] (`owner` `system`, `deployed_height` 0, `abi_version` 1) and its code at
/// `code/<hash>`, and `chain/genesis`. `codes` maps code hashes to wasm bytes (extra entries
/// are ignored). Validates `genesis` first; [`GenesisError::Invalid`] when a module's code is
/// missing from `codes` or does not hash to its code hash.
pub fn genesis_state(
    genesis: &Genesis,
    codes: &BTreeMap<String, Vec<u8>>,
) -> Result<GenesisState, GenesisError> {
    let mut map: BTreeMap<String, Vec<u8>> = genesis_writes(genesis)?.into_iter().collect();
    for m in &genesis.modules {
        let wasm = codes.get(&m.code_hash).ok_or_else(|| {
            GenesisError::Invalid(format!(
                "module `{}`: no code with hash {}",
                m.id, m.code_hash
            ))
        })?;
        if hex::encode(sha2::Sha256::digest(wasm)) != m.code_hash {
            return Err(GenesisError::Invalid(format!(
                "module `{}`: the code given does not hash to {}",
                m.id, m.code_hash
            )));
        }
        let record = ModuleRecord {
            abi_version: ABI_VERSION,
            code_hash: m.code_hash.clone(),
            deployed_height: 0,
            owner: SYSTEM_ACCOUNT.to_string(),
            pending_upgrade: None,
            policy: None,
            upgraded_height: None,
        };
        map.insert(module_record_key(&m.id), record.to_bytes());
        map.insert(code_key(&m.code_hash), wasm.clone());
    }
    map.insert(
        GENESIS_HASH_KEY.to_string(),
        hex::encode(genesis.hash()).into_bytes(),
    );
    let state_hash = StateHash::from_entries(genesis.state_commitment(), &map);
    let header = genesis_header(genesis, &state_hash);
    Ok(GenesisState {
        entries: map.into_iter().collect(),
        state_hash,
        header,
    })
}

/// The genesis header: height 0, `prev_hash` 32 zero bytes, `time_ms` genesis's, the sequencer
/// genesis's, checkpoint height 0 with an empty hash, no transactions and no receipts (both
/// roots are the empty-list Merkle root, SHA-256 of nothing), and `state_hash`'s root.
pub fn genesis_header(genesis: &Genesis, state_hash: &StateHash) -> Header {
    let empty = merkle_root::<[u8; 32]>(&[]);
    Header {
        height: 0,
        prev_hash: [0; 32],
        time_ms: genesis.time_ms,
        sequencer: genesis.sequencer.clone(),
        checkpoint: Checkpoint::default(),
        tx_root: empty,
        receipt_root: empty,
        state_root: state_hash.root(),
        beacon: None,
    }
}

/// The runtime configuration genesis prescribes (fuel and memory limits, and the ABI revision
/// whose configuration hash genesis names: a chain made before scheduled calls runs revision 1),
/// with the node's own choice of `allocation` (not consensus). Its `config_hash()` equals
/// `genesis.engine_config_hash` unless this build's runtime differs from the chain's (then it is
/// this build's newest revision, and the hash check refuses it).
pub fn runtime_config(genesis: &Genesis, allocation: Allocation) -> RuntimeConfig {
    let params = genesis.params();
    let config = RuntimeConfig {
        fuel_apply: params.fuel_apply,
        fuel_view: params.fuel_view,
        fuel_end_block: params.fuel_end_block,
        memory_limit_bytes: usize::try_from(params.memory_limit_bytes).unwrap_or(usize::MAX),
        allocation,
        // Not consensus: this build's defaults (instance reuse on, no verification).
        ..RuntimeConfig::default()
    };
    config
        .with_revision_of(&genesis.engine_config_hash)
        .unwrap_or(config)
}

// ---------------------------------------------------------------------------------------------
// Context
