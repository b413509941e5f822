//! Keys and values on the command line and in output.
//!
//! Input: `0x` followed by hex digits is raw bytes; anything else is UTF-8
//! text where `\n`, `\t`, `\r`, `\0`, `\\` and `\xNN` are escapes.
//! Output: printable ASCII as is, everything else escaped the same way (so
//! output pastes back as input), or `0x...` hex with `--hex`. Pure
//! functions.

use anyhow::{Result, bail};

/// Parses a key or value argument (see the module docs).
pub fn parse(arg: &str) -> Result<Vec<u8>> {
    if let Some(hex) = arg.strip_prefix("0x") {
        return parse_hex(hex).ok_or_else(|| {
            anyhow::anyhow!("{arg:?} starts with 0x but is not an even number of hex digits")
        });
    }
    let mut out = Vec::with_capacity(arg.len());
    let mut it = arg.bytes();
    while let Some(b) = it.next() {
        if b != b'\\' {
            out.push(b);
            continue;
        }
        match it.next() {
            Some(b'n') => out.push(b'\n'),
            Some(b't') => out.push(b'\t'),
            Some(b'r') => out.push(b'\r'),
            Some(b'0') => out.push(0),
            Some(b'\\') => out.push(b'\\'),
            Some(b'x') => {
                let hi = it.next();
                let lo = it.next();
                match (hi.and_then(hex_digit), lo.and_then(hex_digit)) {
                    (Some(h), Some(l)) => out.push(h << 4 | l),
                    _ => bail!("{arg:?}: \\x must be followed by two hex digits"),
                }
            }
            Some(c) => bail!(
                "{arg:?}: unknown escape \\{} (use \\n \\t \\r \\0 \\\\ \\xNN)",
                c as char
            ),
            None => bail!("{arg:?} ends with a lone backslash (write \\\\)"),
        }
    }
    Ok(out)
}

fn hex_digit(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

fn parse_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    s.as_bytes()
        .chunks(2)
        .map(|p| Some(hex_digit(p[0])? << 4 | hex_digit(p[1])?))
        .collect()
}

/// `0x` + lowercase hex.
pub fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(2 + 2 * b.len());
    s.push_str("0x");
    for x in b {
        s.push_str(&format!("{x:02x}"));
    }
    s
}

/// Printable ASCII as is, the rest escaped; never starts with `0x`.
pub fn escape(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len());
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'\\' => s.push_str("\\\\"),
            b'\n' => s.push_str("\\n"),
            b'\t' => s.push_str("\\t"),
            b'\r' => s.push_str("\\r"),
            b'0' if i == 0 && b.get(1) == Some(&b'x') => s.push_str("\\x30"),
            0x20..=0x7e => s.push(c as char),
            _ => s.push_str(&format!("\\x{c:02x}")),
        }
    }
    s
}

/// [`hex`] or [`escape`].
pub fn show(b: &[u8], as_hex: bool) -> String {
    if as_hex { hex(b) } else { escape(b) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrips() {
        for raw in [
            &b"plain"[..],
            b"a\nb\tc\\d",
            b"\x00\xff\x7f",
            b"0xnot-hex",
            b"",
            "é".as_bytes(),
        ] {
            assert_eq!(parse(&escape(raw)).expect("parse"), raw, "{raw:?}");
            assert_eq!(parse(&hex(raw)).expect("parse"), raw, "{raw:?}");
        }
        assert_eq!(parse("0x00ff").expect("hex"), vec![0, 255]);
        assert!(parse("0x0").is_err());
        assert!(parse("a\\q").is_err());
        assert!(parse("a\\").is_err());
        assert!(parse("\\x4").is_err());
    }
}
