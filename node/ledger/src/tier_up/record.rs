//! What a node remembers, across restarts, of the tier-ups it abandoned: the file
//! `<data>/compiled/tier_up_abandoned` ([`FILE_NAME`], beside the compiled-module cache unless
//! `compiled_dir` moves the cache, which may be shared: this record stays the node's own; as
//! safe to delete: the compiles are then tried again). Node policy only, like tier-up itself:
//! nothing here reaches a receipt or a root.
//!
//! Without it, every restart queued each abandoned upload again and spent a whole
//! `tier_up_budget_ms` of a core on it before giving up: a chain holding many compile bombs
//! cost its nodes that much background work at every start.
//!
//! Only abandonments that look like the code's fault are written (`tier_up.rs`: out of memory,
//! or at least 90% of the time budget spent on a CPU), one line each, five fields separated by
//! spaces: the code hash (64 lowercase hex digits), the runtime's configuration hash, the
//! Cranelift optimisation level, and the budget in milliseconds and the memory in bytes of the
//! compile. A line *covers* this node when it has this node's configuration hash and
//! optimisation level and a budget and a memory at least this node's (an operator who raises
//! either, or a node whose runtime changed, tries again). At start ([`remembered`]) a code hash
//! is not queued again when at least [`STRIKES`] lines cover it: abandoned in two runs of the
//! node, not once. One abandonment may be the machine's doing (a busy sibling hyperthread or
//! memory bus slows a compile without taking its CPU time away, and the whole machine running
//! out of memory looks like the compile's own limit); the next start then tries once more.
//!
//! Bounded: only the file's last [`MAX_RECORD_BYTES`] are read, lines that do not parse are
//! skipped, at most `MAX_TIER_UP_ABANDONED` hashes come back (the newest), and once the file
//! reaches [`MAX_RECORD_BYTES`] it is rewritten with its newer half before the next line is
//! added.

use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use gamechain_runtime::MAX_TIER_UP_ABANDONED;

/// How many covering lines keep a code hash from being queued at start: 2 (two runs of the
/// node abandoned it).
pub const STRIKES: usize = 2;

/// The file's name in the compiled-module cache's directory.
pub const FILE_NAME: &str = "tier_up_abandoned";

/// Most bytes of the file read at start, and its size past which it is rewritten with its newer
/// half: 4 MiB (about 27,000 lines; the newer half holds [`STRIKES`] lines for more than
/// `MAX_TIER_UP_ABANDONED` hashes).
pub const MAX_RECORD_BYTES: u64 = 4 << 20;

/// The settings a compile was abandoned under (and those of this node, to compare with).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The runtime's configuration hash (`RuntimeConfig::config_hash`): it names the wasmtime
    /// release and every setting that shapes the code.
    pub engine: String,
    /// The Cranelift optimisation level of the compile (`OptLevel::name`).
    pub opt_level: String,
    /// `tier_up_budget_ms`.
    pub budget_ms: u64,
    /// `tier_up_memory_mib`, in bytes.
    pub memory_bytes: u64,
}

impl Settings {
    /// The record line of an abandoned compile of `code_hash` under these settings (no newline).
    pub fn line(&self, code_hash: &str) -> String {
        format!(
            "{code_hash} {} {} {} {}",
            self.engine, self.opt_level, self.budget_ms, self.memory_bytes
        )
    }

    /// The code hash of `line` when it was abandoned under settings that make a new try under
    /// `self` pointless: the same engine and optimisation level, a budget and a memory at least
    /// this node's. `None` for any other line, malformed ones included.
    fn covers(&self, line: &str) -> Option<String> {
        let mut fields = line.split(' ');
        let hash = fields.next()?;
        let engine = fields.next()?;
        let opt_level = fields.next()?;
        let budget_ms: u64 = fields.next()?.parse().ok()?;
        let memory_bytes: u64 = fields.next()?.parse().ok()?;
        let hex = |c: u8| c.is_ascii_digit() || (b'a'..=b'f').contains(&c);
        let ok = fields.next().is_none()
            && hash.len() == 64
            && hash.bytes().all(hex)
            && engine == self.engine
            && opt_level == self.opt_level
            && budget_ms >= self.budget_ms
            && memory_bytes >= self.memory_bytes;
        ok.then(|| hash.to_string())
    }
}

