//! `gamechain node` (a sequencer, or with `--follow URL` a follower, `follower.rs`): the configuration (embedded defaults, `--config FILE`, then the `--data`
//! and `--listen` overrides, and `--restore-from URL`, `replica/restore.rs`), logging through `tracing`, and the node's life until SIGINT or
//! SIGTERM asks it to shut down cleanly.

use crate::cli::signal::shutdown_signal;
use crate::cli::NodeArgs;
use crate::config::NodeConfig;
use crate::server::node::run_node;

/// The configuration `args` describe: `--config FILE` (or the embedded defaults), with
/// `--data` and `--listen` replacing `data_dir` and `listen`. Errors: the file's (unreadable,
/// not TOML of the config's shape, a value out of range).
pub fn config_from(args: &NodeArgs) -> Result<NodeConfig, String> {
    let mut config = match &args.config {
        Some(path) => NodeConfig::load(path).map_err(|e| e.to_string())?,
        None => NodeConfig::default(),
    };
    if let Some(dir) = &args.data {
        config.data_dir = dir.clone();
    }
    if let Some(addr) = args.listen {
        config.listen = addr;
    }
    // Tier-up compiles run this same binary (`internal-tier-up-compile`) in a child process.
    config.tier_up_worker = std::env::current_exe().ok();
    config.restore_from = args.restore_from.clone();
    config.snapshot_from = args.snapshot_from.clone();
    if args.snapshot_from.is_some() && args.follow.is_none() && !args.validator {
        return Err(
            "--snapshot-from needs --follow URL (a follower) or --validator (a validator): a \
             sequencer's chain starts at its own block 0"
                .into(),
        );
    }
    if args.validator && config.validator.is_none() {
        return Err(
            "--validator needs a [validator] table in the configuration (p2p_listen, peers;              `gamechain testnet` writes one)"
                .into(),
        );
    }
    if !args.validator && config.validator.is_some() && args.follow.is_none() {
        return Err(
            "the configuration has a [validator] table: start with --validator to run this validator"
                .into(),
        );
    }
    config.validate().map_err(|e| e.to_string())?;
    Ok(config)
}

/// Installs the `tracing` subscriber: `RUST_LOG` if set, else the configuration's `log` filter;
/// to stderr, in colour only when stderr is a terminal.
pub fn init_logging(filter: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(filter));
    // A second call (tests) keeps the first subscriber.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .try_init();
}

/// Runs the node described by `args` until SIGINT or SIGTERM, then shuts it down cleanly.
/// Errors: the configuration's, or the node's (cannot open its data directory, cannot bind,
/// failed while running), as one line.
pub async fn run(args: NodeArgs) -> Result<(), String> {
    let config = config_from(&args)?;
    init_logging(&config.log);
    match &args.follow {
        Some(url) => crate::server::replica::run_follower(config, url, shutdown_signal()).await,
        None => run_node(config, shutdown_signal()).await,
    }
    .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn flags_override_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("node.toml");
        std::fs::write(
            &file,
            "listen = \"127.0.0.1:9000\"\nblock_interval_ms = 500\n",
        )
        .unwrap();
        let args = NodeArgs {
            config: Some(file.clone()),
            data: Some(PathBuf::from("/tmp/x")),
            listen: None,
            follow: None,
            restore_from: None,
            snapshot_from: None,
            validator: false,
        };
        let config = config_from(&args).unwrap();
        assert_eq!(
            (config.listen.port(), config.block_interval_ms),
            (9000, 500)
        );
        assert_eq!(config.data_dir, PathBuf::from("/tmp/x"));
        let args = NodeArgs {
            config: None,
            data: None,
            listen: Some("127.0.0.1:1234".parse().unwrap()),
            follow: None,
            restore_from: None,
            snapshot_from: None,
            validator: false,
        };
        assert_eq!(config_from(&args).unwrap().listen.port(), 1234);
        std::fs::write(&file, "listn = 1\n").unwrap();
        let args = NodeArgs {
            config: Some(file),
            data: None,
            listen: None,
            follow: None,
            restore_from: None,
            snapshot_from: None,
            validator: false,
        };
        assert!(config_from(&args).is_err());
    }

    #[test]
    fn snapshot_from_needs_follow_or_validator() {
        let args = |follow: Option<&str>| NodeArgs {
            config: None,
            data: None,
            listen: None,
            follow: follow.map(String::from),
            restore_from: None,
            snapshot_from: Some("http://peer".into()),
            validator: false,
        };
        let err = config_from(&args(None)).unwrap_err();
        assert!(err.contains("--snapshot-from needs"), "{err}");
        let config = config_from(&args(Some("http://up"))).unwrap();
        assert_eq!(config.snapshot_from.as_deref(), Some("http://peer"));
    }
}
