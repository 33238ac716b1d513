//! The shipped annotation library loads whole and every entry is checked.
