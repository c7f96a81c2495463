//! `gamechain testnet --validators N --dir DIR`: a local network of N validators in one folder;
//! `gamechain testnet --hosts h0,h1,h2,h3 --dir DIR`: the same for one validator per machine.
//!
//! It writes, for validator `i` (0-based), `DIR/<i>/node.toml` (its API on
//! `127.0.0.1:<base-port + i>`, its p2p transport on `127.0.0.1:<p2p-port + i>`, every other
//! validator as a peer, `data_dir = "data"`; with `--hosts`, validator `i` runs on host `h<i>`
//! (an IP address or a DNS name): its API and p2p transport listen on every interface at
//! `<base-port>` and `<p2p-port>`, the same on every host, and its peers are named
//! `<key>@h<j>:<p2p-port>`) and `DIR/<i>/data/` with the shared `genesis.json`
//! (naming the N validators and the group key of their threshold randomness beacon), its
//! block-signing key `sequencer.wif` and its consensus key `consensus.key` (both mode 0600,
//! freshly generated), and its share of the beacon key `beacon_share.json` (mode 0600): testnet
//! deals the beacon key as a trusted dealer (`validator/beacon/share.rs`, threshold 2f + 1,
//! share i to the validator at position i of the set ordered by consensus key) and keeps
//! nothing of it but these files. Each folder runs alone with
//! `gamechain node --validator --config node.toml` from inside it; `--start` runs all of them
//! as child processes in the foreground (their logs prefixed with `[i]`) until Ctrl-C, which
//! stops them cleanly (not with `--hosts`: each folder is copied to its machine and started
//! there). `DIR` must not exist yet or be empty: keys are never overwritten. The validators of
//! a one-machine testnet share one compiled-module cache, `DIR/compiled/`
//! (`compiled_dir = "../compiled"`), which testnet fills with the genesis modules once.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use gamechain_runtime::chain::{
    BeaconConfig, Genesis, GenesisValidator, SecretKey, ValidatorSet, ENGINE_SIMPLEX,
};
use tokio::io::{AsyncBufReadExt as _, BufReader};

use crate::config::peer_addr::PeerAddr;
use crate::config::NodeConfig;
use crate::validator::keys;
use gamechain_ledger::genesis_setup::new_genesis;

/// `gamechain testnet`'s options.
#[derive(Debug, Clone, clap::Args)]
pub struct TestnetArgs {
    /// How many validators (1 to 64; 4 tolerates one faulty validator).
    #[arg(long, default_value_t = 4)]
    pub validators: usize,
    /// One validator per machine: the machines' IP addresses or DNS names, comma-separated, in
    /// validator order (their number is the number of validators). Every validator listens on
    /// all interfaces at `--base-port` (API) and `--p2p-port` (p2p); each is named by its host.
    #[arg(long, value_delimiter = ',', conflicts_with_all = ["validators", "start"])]
    pub hosts: Vec<String>,
    /// The folder to write (must not exist, or be empty).
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
    /// Validator i's API listens on 127.0.0.1:<base-port + i> (with --hosts: 0.0.0.0:<base-port>).
    #[arg(long, default_value_t = 8645)]
    pub base_port: u16,
    /// Validator i's p2p transport listens on 127.0.0.1:<p2p-port + i> (with --hosts:
    /// 0.0.0.0:<p2p-port>).
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
    /// The compiled-module cache the validators share (default `DIR/compiled`), filled with the
    /// genesis modules before they start; with `--hosts` none is shared (each machine keeps its
    /// own, `<data_dir>/compiled`).
    #[arg(long, value_name = "DIR", conflicts_with = "hosts")]
    pub compiled_dir: Option<PathBuf>,
}

/// What `write` made: per validator, its folder and API URL.
#[derive(Debug, Clone)]
pub struct Testnet {
    /// `(folder, API URL)` per validator.
    pub validators: Vec<(PathBuf, String)>,
    /// Whether the validators are on the hosts of `--hosts` (not this machine).
    pub hosts: bool,
}

/// Where validator `i` of `n` listens and how the others reach it.
struct Place {
    /// API listen address.
    api: SocketAddr,
    /// p2p listen address.
    p2p: SocketAddr,
    /// `host:port` the others dial.
    dial: String,
    /// The API's URL from elsewhere.
    url: String,
}

/// `host` (IP or DNS name) with `port`, as a peer address and URL authority: `[…]` around IPv6.
fn authority(host: &str, port: u16) -> Result<String, String> {
    let text = match host.parse::<IpAddr>() {
        Ok(IpAddr::V6(ip)) => format!("[{ip}]:{port}"),
        Ok(IpAddr::V4(ip)) => format!("{ip}:{port}"),
        Err(_) => format!("{host}:{port}"),
    };
    PeerAddr::parse(&text).map_err(|e| format!("--hosts: {e}"))?;
    Ok(text)
}

