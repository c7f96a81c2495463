//! `gamechain testnet --validators N --dir DIR`: a local network of N validators in one folder.
//!
//! It writes, for validator `i` (0-based), `DIR/<i>/node.toml` (its API on
//! `127.0.0.1:<base-port + i>`, its p2p transport on `127.0.0.1:<p2p-port + i>`, every other
//! validator as a peer, `data_dir = "data"`) and `DIR/<i>/data/` with the shared `genesis.json`
//! (naming the N validators), its block-signing key `sequencer.wif` and its consensus key
//! `consensus.key` (both mode 0600, freshly generated). Each folder runs alone with
//! `gamechain node --validator --config node.toml` from inside it; `--start` runs all of them
//! as child processes in the foreground (their logs prefixed with `[i]`) until Ctrl-C, which
//! stops them cleanly. `DIR` must not exist yet or be empty: keys are never overwritten.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use gamechain_runtime::chain::{GenesisValidator, SecretKey, ValidatorSet, ENGINE_SIMPLEX};
use tokio::io::{AsyncBufReadExt as _, BufReader};

use crate::config::NodeConfig;
use crate::ledger::genesis_setup::new_genesis;
use crate::validator::keys;

/// `gamechain testnet`'s options.
#[derive(Debug, Clone, clap::Args)]
pub struct TestnetArgs {
    /// How many validators (1 to 64; 4 tolerates one faulty validator).
    #[arg(long, default_value_t = 4)]
    pub validators: usize,
    /// The folder to write (must not exist, or be empty).
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
    /// Validator i's API listens on 127.0.0.1:<base-port + i>.
    #[arg(long, default_value_t = 8645)]
    pub base_port: u16,
    /// Validator i's p2p transport listens on 127.0.0.1:<p2p-port + i>.
    #[arg(long, default_value_t = 9645)]
    pub p2p_port: u16,
    /// The chain id.
    #[arg(long, default_value = "gamechain-testnet")]
    pub chain_id: String,
    /// The chain's `min_block_interval_ms` (least block time between blocks; consensus). The
    /// engine's timeouts are set from it: a leader waits out the interval within its view.
    #[arg(long, default_value_t = gamechain_runtime::chain::clock::DEFAULT_MIN_BLOCK_INTERVAL_MS)]
    pub min_block_interval_ms: u64,
    /// Run every validator in the foreground after writing the folder, until Ctrl-C.
    #[arg(long)]
    pub start: bool,
}

/// What `write` made: per validator, its folder and API URL.
#[derive(Debug, Clone)]
pub struct Testnet {
    /// `(folder, API URL)` per validator.
    pub validators: Vec<(PathBuf, String)>,
}

fn io(what: &str, path: &Path, e: impl std::fmt::Display) -> String {
    format!("cannot {what} {}: {e}", path.display())
}

/// The leader timeout of a testnet whose blocks are `interval_ms` apart: twice the interval plus
/// a second, so that a leader whose view starts as its parent is notarized can wait out the
/// interval (a leader proposes after half its timeout at the latest) and still be voted on.
pub fn leader_timeout_ms(interval_ms: u64) -> u64 {
    interval_ms.saturating_mul(2).saturating_add(1_000)
}

