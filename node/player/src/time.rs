//! Block times as a player reads and types them: windows given as durations (`10m`, `2h`,
//! `3d`, `300000ms`) and deadlines printed as UTC times with the time left. Channel windows and
//! deadlines are block times in milliseconds (the chain's consensus clock, `header.time_ms`);
//! "time left" is measured against the head block's time, never the client's clock.

/// Milliseconds in `text`: a whole number followed by a unit, `ms`, `s`, `m`, `h` or `d`
/// (`10m` = 600,000). A bare number is refused: windows used to be blocks, so a unit is
/// required. Errors: a line for a person.
pub fn parse_duration_ms(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    let (number, unit) = t.split_at(digits);
    let bad = || {
        format!("`{text}` is not a duration: a whole number and a unit (ms, s, m, h, d), e.g. 10m")
    };
    let n: u64 = number.parse().map_err(|_| bad())?;
    let scale = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" | "min" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return Err(bad()),
    };
    n.checked_mul(scale).ok_or_else(bad)
}

/// `ms` as a short duration: `4 min 59 s`, `2 h 0 min`, `3 d 0 h`, `850 ms`.
pub fn format_duration_ms(ms: u64) -> String {
    let s = ms / 1_000;
    match s {
        0 => format!("{ms} ms"),
        1..=59 => format!("{s} s"),
        60..=3_599 => format!("{} min {} s", s / 60, s % 60),
        3_600..=86_399 => format!("{} h {} min", s / 3_600, (s % 3_600) / 60),
        _ => format!("{} d {} h", s / 86_400, (s % 86_400) / 3_600),
    }
}

/// `ms` since the Unix epoch as `YYYY-MM-DD hh:mm:ss UTC`.
pub fn format_time_ms(ms: u64) -> String {
    let secs = ms / 1_000;
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rest / 3_600,
        (rest % 3_600) / 60,
        rest % 60
    )
}

/// A block-time deadline for a person: `2026-12-02 19:28:05 UTC, in 4 min 59 s` against the
/// head's time `now_ms`, or `…, 12 s ago` once passed.
pub fn describe_deadline(deadline_ms: u64, now_ms: u64) -> String {
    let at = format_time_ms(deadline_ms);
    if deadline_ms >= now_ms {
        format!("{at}, in {}", format_duration_ms(deadline_ms - now_ms))
    } else {
        format!("{at}, {} ago", format_duration_ms(now_ms - deadline_ms))
    }
}

/// The proleptic Gregorian date of `days` since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channel_durations_need_a_unit() {
        assert_eq!(parse_duration_ms("10m"), Ok(600_000));
        assert_eq!(parse_duration_ms("300000ms"), Ok(300_000));
        assert_eq!(parse_duration_ms("2h"), Ok(7_200_000));
        assert_eq!(parse_duration_ms("3d"), Ok(259_200_000));
        assert_eq!(parse_duration_ms("45s"), Ok(45_000));
        for bad in [
            "20",
            "m",
            "1.5h",
            "-1m",
            "10 weeks",
            "99999999999999999999d",
        ] {
            assert!(parse_duration_ms(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn channel_times_print_in_utc_with_the_time_left() {
        assert_eq!(format_time_ms(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(format_time_ms(1_790_000_000_000), "2026-09-21 14:13:20 UTC");
        assert_eq!(format_time_ms(951_782_400_000), "2000-02-29 00:00:00 UTC");
        assert_eq!(format_duration_ms(299_000), "4 min 59 s");
        assert_eq!(format_duration_ms(7_200_000), "2 h 0 min");
        assert_eq!(format_duration_ms(259_200_000), "3 d 0 h");
        assert_eq!(
            describe_deadline(1_790_000_300_000, 1_790_000_001_000),
            "2026-09-21 14:18:20 UTC, in 4 min 59 s"
        );
        assert_eq!(
            describe_deadline(1_790_000_000_000, 1_790_000_012_000),
            "2026-09-21 14:13:20 UTC, 12 s ago"
        );
    }
}
