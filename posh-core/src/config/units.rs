//! Units of the link estimates: bandwidths (`600Mbit`, `75MB/s`) and round-trip times (`20ms`).

use std::time::Duration;

/// The bandwidth assumed when a link's is not given: 100 Mbit/s, a conservative WAN link.
pub const DEFAULT_BANDWIDTH_BYTES_PER_SEC: f64 = 12_500_000.0;

/// The round-trip time assumed when a link's is not given: 10 ms.
pub const DEFAULT_RTT: Duration = Duration::from_millis(10);

const BANDWIDTH_UNITS: &str = "use bit, Kbit, Mbit, Gbit (bits per second) or B, KB, MB, GB (bytes per second), \
     optionally followed by `/s`";

/// Parses a bandwidth into bytes per second.
///
/// A number, optionally followed by a unit: `bit`/`b` (bits) or `B`/`byte` (bytes), with an
/// optional decimal prefix `K`, `M`, `G`, `T` (any case, powers of 1000) or binary prefix `Ki`,
/// `Mi`, `Gi`, `Ti` (powers of 1024), and an optional `/s` (`600Mbit`, `600 Mbit/s`, `75MB/s`).
/// `bps` and `Bps` are accepted too (`600Mbps`). A bare number is bytes per second.
pub fn parse_bandwidth(text: &str) -> Result<f64, String> {
    let (number, unit) = split_number(text)
        .ok_or_else(|| format!("expected a number and a unit, e.g. \"600Mbit\", found \"{text}\""))?;
    let per_second =
        unit.strip_suffix("/s").or_else(|| unit.strip_suffix("ps").filter(|u| u.ends_with(['b', 'B']))).unwrap_or(unit);
    let unit_factor =
        bandwidth_unit(per_second).ok_or_else(|| format!("unknown bandwidth unit `{unit}`; {BANDWIDTH_UNITS}"))?;
    let bytes = number * unit_factor;
    if !(bytes.is_finite() && bytes > 0.0) {
        return Err(format!("bandwidth must be greater than zero, found \"{text}\""));
    }
    Ok(bytes)
}

/// Bytes per second of one `unit` (without its `/s`), `None` when it is no unit.
fn bandwidth_unit(unit: &str) -> Option<f64> {
    if unit.is_empty() {
        return Some(1.0);
    }
    let lower = unit.to_ascii_lowercase();
    // Words are matched in any case; the one-letter units by their case (b = bit, B = byte).
    let (prefix, per_unit) = if let Some(p) = lower.strip_suffix("bits") {
        (p, 0.125)
    } else if let Some(p) = lower.strip_suffix("bit") {
        (p, 0.125)
    } else if let Some(p) = lower.strip_suffix("bytes") {
        (p, 1.0)
    } else if let Some(p) = lower.strip_suffix("byte") {
        (p, 1.0)
    } else if unit.ends_with('b') {
        (&lower[..lower.len() - 1], 0.125)
    } else if unit.ends_with('B') {
        (&lower[..lower.len() - 1], 1.0)
    } else {
        return None;
    };
    let scale = match prefix {
        "" => 1.0,
        "k" => 1e3,
        "m" => 1e6,
        "g" => 1e9,
        "t" => 1e12,
        "ki" => 1024.0,
        "mi" => 1024.0 * 1024.0,
        "gi" => 1024.0 * 1024.0 * 1024.0,
        "ti" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    Some(scale * per_unit)
}

/// Parses a round-trip time: a number and a unit, `s`, `ms`, `us` (or `µs`) or `ns`
/// (`20ms`, `0.5 ms`, `150us`). The unit is required.
pub fn parse_rtt(text: &str) -> Result<Duration, String> {
    let (number, unit) =
        split_number(text).ok_or_else(|| format!("expected a number and a unit, e.g. \"20ms\", found \"{text}\""))?;
    let seconds_per_unit = match unit {
        "s" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "ns" => 1e-9,
        "" => {
            return Err(format!("missing unit in \"{text}\"; write e.g. \"20ms\" (units: s, ms, us)"));
        }
        _ => return Err(format!("unknown time unit `{unit}`; use s, ms or us")),
    };
    Duration::try_from_secs_f64(number * seconds_per_unit)
        .map_err(|_| format!("round-trip time out of range: \"{text}\""))
}

/// Parses a mount's `linger`: a whole number and a unit, `s`, `m` or `h` (`90s`, `10m`, `1h`),
/// from one second to a day.
pub fn parse_linger(text: &str) -> Result<Duration, String> {
    let (number, unit) =
        split_number(text).ok_or_else(|| format!("expected a number and a unit, e.g. \"10m\", found \"{text}\""))?;
    let seconds_per_unit = match unit {
        "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        "" => return Err(format!("missing unit in \"{text}\"; write e.g. \"10m\" (units: s, m, h)")),
        _ => return Err(format!("unknown unit `{unit}` for a linger; use s, m or h")),
    };
    let seconds = number * seconds_per_unit;
    if !(1.0..=86_400.0).contains(&seconds) || seconds.fract() != 0.0 {
        return Err(format!("a linger is whole seconds from 1 s to 24 h, found \"{text}\""));
    }
    Ok(Duration::from_secs(seconds as u64))
}

/// Splits `600 Mbit/s` into 600.0 and `Mbit/s`. `None` when there is no non-negative number.
fn split_number(text: &str) -> Option<(f64, &str)> {
    let text = text.trim();
    let end = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len());
    let number = text[..end].parse::<f64>().ok()?;
    Some((number, text[end..].trim_start()))
}

/// Prints a bandwidth in bits per second with a decimal prefix: `100 Mbit/s`, `1.5 Gbit/s`.
pub fn format_bandwidth(bytes_per_sec: f64) -> String {
    let bits = bytes_per_sec * 8.0;
    let (scaled, prefix) = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K")]
        .into_iter()
        .find(|&(scale, _)| bits >= scale)
        .map_or((bits, ""), |(scale, prefix)| (bits / scale, prefix));
    let number = format!("{scaled:.3}");
    let number = number.trim_end_matches('0').trim_end_matches('.');
    format!("{number} {prefix}bit/s")
}

/// Prints a round-trip time: `10 ms`, `0.5 ms`, `150 us`, `2 s`.
pub fn format_rtt(rtt: Duration) -> String {
    let micros = rtt.as_secs_f64() * 1e6;
    let (scaled, unit) = if micros >= 1e6 {
        (micros / 1e6, "s")
    } else if micros >= 100.0 || micros == 0.0 {
        (micros / 1e3, "ms")
    } else {
        (micros, "us")
    };
    let number = format!("{scaled:.3}");
    let number = number.trim_end_matches('0').trim_end_matches('.');
    format!("{number} {unit}")
}
