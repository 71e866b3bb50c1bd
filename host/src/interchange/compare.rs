//! JSON equality for exact trees: what "the same JSON value" means.

use super::raw::{Node, Object};

/// How [`same`] compares numbers.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Numbers {
    /// By their text: `1.0` and `1` differ (what a residue must keep).
    Exact,
    /// By their decimal value: `1.0`, `1` and `1e0` are equal; `-0` and `0` are not.
    Value,
}

/// JSON equality: objects member-wise ignoring order, arrays item-wise, strings
/// by their decoded value, numbers as `numbers` says.
pub fn same(a: &Node<'_>, b: &Node<'_>, numbers: Numbers) -> bool {
    match (a, b) {
        (Node::Object(x), Node::Object(y)) => {
            x.members().len() == y.members().len()
                && x.members().iter().all(|(key, value)| {
                    let count = |o: &Object<'_>| o.members().iter().filter(|(k, _)| k == key).count();
                    count(x) == count(y) && y.members().iter().any(|(k, other)| k == key && same(value, other, numbers))
                })
        }
        (Node::Array(_), Node::Array(_)) => {
            let (x, y) = (a.as_array().unwrap_or(&[]), b.as_array().unwrap_or(&[]));
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q, numbers))
        }
        (Node::Leaf(x), Node::Leaf(y)) => {
            if x == y {
                return true;
            }
            match (a.as_str(), b.as_str()) {
                (Some(Ok(p)), Some(Ok(q))) => p == q,
                (Some(_), _) | (_, Some(_)) => false,
                _ => numbers == Numbers::Value && matches!((decimal(x), decimal(y)), (Some(p), Some(q)) if p == q),
            }
        }
        _ => false,
    }
}

/// Whether two JSON texts hold the same value (numbers by decimal value). False
/// when either is not JSON.
pub fn equivalent_text(a: &str, b: &str) -> bool {
    match (Node::parse(a), Node::parse(b)) {
        (Ok(x), Ok(y)) => same(&x, &y, Numbers::Value),
        _ => false,
    }
}

/// A JSON number as (negative, significant digits, exponent), without floating
/// point: `-1.50e2` → (true, "15", 1).
fn decimal(text: &str) -> Option<(bool, String, i128)> {
    let (negative, rest) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (mantissa, exponent) = match rest.find(['e', 'E']) {
        Some(at) => (&rest[..at], rest[at + 1..].trim_start_matches('+').parse::<i128>().ok()?),
        None => (rest, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) || int.is_empty() {
        return None;
    }
    let mut digits: String = int.chars().chain(frac.chars()).collect();
    let mut exponent = exponent - frac.len() as i128;
    let trimmed = digits.trim_start_matches('0').len();
    digits.drain(..digits.len() - trimmed);
    while digits.ends_with('0') {
        digits.pop();
        exponent += 1;
    }
    if digits.is_empty() {
        exponent = 0;
    }
    Some((negative, digits, exponent))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equality_normalises_spelling_only() {
        let yes = [
            (r#"{"a":1,"b":[2]}"#, r#"{"b":[2.0],"a":1e0}"#),
            (r#""\u00e9""#, "\"é\""),
            ("-0", "-0.0e5"),
            ("12345678901234567890123", "1.2345678901234567890123E22"),
            ("1e400", "10e399"),
        ];
        for (a, b) in yes {
            assert!(equivalent_text(a, b), "{a} ~ {b}");
        }
        let no = [("-0", "0"), ("1", "1.0000000000000001"), (r#"{"a":1}"#, r#"{"a":1,"a":1}"#), ("[1,2]", "[2,1]")];
        for (a, b) in no {
            assert!(!equivalent_text(a, b), "{a} !~ {b}");
        }
        let (x, y) = (Node::Leaf("1.0".into()), Node::Leaf("1".into()));
        assert!(!same(&x, &y, Numbers::Exact) && same(&x, &y, Numbers::Value));
    }
}