/// Writes the folder (module docs). Errors: a bad argument, or a file that cannot be written.
pub fn write(args: &TestnetArgs) -> Result<Testnet, String> {
    let n = args.validators;
    if n == 0 || n > gamechain_runtime::chain::validators::MAX_VALIDATORS {
        return Err(format!(
            "--validators must be 1 to {}",
            gamechain_runtime::chain::validators::MAX_VALIDATORS
        ));
    }
    let last = |base: u16, what: &str| {
        base.checked_add(n as u16 - 1)
            .ok_or_else(|| format!("--{what} + {} does not fit a port", n - 1))
    };
    last(args.base_port, "base-port")?;
    last(args.p2p_port, "p2p-port")?;
    if args.dir.exists()
        && std::fs::read_dir(&args.dir)
            .map_err(|e| io("read", &args.dir, e))?
            .next()
            .is_some()
    {
        return Err(format!(
            "{} is not empty: testnet never overwrites keys; choose a new folder",
            args.dir.display()
        ));
    }
    let config = NodeConfig {
        chain_id: args.chain_id.clone(),
        min_block_interval_ms: args.min_block_interval_ms,
        ..NodeConfig::default()
    };
    config.validate().map_err(|e| e.to_string())?;
    let block_keys: Vec<SecretKey> = (0..n)
        .map(|_| SecretKey::generate(config.network))
        .collect();
    let consensus_keys: Vec<_> = (0..n).map(|_| keys::generate()).collect();
    let mut genesis = new_genesis(&config, &block_keys[0]).map_err(|e| e.to_string())?;
    genesis.validators = Some(ValidatorSet {
        engine: ENGINE_SIMPLEX.into(),
        set: (0..n)
            .map(|i| GenesisValidator {
                address: block_keys[i].address(),
                consensus_key: keys::public_hex(&consensus_keys[i]),
                voting_power: 1,
            })
            .collect(),
        leader_timeout_ms: leader_timeout_ms(args.min_block_interval_ms),
        certification_timeout_ms: leader_timeout_ms(args.min_block_interval_ms) + 1_000,
        timeout_retry_ms: 10_000,
    });
    genesis.validate().map_err(|e| e.to_string())?;
    let genesis_json = genesis.to_json_pretty();
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let folder = args.dir.join(i.to_string());
        let data = folder.join("data");
        std::fs::create_dir_all(&data).map_err(|e| io("create", &data, e))?;
        std::fs::write(data.join("genesis.json"), &genesis_json)
            .map_err(|e| io("write", &data.join("genesis.json"), e))?;
        gamechain_client::keyfile::write_key_file(&data.join("sequencer.wif"), &block_keys[i])?;
        keys::write_new(&data, &consensus_keys[i]).map_err(|e| e.to_string())?;
        let api = args.base_port + i as u16;
        let peers: Vec<String> = (0..n)
            .filter(|j| *j != i)
            .map(|j| {
                format!(
                    "\"{}@127.0.0.1:{}\"",
                    keys::public_hex(&consensus_keys[j]),
                    args.p2p_port + j as u16
                )
            })
            .collect();
        let toml = format!(
            "# Validator {i} of {n} (gamechain testnet). Run from this folder:\n\
             #   gamechain node --validator --config node.toml\n\
             data_dir = \"data\"\n\
             listen = \"127.0.0.1:{api}\"\n\
             chain_id = \"{chain}\"\n\
             rate_limit_per_sec = 0\n\
             \n\
             [validator]\n\
             p2p_listen = \"127.0.0.1:{p2p}\"\n\
             peers = [{peers}]\n",
            chain = args.chain_id,
            p2p = args.p2p_port + i as u16,
            peers = peers.join(", "),
        );
        let path = folder.join("node.toml");
        std::fs::write(&path, toml).map_err(|e| io("write", &path, e))?;
        out.push((folder, format!("http://127.0.0.1:{api}")));
    }
    Ok(Testnet { validators: out })
}

/// `gamechain testnet`: writes the folder, prints each validator's folder and API, and with
/// `--start` runs them until Ctrl-C or SIGTERM.
pub async fn run(args: TestnetArgs, out: &mut impl std::io::Write) -> Result<(), String> {
    let net = write(&args)?;
    for (i, (folder, url)) in net.validators.iter().enumerate() {
        let _ = writeln!(out, "validator {i}: {} (API {url})", folder.display());
    }
    if !args.start {
        let _ = writeln!(
            out,
            "start each with `gamechain node --validator --config node.toml` from its folder, or all \
             with --start"
        );
        return Ok(());
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this binary: {e}"))?;
    let mut children = Vec::new();
    for (i, (folder, _)) in net.validators.iter().enumerate() {
        let mut child = tokio::process::Command::new(&exe)
            .args(["node", "--validator", "--config", "node.toml"])
            .current_dir(folder)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start validator {i}: {e}"))?;
        let stderr = child.stderr.take().expect("piped");
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                eprintln!("[{i}] {line}");
            }
        });
        children.push(child);
    }
    crate::cli::node::shutdown_signal().await;
    for child in &children {
        if let Some(pid) = child.id() {
            // SIGTERM: each validator stops cleanly.
            unsafe {
                libc::kill(pid as i32, libc::SIGTERM);
            }
        }
    }
    for (i, child) in children.iter_mut().enumerate() {
        match child.wait().await {
            Ok(status) if status.success() => {}
            Ok(status) => eprintln!("validator {i} exited with {status}"),
            Err(e) => eprintln!("validator {i}: {e}"),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_one_runnable_folder_per_validator_and_never_overwrites() {
        let dir = tempfile::tempdir().unwrap();
        let args = TestnetArgs {
            validators: 4,
            dir: dir.path().join("net"),
            base_port: 18_000,
            min_block_interval_ms: 1_000,
            p2p_port: 19_000,
            chain_id: "t".into(),
            start: false,
        };
        let net = write(&args).unwrap();
        assert_eq!(net.validators.len(), 4);
        let genesis0 = std::fs::read_to_string(args.dir.join("0/data/genesis.json")).unwrap();
        for i in 0..4 {
            let folder = args.dir.join(i.to_string());
            assert_eq!(
                std::fs::read_to_string(folder.join("data/genesis.json")).unwrap(),
                genesis0,
                "one genesis"
            );
            let config = NodeConfig::load(&folder.join("node.toml")).unwrap();
            assert_eq!(config.listen.port(), 18_000 + i as u16);
            let v = config.validator.unwrap();
            assert_eq!(v.p2p_listen.port(), 19_000 + i as u16);
            assert_eq!(v.parsed_peers().unwrap().len(), 3);
            keys::read(&folder.join("data")).unwrap();
        }
        let genesis = gamechain_runtime::chain::Genesis::from_json(&genesis0).unwrap();
        assert_eq!(genesis.validators.unwrap().set.len(), 4);
        assert!(write(&args).unwrap_err().contains("not empty"));
        let bad = TestnetArgs {
            validators: 0,
            dir: dir.path().join("other"),
            ..args.clone()
        };
        assert!(write(&bad).is_err());
    }
}