/// The code hashes that at least [`STRIKES`] lines of `path` cover under `now` (see the module
/// docs), oldest first by their newest line, each once, at most `MAX_TIER_UP_ABANDONED` (the
/// newest). A missing file gives none. Errors: reading the file (the caller logs them and goes
/// on without the record).
pub fn remembered(path: &Path, now: &Settings) -> std::io::Result<Vec<String>> {
    let Some(bytes) = tail(path)? else {
        return Ok(Vec::new());
    };
    let text = String::from_utf8_lossy(&bytes);
    let mut strikes: BTreeMap<String, usize> = BTreeMap::new();
    // Newest line first, so the newest survive the bound; then back to oldest first.
    let mut order = Vec::new();
    for line in text.lines().rev() {
        if let Some(hash) = now.covers(line) {
            let n = strikes.entry(hash.clone()).or_default();
            *n += 1;
            if *n == 1 {
                order.push(hash);
            }
        }
    }
    let mut hashes: Vec<String> = order
        .into_iter()
        .filter(|h| strikes[h] >= STRIKES)
        .take(MAX_TIER_UP_ABANDONED)
        .collect();
    hashes.reverse();
    Ok(hashes)
}

/// The whole lines among the last [`MAX_RECORD_BYTES`] of `path` (a line cut by that bound is
/// left out); `None` when there is no file.
fn tail(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    let mut file = match fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let len = file.metadata()?.len();
    let skip = len.saturating_sub(MAX_RECORD_BYTES);
    file.seek(SeekFrom::Start(skip))?;
    let mut bytes = Vec::new();
    file.take(MAX_RECORD_BYTES).read_to_end(&mut bytes)?;
    if skip > 0 {
        let first = bytes
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |i| i + 1);
        bytes.drain(..first);
    }
    Ok(Some(bytes))
}