/// Every validator's [`Place`] (module docs). Errors: a host that is neither an IP address
/// nor a hostname, a host named twice, ports that do not fit.
fn places(args: &TestnetArgs) -> Result<Vec<Place>, String> {
    if args.hosts.is_empty() {
        let n = args.validators;
        let last = |base: u16, what: &str| {
            base.checked_add(n as u16 - 1)
                .ok_or_else(|| format!("--{what} + {} does not fit a port", n - 1))
        };
        last(args.base_port, "base-port")?;
        last(args.p2p_port, "p2p-port")?;
        return Ok((0..n as u16)
            .map(|i| Place {
                api: SocketAddr::from(([127, 0, 0, 1], args.base_port + i)),
                p2p: SocketAddr::from(([127, 0, 0, 1], args.p2p_port + i)),
                dial: format!("127.0.0.1:{}", args.p2p_port + i),
                url: format!("http://127.0.0.1:{}", args.base_port + i),
            })
            .collect());
    }
    if args.base_port == args.p2p_port {
        return Err("--base-port and --p2p-port must differ (both listen on each host)".into());
    }
    let mut seen = std::collections::BTreeSet::new();
    args.hosts
        .iter()
        .map(|host| {
            let host = host.trim();
            if !seen.insert(host.to_ascii_lowercase()) {
                return Err(format!(
                    "--hosts names {host} twice: one validator per host"
                ));
            }
            let any: IpAddr = match host.parse::<IpAddr>() {
                Ok(IpAddr::V6(_)) => Ipv6Addr::UNSPECIFIED.into(),
                _ => Ipv4Addr::UNSPECIFIED.into(),
            };
            Ok(Place {
                api: SocketAddr::new(any, args.base_port),
                p2p: SocketAddr::new(any, args.p2p_port),
                dial: authority(host, args.p2p_port)?,
                url: format!("http://{}", authority(host, args.base_port)?),
            })
        })
        .collect()
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
    let n = if args.hosts.is_empty() {
        args.validators
    } else {
        args.hosts.len()
    };
    if n == 0 || n > gamechain_runtime::chain::validators::MAX_VALIDATORS {
        return Err(format!(
            "--validators (or --hosts) must name 1 to {} validators",
            gamechain_runtime::chain::validators::MAX_VALIDATORS
        ));
    }
    let places = places(args)?;
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
    let mut genesis = new_genesis(&config.ledger(), &block_keys[0]).map_err(|e| e.to_string())?;
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
    let dealt = crate::validator::beacon::share::deal_to_set(
        genesis.validators.as_ref().expect("set above"),
    )?;
    genesis.beacon = Some(BeaconConfig::threshold(
        dealt.public_key.clone(),
        dealt.threshold,
    ));
    genesis.validate().map_err(|e| e.to_string())?;
    // Share i goes to the validator at position i of the set ordered by consensus key.
    let positions =
        crate::proof::finality::participant_keys(genesis.validators.as_ref().expect("set above"))?;
    let genesis_json = genesis.to_json_pretty();
    // Relative to each validator's folder, where it runs.
    let shared_cache = match &args.compiled_dir {
        Some(dir) => std::path::absolute(dir).map_err(|e| io("resolve", dir, e))?,
        None => PathBuf::from("../compiled"),
    };
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let folder = args.dir.join(i.to_string());
        let data = folder.join("data");
        std::fs::create_dir_all(&data).map_err(|e| io("create", &data, e))?;
        std::fs::write(data.join("genesis.json"), &genesis_json)
            .map_err(|e| io("write", &data.join("genesis.json"), e))?;
        gamechain_chain::key_file::write_key_file(&data.join("sequencer.wif"), &block_keys[i])?;
        keys::write_new(&data, &consensus_keys[i]).map_err(|e| e.to_string())?;
        let position = positions
            .iter()
            .position(|k| hex::encode(k) == keys::public_hex(&consensus_keys[i]))
            .expect("every validator is in the set");
        crate::validator::beacon::share::write_new(&data, &dealt.files[position])?;
        let place = &places[i];
        let peers: Vec<String> = (0..n)
            .filter(|j| *j != i)
            .map(|j| {
                format!(
                    "\"{}@{}\"",
                    keys::public_hex(&consensus_keys[j]),
                    places[j].dial
                )
            })
            .collect();
        let (title, rate_limit) = if args.hosts.is_empty() {
            (
                String::new(),
                format!(
                    "rate_limit_per_sec = 0\ncompiled_dir = {}\n",
                    toml_string(&shared_cache.display().to_string())
                ),
            )
        } else {
            (
                format!(
                    " on host {} (copy this folder there; the API answers at {}, the others \
                     dial {}: open TCP {} to them and {} to clients)",
                    args.hosts[i].trim(),
                    place.url,
                    place.dial,
                    args.p2p_port,
                    args.base_port
                ),
                String::new(),
            )
        };
        let toml = format!(
            "# Validator {i} of {n} (gamechain testnet){title}. Run from this folder:\n\
             #   gamechain node --validator --config node.toml\n\
             data_dir = \"data\"\n\
             listen = \"{api}\"\n\
             chain_id = \"{chain}\"\n\
             {rate_limit}\
             \n\
             [validator]\n\
             p2p_listen = \"{p2p}\"\n\
             peers = [{peers}]\n",
            api = place.api,
            chain = args.chain_id,
            p2p = place.p2p,
            peers = peers.join(", "),
        );
        let path = folder.join("node.toml");
        std::fs::write(&path, toml).map_err(|e| io("write", &path, e))?;
        out.push((folder, place.url.clone()));
    }
    if args.hosts.is_empty() {
        let dir = args
            .compiled_dir
            .clone()
            .unwrap_or_else(|| args.dir.join("compiled"));
        fill_compiled_cache(&config, &genesis, &dir)?;
    }
    Ok(Testnet {
        validators: out,
        hosts: !args.hosts.is_empty(),
    })
}

