//! Parsers of flag values that db_bench's gflags accept: booleans in every
//! spelling gflags takes, and fractions in `0..=1`.
//!
//! Owns nothing but these two pure functions; `flags.rs` and `tuning.rs`
//! both sit on them (so neither imports the other's parsers). No state.

/// Parses a fraction in `0..=1`.
pub fn parse_fraction(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
        Ok(v) => Err(format!("{v} is outside 0..=1")),
        Err(e) => Err(format!("`{s}` is not a number: {e}")),
    }
}

/// Parses db_bench/gflags booleans.
pub fn parse_bool(s: &str) -> Result<bool, String> {
    match s.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "y" | "t" | "on" => Ok(true),
        "false" | "0" | "no" | "n" | "f" | "off" => Ok(false),
        _ => Err(format!("`{s}` is not a boolean (true|false|1|0)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gflags_spellings() {
        for t in ["true", "1", "YES", "y", "t", "on"] {
            assert_eq!(parse_bool(t), Ok(true), "{t}");
        }
        for f in ["false", "0", "No", "n", "f", "off"] {
            assert_eq!(parse_bool(f), Ok(false), "{f}");
        }
        assert!(parse_bool("maybe").is_err());
        assert_eq!(parse_fraction("0.25"), Ok(0.25));
        assert!(parse_fraction("1.5").is_err() && parse_fraction("x").is_err());
    }
}