/// Adds the line of an abandoned compile of `code_hash` under `now` to `path` (creating it and
/// its directory), first rewriting the file with the newer half of its last
/// [`MAX_RECORD_BYTES`] (through a temporary file and a rename) when it has reached that size.
/// Errors: the file system's.
pub fn remember(path: &Path, code_hash: &str, now: &Settings) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    if fs::metadata(path).map(|m| m.len()).unwrap_or(0) >= MAX_RECORD_BYTES {
        let mut bytes = tail(path)?.unwrap_or_default();
        let half = bytes.len() / 2;
        let start = bytes[half..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |i| half + i + 1);
        bytes.drain(..start);
        // A last line without its newline (a write cut short) is ended, so the next line
        // stays whole.
        if bytes.last().is_some_and(|&b| b != b'\n') {
            bytes.push(b'\n');
        }
        let tmp = path.with_extension("tmp");
        fs::write(&tmp, &bytes)?;
        fs::rename(&tmp, path)?;
    }
    let mut file = OpenOptions::new()
        .create(true)
        .read(true)
        .append(true)
        .open(path)?;
    // After a write cut short (a crash), the new line starts on a line of its own.
    let mut last = [b'\n'];
    if file.metadata()?.len() > 0 {
        file.seek(SeekFrom::End(-1))?;
        file.read_exact(&mut last)?;
    }
    let sep = if last[0] == b'\n' { "" } else { "\n" };
    file.write_all(format!("{sep}{}\n", now.line(code_hash)).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(budget_ms: u64, memory_bytes: u64) -> Settings {
        Settings {
            engine: "e".repeat(64),
            opt_level: "speed".into(),
            budget_ms,
            memory_bytes,
        }
    }

    fn hash(i: u32) -> String {
        format!("{i:064x}")
    }

    /// Writes each line twice: two runs' strikes.
    fn twice(path: &Path, code_hash: &str, s: &Settings) {
        remember(path, code_hash, s).unwrap();
        remember(path, code_hash, s).unwrap();
    }

    #[test]
    fn a_remembered_abandonment_holds_until_the_budget_memory_or_engine_grows_or_changes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("compiled").join(FILE_NAME);
        let now = settings(10_000, 2 << 30);
        assert_eq!(remembered(&path, &now).unwrap(), Vec::<String>::new());
        // One strike is not enough: the next start tries once more.
        remember(&path, &hash(1), &now).unwrap();
        assert_eq!(remembered(&path, &now).unwrap(), Vec::<String>::new());
        twice(&path, &hash(2), &settings(20_000, 4 << 30));
        remember(&path, &hash(1), &now).unwrap();
        // Each once, oldest first (by its newest line).
        assert_eq!(remembered(&path, &now).unwrap(), vec![hash(2), hash(1)]);
        // Strikes under a larger budget count for a smaller one, not the other way round.
        remember(&path, &hash(3), &now).unwrap();
        remember(&path, &hash(3), &settings(20_000, 4 << 30)).unwrap();
        assert_eq!(
            remembered(&path, &now).unwrap(),
            vec![hash(2), hash(1), hash(3)]
        );
        assert_eq!(
            remembered(&path, &settings(15_000, 2 << 30)).unwrap(),
            vec![hash(2)]
        );
        assert_eq!(
            remembered(&path, &settings(10_000, 3 << 30)).unwrap(),
            vec![hash(2)]
        );
        assert!(remembered(&path, &settings(30_000, 2 << 30))
            .unwrap()
            .is_empty());
        // Another runtime or optimisation level tries again.
        let other_engine = Settings {
            engine: "f".repeat(64),
            ..now.clone()
        };
        assert!(remembered(&path, &other_engine).unwrap().is_empty());
        let other_level = Settings {
            opt_level: "none".into(),
            ..now.clone()
        };
        assert!(remembered(&path, &other_level).unwrap().is_empty());
    }

    #[test]
    fn damaged_lines_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        let now = settings(10_000, 2 << 30);
        let good = now.line(&hash(7));
        let text = [
            "garbage".to_string(),
            now.line("XYZ"),
            now.line(&hash(0xabc).to_uppercase()),
            format!("{good} extra"),
            good.replace("10000", "ten"),
            good[..good.len() - 3].to_string() + "\u{fffd}",
            String::new(),
            good.clone(),
            good.clone(),
        ]
        .join("\n");
        fs::write(&path, text.as_bytes()).unwrap();
        let mut bytes = fs::read(&path).unwrap();
        bytes.extend_from_slice(b"\n\xff\xfe not utf-8\n");
        // A line cut short by a crash, without its newline.
        bytes.extend_from_slice(&now.line(&hash(8)).as_bytes()[..70]);
        fs::write(&path, bytes).unwrap();
        assert_eq!(remembered(&path, &now).unwrap(), vec![hash(7)]);
        // The next lines are whole all the same.
        twice(&path, &hash(9), &now);
        assert_eq!(remembered(&path, &now).unwrap(), vec![hash(7), hash(9)]);
    }

    #[test]
    fn the_file_stays_bounded_and_keeps_the_newest() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        let now = settings(10_000, 2 << 30);
        let line_bytes = now.line(&hash(0)).len() as u64 + 1;
        let n = (MAX_RECORD_BYTES / line_bytes) as u32 + 100;
        for i in 0..n / 2 {
            twice(&path, &hash(i), &now);
        }
        let n = n / 2;
        let size = fs::metadata(&path).unwrap().len();
        assert!(size <= MAX_RECORD_BYTES + line_bytes, "{size}");
        let got = remembered(&path, &now).unwrap();
        assert_eq!(got.len(), MAX_TIER_UP_ABANDONED);
        assert_eq!(got.last(), Some(&hash(n - 1)));
        assert_eq!(got[0], hash(n - MAX_TIER_UP_ABANDONED as u32));
        // A file grown past the bound by other means is read from its last 4 MiB only.
        let mut big = vec![b'x'; 3 * MAX_RECORD_BYTES as usize];
        let line = now.line(&hash(9));
        big.extend_from_slice(format!("\n{line}\n{line}\n").as_bytes());
        fs::write(&path, big).unwrap();
        assert_eq!(remembered(&path, &now).unwrap(), vec![hash(9)]);
    }
}
