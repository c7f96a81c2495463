//! CPU time, read from Linux's `/proc`, for `gamechain bench`'s "node CPU per transaction": of
//! another process (`--node-pid`), or of this process minus the load generator's own threads
//! (named [`BENCH_THREAD`]) when the node runs in-process. `None` where `/proc` is missing.

use std::time::Duration;

/// The name of the load generator's threads (so their CPU is not counted as the node's).
pub const BENCH_THREAD: &str = "gc-bench";

/// Clock ticks per second of `/proc/*/stat` times (`sysconf(_SC_CLK_TCK)`).
fn ticks_per_sec() -> f64 {
    // SAFETY: sysconf only reads a constant of the system.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// utime + stime of one `/proc/.../stat` file.
fn stat_cpu(path: &str) -> Option<Duration> {
    let text = std::fs::read_to_string(path).ok()?;
    // The command name (field 2) may hold spaces; fields after its closing parenthesis.
    let rest = &text[text.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state is field 3, so utime (14) and stime (15) are at 11 and 12.
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some(Duration::from_secs_f64((utime + stime) / ticks_per_sec()))
}

/// CPU time used so far by process `pid`, all its threads (finished ones included).
pub fn process(pid: u32) -> Option<Duration> {
    stat_cpu(&format!("/proc/{pid}/stat"))
}

/// CPU time used so far by this process's threads named [`BENCH_THREAD`] (live ones).
pub fn bench_threads() -> Option<Duration> {
    let mut total = Duration::ZERO;
    for entry in std::fs::read_dir("/proc/self/task").ok()? {
        let dir = entry.ok()?.path();
        let name = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if name.trim_end() == BENCH_THREAD {
            total += stat_cpu(dir.join("stat").to_str()?)?;
        }
    }
    Some(total)
}

/// The node's CPU so far: process `pid`'s, or (`None`) this process's minus the bench threads'.
pub fn node(pid: Option<u32>) -> Option<Duration> {
    match pid {
        Some(pid) => process(pid),
        None => process(std::process::id())?.checked_sub(bench_threads()?),
    }
}

/// The 1-minute load average (`/proc/loadavg`).
pub fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_used_some_cpu_and_reads_its_load() {
        let spin = std::time::Instant::now();
        let mut x = 0u64;
        while spin.elapsed() < Duration::from_millis(30) {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        assert!(x > 0);
        assert!(process(std::process::id()).unwrap() > Duration::ZERO);
        assert_eq!(
            bench_threads(),
            Some(Duration::ZERO),
            "no bench threads in a unit test"
        );
        assert!(load_average().unwrap() >= 0.0);
    }
}
