//! Cross-crate tests live in `tests/integration/`; this empty library only anchors the package.
