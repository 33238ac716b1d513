//! Setting posh up on a client: `posh-exec --suggest-config` writes a posh.toml for the
//! networked filesystems mounted here ([`mountinfo`] reads the mount table, [`probe`] measures
//! the links, [`suggest`] writes the file), and `posh-exec --check` tells, for each mount of a
//! posh.toml, whether its proxy answers, who it is, whether it sees the files the client sees
//! and how fast the link is ([`check`]).

pub mod check;
pub mod mountinfo;
pub mod probe;
pub mod suggest;

use std::time::Duration;

/// A measured round-trip time to three significant digits, as posh.toml and the tables show it.
pub fn round_rtt(rtt: Duration) -> Duration {
    Duration::from_secs_f64(three_digits(rtt.as_secs_f64()))
}

/// A measured bandwidth (bytes per second) rounded to three significant digits of bits per
/// second, as posh.toml and the tables show it.
pub fn round_bandwidth(bytes_per_sec: f64) -> f64 {
    three_digits(bytes_per_sec * 8.0) / 8.0
}

fn three_digits(x: f64) -> f64 {
    if !(x.is_finite() && x > 0.0) {
        return x;
    }
    let unit = 10f64.powi(x.log10().floor() as i32 - 2);
    (x / unit).round() * unit
}

#[cfg(test)]
mod tests {
    use super::*;
    use posh_core::config::{format_bandwidth, format_rtt};

    #[test]
    fn measures_are_shown_to_three_digits() {
        assert_eq!(format_rtt(round_rtt(Duration::from_nanos(20_412_345))), "20.4 ms");
        assert_eq!(format_rtt(round_rtt(Duration::from_nanos(213_456))), "0.213 ms");
        assert_eq!(format_rtt(round_rtt(Duration::from_nanos(41_234))), "41.2 us");
        assert_eq!(format_bandwidth(round_bandwidth(72_727_272.0)), "582 Mbit/s");
        assert_eq!(format_bandwidth(round_bandwidth(1.23456e9)), "9.88 Gbit/s");
        assert_eq!(round_bandwidth(0.0), 0.0);
    }
}