/// `text` as a TOML basic string.
fn toml_string(text: &str) -> String {
    toml::Value::String(text.to_string()).to_string()
}

/// Compiles the genesis modules once into `dir`, the compiled-module cache the validators of a
/// one-machine testnet share (`compiled_dir = "../compiled"`), as each of them would (the same
/// runtime configuration, so the same cache keys): each then loads them instead of compiling
/// them, and four validators starting at once do not compile the same code four times.
fn fill_compiled_cache(config: &NodeConfig, genesis: &Genesis, dir: &Path) -> Result<(), String> {
    let ledger = gamechain_ledger::LedgerConfig {
        compiled_dir: Some(dir.to_path_buf()),
        ..config.ledger()
    };
    let code: BTreeMap<String, Vec<u8>> = gamechain_ledger::genesis_modules::codes_by_hash()
        .into_iter()
        .map(|(hash, wasm)| (hash, wasm.to_vec()))
        .collect();
    let runtime = gamechain_ledger::open::node_runtime_config(&ledger, genesis);
    gamechain_ledger::open::chain_context(&ledger, genesis, runtime, &code)
        .map(|_| ())
        .map_err(|e| format!("compiling the genesis modules into {}: {e}", dir.display()))
}

/// `gamechain testnet`: writes the folder, prints each validator's folder and API, and with
/// `--start` runs them until Ctrl-C or SIGTERM.
pub async fn run(args: TestnetArgs, out: &mut impl std::io::Write) -> Result<(), String> {
    let net = write(&args)?;
    for (i, (folder, url)) in net.validators.iter().enumerate() {
        if net.hosts {
            let _ = writeln!(
                out,
                "validator {i}: {} -> copy to host {} (API {url})",
                folder.display(),
                args.hosts[i].trim()
            );
        } else {
            let _ = writeln!(out, "validator {i}: {} (API {url})", folder.display());
        }
    }
    if net.hosts {
        let _ = writeln!(
            out,
            "copy each folder to its host (its keys are secret: scp -r, then keep it 0700), open \
             TCP {} between the hosts and {} to clients, and start each there with `gamechain \
             node --validator --config node.toml` from inside the folder (docs/validators.md, \
             \"Several machines\")",
            args.p2p_port, args.base_port
        );
        return Ok(());
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
    crate::cli::signal::shutdown_signal().await;
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
            hosts: vec![],
            compiled_dir: None,
        };
        let net = write(&args).unwrap();
        assert_eq!(net.validators.len(), 4);
        // The validators share one compiled-module cache, filled with every genesis module.
        let cached = std::fs::read_dir(args.dir.join("compiled"))
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .ends_with(".gcm")
            })
            .count();
        assert_eq!(
            cached,
            gamechain_ledger::genesis_modules::default_genesis_ids().len()
        );
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
            assert_eq!(config.compiled_dir, Some(PathBuf::from("../compiled")));
            let v = config.validator.unwrap();
            assert_eq!(v.p2p_listen.port(), 19_000 + i as u16);
            assert_eq!(v.parsed_peers().unwrap().len(), 3);
            keys::read(&folder.join("data")).unwrap();
        }
        let genesis = gamechain_runtime::chain::Genesis::from_json(&genesis0).unwrap();
        let set = genesis.validators.clone().unwrap();
        assert_eq!(set.set.len(), 4);
        // Each folder holds its validator's share of the genesis group key (threshold 3 of 4).
        let beacon = genesis.beacon.clone().unwrap();
        assert_eq!(beacon.threshold, Some(3));
        let order = crate::proof::finality::participant_keys(&set).unwrap();
        for i in 0..4 {
            let data = args.dir.join(i.to_string()).join("data");
            let me = keys::public_hex(&keys::read(&data).unwrap());
            let position = order.iter().position(|k| hex::encode(k) == me).unwrap() as u32;
            let share =
                crate::validator::beacon::share::load(&data, &genesis, 4, position).unwrap();
            assert_eq!(share.unwrap().index(), position);
            let other = (position + 1) % 4;
            assert!(crate::validator::beacon::share::load(&data, &genesis, 4, other).is_err());
        }
        assert!(write(&args).unwrap_err().contains("not empty"));
        let bad = TestnetArgs {
            validators: 0,
            dir: dir.path().join("other"),
            ..args.clone()
        };
        assert!(write(&bad).is_err());
    }

    #[test]
    fn hosts_get_one_folder_each_listening_everywhere_and_peers_named_by_host() {
        let dir = tempfile::tempdir().unwrap();
        let hosts = [
            "10.0.0.1",
            "v1.example.org",
            "2001:db8::3",
            "V3.example.org",
        ];
        let args = TestnetArgs {
            validators: 4,
            dir: dir.path().join("net"),
            base_port: 8645,
            min_block_interval_ms: 1_000,
            p2p_port: 9645,
            chain_id: "t".into(),
            start: false,
            hosts: hosts.iter().map(|h| h.to_string()).collect(),
            compiled_dir: None,
        };
        let net = write(&args).unwrap();
        assert!(net.hosts);
        let urls: Vec<&str> = net.validators.iter().map(|v| v.1.as_str()).collect();
        assert_eq!(
            urls,
            [
                "http://10.0.0.1:8645",
                "http://v1.example.org:8645",
                "http://[2001:db8::3]:8645",
                "http://V3.example.org:8645"
            ]
        );
        let dials = [
            "10.0.0.1:9645",
            "v1.example.org:9645",
            "[2001:db8::3]:9645",
            "V3.example.org:9645",
        ];
        let mut keys_seen = Vec::new();
        for i in 0..4 {
            let folder = args.dir.join(i.to_string());
            let text = std::fs::read_to_string(folder.join("node.toml")).unwrap();
            assert!(text.contains(&format!("on host {}", hosts[i])), "{text}");
            let config = NodeConfig::load(&folder.join("node.toml")).unwrap();
            assert_eq!(
                config.rate_limit_per_sec,
                NodeConfig::default().rate_limit_per_sec
            );
            let v = config.validator.unwrap();
            assert!(v.allow_private_ips);
            let unspecified = if i == 2 { "[::]" } else { "0.0.0.0" };
            assert_eq!(config.listen.to_string(), format!("{unspecified}:8645"));
            assert_eq!(v.p2p_listen.to_string(), format!("{unspecified}:9645"));
            let peers: Vec<String> = v
                .parsed_peers()
                .unwrap()
                .into_iter()
                .map(|(_, a)| a.to_string())
                .collect();
            let others: Vec<&str> = (0..4).filter(|j| *j != i).map(|j| dials[j]).collect();
            assert_eq!(peers, others);
            keys_seen.push(keys::public_hex(&keys::read(&folder.join("data")).unwrap()));
        }
        // Validator 0's peer entry for validator 1 carries validator 1's own key.
        let config0 = NodeConfig::load(&args.dir.join("0/node.toml")).unwrap();
        assert!(config0.validator.unwrap().peers[0].starts_with(&keys_seen[1]));

        let again = |hosts: &[&str]| {
            write(&TestnetArgs {
                dir: dir.path().join(format!("x{}", hosts.join("_").len())),
                hosts: hosts.iter().map(|h| h.to_string()).collect(),
                ..args.clone()
            })
        };
        assert!(again(&["a.org", "b.org", "A.org"])
            .unwrap_err()
            .contains("twice"));
        assert!(again(&["a.org", "bad_name.org"])
            .unwrap_err()
            .contains("--hosts"));
        assert!(write(&TestnetArgs {
            dir: dir.path().join("y"),
            p2p_port: 8645,
            ..args.clone()
        })
        .unwrap_err()
        .contains("must differ"));
    }
}
