//! `posh.toml`: mounts, their proxies and link estimates, and how the file is found.
